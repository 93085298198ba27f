"""An Ascend NPU's own texts: its kernels faulting (the runtime's core exceptions, torch_npu's
fault codes, AscendC's trapping assert), CANN refusing an op on this chip, and torch_npu failing to
capture an NPU graph or to update a captured one before its replay.

The same kinds as a GPU's (:mod:`.device`, which splices these into its list where they stood):
a core exception or a trapping assert is ``cuda_illegal_access``, an op with no kernels for this
SoC is ``unsupported_gpu``, a capture refused is ``cuda_graph_capture``, a captured graph's update refused is
``cuda_graph_replay``. Their advice names the NPU's own tools (ASCEND_LAUNCH_BLOCKING,
CANN's device log).
"""

from __future__ import annotations

from ddlab.crashes.frames import STARTUP_FRAMES
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["NPU_KERNEL_FAULT", "NPU_FAULT_CODE", "ASCENDC_ASSERT", "NPU_SOC_UNSUPPORTED", "NPU_GRAPH_UPDATE",
           "NPU_GRAPH_UPDATE_RAISED", "NPU_CAPTURE", "NPU_AICORE_TIMEOUT"]

# an Ascend NPU's kernel fault, as its runtime reports it (its own records, under torch_npu's
# warning-level "EZ9999: Inner Error!" line): the accelerator's illegal address
NPU_KERNEL_FAULT = Signature(
    "npu_kernel_fault", "cuda_illegal_access", "an Ascend NPU kernel faulted (AI core / vector core exception)",
    ("An NPU kernel faulted (an AI core or vector core exception, often an invalid address): "
     "rerun with ASCEND_LAUNCH_BLOCKING=1 to find the operator, then bisect: {graphs_off}, another "
     "`--attention-backend`, and a newer CANN / torch_npu / SGLang if the operator is theirs.",),
    # (round 14) the core's name is one or two words ("aivec error", "fftsplus aicore error"); the runtime's
    # "ErrCode=N, desc=[...]" record of a synchronize returning a core exception (rt_error_codes.h, below)
    lines=(r"The error from device\(chipId:\d+, dieId:\d+\).{0,80}there is an exception of (?:\w+ ){1,2}?error",
           r"\bErrCode=5070(?:1[56]|3[56]), desc=\[(?:aicore|vector core) (?:trap )?exception\]",
           r"errorStr: The MPU address access is invalid",
           r"Kernel task happen error, retCode=0x[0-9a-f]+, \[[\w ]+exception\]"),
    priority=50, running=True,
    sources=(("Ascend CANN 8.x", "runtime device_error_core_proc.cc:303, :322 (ProcessStarsCoreErrorInfo: "
                                 "there is an exception of aivec error; The MPU address access is invalid)"),
             ("Ascend CANN 8.x", "runtime davinci_kernel_task.cc:1539 (PreCheckTaskErr: Kernel task happen "
                                 "error, retCode=0x31, [vector core exception])"),
             ("torch_npu 2.5.1", "include/third_party/acl/inc/acl/error_codes/rt_error_codes.h:74-75, :94-95 "
                                 "(507015 / 507016 aicore, 507035 / 507036 vector core exception / trap)")))

# (round 12) torch_npu's check of an ACL call ("<op>:<file>:<line> NPU function error: <call>, error code
# is <N>", then "[Error]: <the code's text>") with a runtime code that is a fault of the device's own
# execution, the NPU's illegal access: 507013 "System Direct Memory Access (DMA) hardware execution
# error" (CANN rt_error_codes.h ACL_ERROR_RT_SYS_DMA, "sys dma error"), 507015 / 507016 (AI core
# exception / trap), 507018 (AI CPU exception), 507035 / 507036 (vector core exception / trap),
# 507042-507045 (AI core / vector core trap read or write out of bounds): Ascend/pytorch
# torch_npu/csrc/core/npu/NPUErrorCodes.h error_code_map (05900fb). A synchronize that returns one
# reports a fault of work queued before it, like CUDA's asynchronous errors
_NPU_FAULT_CODES = r"5070(?:13|15|16|18|35|36|4[2-5])"
_NPU_FAULT_TEXTS = (r"System Direct Memory Access \(DMA\) hardware execution error",
                    r"The (?:aicore|aicpu|vector core) execution is abnormal",
                    r"An exception occurs when (?:the aicore trap is|vector core traps are) executed",
                    r"(?:The aicore|Vector core) trap (?:read|write) out-of-bounds exception")
# (round 14) also torch_npu's stream synchronize check ("ACL stream synchronize failed, error code:N",
# torch_npu 2.5.1 lib/libtorch_npu.so, NPUStream's synchronize)
_NPU_FAULT_CODE = (rf"(?:NPU function error: .{{1,200}}?, error code is |ACL stream synchronize failed, error code:)"
                   rf"{_NPU_FAULT_CODES}\b")
NPU_FAULT_CODE = Signature(
    "npu_fault_code", "cuda_illegal_access", "an Ascend NPU call returned a device fault code (DMA / core exception)",
    ("An ACL call returned a fault of the NPU's own execution (a DMA hardware error, an AI core or vector "
     "core exception): a kernel queued before it faulted, as an illegal address does on a GPU. Rerun with "
     "ASCEND_LAUNCH_BLOCKING=1 to find the operator, read the device's log (ASCEND_GLOBAL_LOG_LEVEL=1, "
     "ASCEND_SLOG_PRINT_TO_STDOUT=1) for its error record, then bisect: {graphs_off}, and a newer CANN / "
     "torch_npu if the operator is theirs.",),
    patterns=(_NPU_FAULT_CODE, *_NPU_FAULT_TEXTS), lines=(_NPU_FAULT_CODE, *_NPU_FAULT_TEXTS),
    priority=50, running=True,
    sources=(("torch_npu (Ascend/pytorch 9e73e70)", "torch_npu/csrc/core/npu/NPUErrorCodes.h:430 "
                                                    "(error_code_map :9: {507013, System Direct Memory "
                                                    "Access (DMA) hardware execution error}, 507015 :436, "
                                                    "507016 :439, 507018 :445, 507035 :496, 507036 :499, "
                                                    "507042-507045 :517-526)"),
             ("Ascend CANN (torch_npu 2.5.1's copy)", "include/third_party/acl/inc/acl/error_codes/"
                                                     "rt_error_codes.h:72 (ACL_ERROR_RT_SYS_DMA = 507013; "
                                                     "// sys dma error)"),
             ("torch_npu 2.5.1", "torch_npu/lib/libtorch_npu.so (the string \"ACL stream synchronize failed, "
                                 "error code:\")")))

# (round 33) an AI core task that ran past the runtime's timeout: torch_npu's check of the ACL call with
# 507014 and its text for the code (torch_npu 2.5.1 include/torch_npu/csrc/core/npu/NPUErrorCodes.h:314,
# "The aicore execution times out."; CANN rt_error_codes.h:73, ACL_ERROR_RT_AICORE_TIMEOUT = 507014): the
# device killed a kernel that did not finish, a fault of the NPU's execution as the other 5070xx codes are
# (the HCCL watchdog's query of a work's end event meets it, logs "Find exception when
# finishedNPUExecutionInternal" and throws, ending the rank: Ascend/pytorch 9e73e70
# torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:880-881, :1905, :1914)
# (vLLM round 104) the vector core's twin, 507034 (torch_npu 2.5.1 NPUErrorCodes.h:354, "Vector core execution timed
# out."; rt_error_codes.h:93, ACL_ERROR_RT_VECTOR_CORE_TIMEOUT = 507034), also as torch_npu's stream synchronize
# check returns it ("ACL stream synchronize failed, error code:N", as NPU_FAULT_CODE reads it)
_AICORE_TIMEOUT = (r"(?:NPU function error: .{1,200}?, error code is |ACL stream synchronize failed, error code:)"
                   r"5070[13]4\b",
                   r"The aicore execution times out\.", r"\bVector core execution timed out\.")
NPU_AICORE_TIMEOUT = Signature(
    "npu_aicore_timeout", "cuda_illegal_access",
    "an Ascend NPU kernel ran past the AI core's (or vector core's) timeout (507014, 507034)",
    ("An NPU kernel did not finish before the runtime's AI core (or vector core) timeout and was killed (CANN "
     "507014, 507034): a "
     "kernel stuck (waiting on a peer's data, an invalid loop bound) or faulting without its own record. "
     "Rerun with ASCEND_LAUNCH_BLOCKING=1 to find the operator, read the device's log "
     "(ASCEND_GLOBAL_LOG_LEVEL=1, ASCEND_SLOG_PRINT_TO_STDOUT=1), then bisect: {graphs_off}, and a newer "
     "CANN / torch_npu if the operator is theirs. The HCCL watchdog's abort after it is this fault's.",),
    patterns=_AICORE_TIMEOUT, lines=_AICORE_TIMEOUT, priority=50, running=True, fatal=True,
    sources=(("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/NPUErrorCodes.h:314 ({507014, The aicore "
                                 "execution times out.})"),
             ("Ascend CANN (torch_npu 2.5.1's copy)", "include/third_party/acl/inc/acl/error_codes/"
                                                     "rt_error_codes.h:73 (ACL_ERROR_RT_AICORE_TIMEOUT = "
                                                     "507014)"),
             ("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/NPUErrorCodes.h:354 ({507034, Vector core "
                                 "execution timed out.})"),
             ("Ascend CANN (torch_npu 2.5.1's copy)", "include/third_party/acl/inc/acl/error_codes/"
                                                     "rt_error_codes.h:93 (ACL_ERROR_RT_VECTOR_CORE_TIMEOUT = "
                                                     "507034)")))

# (round 66) NPU_FAULT_CODE is read in SGLang's logs too (:mod:`.device`): an SGLang on Ascend runs the same
# torch_npu, whose synchronize of a copy stream (a tensor's .item()) returns 507035, the vector core exception
# (torch_npu 2.5.1 include/torch_npu/csrc/core/npu/NPUErrorCodes.h:356; rt_error_codes.h:94,
# ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = 507035; torch_npu 2.10.0 rt_error_codes.h:115)
# (round 20) an AscendC kernel's own assert: AscendC's ASSERT_MSG prints "[ASSERT] FILE:LINE: Assertion
# `EXPR' " and the message, then trap()s the AI core (cannmirror/asc-devkit 0da921b91
# impl/basic_api/kernel_log.h:371-377; with the CANN version and a time stamp after "[ASSERT] " where the
# build defines them, :341-350): the NPU's device-side assert, as a CUDA kernel's ".cu:N: ... Assertion"
# line is. Its "[WARNING] ... Assertion" twin (:361-368, :386-392) prints and goes on
_ASCENDC_ASSERT = r"\[ASSERT\] (?:\[CANN_VERSION : [^\]]*\]\[TimeStamp : \d+\] )?\S+:\d+: Assertion `"
ASCENDC_ASSERT = Signature(
    "ascendc_assert", "cuda_illegal_access", "an Ascend NPU kernel's assert failed (AscendC trap)",
    ("An AscendC kernel's assert failed and trapped the NPU core (the index or size it names is out of "
     "range): an operator was handed bad input, as a CUDA device-side assert is. The file in the line "
     "names the operator (gather_v3: an index past the table). Rerun with ASCEND_LAUNCH_BLOCKING=1 to "
     "find the call, then bisect: {graphs_off}, and a newer CANN / torch_npu / SGLang if the operator "
     "or its caller is theirs.",),
    lines=(_ASCENDC_ASSERT,), priority=50, running=True,
    sources=(("AscendC (cannmirror/asc-devkit 0da921b91)", "impl/basic_api/kernel_log.h:371-377 (ASSERT_MSG: "
                                                           "[ASSERT] %s:%u: Assertion `%s' , then trap())"),
             ("AscendC (cannmirror/asc-devkit 0da921b91)", "impl/basic_api/kernel_log.h:341-350 (with "
                                                           "[CANN_VERSION : %s][TimeStamp : %u])")))

# (round 20) CANN's op runtime refusing an op on this chip: the op's kernels list the SoCs they were
# built for and this one is not among them (hicann/opbase 313b014
# src/nnopbase/individual_op/executor/indv_executor.cpp:152, "Op %s not support soc version %s.",
# ACLNN_ERR_INNER_FIND_KERNEL_ERROR), an NPU's "no kernel image for this device"
_NPU_SOC = r"\bOp \w+ not support soc version \w+"
NPU_SOC_UNSUPPORTED = Signature(
    "npu_soc_unsupported", "unsupported_gpu", "an Ascend op has no kernels for this NPU (soc version)",
    ("CANN has no kernels of this op for this NPU (the soc version it names): the op was built for "
     "other chips (MoeDistributeDispatchV2 for the A3 series, not ascend910b). Take the code path that "
     "does not call it on this chip (another MoE all-to-all backend, `--moe-a2a-backend`), a CANN whose "
     "release notes list the op for this chip, or an NPU it supports.",),
    patterns=(_NPU_SOC,), lines=(_NPU_SOC,), priority=81,
    sources=(("CANN opbase (hicann/opbase 313b014)", "src/nnopbase/individual_op/executor/indv_executor.cpp:152 "
                                                     "(Op %s not support soc version %s.)"),))

# (round 21) torch_npu's captured NPU graphs take new inputs (the batch's sequence lengths) by
# updating the recorded tasks before each replay: NPUGraph.update -> graph_task_update_begin / _end
# (torch_npu 2.5.1 include/torch_npu/csrc/core/npu/NPUGraph.h:23-24) around the ACL calls
# AclmdlRICaptureTaskUpdateBegin / End (interface/AclInterface.h:206, :208), each checked by
# NPU_CHECK_ERROR ("<func>:<file>:<line> NPU function error: <call>, error code is N",
# NPUException.h:170-171). SGLang's NPU graph runner issues that update for every replay
# (0.5.23 hardware_backend/npu/graph_runner/npu_cudagraph_backend.py:156-189 replay_with_input_update:
# graph.update, then graph.replay(); npu_graph_runner.py:199-205 _update_inputs): a refused update is
# the replay failing, whatever the runtime's code
_NPU_GRAPH_UPDATE = r"NPU function error: (?:c10_npu::acl::)?AclmdlRICaptureTaskUpdate(?:Begin|End)\("
NPU_GRAPH_UPDATE = Signature(
    "npu_graph_update_failed", "cuda_graph_replay", "updating a captured NPU graph's inputs before replay failed",
    ("torch_npu could not update the captured NPU graph with this batch's inputs (the sequence lengths "
     "it rebinds before each replay): the runtime refused the task update. Retry with {graphs_off} to "
     "keep serving; if that serves, the graph's update path is at fault for this batch, "
     "so try a newer CANN / torch_npu / SGLang.",),
    patterns=(_NPU_GRAPH_UPDATE,), lines=(_NPU_GRAPH_UPDATE,), priority=76, phase="serving",
    sources=(("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/NPUGraph.h:23-24 (graph_task_update_begin, "
                                 "graph_task_update_end)"),
             ("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/interface/AclInterface.h:206, :208 "
                                 "(AclmdlRICaptureTaskUpdateBegin / End)"),
             ("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/NPUException.h:170-171 (NPU function "
                                 "error: <call>, error code is N)"),
             ("0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/npu_cudagraph_backend.py:156"),
             ("0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/npu_graph_runner.py:203")))

# (round 49) the same update raising in torch_npu's Python, before any ACL call: NPUGraph.update hands the
# replay's inputs to update_capture_record (torch_npu 2.10.0 torch_npu/npu/graphs.py:388-395; 2.8.0 :239-243),
# which raises a RuntimeError where their count differs from the operators recorded at capture (:270-288,
# "Currently, there are N operators that need to be updated by capture, and there are only M elements in the
# incoming cpu_update_input list"); nothing else calls it. SGLang calls NPUGraph.update only to replay a
# captured graph: the EAGLE draft runners' _replay_update thread, started by _replay for each replay (0.5.13
# hardware_backend/npu/graph_runner/eagle_draft_npu_graph_runner.py:90, :105-110; from
# speculative/eagle_draft_cuda_graph_runner.py:504 in replay), the decode runner's _update_inputs thread
# (npu_graph_runner.py:145, :218), 0.5.23's replay_with_input_update (npu_cudagraph_backend.py:185-189). A
# traceback inside those frames is the replay failing, whatever it raised or where a paste cut it; under a
# startup's frames (a capture, a constructor) it is not read so
_NPU_UPDATE_FRAMES = (r'torch_npu[/\\]npu[/\\]graphs\.py", line \d+, in (?:update|update_capture_record)\s*$'
                      r'|npu_graph_runner\.py", line \d+, in (?:_replay_update|_update_inputs)\s*$'
                      r'|npu_cudagraph_backend\.py", line \d+, in replay_with_input_update\s*$')
NPU_GRAPH_UPDATE_RAISED = Signature(
    "npu_graph_update_raised", "cuda_graph_replay",
    "torch_npu's update of a captured NPU graph's inputs before replay raised",
    ("Before each replay the NPU graph runner hands torch_npu the batch's sequence lengths to rebind in the "
     "captured graph (NPUGraph.update), and that update raised: torch_npu checks the inputs against the "
     "operators recorded at capture (their counts must match: its message names both). Retry with "
     "{graphs_off} to keep serving; if that serves, the runner's update does not fit the graph captured for "
     "this model and speculative setup (an MLA-only input for another attention, one entry per draft step), "
     "so try a newer SGLang / torch_npu.",),
    patterns=(r".",), context=(_NPU_UPDATE_FRAMES,), absent=(STARTUP_FRAMES.pattern,), cut_ok=True,
    priority=45, phase="serving",
    sources=(("torch_npu 2.10.0", "torch_npu/npu/graphs.py:282 (update_capture_record: raise RuntimeError("
                                  "Currently, there are N operators that need to be updated by capture, ...))"),
             ("torch_npu 2.10.0", "torch_npu/npu/graphs.py:395 (NPUGraph.update)"),
             ("0.5.13", "sglang/srt/hardware_backend/npu/graph_runner/eagle_draft_npu_graph_runner.py:90"),
             ("0.5.13", "sglang/srt/hardware_backend/npu/graph_runner/npu_graph_runner.py:145"),
             ("0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/npu_cudagraph_backend.py:185")))

# (vLLM round 23) torch_npu's NPUGraph captures through the ACL runtime: capture_begin / capture_end
# (torch_npu 2.5.1 NPUGraph.h:34) call AclmdlRICaptureBegin / AclmdlRICaptureEnd
# (interface/AclInterface.h:186, :190), each checked by NPU_CHECK_ERROR ("<func>:<file>:<line> NPU function
# error: <call>, error code is N", NPUException.h). vllm-ascend captures with it, and so do SGLang's NPU
# graph runners (0.5.23 hardware_backend/npu/graph_runner/npu_graph_runner.py:179 torch.npu.graph(...),
# inside the decode runner's "Capture cuda graph failed" wrapper; vit_npu_graph_runner.py:73, a ViT's graph
# captured lazily while serving, with no wrapper): a refused call is the capture failing, whatever the code
# (vLLM round 57) capture_begin then asks the runtime for the stream's capture status and asserts it active
# (TORCH_INTERNAL_ASSERT(status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE), Ascend/pytorch
# 9e73e70 torch_npu/csrc/core/npu/NPUGraph.cpp:318, :323 in capture_begin, :240): that assert failing is
# the capture not begun, as a refused AclmdlRICaptureBegin is
_NPU_CAPTURE = (r"NPU function error: (?:c10_npu::acl::)?AclmdlRICapture(?:Begin|End)\("
                r"|\bstatus == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE"
                r" INTERNAL ASSERT FAILED\b")


def _capture_detail(found: Found) -> str | None:
    """The vision encoder's graph, which SGLang captures only with SGLANG_VIT_ENABLE_CUDA_GRAPH set (off by
    default: 0.5.23 environ.py:1603; models/qwen3_vl.py:944)."""
    if regex(r"vit_npu_graph_runner\.py").search(found.chain_text or found.frames):
        return ("This capture is the vision encoder's (ViT) graph, captured for each new image size while "
                "serving: SGLANG_VIT_ENABLE_CUDA_GRAPH=0 (its default) runs the encoder without it.")
    return None


NPU_CAPTURE = Signature(
    "npu_capture_failed", "cuda_graph_capture",
    "the ACL runtime refused to begin or end an NPU graph capture",
    ("torch_npu could not begin (or end) capturing an NPU graph: the ACL runtime refused the capture (its "
     "error code names why; CANN's device log, ASCEND_GLOBAL_LOG_LEVEL=1, has the record). Retry with "
     "{graphs_off} to confirm the graph is at fault and keep serving; then a CANN / torch_npu / SGLang "
     "release whose NPU graph mode supports this model and parallel layout.",),
    patterns=(_NPU_CAPTURE,), lines=(_NPU_CAPTURE,), priority=80, phase="graph_capture",
    detail=_capture_detail,
    sources=(("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/interface/AclInterface.h:186, :190 "
                                 "(AclmdlRICaptureBegin / End)"),
             ("torch_npu 2.10.0", "include/torch_npu/csrc/core/npu/interface/AclInterface.h:235 "
                                  "(AclmdlRICaptureGetInfo)"),
             ("torch_npu (Ascend/pytorch 9e73e70)",
              "torch_npu/csrc/core/npu/NPUGraph.cpp:323 (the capture status asserted)"),
             ("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/NPUGraph.h:34 (capture_begin)"),
             ("0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/npu_graph_runner.py:179"),
             ("0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/vit_npu_graph_runner.py:73")))
