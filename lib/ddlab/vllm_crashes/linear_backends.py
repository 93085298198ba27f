"""The linear layers' kernel chooser left with no kernel by ``--linear-backend`` (vLLM round 101).

vLLM picks a quantized linear layer's GEMM from a per-platform priority list (``_POSSIBLE_FP8_KERNELS``: on CUDA
Marlin, FlashInfer, CUTLASS, two torch ``_scaled_mm`` kernels, Humming; model_executor/kernels/linear/__init__.py
:341-349 (0.27.1), :325-333 (0.26.0)). ``--linear-backend`` other than ``auto`` keeps only that backend's kernels
(``_filter_kernels_by_backend``, :320-326 (0.27.1)); none of its kind for the layer raises "--linear-backend=X was
requested but no 'X' kernel exists for this layer type." (:590-593 (0.27.1), :560 (0.26.0)), and each kernel kept
that refuses the layer adds its reason to "Failed to find a kernel that can implement the ScaledMM linear layer.
Reasons:" (:604-607 (0.27.1), :574 (0.26.0)). FP8 Marlin refuses every GPU of compute capability 8.9 or higher
unless ``VLLM_TEST_FORCE_FP8_MARLIN`` is set ("To apply FP8 Marlin on high-capability GPUs, please set
VLLM_TEST_FORCE_FP8_MARLIN=1.", scaled_mm/marlin.py:46-54 (0.26.0, 0.27.1)), where CUTLASS, FlashInfer or torch
serve FP8: its reason alone in the list is the list cut to Marlin, ``--linear-backend marlin`` on such a GPU, a
flag's choice, not the GPU (``bad_argument``). Another kernel's reason beside it is the whole list refusing the
layer, which this module does not read.

(round 103) A kernel kept that takes the layer on paper can still refuse its shape later: FlashInfer's TensorRT-LLM
FP4 GEMM (``VLLM_NVFP4_GEMM_BACKEND=flashinfer-trtllm``) accepts any NVFP4 layer (``can_implement`` returns True,
model_executor/kernels/linear/nvfp4/flashinfer.py:101-103 (0.20.2)) and after loading shuffles its weight's scale
factors with ``epilogue_tile_m = 128`` (``shuffle_matrix_sf_a``, :105-117), whose row indices need the rows in
multiples of 128 (``assert M % 128 == 0``, flashinfer 0.6.11.post2 utils.py:882, called from
quantization/fp4_quantization.py:1068): a bare AssertionError under that frame is a layer the kernel cannot take
(``kernel_config_unsupported``); another NVFP4 GEMM takes it.

(round 118) ``--linear-backend flashinfer_cutlass`` keeps, of the FP8 lists, FlashInfer's kernels alone
(``_LINEAR_BACKEND_KERNEL_MAP``, model_executor/kernels/linear/__init__.py:256-262 (0.29.0); filtered at :341-355,
:655): of the block-scaled list only ``FlashInferFp8DeepGEMMDynamicBlockScaledKernel``, of the per-tensor one only
``FlashInferFP8ScaledMMLinearKernel``, each first in a CUDA list of seven or eight (:403-411, :438-447). The
block-scaled one needs FlashInfer's SM90 GEMM (``has_flashinfer_fp8_blockscale_gemm``: compute capability 9.0,
utils/flashinfer.py:1066-1072; "FlashInfer block-scale FP8 GEMM is not available.", scaled_mm/flashinfer.py:128-129),
the per-tensor one compute capability 10.0 or more (:50-51): one of these reasons alone in the list is the list cut to
FlashInfer by the flag (vLLM's own choice lists every kernel's reason, :657-668), a flag's choice the GPU cannot serve
(``bad_argument``); any other kernel's reason beside it is not read.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "LINEAR_BACKEND_REFUSED", "FP4_SCALE_ROWS", "FLASHINFER_FP8_ONLY"]

_NO_BACKEND_KERNEL = r"--linear-backend=\w+ was requested but no '\w+' kernel exists for this layer type"
_MARLIN_ONLY = r"\bMarlinFP8ScaledMMLinearKernel To apply FP8 Marlin on high-capability GPUs, please set VLLM_TEST_"
_NO_KERNEL = r"Failed to find a kernel that can implement the ScaledMM linear layer"
# another kernel's reason in the list: the list was not cut to Marlin
_OTHER_REASON = (r"^(?:\(\S+ pid=\d+\)\s*)?(?:\S+\s+){0,4}?(?:FlashInfer|Cutlass|PerTensorTorch|ChannelWiseTorch"
                 r"|RowWiseTorch|Humming|Rocm|ROCm|Aiter)\w*FP8\w*Kernel ")

LINEAR_BACKEND_REFUSED = Signature(
    "vllm_linear_backend_refused", "bad_argument",
    "--linear-backend left the layer no kernel that takes it",
    ("`--linear-backend` keeps only its own kernels for each quantized linear layer, and none of them takes this "
     "one: FP8 Marlin (`--linear-backend marlin`) refuses GPUs of compute capability 8.9 and higher, where "
     "CUTLASS, FlashInfer or torch serve FP8. Drop `--linear-backend` (or pass `--linear-backend auto`) to let "
     "vLLM choose, or set `VLLM_TEST_FORCE_FP8_MARLIN=1` to force Marlin's weight-only FP8 on this GPU.",),
    patterns=(_NO_BACKEND_KERNEL, _MARLIN_ONLY), lines=(_NO_BACKEND_KERNEL,),
    context=(rf"{_NO_KERNEL}|{_NO_BACKEND_KERNEL}",), absent=(_OTHER_REASON,), priority=70,
    sources=(("vllm 0.27.1", "vllm/model_executor/kernels/linear/__init__.py:604 (Failed to find a kernel that "
                             "can implement the ScaledMM linear layer. Reasons:)"),
             ("vllm 0.27.1", "vllm/model_executor/kernels/linear/__init__.py:590 (--linear-backend=... was "
                             "requested but no ... kernel exists)"),
             ("vllm 0.27.1", "vllm/model_executor/kernels/linear/__init__.py:320 (_filter_kernels_by_backend)"),
             ("vllm 0.27.1", "vllm/model_executor/kernels/linear/scaled_mm/marlin.py:53 (To apply FP8 Marlin on "
                             "high-capability GPUs)"),
             ("0.34.0", "vllm/model_executor/kernels/linear/__init__.py:741")))

_SF_ROWS_ASSERT = r'in get_shuffle_matrix_sf_a_row_indices\s*\n\s*assert M % 128 == 0\s*$'

FP4_SCALE_ROWS = Signature(
    "vllm_flashinfer_fp4_scale_rows", "kernel_config_unsupported",
    "FlashInfer's TRT-LLM FP4 GEMM needs a layer's rows in multiples of 128",
    ("FlashInfer's TensorRT-LLM FP4 GEMM shuffles each weight's scale factors in tiles of 128 rows, and a layer "
     "of this model (or its tensor-parallel shard) has a row count that is not a multiple of 128. Pick another "
     "NVFP4 GEMM: `VLLM_NVFP4_GEMM_BACKEND=flashinfer-cutlass` (or `cutlass`; unset lets vLLM choose), or a "
     "tensor-parallel size whose shards are multiples of 128 rows.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(r".",), context=(_SF_ROWS_ASSERT,), priority=81,
    sources=(("flashinfer 0.6.11.post2", "flashinfer/utils.py:882 (get_shuffle_matrix_sf_a_row_indices: "
                                         "assert M % 128 == 0)"),
             ("flashinfer 0.6.11.post2", "flashinfer/quantization/fp4_quantization.py:1068 (shuffle_matrix_sf_a)"),
             ("vllm 0.20.2", "vllm/model_executor/kernels/linear/nvfp4/flashinfer.py:117 "
                             "(FlashInferTrtllmNvFp4LinearKernel: shuffle_matrix_sf_a(..., epilogue_tile_m))")))

# (round 118) the two FlashInfer FP8 kernels --linear-backend flashinfer_cutlass keeps, and any other kernel's reason
_PREFIX = r"^(?:\(\S+ pid=\d+\)\s*)?(?:\S+\s+){0,4}?"
_FLASHINFER_FP8 = r"FlashInfer(?:Fp8DeepGEMMDynamicBlockScaled|FP8ScaledMMLinear)Kernel "
_NOT_FLASHINFER_FP8 = rf"{_PREFIX}(?!{_FLASHINFER_FP8})\w+Kernel "

FLASHINFER_FP8_ONLY = Signature(
    "vllm_linear_backend_flashinfer_only", "bad_argument",
    "--linear-backend flashinfer_cutlass left the FP8 layer only a FlashInfer kernel this GPU cannot run",
    ("`--linear-backend flashinfer_cutlass` keeps only FlashInfer's FP8 GEMM for each FP8 linear layer, and it "
     "refused this one: its block-scaled GEMM runs on compute capability 9.0 (Hopper) only, its per-tensor GEMM on "
     "10.0 and newer, where vLLM's own choice falls back to DeepGEMM, CUTLASS, Triton or torch. Drop "
     "`--linear-backend` (or pass `--linear-backend auto`) to let vLLM choose, or name a backend this GPU runs "
     "(`cutlass`).",),
    types=r"(?:\w+\.)*ValueError", patterns=(_NO_KERNEL,), context=(rf"{_PREFIX}{_FLASHINFER_FP8}",),
    absent=(_NOT_FLASHINFER_FP8,), priority=82,  # above unsupported_gpu (81): the flag, not the GPU, left no kernel
    sources=(("vllm 0.29.0", "vllm/model_executor/kernels/linear/__init__.py:665 (raise ValueError(Failed to find a "
                             "kernel that can implement the ScaledMM linear layer. Reasons: ...))"),
             ("vllm 0.29.0", "vllm/model_executor/kernels/linear/__init__.py:256 (flashinfer_cutlass: "
                             "FlashInferFP8ScaledMMLinearKernel, FlashInferFp8DeepGEMMDynamicBlockScaledKernel)"),
             ("vllm 0.29.0", "vllm/model_executor/kernels/linear/__init__.py:438 (_POSSIBLE_FP8_BLOCK_KERNELS)"),
             ("vllm 0.29.0", "vllm/model_executor/kernels/linear/scaled_mm/flashinfer.py:129 (FlashInfer "
                             "block-scale FP8 GEMM is not available.)"),
             ("vllm 0.29.0", "vllm/utils/flashinfer.py:1070 (current_platform.is_device_capability(90))")))

SIGNATURES = [LINEAR_BACKEND_REFUSED, FP4_SCALE_ROWS, FLASHINFER_FP8_ONLY]
