"""A kernel library's module without a function SGLang calls: another release of it (round 95). SGLang 0.4.2.post2
calls vLLM's ops by name (layers/moe/fused_moe_triton/fused_moe.py:14, :992) and pins vllm==0.6.4.post1, whose
vllm/_custom_ops.py:71 defines silu_and_mul (0.7.0's none). :mod:`.packages` splices this list after its own.

(round 96) The same absence behind a guard: SGLang 0.4.5-0.4.6 import vLLM's quantization helpers inside ``try``
and, on ImportError, go on without them (0.4.5 sglang/srt/layers/quantization/gptq.py:13-28), while their [srt] extra
installs no vLLM (METADATA:248-255; only [srt_hip] pins one, :259). A quantization module that then calls the helper
(gptq.py:328 ``check_marlin_supported(``) raises Python's NameError for the vLLM name: the vLLM it needs is missing
or another release. Only names SGLang takes from vLLM there, and only with SGLang's quantization frame the last."""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["LIBRARY_FUNCTION_MISSING", "GUARDED_IMPORT_MISSING", "SIGNATURES"]

LIBRARY_FUNCTION_MISSING = Signature(
    "library_function_missing", "dependency_mismatch", "a kernel library lacks a function this SGLang calls",
    ("SGLang called a function of a kernel library's module (vLLM's `_custom_ops`, sgl-kernel, flashinfer ...) that "
     "the installed release lacks: not the release this SGLang pins. `pip show vllm sgl-kernel flashinfer-python`; "
     "install the pinned one (`pip install \"sglang[all]==VERSION\"` in a fresh environment).",),
    patterns=(r"module '(?:vllm|sgl_kernel|flashinfer|deep_gemm|deep_ep|aiter)(?:\.\w+)*' has no attribute '[^'\n]+'",),
    types=r"(?:\w+\.)*AttributeError", priority=79, sources=(
        ("sglang 0.4.2.post2", "sglang/srt/layers/moe/fused_moe_triton/fused_moe.py:992 (ops.silu_and_mul)"),
        ("vllm 0.6.4.post1", "vllm/_custom_ops.py:71 (def silu_and_mul)")))

# the vLLM names 0.4.5's and 0.4.6's quantization modules import under ``except ImportError`` and do not define
# again in the except branch (QuantizeMethodBase, scalar_types, apply_fp8_marlin_linear ... get stand-ins there)
_GUARDED_VLLM_NAMES = (r"(?:check_marlin_supported|GPTQMarlin(?:LinearMethod|MoEMethod)|AWQMoEMethod"
                       r"|CompressedTensors(?:W8A8Fp8|WNA16)MoEMethod)")
_QUANT_LAST_FRAME = (r'File "[^"]*[/\\]sglang[/\\]srt[/\\]layers[/\\]quantization[/\\][^"]*\.py", line \d+,? in \w+\n'
                     r'(?:(?!\s*File ").*\n)*NameError: ')
GUARDED_IMPORT_MISSING = Signature(
    "guarded_import_missing", "dependency_mismatch", "a vLLM helper SGLang imports only if vLLM imports is missing",
    ("SGLang's quantization code imports this helper from vLLM only when that import succeeds and calls it anyway: "
     "vLLM is not installed here, or another release without the helper. `pip show vllm`; install the vLLM "
     "release your SGLang was built against (0.4.5's [srt_hip] extra pins vllm==0.6.7.dev2), or an SGLang release "
     "that carries the helper itself.",),
    patterns=(r"name '" + _GUARDED_VLLM_NAMES + r"' is not defined",), types=r"NameError",
    context=(_QUANT_LAST_FRAME,), priority=79, sources=(
        ("sglang 0.4.5", "sglang/srt/layers/quantization/gptq.py:13-28 (try: ... check_marlin_supported ... "
                         "except ImportError: VLLM_AVAILABLE = False)"),
        ("sglang 0.4.5", "sglang/srt/layers/quantization/gptq.py:328 (return check_marlin_supported()"),
        ("sglang 0.4.5", "sglang-0.4.5.dist-info/METADATA:248-255 (the [srt] extra, no vllm)")))

SIGNATURES = [LIBRARY_FUNCTION_MISSING, GUARDED_IMPORT_MISSING]
