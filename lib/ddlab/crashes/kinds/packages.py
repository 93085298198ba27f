"""Packages: installed packages that do not match (``dependency_mismatch``).

An undefined symbol, a version check, an import that fails, a shared library that cannot be
opened, a compiled op called with arguments its build does not declare, a kernel library refusing
the installed CUDA toolkit, a device extension's op missing from its runtime library, a kernel
library's tuned config naming a kernel the installed library lacks, a KV-cache plug-in that did not patch the
pool SGLang built, the `kernels` package refusing a repository its older caller names without a revision.
:mod:`.launch` splices this list into its own.
"""

from __future__ import annotations

from ddlab.crashes.kinds import module_attrs, skipped_imports
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES"]


# (round 85) a quantization method whose ops SGLang takes from vLLM, with no vLLM installed: the message names
# the method and the vLLM release to install (0.4.4.post3 layers/quantization/__init__.py:110-111, vllm==0.7.2;
# 0.4.10.post2 :117-118, vllm==0.9.0.1; marlin FP8's stub names none, 0.4.10.post2 fp8.py:25)
_OPS_FROM = regex(r"(\S+(?: FP8)?) (?:quantization )?requires some operators from (\w+)\.(?:.*?`(pip install [^`]+)`)?")


def _missing_library(found: Found) -> str | None:
    if match := _OPS_FROM.search(found.text):
        install = match[3] or f"pip install {match[2]}"
        return (f"{match[1]} takes some of its kernels from {match[2]}, which is not installed where the server "
                f"runs (an image or environment without it): install it there (`{install}`, the version "
                f"this SGLang names), or serve a checkpoint whose quantization SGLang runs alone.")
    # assert_pkg_version's PackageNotFoundError branch (0.4.10.post2 utils.py:855, 0.5.23
    # utils/common.py:2435): no distribution of that name is installed where the server runs
    match = regex(r"\b([\w.-]+) with minimum required version (\S+?)\.? is not installed").search(found.text)
    if match:
        return (f"No {match[1]} distribution is installed in the server's environment (SGLang looks it up by "
                f"its package name; a build installed under another name, or into another environment, is "
                f"not seen): install {match[1]} {match[2]} or newer there (`pip show {match[1]}` must find "
                "it).")
    if match := regex(r"\b(lib[\w+-]+\.so(?:\.\d+)*): cannot open shared object file").search(found.text):
        return (f"{match[1]} is not on this system's library path: the package that loads it was built "
                "against it (a CUDA library's number is the CUDA major release it comes from). Install "
                "it, or the package's build for what is installed (`ldconfig -p | grep "
                f"{match[1].split('.so')[0]}` lists the versions present).")
    return None


DEPENDENCY = Signature(
    "dependency_mismatch", "dependency_mismatch", "installed packages do not match each other",
    ("A package is missing or was built against another version of its dependencies: an "
     "'undefined symbol' in sgl_kernel or flashinfer means it was built for another torch. "
     "Install the versions your SGLang release pins, in a fresh environment (`pip install "
     "\"sglang[all]==VERSION\"`), or the sgl-kernel / flashinfer build for the installed torch; "
     "`pip check` lists conflicts.",),
    patterns=(r"undefined symbol", r"Could not load any common_ops library",
              r"is less than the minimum required version", r"Please reinstall the latest version with",
              # the same check finding no installed distribution at all (PackageNotFoundError)
              r"with minimum required version \S+ is not installed",
              r"No module named '(?:sgl_kernel|sglang_kernel|flashinfer|vllm|triton|torch|transformers"
              r"|xgrammar|outlines|flash_attn|deep_gemm)",
              r"cannot import name '\w+' from '(?:sgl_kernel|flashinfer|torch|transformers|vllm|triton)",
              r"name 'sgl_\w+' is not defined",
              # a device's extension SGLang imports only where it is installed and the device
              # found (0.5.23 hardware_backend/npu/utils.py:216 ``import torch_npu``, guarded by
              # is_npu(), utils/common.py:189): the code that uses it ran without it
              r"name 'torch_npu' is not defined",
              # (round 22) DeepGEMM the same way: the wrapper imports deep_gemm only when its
              # configurer enabled it (0.5.23 layers/deep_gemm_wrapper/entrypoint.py:18-19), which it
              # does not where the import fails (configurer.py:47-50), yet calls it unguarded
              # (entrypoint.py:295, tf32_hc_prenorm_gemm); a paste may cut the line after the name
              r"name 'deep_gemm'(?: is not defined|\s*\Z)",
              # transformers' auto classes refusing a name they already ship: a model's
              # (_LazyAutoMapping.register, 4.56.1 models/auto/auto_factory.py:877) or (round 82) a config's
              # model type (_LazyConfigMapping.register, "... already used by a Transformers config, pick
              # another name.", 4.56.1 configuration_auto.py:1037, 5.6.0 :138), registered by SGLang's own
              # config at import (0.5.23 configs/qwen3_asr.py:167 passes exist_ok=True for it)
              r"is already used by a Transformers (?:model|config)",
              # (round 18) a quantization method whose ops SGLang takes from vLLM, with no vLLM
              # installed (0.4.10.post2 layers/quantization/__init__.py:116, fp8.py:25)
              r"\brequires some operators from vllm\b",
              r"GLIBCXX_[\d.]+' not found", r"version `GLIBC_[\d.]+' not found",
              # transformers' lazy module meets a backend its own BACKENDS_MAPPING lacks: files of
              # two transformers releases mixed in one install (an interrupted upgrade)
              r"Backend should be defined in the BACKENDS_MAPPING"),
    lines=(r"\.so: undefined symbol: ",
           # the dynamic linker's words in an import's message (a list item of sgl_kernel's report)
           r"^\W{0,3}(?:ImportError|OSError): \S+\.so[\w.]*: cannot open shared object file",
           r"Could not load any common_ops library", r"is less than the minimum required version",
           r"with minimum required version \S+ is not installed",
           # the rest of sgl_kernel's loader report, when a paste cut its headline
           r"^Error details from previous import attempts:",
           r"^Please ensure sgl_kernel is properly installed"),
    priority=78, phase="launch", detail=_missing_library,
    sources=(("0.4.10.post2", "sglang/srt/utils.py:851"),
             ("0.4.10.post2", "sglang/srt/utils.py:855"),
             ("0.4.10.post2", "sglang/srt/entrypoints/engine.py:653"),
             ("0.4.10.post2", "sglang/srt/layers/quantization/__init__.py:116"),
             ("0.4.10.post2", "sglang/srt/layers/quantization/fp8.py:25"),
             ("0.5.10", "sglang/srt/utils/common.py:1011"),
             ("0.5.10", "sglang/srt/entrypoints/engine.py:1140"),
             ("0.5.23", "sglang/srt/utils/common.py:2431"),
             ("0.5.23", "sglang/srt/utils/common.py:2435"),
             ("0.5.23", "sglang/srt/entrypoints/engine.py:1965"),
             ("0.5.23", "sglang/srt/layers/deep_gemm_wrapper/entrypoint.py:19"),
             ("0.5.23", "sglang/srt/layers/deep_gemm_wrapper/entrypoint.py:295"),
             ("transformers 5.19.0", "transformers/models/auto/auto_factory.py:681"),
             ("transformers 4.56.1", "transformers/models/auto/configuration_auto.py:1037"),
             ("transformers 5.6.0", "transformers/models/auto/configuration_auto.py:138"),
             ("transformers 5.22.2", "transformers/utils/import_utils.py:2503"),
             ("sgl-kernel (sgl-project/sglang 00acd8d)",
              "sgl-kernel/python/sgl_kernel/load_utils.py:48 (_load_architecture_specific_ops: its report)")))

_DEP_API = r"\b(?:Batch\w*Wrapper|flashinfer\w*|sgl_kernel\w*|LMCache\w*|lmcache\w*|vllm\w*|deep_gemm\w*)"

OP_MISMATCH = Signature(
    "compiled_op_mismatch", "dependency_mismatch", "a kernel library's API does not match this SGLang",
    ("SGLang called a compiled op (or a kernel library's function) with arguments its installed "
     "build does not take: the library (flashinfer, sgl-kernel, LMCache ...) is another version "
     "than this SGLang release was written for. Install the version the release pins (`pip "
     "install \"sglang[all]==VERSION\"` in a fresh environment, or the pinned flashinfer / "
     "sgl-kernel alone); `pip show flashinfer-python sgl-kernel` says what is installed.",),
    patterns=(r"\(\) expected at most \d+ argument\(s\) but received \d+ argument\(s\)",
              r"\(\) is missing value for argument '\w+'\. Declaration:",
              r"\(\) takes \d+ positional argument\(s\) but \d+ was/were given",
              # (round 75) pybind11's refusal when no overload of a compiled binding takes the call
              # (pybind11 2.13.6 include/pybind11/pybind11.h:1044-1046): DeepGEMM 2.4.2 renamed a keyword
              # SGLang's JIT warmup still passed (0.5.10 layers/deep_gemm_wrapper/compile_utils.py:301)
              r"\w\(\): incompatible (?:function|constructor) arguments\.",
              # the installed kernel library was built without an op this SGLang calls
              # (torch 2.13 torch/_ops.py:1393, _OpNamespace.__getattr__)
              r"'_OpNamespace' '\w+' object has no attribute '\w+'",
              _DEP_API + r"[\w.]*\(\) (?:missing \d+ required (?:positional |keyword-only )?arguments?"
              r"|got an unexpected keyword argument|takes \d+ positional arguments? but)"),
    priority=79,
    sources=(("torch 2.14.1", "torch/csrc/jit/python/pybind_utils.h:1022 (createStackForSchema: "
                              "expected at most N argument(s) but received M argument(s))"),
             ("torch 2.14.1", "torch/csrc/jit/python/pybind_utils.h:1070 (createStackForSchema: "
                              "is missing value for argument)"),
             ("torch 2.13.0", "torch/_ops.py:1393 ('_OpNamespace' 'NS' object has no attribute 'OP')"),
             ("pybind11 2.13.6", "pybind11/include/pybind11/pybind11.h:1044 (NAME(): incompatible function "
                                 "arguments. The following argument types are supported:)"),
             ("0.5.10", "sglang/srt/layers/deep_gemm_wrapper/compile_utils.py:301"),
             ("0.4.10.post2", "sglang/srt/layers/attention/flashinfer_backend.py:1339"),
             ("0.5.10", "sglang/srt/mem_cache/storage/lmcache/lmc_radix_cache.py:86")))

# the same, where the callee's name does not say its library but the calling module does: the
# last frame before the TypeError is SGLang's adapter named for a kernel library, calling into it
# (0.5.23 layers/moe/moe_runner/flashinfer_cutedsl.py:318 imports CuteDslMoEWrapper from
# flashinfer and builds it at :353); a call with arguments the callee does not declare raises
# there, with no frame of the callee
_ADAPTER_LAST_FRAME = (r'File "[^"]*[/\\](?:flashinfer|sgl_kernel|deep_gemm|lmcache|cutlass)\w*\.py", line \d+,? in \w+\n'
                       r'(?:(?!\s*File ").*\n)*(?:\w+\.)*TypeError: ')
ADAPTER_CALL_MISMATCH = Signature(
    "adapter_call_mismatch", "dependency_mismatch", "a kernel library's API does not match this SGLang",
    OP_MISMATCH.advice,
    patterns=(r"\(\) (?:got an unexpected keyword argument|missing \d+ required (?:positional |keyword-only )?"
              r"arguments?)",),
    types=r"(?:\w+\.)*TypeError", context=(_ADAPTER_LAST_FRAME,), priority=79,
    sources=(("0.5.23", "sglang/srt/layers/moe/moe_runner/flashinfer_cutedsl.py:353"),))

# (round 89) the same, the callee sgl-kernel's function imported by its bare name (0.4.5.post1's imports from
# sgl_kernel) and SGLang's frame the last (arity is checked before the callee runs): topk.py:30 imports
# moe_fused_gate, :236 passes the 5 its pin 0.0.9.post1 declares (sgl-kernel 0.1.0 moe.py:37 takes 7); capture too
_SGL_KERNEL_CALLEES = (r"(?:moe_fused_gate|moe_align_block_size|topk_softmax"
                       r"|(?:gemma_)?(?:fused_add_)?rmsnorm"
                       r"|(?:silu|gelu|gelu_tanh)_and_mul|apply_rope_with_cos_sin_cache_inplace|bmm_fp8"
                       r"|(?:fp8_blockwise_|fp8_|int8_|cutlass_)?scaled(?:_fp4)?_mm|scaled_fp4_quant"
                       r"|awq_dequantize|merge_state_v2|segment_packbits|build_tree_kernel_efficient"
                       r"|verify_tree_greedy|tree_speculative_sampling_target_only|flash_attn_\w+"
                       r"|(?:min_p|top_k_top_p)_sampling_from_probs|top_[kp]_renorm_prob)")
_SGLANG_LAST_FRAME = (r'File "[^"]*[/\\]sglang[/\\][^"]*\.py", line \d+,? in \w+\n'
                      r'(?:(?!\s*File ").*\n)*(?:\w+\.)*TypeError: ')
KERNEL_CALL_MISMATCH = Signature(
    "kernel_call_mismatch", "dependency_mismatch", "a kernel library's API does not match this SGLang",
    OP_MISMATCH.advice,
    patterns=(r"(?<![\w.])" + _SGL_KERNEL_CALLEES + r"\(\) (?:takes (?:from \d+ to )?\d+ "
              r"positional arguments? but \d+ (?:were|was) given|got an unexpected keyword argument)",),
    types=r"(?:\w+\.)*TypeError", context=(_SGLANG_LAST_FRAME,), priority=79,
    sources=(("sglang 0.4.5.post1", "sglang/srt/layers/moe/topk.py:30"),
             ("sglang 0.4.5.post1", "sglang/srt/layers/moe/topk.py:236"),
             ("sglang 0.4.5.post1", "sglang-0.4.5.post1.dist-info/METADATA:249 (sgl-kernel==0.0.9.post1)"),
             ("sgl-kernel 0.1.0", "sgl_kernel/moe.py:37 (def moe_fused_gate)")))

# (round 23) SGLang 0.1.x's router builds its regex FSM cache with outlines' TransformerTokenizer given
# the tokenizer's path, a str (0.1.13 constrained/fsm_cache.py:8, from managers/router/model_rpc.py:137);
# outlines 0.0.35 made that constructor take a loaded tokenizer and read its ``eos_token_id``
# (models/transformers.py:61-63; 0.0.34's took ``model_name: str``, :125), and SGLang 0.1.13 asks only
# ``outlines >=0.0.27`` (METADATA:243): the last frame is outlines' constructor reading the str
_OUTLINES_INIT = (r'File "[^"]*[/\\]outlines[/\\]models[/\\]transformers\.py", line \d+,? in __init__\n'
                  r"(?:(?!\s*File \").*\n)*AttributeError: 'str' object has no attribute ")
OUTLINES_TOKENIZER = Signature(
    "outlines_tokenizer_api", "dependency_mismatch", "outlines' tokenizer API does not match this SGLang",
    ("This SGLang passes the tokenizer's path (a str) to outlines' TransformerTokenizer, which since "
     "outlines 0.0.35 takes a loaded tokenizer: the installed outlines is newer than this SGLang was "
     "written for. Install `outlines<0.0.35` with SGLang 0.1.x, or upgrade SGLang.",),
    patterns=(r"'str' object has no attribute '\w+'",), types=r"(?:\w+\.)*AttributeError",
    context=(_OUTLINES_INIT,), priority=79, phase="launch",
    sources=(("sglang 0.1.13", "sglang/srt/constrained/fsm_cache.py:8"),
             ("sglang 0.1.13", "sglang/srt/managers/router/model_rpc.py:137"),
             ("sglang 0.1.13", "sglang-0.1.13.dist-info/METADATA:243 (Requires-Dist: outlines >=0.0.27)"),
             ("outlines 0.0.35", "outlines/models/transformers.py:61-63"),
             ("outlines 0.0.34", "outlines/models/transformers.py:125")))

# a kernel library refusing the installed CUDA toolkit (CUTLASS's CuTe DSL: "CuTe Experimental
# module is only supported on Cuda toolkit 13.1 and above!"): it refuses the same way wherever it
# is called, so a capture wrapper around it (0.5.23 model_executor/runner_backend_utils/__init__.py:18,
# "Capture cuda graph failed: ...") is no capture problem; it ranks above the capture failure
TOOLKIT_REFUSED = Signature(
    "toolkit_refused", "dependency_mismatch", "a kernel library refuses the installed CUDA toolkit",
    ("A kernel library refused the CUDA toolkit installed with it: it needs the newer toolkit its "
     "message names. Install that CUDA toolkit (or the CUDA build of torch and the library that "
     "bundles it), or the library release your SGLang release pins for this toolkit; turning CUDA "
     "graphs off does not help, the library refuses in eager mode too.",),
    patterns=(r"is only supported on (?:the )?CUDA toolkit [\d.]+ and (?:above|later|newer)",
              r"requires (?:the )?CUDA toolkit [\d.]+ or (?:above|later|newer)"),
    lines=(r"is only supported on (?:the )?CUDA toolkit [\d.]+ and (?:above|later|newer)",),
    priority=81, phase="launch",
    sources=(("0.5.23", "sglang/srt/model_executor/runner_backend_utils/__init__.py:18"),
             ("nvidia-cutlass-dsl-libs-base 4.5.0", "nvidia_cutlass_dsl/python_packages/cutlass/cute/"
                                                    "experimental/__init__.py:12 (raise "
                                                    "NotImplementedError: CuTe Experimental module is only "
                                                    "supported on Cuda toolkit 13.1 and above!)")))

# torch_npu's op plugin calling an Ascend op the installed CANN does not have: EXEC_NPU_CMD looks up
# OP and OPGetWorkspaceSize in CANN's op library and checks them ("OP or OPGetWorkspaceSize not in
# libopapi.so, or libopapi.so not found.": Ascend/op-plugin 7.1.0 op_plugin/utils/op_api_common.h:
# 1121-1123 in EXEC_NPU_CMD_V1, "...sonot found." there; 517f2e7 :350-359, with a space). The op
# plugin was built for a newer CANN (or another CANN environment is sourced): the same call fails in
# eager mode, so a capture wrapper around it ("Capture cuda graph failed: " + the error, 0.4.10.post2
# cuda_graph_runner.py:390, 0.5.23 runner/decode_cuda_graph_runner.py:603) is no capture problem;
# it ranks above the capture failure, as the toolkit's refusal does
_ASCEND_OP_MISSING = r"\b(\w+) or \1GetWorkspaceSize not in [\w.]+\.so, or [\w.]+\.so ?not found"
ASCEND_OP_MISSING = Signature(
    "ascend_op_missing", "dependency_mismatch", "the installed CANN lacks an op torch_npu calls",
    ("torch_npu (its op plugin) called an Ascend op that the installed CANN's op library "
     "(libopapi.so) does not have: the CANN toolkit and kernels are older than the torch_npu "
     "(and SGLang) release needs, or the CANN environment (`source "
     "/usr/local/Ascend/ascend-toolkit/set_env.sh`) is not the one loaded. Install the CANN "
     "release that torch_npu release pins; turning graphs off does not help, the op is missing "
     "in eager mode too.",),
    patterns=(_ASCEND_OP_MISSING,), lines=(_ASCEND_OP_MISSING,), priority=81,
    sources=(("Ascend/op-plugin 7.1.0", "op_plugin/utils/op_api_common.h:1121-1123 (EXEC_NPU_CMD_V1)"),
             ("Ascend/op-plugin 517f2e7", "op_plugin/utils/op_api_common.h:350-359 (EXEC_NPU_CMD_V1)"),
             ("torch-npu 2.8.0", "torch_npu/lib/libtorch_npu.so (' not in ', ', or ', 'libopapi.so')"),
             ("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:390"),
             ("0.5.23", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:603")))

# (round 20) SGLang setting a hook on Triton's knobs that the installed Triton does not have: Triton
# groups its settings in one class per group, named <group>_knobs (triton 3.4.0 triton/knobs.py:264-452,
# runtime_knobs at :403; 3.5.0 :268-505), and adds hooks to them release by release: 3.5.0 declares
# runtime_knobs.kernel_load_start_hook (:459), 3.4.0's runtime_knobs has none (:403-415). An
# AttributeError on one of these classes is code written for a newer Triton than the installed one;
# SGLang 0.5.23 looks the hook up first for that reason (utils/triton_load_watch.py:50-55: "Triton 3.4
# builds used by ROCm expose triton.knobs without these hooks")
_TRITON_KNOBS = (r"'(?:base|build|redis|cache|compilation|autotuning|runtime|language|nvidia|amd|proton)_knobs' "
                 r"object has no attribute '\w+'")
TRITON_KNOB_MISSING = Signature(
    "triton_knob_missing", "dependency_mismatch", "the installed Triton lacks a setting this SGLang uses",
    ("SGLang used a Triton setting (a knob or hook of `triton.knobs`) that the installed Triton does not "
     "have: this Triton is older than the one the SGLang build was written for (ROCm's Triton 3.4 builds "
     "lack the kernel-load hooks of 3.5). Install the Triton that the SGLang release's torch brings "
     "(`pip show triton` / `pytorch-triton-rocm` says what is installed), or an SGLang release that "
     "checks for the hook first (0.5.23 does).",),
    patterns=(_TRITON_KNOBS,), types=r"(?:\w+\.)*AttributeError", priority=79,
    sources=(("triton 3.4.0", "triton/knobs.py:403-415 (class runtime_knobs, no kernel_load_start_hook)"),
             ("triton 3.5.0", "triton/knobs.py:459 (runtime_knobs.kernel_load_start_hook)"),
             ("0.5.23", "sglang/srt/utils/triton_load_watch.py:53")))

# (round 20) CANN's op runtime (nnopbase) finding no kernel configuration for an op: no op kernel
# package it searches (the custom ones, then the built-in ops folders) holds the op's JSON, nor its
# static library (hicann/opbase 313b014 src/nnopbase/composite_op/aclnn_engine/kernel_mgr.cpp:223,
# :281 "Parse dynamic kernel config fail."); AclOpKernelInit fails, and its own message names the
# causes: CANN's environment not sourced, the kernel package not installed, or an op the chip or
# version does not support (src/nnopbase/common/inc/kernel_mgr.h:50-52). torch_npu's op call fails
# with it ("call aclnnArange failed, error code is 561103"), CANN's inner error below
_ASCEND_KERNEL_CONFIG = r"\bParse dynamic kernel config fail\."
ASCEND_KERNEL_CONFIG = Signature(
    "ascend_kernel_config_missing", "dependency_mismatch", "CANN found no kernel package holding an op's kernels",
    ("CANN's op runtime found no kernel configuration for the op that torch_npu called (\"Parse dynamic "
     "kernel config fail\"): the CANN op kernel package is not installed, is not the one for this "
     "toolkit, or the CANN environment is not sourced (`source /usr/local/Ascend/ascend-toolkit/"
     "set_env.sh`). Install the kernel package (`Ascend-cann-kernels-<chip>`) of the same CANN release "
     "as the toolkit, for this chip, and the CANN release the torch_npu release pins.",),
    patterns=(_ASCEND_KERNEL_CONFIG,), lines=(_ASCEND_KERNEL_CONFIG,), priority=81,
    sources=(("CANN opbase (hicann/opbase 313b014)",
              "src/nnopbase/composite_op/aclnn_engine/kernel_mgr.cpp:223, :281 (Parse dynamic kernel config fail.)"),
             ("CANN opbase (hicann/opbase 313b014)",
              "src/nnopbase/common/inc/kernel_mgr.h:50-52 (AclOpKernelInit failed opType. Maybe caused by ...)")))

# (round 48) aiter's fused MoE runs a FlyDSL kernel only by a name a tuned config gives it: the row of its
# tuned configs (aiter/configs, or the file AITER_CONFIG_FMOE names) for this MoE shape supplies
# kernelName1 (ROCm/aiter cf12b13 aiter/fused_moe.py:916); no row, or AITER_BYPASS_TUNE_CONFIG=1, leaves it
# "" (:864-866) and no FlyDSL wrapper runs (:955). The wrapper looks the name up in the FlyDSL kernel table
# the installed aiter builds and raises f"Invalid FlyDSL kernel name: {kernelName}" where it is absent
# (:646-648, stage 2 :699; the lookup aiter/ops/flydsl/moe_kernels.py:39-58). So the name is known to a
# tuned config and not to the kernels installed with it: a config and a kernel table of different aiter
# commits (e991be1c43 took tile_m 16 off the stage-1 table, moe_kernels.py:71 at cf12b13, while
# model_configs/dsv3_fp4_tuned_fmoe.csv:3 still named a t16 stage-1 kernel until 6890159397 retuned it),
# not a kernel refusing the model's shapes. An empty name (a caller outside that dispatch) is not read.
_AITER_FLYDSL_NAME = r"\bInvalid FlyDSL kernel name: flydsl_\w+"
AITER_TUNED_KERNEL_MISSING = Signature(
    "aiter_tuned_kernel_missing", "dependency_mismatch", "aiter's tuned config names a kernel the installed aiter lacks",
    ("aiter's fused MoE took this FlyDSL kernel name from a tuned config (the CSVs under aiter/configs, or the "
     "file AITER_CONFIG_FMOE names) and the installed aiter's FlyDSL kernel table has no such kernel: the "
     "tuned config and the kernels come from different aiter commits. Use the aiter your SGLang release or "
     "image pins, or a tuned config written by the installed aiter; `AITER_BYPASS_TUNE_CONFIG=1` runs aiter's "
     "default kernels instead of the tuned ones.",),
    patterns=(_AITER_FLYDSL_NAME,), types=r"(?:\w+\.)*ValueError", priority=80,
    sources=(("aiter (ROCm/aiter cf12b13)", "aiter/fused_moe.py:646-648, :699 (Invalid FlyDSL kernel name: "
              "{kernelName})"),
             ("aiter (ROCm/aiter cf12b13)", "aiter/fused_moe.py:864-866, :916, :955 (the name comes from a "
              "tuned config row only)"),
             ("aiter (ROCm/aiter cf12b13)", "aiter/ops/flydsl/moe_kernels.py:39-58 (get_flydsl_kernel_params), "
              ":71 (stage-1 tile_m 32, 64, 128)")))

# (round 18) SGLang 0.2 / 0.3 load their model classes through vLLM's loader, having patched vLLM's
# ModelRegistry method with their own lookup (0.2.12 model_executor/model_runner.py:447, setattr(
# ModelRegistry, "load_model_cls", ...), with vllm==0.5.4 pinned; 0.3.0 :625, "_try_load_model_cls",
# with vllm==0.5.5). vLLM 0.5.5 renamed the method (vllm 0.5.5 model_executor/models/__init__.py:142,
# _try_load_model_cls; the loader calls resolve_model_cls, :160): with another vLLM than the pinned
# one the patch misses and vLLM's own class of the architecture is built. SGLang's runner then calls
# it with its own arguments (0.2.12 model_runner.py:373, self.model.forward(input_ids, positions,
# input_metadata)) and vLLM's forward (vllm 0.5.5 models/deepseek_v2.py:496-501: input_ids, positions,
# kv_caches, attn_metadata, ...) misses the arguments only vLLM passes
_VLLM_FORWARD = r"\.forward\(\) missing \d+ required positional arguments?: (?:'kv_caches' and )?'attn_metadata'"
VLLM_MODEL_CLASS = Signature(
    "vllm_model_class", "dependency_mismatch", "SGLang called vLLM's model class (the installed vLLM is not the pinned one)",
    ("SGLang's model runner called vLLM's own class of the model (its forward wants vLLM's "
     "attn_metadata): SGLang 0.2 / 0.3 patch vLLM's model registry to load their own classes, and the "
     "patch misses with a vLLM other than the one the release pins (0.2.x: vllm 0.5.4; 0.3.0: "
     "vllm 0.5.5). Install the vLLM your SGLang release pins (`pip install \"sglang[srt]==VERSION\"` "
     "in a fresh environment); `pip show vllm` says what is installed.",),
    patterns=(_VLLM_FORWARD,), types=r"(?:\w+\.)*TypeError", priority=80,
    sources=(("sglang 0.2.12", "sglang/srt/model_executor/model_runner.py:447"),
             ("sglang 0.2.12", "sglang/srt/model_executor/model_runner.py:373"),
             ("sglang 0.2.12", "sglang-0.2.12.dist-info/METADATA:247 (Requires-Dist: vllm==0.5.4)"),
             ("sglang 0.3.0", "sglang/srt/model_executor/model_runner.py:625"),
             ("vllm 0.5.5", "vllm/model_executor/models/__init__.py:142 (_try_load_model_cls), :160"),
             ("vllm 0.5.5", "vllm/model_executor/models/deepseek_v2.py:496-501 (forward: kv_caches, attn_metadata)")))

# (round 57) kvcached (elastic KV cache) patches SGLang's classes when SGLang is imported: it aliases the
# allocator to its own (ovg-project/kvcached v0.1.3 kvcached/integration/sglang/patches.py:52-61, :100) and
# MHATokenToKVPool alone to its elastic pool, which carries ``kvcached_allocator`` (:134-169, :250). SGLang builds
# the pool for the model's attention (0.5.6 model_executor/model_runner.py:1875 MLATokenToKVPool for an MLA model,
# :1963 MHATokenToKVPool) and hands it to the allocator (:2009-2015); kvcached's allocator raises where the pool is
# not one it patched (patches.py:57-58, "... requires elastic MHA pool"). So the installed kvcached does not cover
# the pool this SGLang builds for this model: v0.1.4 added the MLA pool (patches.py:492-612) and the paged
# allocator for page sizes over 1 (:151), the message kept for pools it still lacks
_KVCACHED_POOL = r"\bElastic\w*TokenToKVPoolAllocator requires elastic \w+ pool"
KVCACHED_POOL_UNPATCHED = Signature(
    "kvcached_pool_unpatched", "dependency_mismatch", "kvcached does not patch the KV pool SGLang built for this model",
    ("kvcached's elastic allocator was handed a KV pool that kvcached did not patch: the installed kvcached "
     "replaces only some of SGLang's pool classes (up to v0.1.3 only MHATokenToKVPool; an MLA model such as "
     "DeepSeek gets MLATokenToKVPool, patched from v0.1.4 on). Install a kvcached whose SGLang patches cover "
     "this model's pool and this SGLang release (`pip install -U kvcached`; `pip show kvcached sglang` says what "
     "is installed), or start the server without kvcached (unset ENABLE_KVCACHED).",),
    patterns=(_KVCACHED_POOL,), types=r"(?:\w+\.)*ValueError", priority=80,
    sources=(("kvcached (ovg-project/kvcached v0.1.3)", "kvcached/integration/sglang/patches.py:57-58 (requires "
              "elastic MHA pool), :134-169, :250 (only MHATokenToKVPool aliased)"),
             ("kvcached (ovg-project/kvcached v0.1.4)", "kvcached/integration/sglang/patches.py:492-612 "
              "(ElasticMLATokenToKVPool), :151"),
             ("sglang 0.5.6", "sglang/srt/model_executor/model_runner.py:1875 (MLATokenToKVPool), :1963, "
              ":2009-2015 (TokenToKVPoolAllocator(..., kvcache=self.token_to_kv_pool))")))

# (round 69) The `kernels` package (huggingface/kernels) made a layer's or function's hub repository name its
# revision or version: 0.15.2's LayerRepository / FuncRepository raise "Either a revision or a version must be
# specified." when given neither (kernels/layer/layer.py:75-76, layer/func.py:73-74), where 0.14.0 resolved
# them later (layer/layer.py:72-73 refused only both). transformers 5.6.0 builds its kernel mapping at import
# with neither (integrations/hub_kernels.py:89-92) and asks for kernels>=0.12.0,<0.13 (METADATA:62): a newer
# kernels than the caller was written for. "..., not both." is a caller's own two arguments, not read here
_KERNELS_REVISION = r"\bEither a revision or a version must be specified\.(?![^\n]*not both)"
KERNELS_REVISION_REQUIRED = Signature(
    "kernels_revision_required", "dependency_mismatch",
    "the installed `kernels` package is newer than the code calling it",
    ("The `kernels` package (Hugging Face's hub kernels) refused a kernel repository given with neither a "
     "revision nor a version: from 0.15 it wants one, and the caller (transformers' hub_kernels, which "
     "transformers 5.x builds at import) was written for an older `kernels` (transformers 5.6.0 asks for "
     "kernels>=0.12.0,<0.13). Install the `kernels` release that the installed transformers pins (`pip "
     "show kernels transformers` says what is installed; `pip install \"kernels<0.13\"` for transformers "
     "5.6), or uninstall `kernels` if nothing needs it.",),
    patterns=(_KERNELS_REVISION,), types=r"(?:\w+\.)*ValueError", lines=(rf"^(?:ValueError: )?{_KERNELS_REVISION}",),
    priority=79,
    sources=(("kernels 0.15.2", "kernels/layer/layer.py:75-76 (LayerRepository), kernels/layer/func.py:73-74 "
                                "(FuncRepository)"),
             ("kernels 0.14.0", "kernels/layer/layer.py:72-73 (only both refused)"),
             ("transformers 5.6.0", "transformers/integrations/hub_kernels.py:89-92 (LayerRepository with neither)"),
             ("transformers 5.6.0", "transformers-5.6.0.dist-info/METADATA:62 (kernels<0.13,>=0.12.0)")))

IMPORT_ERROR = Signature(
    "import_error", "dependency_mismatch", "a module could not be imported",
    ("A module could not be imported: install the package it names at the version your SGLang "
     "release pins (`pip check` lists conflicts).",),
    patterns=(r".",), types=r"(?:\w+\.)*(?:ImportError|ModuleNotFoundError)", priority=45,
    sources=(("python", "ImportError / ModuleNotFoundError"),))

SIGNATURES = [DEPENDENCY, OP_MISMATCH, ADAPTER_CALL_MISMATCH,
              KERNEL_CALL_MISMATCH,  # (round 89)
              OUTLINES_TOKENIZER, TOOLKIT_REFUSED, ASCEND_OP_MISSING,
              TRITON_KNOB_MISSING, ASCEND_KERNEL_CONFIG, AITER_TUNED_KERNEL_MISSING, VLLM_MODEL_CLASS,
              KVCACHED_POOL_UNPATCHED, IMPORT_ERROR,
              KERNELS_REVISION_REQUIRED, *skipped_imports.SIGNATURES, *module_attrs.SIGNATURES]  # (rounds 69, 90, 95)
