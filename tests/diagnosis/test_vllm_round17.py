"""The rules that held-out round 17 of the vLLM corpus (vr01-vr27, measured once at 4885afe) showed
missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.11.1, 0.30.0, 0.33.0,
0.34.0): the log that showed it is one case, a text written from the source in another form is the other, and
a text beside it that the rule must not take is a third. The source checks skip where the wheels are not
unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import STAMP, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test


_NIXL = "vllm/distributed/kv_transfer/kv_connector/v1/nixl"
SOURCES = [
    # the NIXL connector's failure record, and the handshake callback that logs it (catching the error)
    ("0.30.0", f"{_NIXL}/base_worker.py", '"NIXL transfer failure: %s | Context: %s",'),
    ("0.33.0", f"{_NIXL}/base_worker.py", '"NIXL transfer failure: %s | Context: %s",'),
    ("0.34.0", f"{_NIXL}/base_worker.py", '"NIXL transfer failure: %s | Context: %s",'),
    ("0.34.0", f"{_NIXL}/base_worker.py", 'failure_type="handshake_setup_failed",'),
    ("0.34.0", f"{_NIXL}/base_worker.py", 'failure_type="transfer_failed",'),
    ("0.11.1", f"{_NIXL}_connector.py", 'logger.exception("Handshake with %s failed", eid)'),
    # NIXL not importable: a warning at import, the connector worker's refusal
    ("0.11.1", f"{_NIXL}_connector.py", 'raise RuntimeError("NIXL is not available")'),
    ("0.30.0", f"{_NIXL}/base_worker.py", 'raise RuntimeError("NIXL is not available")'),
    ("0.33.0", f"{_NIXL}/base_worker.py", 'raise RuntimeError("NIXL is not available")'),
    ("0.34.0", f"{_NIXL}/base_worker.py", 'raise RuntimeError("NIXL is not available")'),
    ("0.34.0", "vllm/distributed/nixl_utils.py", 'logger.warning_once("NIXL is not available")'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- the NIXL connector's failure record: logged, caught, the engine serves on ---------------------------

_WORKER = "(Worker_TP0 pid=1) ERROR 12-03 10:00:00 [base_worker.py:1517] "
_CONTEXT = "{'failure_type': '%s', 'request_id': %s, 'engine_id': 'e1'}"
_CALLBACK = (f"{_NIXL}/base_worker.py", 1506, "done_callback", "remote_agents, clock_offset = f.result()")
_RESULT = ("concurrent/futures/_base.py", 449, "result", "return self.__get_result()")


def _failure(failure_type: str, req: str = "None", exc: str | None = None,
             frames=(_CALLBACK, _RESULT)) -> str:
    context = _CONTEXT % (failure_type, req)
    head = _WORKER + f"NIXL transfer failure: {failure_type} | Context: {context}\n"
    return head + (vllm_traceback(*frames, exc=exc, head=_WORKER) if frames else "")


def test_a_nixl_transfer_failure_record_is_a_requests_error():
    """vr13: "NIXL transfer failure: handshake_setup_failed | Context: {...}" with the handshake callback's
    traceback cut in f.result(); read crashed (unknown, a cut traceback) before."""
    assert reads(read_log("vr13.log"), "vllm")[:2] == (False, "request_error")
    assert vllm_signature(read_log("vr13.log")) == "vllm_nixl_transfer_failure"
    # the same record whole, its exception shown; another step's record with no traceback (transfer_failed)
    whole = _failure("handshake_setup_failed", exc="zmq.error.Again: Resource temporarily unavailable")
    assert reads(whole, "vllm")[:2] == (False, "request_error")
    assert reads(_failure("transfer_failed", req="'r1'", frames=()), "vllm")[:2] == (False, "request_error")


def test_a_traceback_cut_in_the_handshake_callback_alone_is_still_that_record():
    """The record's line cut off above: the callback's frame (nixl_connector.py's or base_worker.py's
    done_callback, which catches in every release) says whose traceback it is."""
    cut = vllm_traceback(_CALLBACK, _RESULT, exc=None, head=_WORKER)
    assert reads(cut, "vllm")[:2] == (False, "request_error")
    old = vllm_traceback((f"{_NIXL}_connector.py", 1097, "done_callback",
                          "self._remote_agents[eid] = f.result()"), _RESULT, exc=None, head=_WORKER)
    assert vllm_signature(old) == "vllm_nixl_transfer_failure"


def test_nixl_failures_that_no_record_logs_stay_what_they_were():
    """A traceback cut in another connector's done_callback (MoRIIO's), or NIXL's status raised at startup
    (registering the KV cache, nothing catches) is not this record: the first is a cut traceback, the second
    still a PD transfer crash."""
    moriio = vllm_traceback(("vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_connector.py", 1780,
                             "done_callback", "f.result()"), _RESULT, exc=None)
    assert reads(moriio, "vllm")[:2] == (True, "unknown")
    startup = vllm_traceback((f"{_NIXL}/base_worker.py", 900, "register_kv_caches",
                              "self.nixl_wrapper.register_memory(descs)"),
                             ("nixl/_api.py", 384, "register_memory",
                              "self.agent.registerMem(reg_descs, handle_list)"),
                             exc="nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND")
    assert reads(startup, "vllm")[:2] == (True, "pd_transfer")


# --- NIXL not importable where the NixlConnector is configured ---------------------------------------------

_CORE = "(EngineCore_DP0 pid=1) " + STAMP
_BUILD = ((f"{_NIXL}/connector.py", 382, "__init__", "self.connector_worker = NixlPullConnectorWorker("),
          (f"{_NIXL}/base_worker.py", 670, "__init__", 'raise RuntimeError("NIXL is not available")'))


def test_nixl_not_available_raised_is_a_dependency_mismatch():
    """vr14: "RuntimeError: NIXL is not available" (an engine core, the traceback cut above the raise, an
    elision and the connector's shutdown AttributeError below); read unknown before."""
    assert reads(read_log("vr14.log"), "vllm")[:2] == (True, "dependency_mismatch")
    assert vllm_signature(read_log("vr14.log")) == "vllm_nixl_unavailable"
    whole = vllm_traceback(*_BUILD, exc="RuntimeError: NIXL is not available", head=_CORE)
    assert reads(whole, "vllm")[:2] == (True, "dependency_mismatch")
    assert vllm_signature(whole) == "vllm_nixl_unavailable"


def test_nixl_not_available_as_a_warning_is_no_crash_and_explains_no_other():
    """The import's warning (every server that does not use NIXL logs it) is no crash; a server that then dies
    of something else dies of that."""
    warn = "(APIServer pid=1) WARNING 12-03 10:00:00 [nixl_utils.py:63] NIXL is not available\n"
    assert reads(warn, "vllm")[0] is False
    oom = vllm_traceback(("vllm/v1/worker/gpu_worker.py", 10, "determine_available_memory", "x()"),
                         exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert reads(warn + oom, "vllm")[:2] == (True, "cuda_oom")
    other = vllm_traceback(*_BUILD, exc="RuntimeError: NIXL agent config is not available", head=_CORE)
    assert vllm_signature(other) != "vllm_nixl_unavailable"
