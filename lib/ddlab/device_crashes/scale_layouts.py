"""DeepGEMM refusing a scale-factor layout it has no case for (``kernel_config_unsupported``, round 90).

DeepGEMM's Python layer (mid-2025, deepseek-ai/DeepGEMM cc416ee deep_gemm/utils/layout.py:136-175) turns each
GEMM's scale factors into the layout its kernel reads, by case: (dtype, granularity, GPU arch). FP32 scales
have cases on Hopper ('90a') and SM100; int32 scales (UE8M0 exponents packed four to a word) only on SM100
(:143-145, :170-172). Any other combination ends in ``assert False, f'Unknown cases: {sf.dtype=}, {gran=},
arch={get_device_arch()}'`` (:175), which every GEMM entry point reaches (deep_gemm/dispatch.py:85-86,
:137-138, :183-184). The GPU is one DeepGEMM supports; the kernel refuses the scale format it was handed on it.
SGLang 0.4.7.post1 hands int32 scales wherever the installed DeepGEMM has the new API, whatever the GPU
(layers/quantization/deep_gemm_wrapper/configurer.py:24-32, DEEPGEMM_SCALE_UE8M0 = DEEPGEMM_BLACKWELL;
fp8_utils.py:241): on Hopper the first FP8 GEMM, often in CUDA graph capture, meets the assert. Capture is
where it surfaces, not why: the kind is the same wherever it is raised. Later DeepGEMM moved the check to C++
(csrc/apis/layout.hpp, ``DG_HOST_UNREACHABLE("Unknown cases")``, without the case's values): not read here.
:mod:`.device` splices this list after :mod:`.status_checks`'.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "SCALE_LAYOUT_REFUSED"]

SCALE_LAYOUT_REFUSED = Signature(
    "deepgemm_scale_layout_refused", "kernel_config_unsupported",
    "DeepGEMM has no case for this scale format on this GPU",
    ("DeepGEMM's layout step has no case for the scale factors it was handed on this GPU ('Unknown cases: "
     "sf.dtype=..., gran=..., arch=...'): int32 (packed UE8M0) scales are an SM100 format, Hopper ('90a') takes "
     "FP32 scales. The SGLang release chose the format from the installed DeepGEMM's API rather than the GPU: "
     "install the DeepGEMM release your SGLang pins, upgrade SGLang, or turn DeepGEMM off "
     "(`SGL_ENABLE_JIT_DEEPGEMM=0`) to use SGLang's own FP8 GEMM.",),
    types=r"(?:\w+\.)*AssertionError",
    patterns=(r"\bUnknown cases: sf\.dtype=torch\.\w+, gran=\(\d+, \d+\), arch=\w+",), priority=81,
    sources=(("DeepGEMM (deepseek-ai/DeepGEMM cc416ee)", "deep_gemm/utils/layout.py:175 (the assert), :143-145 "
                                                        "and :170-172 (int scales on 100a only)"),
             ("DeepGEMM (deepseek-ai/DeepGEMM cc416ee)", "deep_gemm/dispatch.py:85-86 (fp8_gemm_nt)"),
             ("sglang 0.4.7.post1", "sglang/srt/layers/quantization/deep_gemm_wrapper/configurer.py:32"),
             ("sglang 0.4.7.post1", "sglang/srt/layers/quantization/fp8_utils.py:241")))

SIGNATURES = [SCALE_LAYOUT_REFUSED]
