"""vLLM held-out round 116 (4 logs, w11601-w11604), folded into work after its miss was read.

Measured once on main at bdcb8392 (staged as 5cfd121c): crashed 4/4, kind 3/4, phase 3/3. One log missed, read
against torch_npu's copy of the Ascend runtime's error codes:

- w11602 (kind, fixed): vllm-ascend on a 910B (TP2, V1 engine) serving Qwen3-VL-32B; after some 60 answered requests
  a step's worker fails and the engine core reports the worker's error: torch_npu's "The Inner error is reported as
  above ... the current working operator name is SelfAttentionOperation.", its "ERR00100 PTA call acl api failed",
  CANN's "Memory_Allocation_Failure(EL0004): Failed to allocate memory." and the runtime's "alloc device memory
  failed, runtime result = 207001"; 207001 is ACL_ERROR_RT_MEMORY_ALLOCATION, "memory allocation error" (torch_npu
  2.5.1 include/third_party/acl/inc/acl/error_codes/rt_error_codes.h:43; torch_npu's text "Failed to apply for
  memory.", csrc/core/npu/NPUErrorCodes.h:250; no wheel holds CANN's EL table, so EL0004 is the log's own word). The
  NPU's device memory ran out while serving: cuda_oom as labelled (vllm_crashes/adapters.py ``NPU_DEVICE_OOM``, read
  on the runtime's line only, where it says device memory and 207001; a host allocation, another runtime code or
  another EL record alone is not this), with the NPU's advice in vLLM's flags.
- w11601, w11603, w11604 (read as labelled): a Jetson Thor start that serves, a segfault in a remote Ray worker on
  ROCm (native_crash), and a vllm-ascend worker whose start failed with no error of its own shown (unknown, launch).

The positive tests below failed at bdcb8392 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w116{n:02d}" for n in range(1, 5)]
_HEAD = "(EngineCore_DP0 pid=10516) ERROR 12-03 12:16:41 [core.py:710] "
_RPC = ("vllm/v1/executor/multiproc_executor.py", 248, "get_response", "raise RuntimeError(")
_INNER = ("RuntimeError: Worker failed with error 'The Inner error is reported as above. The process exits for this "
          "inner error, and the current working operator name is SelfAttentionOperation.")


def _report(*records: str) -> str:
    """The engine core's traceback of a worker's NPU error, CANN's records under it, the worker's error closed."""
    return (vllm_traceback(_RPC, exc=_INNER, head=_HEAD)
            + "".join(f"{_HEAD}{record}\n" for record in records)
            + f"{_HEAD}', please check the stack trace above for the root cause\n"
            + "(APIServer pid=10248) ERROR 12-03 12:16:41 [async_llm.py:480] vllm.v1.engine.exceptions."
              "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n")


_ACL = "[ERROR] 2025-12-03-12:16:41 (PID:10652, Device:0, RankID:-1) ERR00100 PTA call acl api failed."
_EL0004 = "[PID: 10652] 2025-12-03-12:16:41.842.173 Memory_Allocation_Failure(EL0004): Failed to allocate memory."
_TAIL = "[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:162]"


def test_the_round_is_folded_with_its_four_logs():
    assert folded_round(VLLM_MANIFEST, 116) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w11602: the Ascend runtime failing a device memory allocation ------------------------------------------------

def test_the_npus_device_allocation_failure_is_cuda_oom():
    assert said(read_log("w11602.log")) == (True, "cuda_oom", "vllm_npu_device_oom")
    assert reads(read_log("w11602.log")) == (True, "cuda_oom", "serving")


def test_the_advice_names_the_npu_and_vllms_flags():
    from ddlab.diagnosis.diagnosis import diagnose
    advice = diagnose(read_log("w11602.log")).suggestion
    assert "NPU" in advice and "`--gpu-memory-utilization`" in advice and "`--max-num-seqs`" in advice


def test_the_runtimes_line_under_a_worker_error_reads_the_same():
    text = _report(_ACL, _EL0004, "        TraceBack (most recent call last):",
                   f"        alloc device memory failed, runtime result = 207001{_TAIL}")
    assert vllm_signature(text) == "vllm_npu_device_oom"
    assert said(text)[:2] == (True, "cuda_oom")


def test_a_host_allocation_or_another_code_is_not_this():
    host = _report(_ACL, _EL0004, f"        alloc host memory failed, runtime result = 207001{_TAIL}")
    assert vllm_signature(host) != "vllm_npu_device_oom"
    other = _report(_ACL, "[PID: 10652] 2025-12-03-12:16:41.842.173 Invalid_Argument(EL0003): The argument is invalid.",
                    f"        alloc device memory failed, runtime result = 107000{_TAIL}")
    assert vllm_signature(other) != "vllm_npu_device_oom"
    assert said(other)[1] != "cuda_oom"


def test_cann_s_record_alone_is_not_this():
    assert vllm_signature(_report(_ACL, _EL0004)) != "vllm_npu_device_oom"


def test_torch_npus_own_out_of_memory_line_keeps_its_reading():
    npu_oom = ("NPU out of memory. NPUWorkspaceAllocator tried to allocate 216.00 MiB(NPU 2; 61.27 GiB total capacity; "
               "159.89 MiB free).")
    text = (f"{_HEAD}{npu_oom}\n"
            + _report(_ACL, _EL0004, f"        alloc device memory failed, runtime result = 207001{_TAIL}"))
    assert said(text) == (True, "cuda_oom", "vllm_cuda_oom")


# --- the texts the rule cites --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "text"), [
    ("torch_npu/include/third_party/acl/inc/acl/error_codes/rt_error_codes.h",
     "static const int32_t ACL_ERROR_RT_MEMORY_ALLOCATION          = 207001; // memory allocation error"),
    ("torch_npu/include/torch_npu/csrc/core/npu/NPUErrorCodes.h", '{207001, "Failed to apply for memory.'),
], ids=["rt_error_codes.h", "NPUErrorCodes.h"])
def test_the_cited_codes_are_torch_npus_own(path, text):
    assert_in_library_wheel("torch_npu", "2.5.1", path, text)
