"""The rules that held-out round 16 of the vLLM corpus (vq01-vq19, measured once at 2fe9852) showed
missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.4.post1, 0.7.3,
0.11.1, 0.34.0; NIXL's Python bindings, ai-dynamo/nixl; CPython's import system): the log that showed it is one
case, a text written from the source in another form is the other, and a text beside it that the rule must not
take is a third. The source checks skip where the wheels are not unpacked (CI); CPython's is read from the
running interpreter; the readings run everywhere.
"""

from __future__ import annotations

import importlib._bootstrap  # noqa: PLC2701 (CPython's import system: the text of a missing module)

from fieldkit import STAMP, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test


SOURCES = [
    # V0's multiprocessing engine logs the exception itself as the record's message
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", "logger.exception(repr(e))"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", "        logger.exception(e)\n"),
    ("0.7.3", "vllm/engine/multiprocessing/engine.py", "logger.exception(repr(e))"),
    ("0.7.3", "vllm/engine/multiprocessing/engine.py", "        logger.exception(e)\n"),
    # every line of a record under the record's prefix, a traceback's included
    ("0.7.3", "vllm/logging_utils/formatter.py", 'msg = msg.replace("\\n", "\\r\\n" + parts[0])'),
    ("0.34.0", "vllm/logging_utils/formatter.py", 'msg = msg.replace("\\n", "\\r\\n" + parts[0])'),
    # a fallback's traceback logged at DEBUG
    ("0.11.1", "vllm/entrypoints/chat_utils.py", '"Failed to load AutoProcessor chat template for %s",'),
    ("0.34.0", "vllm/renderers/hf.py", '"Failed to load AutoProcessor chat template for %s",'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


def test_a_missing_modules_text_is_cpythons_own():
    assert importlib._bootstrap._ERR_MSG == "No module named {!r}"


# V0's run_mp_engine and MQLLMEngine.start, the outer frames of the traceback they log
_RUN_MP = ("vllm/engine/multiprocessing/engine.py", 400, "run_mp_engine", "engine = MQLLMEngine.from_engine_args(")
_INIT = ("vllm/engine/multiprocessing/engine.py", 87, "__init__", "self.engine = LLMEngine(*args, **kwargs)")
_START = ("vllm/engine/multiprocessing/engine.py", 138, "start", "self.run_engine_loop()")
_LOOP = ("vllm/engine/multiprocessing/engine.py", 206, "run_engine_loop", "self.handle_new_input()")
_V0_STAMP = "ERROR 12-03 10:00:00 engine.py:400] "


def _engine_record(message: str, *frames: tuple, exc: str | None = None, head: str = _V0_STAMP) -> str:
    """V0's engine record: the exception as the message, then its traceback under the same prefix."""
    return head + message + "\n" + vllm_traceback(*frames, exc=exc, head=head)


# --- V0's engine: the exception logged as the message, its traceback cut below --------------------------

def test_v0_engines_logged_message_is_the_exception_of_a_cut_traceback():
    """vq01: "No module named 'lmcache.experimental'" logged by run_mp_engine (engine.py:458), then its
    traceback cut inside LLMEngine's construction; read unknown (a cut traceback) before."""
    assert reads(read_log("vq01.log"))[:2] == (True, "dependency_mismatch")
    assert vllm_signature(read_log("vq01.log")) == "vllm_no_module_named"
    text = _engine_record("No module named 'lmcache.experimental'", _RUN_MP, _INIT)
    assert reads(text)[:2] == (True, "dependency_mismatch")
    # Python's default formatter: the traceback's lines bare under the prefixed message
    bare = "2025-05-16T04:56:18.119Z ERROR engine.run_mp_engine: No module named 'lmcache'\n" + \
        vllm_traceback(_RUN_MP, _INIT, exc=None, head="")
    assert reads(bare, family="vllm")[:2] == (True, "dependency_mismatch")


def test_a_line_above_a_cut_traceback_that_is_not_its_record_is_not_its_exception():
    """The message must be the record's own: another record's line above the traceback (an INFO line, a
    line under another prefix) or a traceback whose outer frame is not the engine's stays a cut traceback."""
    info = "INFO 12-03 10:00:00 engine.py:400] No module named 'lmcache'\n" + \
        vllm_traceback(_RUN_MP, _INIT, exc=None, head=_V0_STAMP)
    assert reads(info)[1] == "unknown"
    other = _engine_record("No module named 'lmcache'", _RUN_MP, _INIT).replace(
        _V0_STAMP + "No module", "ERROR 12-03 09:59:59 llm_engine.py:10] No module", 1)
    assert reads(other)[1] == "unknown"
    not_engine = _engine_record("No module named 'lmcache'", ("vllm/worker/worker.py", 10, "load_model", "x()"))
    assert reads(not_engine)[1] == "unknown"


def test_a_missing_module_is_a_dependency_mismatch_whatever_its_type():
    """The text of CPython's ModuleNotFoundError, logged alone (its type not shown) or raised; a message
    that only names a module beside other words is not this signature."""
    raised = vllm_traceback(_RUN_MP, exc="ModuleNotFoundError: No module named 'lmcache.experimental'")
    assert reads(raised)[:2] == (True, "dependency_mismatch")
    assert vllm_signature(_engine_record("No module named 'foo'", _RUN_MP, _INIT)) == "vllm_no_module_named"
    other = _engine_record("Model foo: No module named 'bar' was expected here", _RUN_MP, _INIT)
    assert vllm_signature(other) != "vllm_no_module_named"


# --- NIXL: an error status of the PD KV transfer ----------------------------------------------------------

_NIXL_INIT = ("vllm/engine/llm_engine.py", 453, "__init__", "self._nixl_agents_names = self._initialize_nixl()")
_NIXL_FRAME = ("vllm/engine/llm_engine.py", 481, "_initialize_nixl", "self.model_executor.collective_rpc(")


def test_a_nixl_status_at_startup_is_a_pd_transfer():
    """vq07: Dynamo's patched V0 engine, "ERROR engine.run_mp_engine: NIXL_ERR_BACKEND" (its logger, the
    traceback bare below), cut in LLMEngine._initialize_nixl; read unknown before."""
    assert reads(read_log("vq07.log")) == (True, "pd_transfer", "launch")
    text = _engine_record("NIXL_ERR_BACKEND", _RUN_MP, _INIT, _NIXL_INIT, _NIXL_FRAME)
    assert reads(text)[:2] == (True, "pd_transfer")
    # the bindings' exception raised in vLLM's V1 NIXL connector at startup (registering the KV cache)
    v1 = vllm_traceback(("vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", 900, "register_kv_caches",
                         "self.nixl_wrapper.register_memory(descs)"),
                        ("nixl/_api.py", 384, "register_memory", "self.agent.registerMem(reg_descs, handle_list)"),
                        exc="nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND")
    assert reads(v1)[:2] == (True, "pd_transfer")


def test_a_nixl_status_in_the_engine_loop_is_a_pd_transfer_while_serving():
    """vq08: MQLLMEngine.start logging "nixlUnknownError('NIXL_ERR_UNKNOWN')" (its repr) out of
    handle_new_input -> add_remote_nixl_metadata after a prefill request was dequeued; read unknown before."""
    assert reads(read_log("vq08.log")) == (True, "pd_transfer", "serving")
    text = _engine_record("nixlUnknownError('NIXL_ERR_UNKNOWN')", _START, _LOOP,
                          ("vllm/engine/multiprocessing/engine.py", 343, "handle_new_input",
                           "self.engine.add_remote_nixl_metadata(nixl_metadata)"), head="ERROR 12-03 10:00:00 "
                          "engine.py:140] ")
    assert reads(text) == (True, "pd_transfer", "serving")


def test_nixl_used_for_no_pd_transfer_or_for_one_request_is_not_this():
    """NIXL's status in the EPLB communicator (expert weights, no KV transfer), or a status with no frame of
    NIXL's, is no PD transfer; a handshake that failed for one request stays that request's error (vn08)."""
    eplb = vllm_traceback(("vllm/distributed/eplb/eplb_communicator.py", 424, "_init_registered_buffers",
                           "self._nixl_wrapper.register_memory(descs)"),
                          exc="nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND")
    assert reads(eplb)[1] != "pd_transfer"
    no_frame = vllm_traceback(("vllm/worker/worker.py", 10, "load_model", "x()"),
                              exc="RuntimeError: NIXL_ERR_BACKEND")
    assert reads(no_frame)[1] != "pd_transfer"
    assert vllm_signature(read_log("vn08.log")) == "vllm_nixl_handshake_failed"


# --- a DEBUG record's traceback -------------------------------------------------------------------------

_PROCESSOR = (("vllm/transformers_utils/processor.py", 69, "get_processor",
               "processor = processor_factory.from_pretrained("),
              ("transformers/models/auto/configuration_auto.py", 1149, "from_pretrained", "raise ValueError("))


def test_a_traceback_logged_at_debug_is_no_crash():
    """vq10: chat_utils' "Failed to load AutoProcessor chat template for PATH" with its traceback, every
    line at DEBUG (logger.debug(..., exc_info=True): the fallback taken); read crashed (unknown) before."""
    assert reads(read_log("vq10.log"))[:2] == (False, None)
    head = "(APIServer pid=1) DEBUG 12-03 10:00:00 [hf.py:304] "
    text = head + "Failed to load AutoProcessor chat template for /m\n" + \
        vllm_traceback(*_PROCESSOR, exc="ValueError: Unrecognized model in /m.", head=head)
    assert reads(text)[:2] == (False, None)


def test_the_same_traceback_at_error_or_an_error_after_it_is_still_read():
    """The same record at ERROR is a crash; an ERROR traceback after a DEBUG one is read as before."""
    text = STAMP + "Failed to load AutoProcessor chat template for /m\n" + \
        vllm_traceback(*_PROCESSOR, exc="ValueError: Unrecognized model in /m.")
    assert reads(text)[0] is True
    debug = "DEBUG 12-03 10:00:00 [hf.py:304] "
    before = debug + "Failed to load\n" + vllm_traceback(*_PROCESSOR, exc="ValueError: x", head=debug)
    after = vllm_traceback(("vllm/v1/worker/gpu_worker.py", 10, "determine_available_memory", "x()"),
                           exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert reads(before + after)[:2] == (True, "cuda_oom")
