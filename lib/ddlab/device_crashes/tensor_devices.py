"""A kernel library refusing a tensor it was handed on another device (``kernel_config_unsupported``, vLLM round 82).

A kernel library's host code checks, before it launches, that each tensor it was handed lives on the GPU, and
refuses the call with the tensor's name: flash-attn's ``#define CHECK_DEVICE(x) TORCH_CHECK(x.is_cuda(), #x " must be
on CUDA")`` (Dao-AILab/flash-attention 00979f5 csrc/flash_attn/flash_api.cpp:17, applied in mha_fwd and
mha_varlen_fwd to q, k, v, cu_seqlens_q, cu_seqlens_k, block_table), the same macro in FlashMLA's and vLLM's copies,
and "Tensor X must be on CUDA" in cutlass GEMM wrappers' CHECK_CUDA. TORCH_CHECK raises RuntimeError with that text
alone; vLLM's multiprocessing executor carries a worker's error up as "RuntimeError: Worker failed with error
'cu_seqlens_q must be on CUDA', please check the stack trace above for the root cause". The tensor the caller handed
the kernel is not one it takes, as a kernel refusing a tensor's dtype is (:mod:`.kernels`, ``kernel_dtype_refused``,
and flash-attn's own shape checks in the same file, ``kernel_config_unsupported``). Torch's own device checks ("Expected
all tensors to be on the same device") are not this: they are an op's, not a kernel library's. :mod:`.device` splices
this list after :mod:`.plan_dtypes`'s.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "KERNEL_DEVICE_REFUSED"]

# the macro's text: the tensor's name (an identifier, "Tensor " before it in the cutlass wrappers), "must be on CUDA"
_NOT_ON_CUDA = r"(?<![\w.])(?:Tensor )?[A-Za-z_]\w* must be on CUDA\b"
KERNEL_DEVICE_REFUSED = Signature(
    "kernel_device_refused", "kernel_config_unsupported",
    "a kernel library refused a tensor it was handed that is not on the GPU",
    ("A kernel library's host check (flash-attn's CHECK_DEVICE, \"<tensor> must be on CUDA\") found a tensor it "
     "was handed on the CPU and refused the call before launching: the caller (the model's attention code, a "
     "vision encoder's varlen attention) built that tensor on the host. Often the attention path of this model "
     "picked a kernel package the release does not expect (an upstream flash-attn instead of the server's own "
     "build): `pip show flash-attn vllm torch` says which are installed; another attention backend, or an install "
     "of the server's own release pairing, avoids it.",),
    types=r"(?:\w+\.)*RuntimeError", patterns=(_NOT_ON_CUDA,), priority=70,
    sources=(("flash-attn 00979f5 (Dao-AILab/flash-attention)", "csrc/flash_attn/flash_api.cpp:17 (#define "
                                                               "CHECK_DEVICE(x) TORCH_CHECK(x.is_cuda(), #x \" must "
                                                               "be on CUDA\")), mha_varlen_fwd's "
                                                               "CHECK_DEVICE(cu_seqlens_q)"),))

SIGNATURES = [KERNEL_DEVICE_REFUSED]
