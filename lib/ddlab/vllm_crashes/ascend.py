"""vLLM on Ascend NPUs (vllm-ascend): the texts held-out round 29 showed, of CANN's runtime, CANN's op
runtime, triton-ascend and vllm-ascend's ACL graphs and drafter (a stream synchronized while it is captured,
an AI CPU kernel's exception, no kernel package for an op, Triton's launcher failing to build, a captured
graph's parameters updated with a None, a decode batch padded to a FULL graph's size, the drafter's
chunked-prefill mask), and round 41's (torch_npu's HCCL call failing, vllm-ascend calling a vLLM API with
arguments the installed vLLM does not take), and round 63's (torch_npu not importing, vLLM refusing the
compile backend vllm-ascend set, a runner buffer read as vLLM's CpuGpuBuffer on a bare tensor), and round 78's (a
layer missing from the checkpoint's quant description), and round 109's (a graph mode refused for the model's type),
mapped onto ddlab's kinds with advice in vLLM's flags.

Cited as :mod:`.vllm` cites: ``(release, "vllm_ascend/path.py:line")`` in vllm-ascend's wheels, a library's
file by name. Part of :mod:`.vllm`'s list, beside :mod:`.adapters`.
"""

from __future__ import annotations

from ddlab.crashes.kinds import packages
from ddlab.device_crashes import npu
from ddlab.crashes.kinds.graphs import NPU_CAPTURE_SYNC_TEXT
from ddlab.vllm_crashes.graphs import CAPTURE_TEXT
from ddlab.vllm_crashes.library import KERNEL_COMPILE, NCCL, from_texts, voiced
from ddlab.crashes.signature import NO_LATER_FRAME, Signature

__all__ = ["SIGNATURES", "NPU_CAPTURE_SYNC", "NPU_AICPU_FAULT", "ASCEND_KERNEL_CONFIG",
           "TRITON_ASCEND_LAUNCHER", "ACL_GRAPH_UPDATE_NONE", "DRAFT_SPLITFUSE_MASK",
           "FULL_GRAPH_PADDING", "HCCL_CALL_FAILED", "PLUGIN_CALL_MISMATCH", "TORCH_NPU_MISSING",
           "PIECEWISE_PLUGIN_BACKEND", "RUNNER_BUFFER_MISMATCH", "NPU_DTYPE_REFUSED", "ASCEND_QUANT_DESCRIPTION",
           "ASCEND_MLA_GRAPH_HEADS", "ASCEND_GRAPH_MODE_MODEL"]

# (round 29) CANN's runtime refusing to synchronize a stream that is being captured into a graph
# (hicann/runtime da678a9 src/runtime/feature/src/api_impl/api_error.cc:1038, StreamSynchronize: "Not allow
# to synchronize captured-stream, stream_id=%d."; 681ef76 src/runtime/core/src/context/context.cc:1233 the
# device-wide sync's "..., device_id=%u, stream_id=%d."), error 107027 ACL_ERROR_RT_STREAM_CAPTURED, "stream
# is captured" (include/external/acl/error_codes/rt_error_codes.h:48; src/runtime/core/src/common/
# errcode_manage.cc:147): a host sync inside an ACL graph capture, as CUDA's "operation not permitted when
# stream is capturing" is (the refusal's text from the kinds' capture failure, crashes/kinds/graphs.py)
_NPU_CAPTURE_SYNC = (NPU_CAPTURE_SYNC_TEXT, r"\breason=\[stream is captured\]")
NPU_CAPTURE_SYNC = from_texts(
    CAPTURE_TEXT, name="vllm_npu_capture_sync",
    title="a stream was synchronized while an ACL graph captured it",
    advice=("An operation synchronized the NPU stream while vllm-ascend captured it into an ACL graph (CANN "
            "refuses a sync inside a capture: 107027, 'stream is captured'): an op that copies to the host "
            "or waits on the device ran in the captured forward. `--enforce-eager` (no ACL graphs) confirms "
            "it and keeps serving; then a vllm-ascend release whose graph mode supports this model, "
            "quantization and parallel layout, or the op's capture-safe path.",),
    texts=_NPU_CAPTURE_SYNC, priority=80, phase="graph_capture",
    sources=(("CANN runtime (hicann/runtime da678a9)",
              "src/runtime/feature/src/api_impl/api_error.cc:1038 (Not allow to synchronize captured-stream, "
              "stream_id=%d.)"),
             ("CANN runtime (hicann/runtime 681ef76)", "src/runtime/core/src/context/context.cc:1233"),
             ("CANN runtime (hicann/runtime 681ef76)", "src/runtime/core/src/common/errcode_manage.cc:147 "
                                                       "(RT_ERROR_STREAM_CAPTURED: stream is captured)"),
             ("CANN runtime (hicann/runtime 681ef76)", "include/external/acl/error_codes/rt_error_codes.h:48 "
                                                       "(ACL_ERROR_RT_STREAM_CAPTURED 107027)")))

# (round 29) CANN's runtime reporting an AI CPU kernel's exception from the device (hicann/runtime 681ef76
# src/runtime/core/src/device/device_error_proc.cc:1243-1244 "The error from device(chipId:%u, dieId:%u),
# serial number is %llu, an exception occurred during AICPU execution, ...", :1258-1259 its fftsplus form):
# the AI CPU's fault, which torch_npu's fault codes already read as the NPU's illegal access (507018,
# AI CPU exception: npu.NPU_FAULT_CODE); here the synchronize returned the model's 507011
_NPU_AICPU = (r"The error from device\(chipId:\d+, dieId:\d+\).{0,80}an exception occurred during "
              r"(?:fftsplus )?AICPU execution",)
NPU_AICPU_FAULT = from_texts(
    npu.NPU_KERNEL_FAULT, name="vllm_npu_aicpu_fault",
    title="an Ascend NPU's AI CPU kernel raised an exception",
    advice=("An NPU kernel on the AI CPU raised an exception (CANN's device record names its stream and "
            "task; the op is on the 'Op execute failed. origin_op_name [...]' line when the log has it): "
            "rerun with ASCEND_LAUNCH_BLOCKING=1 and read the device's log (ASCEND_GLOBAL_LOG_LEVEL=1, "
            "ASCEND_SLOG_PRINT_TO_STDOUT=1); then `--enforce-eager`, and for an expert-parallel dispatch op "
            "(MoeDistributeDispatch) the HCCL settings and a vllm-ascend / CANN release that supports this "
            "layout.",),
    texts=_NPU_AICPU, priority=50, running=True,
    sources=(("CANN runtime (hicann/runtime 681ef76)",
              "src/runtime/core/src/device/device_error_proc.cc:1243-1244 (an exception occurred during "
              "AICPU execution)"),
             ("CANN runtime (hicann/runtime 681ef76)",
              "src/runtime/core/src/device/device_error_proc.cc:1258-1259 (an exception occurred during "
              "fftsplus AICPU execution)")))

# (round 29) CANN's op runtime finding no kernel package for an op that torch_npu called (SGLang's
# ascend_kernel_config_missing, hicann/opbase 313b014 kernel_mgr.cpp:223, :281), in vLLM's words
ASCEND_KERNEL_CONFIG = voiced(packages.ASCEND_KERNEL_CONFIG, (
    "CANN's op runtime found no kernel configuration for an op torch_npu called (\"Parse dynamic kernel "
    "config fail\"): the CANN op kernel package for this chip is not installed, belongs to another CANN "
    "release, or the CANN environment is not sourced (`source /usr/local/Ascend/ascend-toolkit/set_env.sh`). "
    "Install the kernel package of the toolkit's release for this chip, the CANN release this vllm-ascend "
    "and torch_npu pin.",))

# (round 29) triton-ascend builds each kernel's launcher (launcher_cxx11abi{0,1}: triton-ascend 3.2.0
# triton/backends/ascend/driver.py:254) with the host compiler against torch_npu's headers, and raises the
# compiler's stderr when that fails: "Failed to compile {src_path}, error: {result.stderr}"
# (triton/backends/ascend/utils.py:413); clang's last line counts the errors ("2 errors generated.")
_LAUNCHER = (r"\bFailed to compile \S+\.(?:cxx|cpp|c), error: ",)
TRITON_ASCEND_LAUNCHER = from_texts(
    KERNEL_COMPILE, name="vllm_triton_ascend_launcher",
    title="triton-ascend could not build a kernel's launcher",
    advice=("triton-ascend could not compile a kernel's C++ launcher against torch_npu's and CANN's headers "
            "(the compiler's errors follow the path): the installed torch_npu was built for another CANN "
            "release than the toolkit's headers, or the compiler is not the one they expect. Install the "
            "torch_npu, CANN and triton-ascend releases this vllm-ascend pins, clear ~/.triton/cache, and "
            "`--enforce-eager` to avoid the Triton kernels while you do.",),
    texts=_LAUNCHER, priority=80, fatal=True,
    sources=(("triton-ascend 3.2.0", "triton/backends/ascend/utils.py:413 (Failed to compile {src_path}, "
                                     "error: {result.stderr})"),
             ("triton-ascend 3.2.0",
              "triton/backends/ascend/driver.py:254 (launcher_cxx11abi{use_cxx11_abi})")))

# (round 29) vllm-ascend updates a captured ACL graph's attention parameters before each replay, zipping the
# batch's attention metadata with the parameters captured for that size (vllm_ascend 0.11.0rc0
# compilation/acl_graph.py:196 update_attn_params; 0.12.0rc1 :248 update_mla_attn_params, :203, :316,
# :379): a None among them is a batch the captured graph cannot take, as SGLang's replay_none reads
_UPDATE_FRAME = r'acl_graph\.py", line \d+, in update_\w*params\s*$'
ACL_GRAPH_UPDATE_NONE = Signature(
    "vllm_acl_graph_update_none", "cuda_graph_replay",
    "updating a captured ACL graph's attention parameters met a None",
    ("vllm-ascend updates the captured ACL graph's attention parameters for each batch before replaying it, "
     "and one of the batch's inputs (its attention metadata, or the parameters captured for this size) was "
     "None: a batch the graph path was not built for (a dummy batch of an idle DP rank, a drafter's step). "
     "`--enforce-eager` (no ACL graphs) confirms it and keeps serving; else another `cudagraph_mode` in "
     "`--compilation-config` (PIECEWISE instead of FULL_DECODE_ONLY) or a newer vllm-ascend.",),
    types=r"TypeError", patterns=(r"'NoneType' object is not (?:iterable|subscriptable)",),
    context=(_UPDATE_FRAME,), priority=76, phase="serving",
    sources=(("vllm_ascend 0.11.0rc0", "vllm_ascend/compilation/acl_graph.py:196 (update_attn_params: "
                                       "for key, param, handle, event in zip()"),
             ("vllm_ascend 0.12.0rc1", "vllm_ascend/compilation/acl_graph.py:248 (update_mla_attn_params)")))

# (round 29) vllm-ascend's EAGLE proposer builds the chunked-prefill ("splitfuse") attention mask for its
# draft steps from the target's sequence lengths and the draft's positions (vllm_ascend 0.11.0rc0
# spec_decode/eagle_proposer.py:427, :571); the builder sizes its cached mask by the longest sequence and
# index_selects the positions' rows (attention/attention_mask.py:91-99): a draft position past the cache
# is the speculative path failing in combination with chunked prefill, while serving
_SPLITFUSE = r', in get_splitfuse_attn_mask\s*$'
_PROPOSER = r'spec_decode[/\\]\w+_proposer\.py", line \d+, in \w+\s*$'
DRAFT_SPLITFUSE_MASK = Signature(
    "vllm_ascend_draft_splitfuse_mask", "spec_feature_conflict",
    "the drafter's chunked-prefill attention mask failed (speculative decoding with chunked prefill)",
    ("vllm-ascend's drafter built its chunked-prefill (splitfuse) attention mask for the draft tokens and "
     "indexed past the mask it cached for the batch's sequence lengths: speculative decoding combined with "
     "chunked prefill on this release. Serve without `--speculative-config` (or with "
     "`--no-enable-chunked-prefill`) to confirm it, then a vllm-ascend release that fixes the drafter's "
     "mask.",),
    patterns=(r".",), types=r"(?:\w+\.)*(?:IndexError|RuntimeError)", context=(_PROPOSER, _SPLITFUSE),
    priority=78, running=True, phase="serving",
    sources=(("vllm_ascend 0.11.0rc0", "vllm_ascend/spec_decode/eagle_proposer.py:427 "
                                       "(self.attn_mask_builder.get_splitfuse_attn_mask()"),
             ("vllm_ascend 0.11.0rc0", "vllm_ascend/attention/attention_mask.py:97 (torch.index_select("
                                       "self.attn_mask_cache, ...))")))

# (round 29) with FULL decode graphs, vllm-ascend's model runner pads a uniform decode batch to the request
# count of the graph it will replay and fills the padded requests' query_start_loc (vllm_ascend 0.12.0rc1
# worker/model_runner_v1.py:1021-1036: "if self.compilation_config.cudagraph_mode.decode_mode() ==
# CUDAGraphMode.FULL and uniform_decode: num_reqs_padded = ...", then
# "self.query_start_loc.gpu[num_reqs + 1:num_reqs_padded + 1] = fill_values"): a shape error on that line is
# the batch not fitting the captured graph's padding
_PAD_LINE = r"^\s*self\.query_start_loc(?:\.gpu)?\[num_reqs \+ 1:num_reqs_padded"
FULL_GRAPH_PADDING = Signature(
    "vllm_ascend_full_graph_padding", "cuda_graph_replay",
    "padding a decode batch to a FULL ACL graph's size failed",
    ("vllm-ascend pads a decode batch to the request count of the FULL decode graph it replays, and the "
     "batch did not fit that padding (its query offsets and the padded slots disagree in size): a batch the "
     "captured graph path cannot take. `--enforce-eager` (no ACL graphs) or `\"cudagraph_mode\": "
     "\"PIECEWISE\"` in `--compilation-config` keeps serving; then a newer vllm-ascend.",),
    patterns=(r".",), types=r"(?:\w+\.)*(?:RuntimeError|IndexError|ValueError)",
    context=(r", in _prepare_inputs\s*$", _PAD_LINE), priority=77, running=True, phase="serving",
    sources=(("vllm_ascend 0.12.0rc1", "vllm_ascend/worker/model_runner_v1.py:1021 (cudagraph_mode."
                                       "decode_mode() == CUDAGraphMode.FULL and uniform_decode)"),
             ("vllm_ascend 0.12.0rc1", "vllm_ascend/worker/model_runner_v1.py:1035 (self.query_start_loc.gpu["
                                       "num_reqs + 1:num_reqs_padded +)")))

# (round 41) torch_npu's process group checks each HCCL call with HCCL_CHECK_ERROR, which throws
# "<func>:<file>:<line> HCCL function error: <the call>, error code is <n>" with DIST_ERROR(ErrCode::HCCL)'s
# "ERR02200 DIST call hccl api failed." (torch_npu 2.5.1 include/torch_npu/csrc/distributed/HCCLUtils.hpp:15-32,
# the text at :27; torch_npu/utils/_error_code.py:32, HCCL = (200, "call hccl api failed")); creating a
# communicator is one such call (HCCLUtils.hpp:102, hcclCommInitRootInfoConfig): HCCL is NCCL's Ascend twin;
# (round 83) a collective run as an op through torch_npu's op queue is checked by NPU_CHECK_ERROR instead,
# "<func>:<file>:<line> OPS function error: <the call>, error code is <n>" (NPUException.h:196 (2.5.1)), the call
# an HCCL one (HcclAllreduce) where the op is a collective
_HCCL_CALL = (r"\bHCCL function error: [Hh]ccl\w+\(", r"\bERR02200 DIST call hccl api failed\b",
              r"\bOPS function error: Hccl[A-Z]\w*, error code is \d+")
HCCL_CALL_FAILED = from_texts(
    NCCL, name="vllm_hccl_call_failed", title="an HCCL call failed (torch_npu's HCCL process group)",
    advice=("An HCCL call between the NPUs failed (the call is named after 'HCCL function error:'; "
            "hcclCommInitRootInfoConfig is a communicator being created, for pipeline parallelism at the "
            "first send between stages): check that every NPU of the parallel layout is visible and free "
            "(ASCEND_RT_VISIBLE_DEVICES), the HCCL settings (HCCL_CONNECT_TIMEOUT, HCCL_IF_IP, "
            "HCCL_BUFFSIZE) and CANN's device log (ASCEND_GLOBAL_LOG_LEVEL=1); that the chip supports "
            "this layout (the 310P's HCCL does not do everything the 910's does); another rank's error, "
            "if any, is the real cause.",),
    texts=_HCCL_CALL, priority=30,
    sources=(("torch_npu 2.5.1", "torch_npu/include/torch_npu/csrc/distributed/HCCLUtils.hpp:27 (HCCL function "
                                 "error: ..., error code is ...)"),
             ("torch_npu 2.5.1", "torch_npu/include/torch_npu/csrc/distributed/HCCLUtils.hpp:102 "
                                 "(hcclCommInitRootInfoConfig)"),
             ("torch_npu 2.5.1", "torch_npu/utils/_error_code.py:32 (call hccl api failed)"),
             ("torch_npu 2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/NPUException.h:196 (OPS function "
                                 "error: ..., error code is ...)")))

# (round 41) vllm-ascend is a separate package that drives vLLM's own classes from its model runner, each
# release written for one vLLM release; vLLM changes those signatures between releases (CudagraphDispatcher
# .dispatch(self, batch_descriptor, use_cascade_attn=False) in 0.11.2 v1/cudagraph_dispatcher.py:118-119,
# dispatch(self, num_tokens, uniform_decode, has_lora, disable_full=False) in 0.13.0 :143-148; vllm_ascend
# 0.11.0rc0 worker/model_runner_v1.py:1947 calls dispatch(batch_descriptor)). Python raises a call's
# argument error at the call, so the last frame is the caller's: a TypeError of that kind raised in
# vllm_ascend's own frame is the plug-in and the installed vLLM at releases that do not fit
# (round 108) a module function's error names it bare, as a method's names its class: vllm_ascend 0.23.0's
# patch_kv_cache_coordinator.py calls vLLM's own get_kv_cache_coordinator (kept at :37) with
# max_num_batched_tokens (:490, :500), the keyword vLLM 0.23.0 declares (v1/core/kv_cache_coordinator.py:692) and
# 0.27.1 renamed max_in_flight_tokens (:854): "get_kv_cache_coordinator() got an unexpected keyword argument"
# (round 109) a module's call passes through torch's nn.Module.__call__, which hands the arguments on unbound
# (torch 2.8.0 nn/modules/module.py:1769 _wrapped_call_impl, :1777 _call_impl, :1784 "return forward_call(*args,
# **kwargs)"), so the error is raised in its last frame and the caller is the frame above those: vllm_ascend
# 0.9.0rc1's decoder layer builds vLLM's DeepseekV2Attention when use_mla is off (models/deepseek_v2.py:496-499) and
# calls it with kv_cache and attn_metadata (:561-566), which vLLM 0.8.5.post1's forward does not take
# (model_executor/models/deepseek_v2.py:289)
_TORCH_CALL = r'[ \t]*File "[^"]*[/\\]torch[/\\]nn[/\\]modules[/\\]module\.py", line \d+,? in _(?:wrapped_)?call_impl\n'
_PLUGIN_LAST_FRAME = (r'File "[^"]*[/\\]vllm_ascend[/\\][^"]*\.py", line \d+,? in \w+\n'
                      rf'(?:(?:(?![ \t]*File ").*\n)|{_TORCH_CALL})*(?:\w+\.)*TypeError: (?:\w+\.)?\w+\(\) '
                      r"(?:got an unexpected keyword argument|missing \d+ required)")
PLUGIN_CALL_MISMATCH = Signature(
    "vllm_ascend_call_mismatch", "dependency_mismatch", "vllm-ascend calls a vLLM API the installed vLLM lacks",
    ("vllm-ascend called one of vLLM's own classes or functions with arguments the installed vLLM does not "
     "take: the plug-in and vLLM are releases that do not fit each other (each vllm-ascend release is made for "
     "one vLLM release; a vllm-ascend main or a source build follows vLLM's main). Install the vLLM release "
     "that this vllm-ascend names (its README's version table), or the vllm-ascend release made for the "
     "installed vLLM, both in a fresh environment.",),
    patterns=(r"\(\) (?:got an unexpected keyword argument|missing \d+ required (?:positional |keyword-only )?"
              r"arguments?)",),
    types=r"(?:\w+\.)*TypeError", context=(_PLUGIN_LAST_FRAME,), priority=79,
    sources=(("vllm 0.11.2", "vllm/v1/cudagraph_dispatcher.py:118"),
             ("vllm 0.13.0", "vllm/v1/cudagraph_dispatcher.py:143"),
             ("vllm_ascend 0.11.0rc0", "vllm_ascend/worker/model_runner_v1.py:1947 (self.aclgraph_dispatcher"
                                       ".dispatch(batch_descriptor))"),
             ("vllm 0.23.0", "vllm/v1/core/kv_cache_coordinator.py:692 (max_num_batched_tokens)"),
             ("vllm 0.27.1", "vllm/v1/core/kv_cache_coordinator.py:854 (max_in_flight_tokens)"),
             ("vllm_ascend 0.23.0", "vllm_ascend/patch/platform/patch_kv_cache_coordinator.py:500 "
                                    "(_orig_get_kv_cache_coordinator(**orig_kwargs))"),
             ("vllm_ascend 0.9.0rc1", "vllm_ascend/models/deepseek_v2.py:561 (self.self_attn(..., kv_cache=...))"),
             ("vllm 0.8.5.post1", "vllm/model_executor/models/deepseek_v2.py:289 (DeepseekV2Attention.forward)")))

# (round 63) vllm-ascend's modules import torch_npu in a guard that only prints "Failed to import torch_npu." on
# ImportError and carries on (vllm-project/vllm-ascend 4a044cd, early 2025, vllm_ascend/attention.py:26-29,
# imported by its platform and model runner): the plug-in runs on and
# its first use of the device extension raises. A notice, not a crash: it explains the traceback the same
# process cuts or leaves unexplained right after it (the platform's hook, the model runner)
_TORCH_NPU_MISSING = r"^\s*Failed to import torch_npu\.?\s*$"
TORCH_NPU_MISSING = Signature(
    "vllm_torch_npu_missing", "dependency_mismatch", "torch_npu, the Ascend extension of torch, does not import",
    ("vllm-ascend is installed (its platform plug-in is active) but torch_npu does not import: it is "
     "missing, or built for another torch or CANN. Install the torch_npu release that this vllm-ascend "
     "names, for the installed torch, with CANN's environment sourced (`source "
     "/usr/local/Ascend/ascend-toolkit/set_env.sh`); `python -c 'import torch_npu'` shows the import's own "
     "error.",),
    patterns=(_TORCH_NPU_MISSING,), lines=(_TORCH_NPU_MISSING,), priority=78, phase="launch", explains=True,
    sources=(("vllm-ascend (vllm-project/vllm-ascend 4a044cd)",
              "vllm_ascend/attention.py:29 (try: import torch_npu / except ImportError: print(\"Failed to "
              "import torch_npu.\"))"),))

# (round 63) vLLM's compilation config refuses a piecewise (VLLM_COMPILE) backend other than "", "eager" or
# "inductor" (CompilationConfig.__post_init__, config/compilation.py:843-850 (0.15.1), :906 (0.18.0)), and
# right after the check fills an empty backend from the platform (:852-853): vllm-ascend's platform answers
# with its compiler class's dotted path (vllm_ascend 0.12.0rc1 platform.py:86-91, get_compile_backend). A
# refused dotted path is that resolved value validated a second time (a config rebuilt from its resolved
# fields, vllm-omni's stage workers): a plug-in and a vLLM release that do not fit; a user's own plain name
# ("cudagraphs") is a refused argument, not this
_PIECEWISE_PLUGIN_BACKEND = r"Invalid backend for piecewise compilation: [A-Za-z_]\w*(?:\.\w+)+"
PIECEWISE_PLUGIN_BACKEND = Signature(
    "vllm_piecewise_plugin_backend", "dependency_mismatch",
    "vLLM refuses the compile backend its platform plug-in set",
    ("vLLM's compilation config refused the compile backend that the platform plug-in itself set "
     "(vllm-ascend's AscendCompiler): the config was validated again after the plug-in filled it in, "
     "which the installed vLLM, plug-in and (for vllm-omni) omni releases do not agree on. Install the "
     "releases made for each other (vllm-omni's and vllm-ascend's README name the vLLM release); "
     "`--enforce-eager` skips compilation meanwhile.",),
    patterns=(_PIECEWISE_PLUGIN_BACKEND,), lines=(_PIECEWISE_PLUGIN_BACKEND,), priority=79, phase="launch",
    sources=(("vllm 0.15.1", "vllm/config/compilation.py:849"), ("vllm 0.18.0", "vllm/config/compilation.py:906"),
             ("vllm 0.15.1", "vllm/config/compilation.py:853"),
             ("vllm_ascend 0.12.0rc1", "vllm_ascend/platform.py:91 (get_compile_backend: return "
                                       "\"vllm_ascend.compilation.compiler_interface.AscendCompiler\")")))

# (round 63) vLLM's model runner keeps its input buffers as CpuGpuBuffer, a pinned host tensor with its device
# twin in ``.gpu`` (and a numpy view in ``.np``) (v1/utils.py:106 (0.15.1), :105 (0.10.2); gpu_model_runner.py:558
# (0.15.1) ``self.positions = self._make_buffer(...)``), where vllm-ascend's runner of another release keeps a
# bare tensor (vllm_ascend 0.11.0rc0 worker/model_runner_v1.py:360 ``self.positions = torch.zeros(...)``). A
# tensor has neither field: code written against one runner (a plug-in's subclass: vllm-omni's NPU runner)
# running on the other, the packages at releases that do not fit. (``.cpu`` is a tensor's own method, no sign.)
_BUFFER_ON_TENSOR = r"'Tensor' object has no attribute '(?:gpu|np)'"
RUNNER_BUFFER_MISMATCH = Signature(
    "vllm_runner_buffer_mismatch", "dependency_mismatch",
    "a model runner's buffer is a bare tensor where the caller expects vLLM's CpuGpuBuffer",
    ("Code that reads a model runner's buffer as vLLM's CpuGpuBuffer (`.gpu`, `.np`) met a runner that keeps "
     "it as a bare tensor: a plug-in's runner (vllm-ascend's, vllm-omni's subclass of it) and the installed "
     "vLLM or plug-in are releases written for different runner APIs. Install the releases made for each "
     "other (each plug-in's README names its vLLM release), in a fresh environment.",),
    patterns=(_BUFFER_ON_TENSOR,), lines=(_BUFFER_ON_TENSOR,), priority=79, phase="launch",
    sources=(("vllm 0.15.1", "vllm/v1/utils.py:106"), ("vllm 0.15.1", "vllm/v1/worker/gpu_model_runner.py:558"),
             ("vllm_ascend 0.11.0rc0", "vllm_ascend/worker/model_runner_v1.py:360")))

# (round 65) CANN's aclnn ops check each tensor's dtype on the host before they run, and log a refusal with the op
# API's parameter error (EZ1001) and ACLNN_ERR_PARAM_INVALID, 161002: OP_CHECK_DTYPE_NOT_SUPPORT, "Tensor %s not
# implemented for %s, should be in dtype support list %s." (CANN aclnn_kernels/common/op_error_check.h; the macro's
# stub copy in openPangu-2.0-Op c1d24e3 common/stub/op_api/aclnn_kernels/common/op_error_check.h:145-150; its
# per-scenario form "In [%s] scenario, dtype check failed: Tensor %s ..."; the ops' own "tensor %lu not implemented
# for %s, ..."); torch_npu then raises "call aclnnX failed, error code is 161002": the op does not take a tensor in
# this dtype (a quantized matmul's scale in float16, where it takes bfloat16, float32 or int64)
_NPU_DTYPE = (r"\bAclNN_Parameter_Error\(EZ1001\): (?:In \[[^\]]*\] scenario, dtype check failed: )?"
              r"(?:[Tt]ensor )?\w+ not implemented for DT_\w+, should be in dtype support list\b",)
NPU_DTYPE_REFUSED = Signature(
    "vllm_npu_op_dtype_refused", "kernel_config_unsupported",
    "an Ascend aclnn op refused the dtype of a tensor it was handed",
    ("An Ascend op (CANN's aclnn) checked a tensor's dtype before it ran and refused it: the line names the "
     "tensor, its dtype and the dtypes the op takes. A model dtype the op supports (`--dtype bfloat16` where "
     "a quantized checkpoint's scales are bfloat16), a quantization whose kernels take this dtype, or a "
     "CANN / torch_npu / vllm-ascend release whose op takes it.",),
    patterns=_NPU_DTYPE, lines=_NPU_DTYPE, priority=81,
    sources=(("CANN (openPangu-2.0-Op c1d24e3, the op API's stub)",
              "common/stub/op_api/aclnn_kernels/common/op_error_check.h:145-150 (Tensor %s not implemented for %s, "
              "should be in dtype support list %s.)"),))

# (round 78) vllm-ascend's quantization reads the checkpoint's quant_model_description.json as its quant description
# (quant_config.py:55, :75 (0.9.2rc1)) and, building each linear or MoE layer, looks the layer's weight up in it
# ("self.quant_description[shard_prefix + '.weight']", is_layer_skipped_ascend, quant_config.py:126, :137
# (0.9.2rc1), :141 (0.11.0rc0); "quant_description[prefix + '.weight']", quantizer.py:231, :241 (0.9.2rc1)): a
# KeyError on a layer's weight raised at that lookup, its last frame, is a description that does not list the
# model's layers (written for another model, another layout of its names, or by another quantization tool)
_QUANT_LOOKUP = (r'vllm_ascend[/\\]quantization[/\\]\w+\.py", line \d+, in \w+\s*\n'
                 r'[^\n]*\bquant_description\[(?:shard_)?prefix\b[^\n]*\n' + NO_LATER_FRAME)
ASCEND_QUANT_DESCRIPTION = Signature(
    "vllm_ascend_quant_description_missing", "weights_unreadable",
    "the checkpoint's Ascend quant description does not list a layer of the model",
    ("vllm-ascend looked a layer's weight up in the checkpoint's quant description "
     "(quant_model_description.json) and it is not there: the description was written for another model or "
     "another naming of its layers, or by a tool other than the one vllm-ascend reads (modelslim). Quantize "
     "the checkpoint again for this model with the modelslim release your vllm-ascend names, or serve the "
     "unquantized checkpoint without `--quantization ascend`.",),
    types=r"KeyError", patterns=(r"^KeyError: '(?:[\w-]+\.)+weight'",), context=(_QUANT_LOOKUP,),
    priority=79, phase="load_weights",
    sources=(("vllm_ascend 0.9.2rc1", "vllm_ascend/quantization/quant_config.py:126"),
             ("vllm_ascend 0.9.2rc1", "vllm_ascend/quantization/quant_config.py:137"),
             ("vllm_ascend 0.11.0rc0", "vllm_ascend/quantization/quant_config.py:141"),
             ("vllm_ascend 0.9.2rc1", "vllm_ascend/quantization/quantizer.py:241")))

# (round 81) vllm-ascend's MLA impl asserting, with torchair graph mode on, that the heads per KV head are a ratio its
# fused graph-mode MLA kernel takes: "assert self.num_queries_per_kv in _ALLOWED_NUM_QUERIES_PER_KV, \\" ({32, 64,
# 128}: "The allowed number of queries per kv when enabling both MLA and Graph mode only support {32, 64, 128}, ..."),
# vllm_ascend/attention/mla_v1.py:574-580 (v0.9.1rc1, v0.9.2rc1; the set from attention/attention.py), in
# AscendMLAImpl.__init__, which vLLM's Attention.__init__ calls as the model's layers are built (load_model). The
# assert has that one meaning, so a traceback cut on its code line (the AssertionError's line lost) reads so too
_MLA_HEADS = (r"^\s*assert self\.num_queries_per_kv in _ALLOWED_NUM_QUERIES_PER_KV\b"
              r"|The allowed number of queries per kv when enabling both MLA and Graph mode")
ASCEND_MLA_GRAPH_HEADS = Signature(
    "vllm_ascend_mla_graph_heads", "kernel_config_unsupported",
    "vllm-ascend's graph-mode MLA kernel does not take this model's heads per KV head",
    ("vllm-ascend's MLA kernel for torchair graph mode takes only 32, 64 or 128 query heads per KV head on "
     "each rank (num_heads / num_kv_heads after the tensor-parallel split): DeepSeek-V2-Lite (16 heads) never "
     "fits, DeepSeek-V3/R1 only at a `--tensor-parallel-size` that leaves such a ratio. Turn torchair graph mode "
     "off (torchair_graph_config's enabled set to false in `--additional-config`) or pick a fitting "
     "`--tensor-parallel-size`.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(r".",), context=(_MLA_HEADS,), lines=(
        r"The allowed number of queries per kv when enabling both MLA and Graph mode",),
    priority=82, phase="load_weights", fatal=True, cut_ok=True,
    sources=(("vllm_ascend 0.9.1rc1", "vllm_ascend/attention/mla_v1.py:575"),
             ("vllm_ascend 0.9.2rc1", "vllm_ascend/attention/mla_v1.py:575"),
             ("vllm_ascend 0.9.1rc1", "vllm_ascend/attention/mla_v1.py:576-580 (the message)")))

# (round 109) vllm-ascend's platform checks its --additional-config as vLLM builds its config
# (platform.py:141 check_and_update_config -> check_ascend_config, v0.10.0rc1): torchair graph mode is taken only for
# the model types it lists, and ACL graphs (the default graph mode) refuse DeepSeek: "Torchair graph mode only works
# with following model types:[...]" (ascend_config.py:155 (v0.9.2rc1), :167 (v0.10.0rc1), :224 (v0.11.0rc0)), "ACL
# Graph does not support deepseek." (:164, :176): a graph mode chosen for a model that cannot take it, bad_argument
_GRAPH_MODE_MODEL = r"Torchair graph mode only works with following model types|ACL Graph does not support deepseek\."
ASCEND_GRAPH_MODE_MODEL = Signature(
    "vllm_ascend_graph_mode_model", "bad_argument", "vllm-ascend's graph mode refused for this model type",
    ("vllm-ascend checks its `--additional-config` before any engine starts: torchair graph mode "
     "(torchair_graph_config's enabled) is taken only for the model types the message lists (DeepSeek, PanGu and "
     "in later releases a few more), and the default ACL graph mode does not take DeepSeek. Turn torchair graph "
     "mode off for other models (they run with ACL graphs), turn it on for DeepSeek, or pass `--enforce-eager`.",),
    patterns=(_GRAPH_MODE_MODEL,), types=r"(?:\w+\.)*NotImplementedError", priority=88, phase="launch",
    sources=(("vllm_ascend 0.10.0rc1", "vllm_ascend/ascend_config.py:167"),
             ("vllm_ascend 0.10.0rc1", "vllm_ascend/ascend_config.py:176"),
             ("vllm_ascend 0.9.2rc1", "vllm_ascend/ascend_config.py:155"),
             ("vllm_ascend 0.11.0rc0", "vllm_ascend/ascend_config.py:224"),
             ("vllm_ascend 0.10.0rc1", "vllm_ascend/platform.py:141 (check_ascend_config)")))

SIGNATURES: list[Signature] = [NPU_CAPTURE_SYNC, NPU_AICPU_FAULT, ASCEND_KERNEL_CONFIG,
                               TRITON_ASCEND_LAUNCHER, ACL_GRAPH_UPDATE_NONE, DRAFT_SPLITFUSE_MASK,
                               FULL_GRAPH_PADDING, HCCL_CALL_FAILED, PLUGIN_CALL_MISMATCH, TORCH_NPU_MISSING,
                               PIECEWISE_PLUGIN_BACKEND, RUNNER_BUFFER_MISMATCH, NPU_DTYPE_REFUSED,
                               ASCEND_QUANT_DESCRIPTION, ASCEND_MLA_GRAPH_HEADS, ASCEND_GRAPH_MODE_MODEL]
