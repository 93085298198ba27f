"""The WNA16 MoE GEMM refusing the experts' shapes (``kernel_config_unsupported``, vLLM round 80), and (round 96)
the CUTLASS scaled GEMM's wrapper refusing a weight whose dims are no multiples of 16.

vLLM's fused MoE runs a 4- or 8-bit weight-only quantized model's experts (GPTQ / AWQ, ``moe_wna16``) through
its own CUDA kernel, ``moe_wna16_gemm`` (0.8.5.post1 model_executor/layers/fused_moe/fused_moe.py:524-526, through
_custom_ops.py:1242-1254 into ``torch.ops._moe_C``). Before it launches, the kernel checks the shapes it is handed
against the tile the config chose, with TORCH_CHECK: "size_k must divisible by BLOCK_SIZE_K", "BLOCK_SIZE_K must
divisible by group_size" (vllm-project/vllm 0e4d37b csrc/moe/moe_wna16.cu:307-310; the gfx906 fork's hipified
copy, moe_wna16.hip, has them too). size_k is the expert's input width on one GPU (the hidden size, or the
experts' intermediate size over the tensor-parallel size): a ``--tensor-parallel-size`` that cuts the experts
into slices narrower than the tile is refused before anything runs, so the kind is ``kernel_config_unsupported``
(the model's shapes, on a GPU the kernel supports), where the check is met: the profiling run, the first graph
capture, a worker echoing it ("Worker failed with error '...'"). vLLM's own kernel: :mod:`.library` joins this
list to vLLM's registry alone.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "WNA16_SHAPE_REFUSED", "CUTLASS_MM_SHAPE"]

# the two shape checks' own words (the kernel's English: "must divisible"), in an exception's message, a worker's
# echo of it or a log line
_SHAPE = r"\b(?:size_k must divisible by BLOCK_SIZE_K|BLOCK_SIZE_K must divisible by group_size)\b"
WNA16_SHAPE_REFUSED = Signature(
    "vllm_wna16_shape_refused", "kernel_config_unsupported",
    "the quantized MoE GEMM (moe_wna16) refused the experts' per-GPU shapes",
    ("vLLM's WNA16 MoE kernel (moe_wna16_gemm: GPTQ / AWQ experts) checks that each expert's input width on one "
     "GPU (size_k: the hidden size, or the experts' intermediate size over `--tensor-parallel-size`) is a multiple "
     "of its BLOCK_SIZE_K tile, and the tile a multiple of the quantization group size: this model's slices are "
     "not. A smaller `--tensor-parallel-size` (wider slices), `--enable-expert-parallel` (whole experts per GPU), "
     "or another MoE kernel for the checkpoint (`--quantization gptq_marlin` / `awq_marlin` where the GPU has "
     "Marlin).",),
    patterns=(_SHAPE,), lines=(_SHAPE,), priority=80,
    sources=(("vllm-project/vllm 0e4d37b", "csrc/moe/moe_wna16.cu:307-308 (TORCH_CHECK(size_k % BLOCK_SIZE_K == "
                                           "0, \"size_k must divisible by BLOCK_SIZE_K\")), :309-310 (BLOCK_SIZE_K "
                                           "must divisible by group_size)"),
             ("vllm 0.8.5.post1", "vllm/model_executor/layers/fused_moe/fused_moe.py:526 (ops.moe_wna16_gemm)"),
             ("vllm 0.8.5.post1", "vllm/_custom_ops.py:1242 (moe_wna16_gemm: torch.ops._moe_C.moe_wna16_gemm)")))

# (round 96) vLLM's wrapper of its CUTLASS FP8/INT8 GEMM asserts, before the kernel runs, that the weight's two dims
# are multiples of 16: ``assert (b.shape[0] % 16 == 0 and b.shape[1] % 16 == 0)`` (_custom_ops.py:242 in
# cutlass_scaled_mm (0.5.4); :482, and :504 in cutlass_scaled_mm_azp (0.6.2)), called by apply_fp8_linear for an FP8
# layer (online `--quantization fp8` too). A model whose layer width is no multiple of 16 is a shape the kernel does
# not take: kernel_config_unsupported. The assert's source line in the traceback is read (the bare AssertionError
# carries no message), also where a paste cut the exception's line (cut_ok)
_CUTLASS_SHAPE = r"assert \(b\.shape\[0\] % 16 == 0 and b\.shape\[1\] % 16 == 0\)"
CUTLASS_MM_SHAPE = Signature(
    "vllm_cutlass_mm_shape", "kernel_config_unsupported",
    "the CUTLASS scaled GEMM refused a weight whose dims are no multiples of 16",
    ("vLLM's CUTLASS FP8/INT8 GEMM (cutlass_scaled_mm) takes only weights whose two dims are multiples of 16, and "
     "a layer of this model is not: run it without FP8 (drop `--quantization fp8`, or use a checkpoint quantized "
     "with padded shapes), or use a vLLM release whose FP8 linear method pads or falls back for such layers.",),
    types=r"AssertionError", patterns=(r"",), context=(_CUTLASS_SHAPE,), cut_ok=True, priority=80,
    sources=(("vllm 0.5.4", "vllm/_custom_ops.py:242 (cutlass_scaled_mm)"),
             ("vllm 0.6.2", "vllm/_custom_ops.py:482 (cutlass_scaled_mm), :504 (cutlass_scaled_mm_azp)")))

SIGNATURES = [WNA16_SHAPE_REFUSED, CUTLASS_MM_SHAPE]
