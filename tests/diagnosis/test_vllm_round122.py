"""vLLM held-out round 122 (10 logs, w12201-w12204 and w12221-w12226), folded into work after its miss was read.

Measured once on main at b619aa72 (staged as d666780e and a2969123, two collectors' parts): crashed 9/10, kind 9/10,
phase 10/10 (w12221-w12226 6/6, 6/6, 6/6; w12201-w12204 3/4, 3/4, 4/4). One log missed, read against CPython's and
torch's source:

- w12201 (crashed and kind, fixed): a vLLM 0.24 dev build in docker answers two chat completions with 200 and refuses
  one with 404 ("The model `not-a-served-model` does not exist.", NotFoundError: vllm 0.27.1
  vllm/entrypoints/serve/engine/serving.py:63-68, logged by chat_completion/serving.py:208), then stops on SIGTERM
  through vLLM's orderly shutdown ("[shutdown] API server: shutdown triggered", 0.27.1 vllm/entrypoints/launcher.py:112,
  ... uvicorn's "Application shutdown complete."). After that, at the interpreter's exit, a traceback whose outermost
  frame is weakref.py's ``_exitfunc``: weakref.finalize registers it with atexit (CPython 3.12.1 Lib/weakref.py:569-574)
  and, at exit, calls each finalizer still alive (:666 "f()") and hands its Exception to sys.excepthook (:667-668),
  going on to the next; this one is torch's ``_del_library`` (torch 2.8.0 torch/library.py:124, :456) ending in a
  UnicodeDecodeError. ddlab read that traceback as the crash (unknown at serving). A finalizer's error printed at exit
  after the server's own stop notice is the stop ending, no crash (diagnosis/stops.py ``exited_on_stop``, which
  :func:`.rootcause.candidates` asks of every traceback after the stop): not crashed, request_error (the 404, round
  120's rule keeps a 404 on /v1/chat/completions the client's) at serving, as labelled. The same traceback with no
  stop notice before it stays a crash; an exception the engine raises during the shutdown keeps its reading; a
  traceback starting in an ``_exitfunc`` of another file is no finalizer's.
- The other nine read as labelled: w12221 (argparse's "unrecognized arguments: --disable-log-requests"), w12224
  (VllmConfig's validation), w12225 (Arctic Inference missing for suffix decoding), w12226 (no platform found), w12223
  (the KV cache too small for one request), w12204 (an Ascend NPU custom op's type error, unknown at serving), and
  w12202, w12222 (runs that served and were stopped), w12203 (still serving where the log ends).

The positive tests below failed at b619aa72 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_REAL, assert_in_library_wheel, assert_in_wheel,
                      assert_vllm_logs_read_as_labelled, disputed, folded_round, not_unpacked, read_log, reads, said)

_ROUND = [f"w122{n:02d}" for n in (1, 2, 3, 4, 21, 22, 23, 24, 25, 26)]
_P = "(APIServer pid=51) "
_API = f"{_P}INFO:     "
_UP = (f"{_P}INFO 08-10 07:22:43 [api_utils.py:339]   version 0.24.0+092c4842.dev\n"
       f"{_P}INFO 08-10 07:23:17 [launcher.py:46] Route: /v1/chat/completions, Methods: POST\n"
       f"{_API}Started server process [51]\n{_API}Waiting for application startup.\n"
       f"{_API}Application startup complete.\n"
       + f'{_API}10.0.0.1:49768 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' * 2)
_STOP = (f"{_P}INFO 08-10 07:23:32 [launcher.py:100] [shutdown] API server: shutdown triggered\n"
         "(EngineCore pid=186) INFO 08-10 07:23:32 [core.py:1214] [shutdown] EngineCore: trigger received "
         "signal=SIGTERM\n"
         f"{_P}INFO 08-10 07:23:32 [launcher.py:149] [shutdown] API server: shutting down FastAPI HTTP server\n"
         f"{_API}Shutting down\n{_API}Waiting for application shutdown.\n{_API}Application shutdown complete.\n")
_SGLANG_STOP = ("[2025-01-01 10:00:00] Prefill batch. #new-seq: 1, #new-token: 8, #cached-token: 0\n"
                "[2025-01-01 10:00:05] WARNING tokenizer_manager.py:4068: SIGTERM received. signum=None frame=None. "
                "Draining requests and shutting down...\n")
_EXITFUNC = ("/usr/lib/python3.12/weakref.py", 666, "_exitfunc", "f()")
_ENGINE_FAILS = ("(EngineCore pid=186) Traceback (most recent call last):\n"
                 '(EngineCore pid=186)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", '
                 "line 1364, in shutdown\n"
                 "(EngineCore pid=186)     self.model_executor.shutdown()\n"
                 "(EngineCore pid=186) RuntimeError: CUDA error: an illegal memory access was encountered\n")


def _finalizer(first: tuple = _EXITFUNC, head: str = _P) -> str:
    """The traceback a weakref.finalize callback's error prints at exit, its outermost frame ``first``."""
    frames = [first, ("/usr/lib/python3.12/weakref.py", 590, "__call__",
                      "return info.func(*info.args, **(info.kwargs or {}))"),
              ("/usr/local/lib/python3.12/dist-packages/torch/library.py", 663, "_del_library",
               "_clear_torch_ops_cache(op_defs)"),
              ("/usr/local/lib/python3.12/dist-packages/torch/_ops.py", 1412, "_get_packet",
               "op, overload_names = torch._C._jit_get_operation(qualname)")]
    out = [f"{head}Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'{head}  File "{path}", line {line}, in {func}', f"{head}    {code}"]
    out.append(f"{head}UnicodeDecodeError: 'utf-8' codec can't decode byte 0xd0 in position 180: invalid "
               "continuation byte")
    return "\n".join(out) + "\n"


def test_the_round_is_folded_with_its_ten_logs():
    assert folded_round(VLLM_MANIFEST, 122) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


@pytest.mark.parametrize(("log_id", "verdict", "phase"), [
    ("w12201", (False, "request_error", "vllm_request_http_4xx"), "serving"),
    ("w12202", (False, None, None), "serving"),
    ("w12203", (False, None, None), "serving"),
    ("w12204", (True, "unknown", None), "serving"),
    ("w12221", (True, "bad_argument", "vllm_argparse"), "launch"),
    ("w12222", (False, None, None), "serving"),
    ("w12223", (True, "kv_pool_oom", "vllm_kv_max_len"), "memory_pool"),
    ("w12224", (True, "bad_argument", "vllm_config_invalid"), "launch"),
    ("w12225", (True, "dependency_mismatch", "vllm_import_error"), "launch"),
    ("w12226", (True, "dependency_mismatch", "vllm_no_platform"), "launch"),
])
def test_each_log_is_read_by_its_signature(log_id, verdict, phase):
    text = read_log(f"{log_id}.log")
    assert said(text) == verdict
    assert reads(text)[2] == phase


@pytest.mark.parametrize("log_id", ["w12202", "w12203", "w12222", "w12223"])
def test_the_copies_with_carriage_returns_read_alike_either_way(log_id):
    text = read_log(f"{log_id}.log")
    assert "\r" in text
    assert reads(text) == reads((VLLM_REAL / f"{log_id}.log").read_text(encoding="utf-8"))


# --- w12201: a finalizer's error at the interpreter's exit, after the server's own shutdown --------------------------

def test_w12201_is_the_404_of_a_server_that_was_stopped():
    assert reads(read_log("w12201.log")) == (False, "request_error", "serving")
    assert said(read_log("w12201.log"), family="vllm") == (False, "request_error", "vllm_request_http_4xx")


@pytest.mark.parametrize("family", [None, "vllm"])
def test_a_finalizers_error_after_the_shutdown_is_no_crash(family):
    assert said(_UP + _STOP + _finalizer(), family=family) == (False, None, None)


def test_a_finalizers_error_after_sglangs_sigterm_drain_is_no_crash():
    assert said(_SGLANG_STOP + _finalizer(head=""), family="sglang")[0] is False


@pytest.mark.parametrize("family", [None, "vllm"])
def test_near_miss_the_same_traceback_with_no_stop_before_it_stays_a_crash(family):
    assert said(_UP + _finalizer(), family=family) == (True, "unknown", None)


@pytest.mark.parametrize("family", [None, "vllm"])
def test_near_miss_an_exitfunc_of_another_file_is_no_finalizers(family):
    text = _UP + _STOP + _finalizer(first=("/app/serve.py", 12, "_exitfunc", "f()"))
    assert said(text, family=family) == (True, "unknown", None)


@pytest.mark.parametrize("tail", ["", _finalizer()], ids=["alone", "then-a-finalizer"])
def test_near_miss_the_engines_own_error_during_the_shutdown_keeps_its_reading(tail):
    assert said(_UP + _STOP + _ENGINE_FAILS + tail) == (True, "cuda_illegal_access", "vllm_cuda_illegal_access")


# --- the texts the rule and the labels cite -------------------------------------------------------------------------

_WEAKREF = Path("/root/.pyenv/versions/3.12.1/lib/python3.12/weakref.py")


@pytest.mark.parametrize(("line", "text"), [(573, "atexit.register(self._exitfunc)"), (590, "return info.func("),
                                            (642, "def _exitfunc(cls):"), (666, "f()"),
                                            (668, "sys.excepthook(*sys.exc_info())")])
def test_the_cited_weakref_lines_are_cpython_3_12s(line, text):
    if not _WEAKREF.exists():
        pytest.skip(not_unpacked(_WEAKREF))
    assert text in _WEAKREF.read_text().splitlines()[line - 1]


def test_torch_registers_its_librarys_finalizer():
    assert_in_library_wheel("torch", "2.8.0", "torch/library.py", "        weakref.finalize(\n            self,\n"
                            "            _del_library,")


@pytest.mark.parametrize(("path", "text"), [
    ("vllm/entrypoints/launcher.py", 'logger.info_once("[shutdown] API server: shutdown triggered")'),
    ("vllm/entrypoints/serve/engine/serving.py", 'message=f"The model `{request.model}` does not exist.",'),
    ("vllm/entrypoints/openai/chat_completion/serving.py", 'logger.error("Error with model %s", error_check_ret)'),
], ids=["shutdown", "not-found", "logged"])
def test_the_cited_lines_are_vllms_own(path, text):
    assert_in_wheel("0.27.1", path, text)
