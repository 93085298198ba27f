"""Libraries with no kernels for this GPU's architecture: Triton, DeepGEMM, aiter, CUTLASS's TMA (``unsupported_gpu``).

Each keys its kernels (or its dispatch) by the GPU's architecture and refuses one it has no entry for, in its
own words: Triton's code generator failing in ``make_llir``, DeepGEMM's KeyError of an arch its Python
tables lack or its C++ API's host assertion "Unsupported architecture" (round 70), aiter's "Unknown GPU
architecture", CUTLASS's TMA descriptor that a GPU before Hopper refuses (round 108). The GPU, not the model
or the arguments, is what the library refuses. Spliced into :data:`ddlab.device_crashes.device.SIGNATURES`
where they stood (after torch's own "no kernel image" texts).
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "TRITON_ARCH", "DEEPGEMM_ARCH", "DEEPGEMM_ARCH_ASSERT", "AITER_ARCH", "TMA_UNSUPPORTED"]

TRITON_ARCH = Signature(
    "triton_arch_unsupported", "unsupported_gpu", "Triton cannot generate code for this GPU",
    ("Triton's code generator failed for this GPU (an old architecture such as sm75): use a GPU "
     "of sm80 or newer, or an attention backend that does not need Triton kernels "
     "(`--attention-backend flashinfer`).",),
    patterns=(r"map::at",), context=(r"triton[/\\]backends[/\\]nvidia[/\\]compiler\.py|, in make_llir\s*$",),
    priority=81,
    sources=(("triton 3.8.0", "triton/backends/nvidia/compiler.py (make_llir)"),))

# DeepGEMM picks its kernels from tables keyed by the GPU's arch as get_device_arch writes it
# (f"{major * 10 + minor}{suffix}", suffix "a" from sm90 on: '90a', '100a', '120a'; sgl-project/DeepGEMM
# a437e0b deep_gemm/jit/compiler.py:23-26) and indexes them with it: a GPU with no entry raises KeyError
# with that key (dispatch.py:23 must_be_k_major, :32 get_default_recipe, its key a tuple with the
# arch first). SGLang turns DeepGEMM on for every sm90-or-newer GPU (0.4.10.post2
# layers/quantization/deep_gemm_wrapper/configurer.py:10), so a newer consumer arch (sm120) reaches it
DEEPGEMM_ARCH = Signature(
    "deep_gemm_arch_unsupported", "unsupported_gpu", "DeepGEMM has no kernels for this GPU's architecture",
    ("This DeepGEMM has no kernels for this GPU: the KeyError's key is the GPU's architecture as "
     "DeepGEMM names it ('120a' is sm120), missing from its tables. Turn DeepGEMM off with "
     "`SGLANG_ENABLE_JIT_DEEPGEMM=0` (`SGL_ENABLE_JIT_DEEPGEMM=0` in releases before the rename) so "
     "the FP8 GEMMs take another kernel, or install a DeepGEMM whose tables list this architecture.",),
    types=r"KeyError", patterns=(r"^KeyError: \(?'\d{2,3}a?'",),
    context=(r'[/\\]deep_gemm[/\\][\w/\\]*\.py", line \d+',), priority=81,
    sources=(("DeepGEMM a437e0b (sgl-project/DeepGEMM)", "deep_gemm/dispatch.py:23 (must_be_k_major)"),
             ("DeepGEMM a437e0b (sgl-project/DeepGEMM)", "deep_gemm/jit/compiler.py:23 (get_device_arch)"),
             ("0.4.10.post2", "sglang/srt/layers/quantization/deep_gemm_wrapper/configurer.py:10"),
             ("0.4.10.post2", "sglang/srt/layers/quantization/deep_gemm_wrapper/entrypoint.py:89")))

# (round 70) DeepGEMM's C++ APIs dispatch each kernel on the GPU's major arch (get_arch_major(): 9 and 10
# have kernels) and end in DG_HOST_UNREACHABLE("Unsupported architecture") for any other (deepseek-ai/DeepGEMM
# 891d57b csrc/apis/attention.hpp:184, :219 get_paged_mqa_logits_metadata, :376; gemm.hpp:312;
# einsum.hpp:57; 59f2c07 attention.hpp:136), which DGException prints as "Assertion error (<file>:<line>):
# <reason>" (csrc/utils/exception.hpp:17, :39) and pybind11 raises as RuntimeError. SGLang turns DeepGEMM on
# for every sm90-or-newer GPU (0.5.12 layers/deep_gemm_wrapper/configurer.py:19) and its DSA (NSA) attention
# asks it for the paged MQA metadata (0.5.12 layers/attention/nsa_backend.py:664): an sm120 GPU reaches the
# else. Not "Unsupported architecture or scaling factor types" (attention.hpp:72, gemm.hpp:99): the
# recipe's scale types may be what no branch takes
_DG_ARCH_ASSERT = (r"(?-i:Assertion error) \([^()\n]*[/\\]csrc[/\\]apis[/\\]\w+\.hpp:\d+\): "
                   r"(?-i:Unsupported architecture)\s*$")
DEEPGEMM_ARCH_ASSERT = Signature(
    "deep_gemm_arch_assert", "unsupported_gpu",
    "DeepGEMM's C++ API has no kernel for this GPU's architecture",
    ("This DeepGEMM has no kernel for this GPU's architecture: its C++ API dispatches on the major arch "
     "(sm90 and sm100 have kernels) and asserted on this one (sm120 consumer Blackwell, or an older GPU). "
     "Turn DeepGEMM off with `SGLANG_ENABLE_JIT_DEEPGEMM=0` where the feature has another kernel, or pick "
     "a backend that does not call DeepGEMM for this model (a DSA model's indexer calls it on every "
     "backend); otherwise serve it on a GPU DeepGEMM supports (H100/H200, B200).",),
    types=r"RuntimeError", patterns=(_DG_ARCH_ASSERT,),
    lines=(_DG_ARCH_ASSERT,), priority=81,
    sources=(("DeepGEMM 891d57b (deepseek-ai/DeepGEMM)",
              "csrc/apis/attention.hpp:219 (get_paged_mqa_logits_metadata: "
              "DG_HOST_UNREACHABLE(\"Unsupported architecture\"))"),
             ("DeepGEMM 891d57b (deepseek-ai/DeepGEMM)",
              "csrc/utils/exception.hpp:17 (name \" error (\" file \":\" line \"): \" reason)"),
             ("DeepGEMM 59f2c07 (deepseek-ai/DeepGEMM)", "csrc/apis/attention.hpp:136"),
             ("0.5.12", "sglang/srt/layers/deep_gemm_wrapper/configurer.py:19"),
             ("0.5.12", "sglang/srt/layers/attention/nsa_backend.py:664")))

# (round 21) aiter (AMD's kernel library) keys its kernels by the GPU's gfx architecture (GFX_MAP) and
# refuses one it has no entry for: KeyError(f"Unknown GPU architecture: {gfx}. Supported architectures:
# {list(gfx_mapping.keys())}") (ROCm/aiter 8248e0cb70 aiter/jit/utils/chip_info.py:63-67, :75-79; the
# rocminfo lookup's is then wrapped in RuntimeError "Get GPU arch from rocminfo failed", :70-71, the same
# text quoted). It surfaces wherever aiter is first asked (under ServerArgs' checks too): the GPU, not
# the arguments. (vLLM round 22) Its C++ template kernels (csrc/cpp_itfs) check the archs they build for
# against a short list first: f"One of GPU archs of {archs} is invalid or not supported" (ROCm/aiter
# e4048607a5 csrc/cpp_itfs/utils.py:144-161; 227c47698e :100-117): the same refusal, in SGLang as in vLLM
_AITER_ARCH = (r"\bUnknown GPU architecture: gfx\w+\. Supported architectures: \[",
               r"\bOne of GPU archs of \[[^\]]*\] is invalid or not supported")
AITER_ARCH = Signature(
    "aiter_arch_unsupported", "unsupported_gpu", "aiter has no kernels for this GPU's architecture",
    ("AMD's kernel library (aiter) has no entry for this GPU's gfx architecture (the list it prints is "
     "what this build supports): use a GPU it lists, or an aiter release that lists this one (aiter "
     "added gfx1101-gfx1103 and gfx115x after gfx1100; the image's aiter is what to upgrade).",),
    patterns=_AITER_ARCH, lines=_AITER_ARCH, priority=81,
    sources=(("aiter (ROCm/aiter 8248e0cb70)", "aiter/jit/utils/chip_info.py:63-67, :75-79 (KeyError: "
                                               "Unknown GPU architecture: {gfx}. Supported architectures: "
                                               "[...])"),
             ("aiter (ROCm/aiter e4048607a5)", "csrc/cpp_itfs/utils.py:159-161 (One of GPU archs of {archs} "
                                               "is invalid or not supported)"),
             ("aiter (ROCm/aiter 2c62a2e881)", "aiter/jit/utils/chip_info.py:21-27 (GFX_MAP gains gfx1101 "
                                               "to gfx1153)")))

# (round 108) CUTLASS's TMA copies (Hopper's Tensor Memory Accelerator) encode their descriptor on the host with
# cuTensorMapEncodeTiled and, where the driver refuses, print the descriptor's fields and "Error: Failed to
# initialize the TMA descriptor <CUresult>" (NVIDIA/cutlass 62750a2 include/cute/atom/copy_traits_sm90_tma.hpp:
# 1022-1036; its assert(false) after it is compiled out under -DNDEBUG, flash-attention 9a79170 hopper/setup.py:526,
# so every descriptor of the call prints it). 801 is CUDA_ERROR_NOT_SUPPORTED: a GPU with no TMA (before sm90) was
# handed a Hopper kernel, as FlashAttention-3 built without its sm80 kernels picks its sm90 path whatever the GPU
# (hopper/static_switch.h:131-136, FLASHATTENTION_DISABLE_SM8x). Another code (1, a value the encode refuses) is a
# shape or layout, not the GPU
_TMA_UNSUPPORTED = r"\bError: Failed to initialize the TMA descriptor 801\b"
TMA_UNSUPPORTED = Signature(
    "tma_unsupported", "unsupported_gpu", "a Hopper (TMA) kernel ran on a GPU without TMA",
    ("A kernel built for Hopper's TMA (sm90) ran on a GPU that has none: CUDA refused its TMA descriptor "
     "with 801, not supported. A FlashAttention-3 built without its sm80 kernels (FLASHATTENTION_DISABLE_SM8x) "
     "takes that path on any GPU: pick another `--attention-backend` (flashinfer, triton) on this GPU, or "
     "serve on an sm90 GPU (H100/H200).",),
    patterns=(_TMA_UNSUPPORTED,), lines=(_TMA_UNSUPPORTED,), priority=81,
    sources=(("CUTLASS (NVIDIA/cutlass 62750a2)", "include/cute/atom/copy_traits_sm90_tma.hpp:1022-1036 (make_tma_"
                                                  "copy_desc: the descriptor's fields, then Error: Failed to "
                                                  "initialize the TMA descriptor <result>; assert(false))"),
             ("flash-attention (Dao-AILab/flash-attention 9a79170)",
              "hopper/static_switch.h:131-136 (ARCH_SWITCH: Arch 90 under FLASHATTENTION_DISABLE_SM8x), "
              "hopper/setup.py:526 (-DNDEBUG)"),
             ("CUDA driver API", "cuda.h (CUDA_ERROR_NOT_SUPPORTED = 801)")))

SIGNATURES = [TRITON_ARCH, DEEPGEMM_ARCH, DEEPGEMM_ARCH_ASSERT, AITER_ARCH, TMA_UNSUPPORTED]
