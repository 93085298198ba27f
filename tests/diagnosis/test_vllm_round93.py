"""What held-out round 93 of the vLLM corpus (w9301-w9314, measured once on main at ca9c5c7, staged as b4caaaf)
showed: crashed 13/14, kind 13/14, phase 11/11. Its one miss was read from the source (docs/diagnosis.md,
"Held-out round 93") and fixed:

- w9312 (crashed, kind): the V1 engine core's add_lora utility call met "CUDA error: an illegal memory access was
  encountered" (reported at a pin_memory, lora/models.py:146 (0.9.0): torch's "might be asynchronously reported"
  hint). The engine answers a failed utility call and goes on (v1/engine/core.py:562-568 (0.9.0)), but CUDA's kernel
  faults are sticky: "any further CUDA work will return the same error. To continue using CUDA, the process must
  be terminated and relaunched" (CUDA Runtime API, cudaErrorIllegalAddress), so the engine's next step dies of it
  (run_engine_core's fatal handler, core.py:502 (0.9.0)). A sticky CUDA fault under "Invocation of ... method
  failed" is the engine's, cuda_illegal_access, not the caller's error (diagnosis/vllm_records.py
  with_utility_records, vllm_crashes/requests.py STICKY_CUDA_FAULT, also ADD_LORA_FAILED's ``absent``).

Each positive test below failed at b4caaaf (before the fix). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said)

_ROUND = [f"w93{n:02d}" for n in range(1, 15)]


def test_the_round_is_folded_with_its_fourteen_logs():
    assert folded_round(VLLM_MANIFEST, 93) == _ROUND


def test_no_kind_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled_with_no_miss_left():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w9312: a sticky CUDA fault met by a utility call ---------------------------------------------------------------

def test_an_illegal_access_under_a_failed_add_lora_is_the_engines_crash():
    assert said(read_log("w9312.log")) == (True, "cuda_illegal_access", "vllm_cuda_illegal_access")
    assert said(read_log("w9312.log"), family="vllm") == (True, "cuda_illegal_access", "vllm_cuda_illegal_access")
    assert reads(read_log("w9312.log"))[2] == "serving"


_RECORD = "ERROR 05-21 08:50:19 [core.py:559] "


def _collective_rpc(error: str) -> str:
    frames = [
        "Invocation of collective_rpc method failed",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 556, in _handle_client_request',
        "    output.result = method(",
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 327, in collective_rpc',
        "    return self.model_executor.collective_rpc(method, timeout, args, kwargs)",
        '  File "/usr/lib/python3.12/site-packages/vllm/executor/uniproc_executor.py", line 56, in collective_rpc',
        "    answer = run_method(self.driver_worker, method, args, kwargs)",
        '  File "/usr/lib/python3.12/site-packages/vllm/worker/worker_base.py", line 620, in update_weight',
        "    param.data.copy_(weight)",
        error,
    ]
    return "".join(_RECORD + line + "\n" for line in frames)


@pytest.mark.parametrize("error", [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "RuntimeError: CUDA error: device-side assert triggered",
    "RuntimeError: CUDA error: unspecified launch failure",
])
def test_a_sticky_fault_under_any_utility_call_is_the_engines_crash(error):
    assert said(_collective_rpc(error), family="vllm")[:2] == (True, "cuda_illegal_access")


@pytest.mark.parametrize("error", [
    "ValueError: weight 'lm_head.weight' has shape [4096, 32000], expected [4096, 32064]",
    "RuntimeError: CUDA error: out of memory",
])
def test_a_utility_calls_own_error_stays_the_callers(error):
    """Not a sticky fault: the caller's error, answered, the engine serving on (round 58's reading)."""
    assert said(_collective_rpc(error), family="vllm")[:2] == (False, "request_error")


def test_an_add_lora_failure_of_the_adapter_stays_the_callers():
    """The same paste with the adapter's own error in place of the fault: one add_lora call answered."""
    text = read_log("w9312.log").replace(
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "ValueError: LoRA rank 64 is greater than max_lora_rank 16.")
    assert said(text) == (False, "request_error", "vllm_add_lora_failed")


def test_an_nccl_error_under_a_utility_call_stays_the_callers():
    """Round 58's w5810: NCCL's "unhandled cuda error" of a communicator's init names no sticky kernel fault."""
    assert reads(read_log("w5810.log"))[:2] == (False, "request_error")


# --- the lines the rule cites are vLLM's ------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.9.0", "vllm/v1/engine/core.py", 'logger.exception("Invocation of %s method failed", method_name)'),
    ("0.9.0", "vllm/v1/engine/core.py", 'logger.exception("EngineCore encountered a fatal error.")'),
    ("0.9.0", "vllm/v1/engine/core.py", "return self.model_executor.add_lora(lora_request)"),
    ("0.9.0", "vllm/lora/models.py", "lora_embeddings_tensor.pin_memory())"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
