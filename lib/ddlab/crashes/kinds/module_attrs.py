"""A kernel library's module without a function SGLang calls: another release of it (round 95). SGLang 0.4.2.post2
calls vLLM's ops by name (layers/moe/fused_moe_triton/fused_moe.py:14, :992) and pins vllm==0.6.4.post1, whose
vllm/_custom_ops.py:71 defines silu_and_mul (0.7.0's none). :mod:`.packages` splices this list after its own."""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["LIBRARY_FUNCTION_MISSING", "SIGNATURES"]

LIBRARY_FUNCTION_MISSING = Signature(
    "library_function_missing", "dependency_mismatch", "a kernel library lacks a function this SGLang calls",
    ("SGLang called a function of a kernel library's module (vLLM's `_custom_ops`, sgl-kernel, flashinfer ...) that "
     "the installed release lacks: not the release this SGLang pins. `pip show vllm sgl-kernel flashinfer-python`; "
     "install the pinned one (`pip install \"sglang[all]==VERSION\"` in a fresh environment).",),
    patterns=(r"module '(?:vllm|sgl_kernel|flashinfer|deep_gemm|deep_ep|aiter)(?:\.\w+)*' has no attribute '[^'\n]+'",),
    types=r"(?:\w+\.)*AttributeError", priority=79, sources=(
        ("sglang 0.4.2.post2", "sglang/srt/layers/moe/fused_moe_triton/fused_moe.py:992 (ops.silu_and_mul)"),
        ("vllm 0.6.4.post1", "vllm/_custom_ops.py:71 (def silu_and_mul)")))

SIGNATURES = [LIBRARY_FUNCTION_MISSING]
