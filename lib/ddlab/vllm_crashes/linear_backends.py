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
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "LINEAR_BACKEND_REFUSED", "FP4_SCALE_ROWS"]

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

SIGNATURES = [LINEAR_BACKEND_REFUSED, FP4_SCALE_ROWS]
