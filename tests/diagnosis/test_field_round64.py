"""Held-out round 64 (issue 24): sgl-router's 501 answer, the shell's 'Quit', a Runtime's own duplicate.

Round 64 (h64001-h64011; excerpts of issue threads and pull requests) was measured once on main at 8b9db97
(with the round's logs, 2ede46e): crashed 10/11, kind 8/11, phase 7/8. docs/diagnosis.md, "Held-out round
64", tells the round. Two misses were ddlab's:

- h64004, a curl to sgl-router's /get_model_info answered "Model info endpoint not yet implemented in
  RouterManager": the router's 501 body (sglang-router 0.2.2 src/routers/router_manager.rs:342-344), the
  router serving on: ``request_error`` at serving, by ``router_not_implemented`` (crashes/kinds/router.py).
- h64005, Dynamo's worker waiting for the engine, then the shell's "Quit (core dumped)": a job SIGQUIT
  ended, the signal SGLang's children send their parent when one fails (0.4.2 managers/scheduler.py:1787-1788):
  crashed, ``unknown``, by the shell's job-status line (diagnosis/exits.py ``_SHELL_DEATH_RE``).

The third, h64009 ("ServerArgs() got multiple values for keyword argument 'log_level'"), is disputed:
0.1.16's Runtime takes 'log_evel' (srt/server.py:240) and passes ``log_level=log_evel`` with the caller's
``**kwargs`` (:246), so SGLang's own code gives the valid field twice; ddlab's ``unknown`` stands. Each
positive test here fails on 2ede46e.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, reading, reads, real)

_IDS = folded_round(REAL_MANIFEST, 64)


def test_round64_is_folded_into_work_with_one_kind_disputed():
    assert _IDS == [f"h640{n:02d}" for n in range(1, 12)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h64009"]
    assert REAL_MANIFEST["h64009"]["kind_disputed"] == ["bad_argument", "unknown"]
    assert all(cite in REAL_MANIFEST["h64009"]["second_look"] for cite in ("server.py:240", ":246"))
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h64004", "router_not_implemented"),
    ("h64005", None),
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h64001", None), ("h64002", None), ("h64003", None), ("h64006", None), ("h64007", None), ("h64008", None),
    ("h64010", "dist_init_timeout"), ("h64011", None),
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_other_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h64009_reads_as_its_second_look():
    found = real("h64009")
    assert reading(found) == (True, "unknown", "launch") and found.signature is None


# --- h64004: sgl-router's 501 bodies -------------------------------------------------------------------

_ROUTER_LINE = ("2025-11-06 05:47:52  INFO http_request{method=GET uri=/get_model_info version=HTTP/1.1}: "
                "sglang_router_rs::request: src/middleware.rs:224: started processing request\n")


# the same answer to another route and mode, written from sglang-router 0.2.2's bodies
@pytest.mark.parametrize("body", [
    "Embeddings endpoint not implemented for PD router",         # http/pd_router.rs:1215
    "Health generate not yet implemented for gRPC PD",           # grpc/pd_router.rs:167
    "responses api not yet implemented in inference gateway mode",  # router_manager.rs:431
    "Responses delete endpoint not implemented",                 # mod.rs:103
], ids=["pd-embeddings", "grpc-pd-health", "igw-responses", "trait-default"])
def test_a_routers_501_body_reads_as_a_refused_request(body):
    text = f"$ curl -s http://127.0.0.1:8000/x\n{body}\n\n{_ROUTER_LINE}"
    assert reads(text) == (False, "request_error", "serving")


# near misses: the words inside another sentence, or a Python NotImplementedError (a crash's, not an answer)
@pytest.mark.parametrize("text", [
    "The model info endpoint is not yet implemented in our fork, see the docs\n",
    "NotImplementedError: Model info endpoint not yet implemented\n",
    "[2025-11-06 05:47:52] INFO: load model: the endpoint not implemented warning is harmless\n",
], ids=["prose", "python-error", "stamped-prose"])
def test_near_misses_do_not_read_as_a_routers_answer(text):
    assert reads(text)[1] != "request_error"


# --- h64005: the shell's job-status line for SIGQUIT --------------------------------------------------

_WAIT = "2025-03-21T07:56:53.878390Z  INFO dynamo_llm::engines::sglang::worker: Waiting for sglang0 to signal\n"


@pytest.mark.parametrize("end", [
    "Quit (core dumped)",                                             # bash jobs.c notify_of_job_status
    "Quit",                                                           # no core (ulimit -c 0)
    "./serve.sh: line 12:  4242 Quit                    (core dumped) python3 -m sglang.launch_server",
], ids=["core", "no-core", "script"])
def test_the_shells_quit_reads_as_a_crash_of_unknown_cause(end):
    found_text = f"$ python -m sglang.launch_server --model-path m\n{_WAIT}{end}\n"
    assert reads(found_text)[:2] == (True, "unknown")


# near misses: the word in a sentence, a prompt's answer, the launcher's own quit notice
@pytest.mark.parametrize("text", [
    f"{_WAIT}Quit the server with CTRL+C when done\n",
    f"{_WAIT}Quitting: no more requests\n",
    f"{_WAIT}[2025-03-21 07:56:54] Quit\n",
], ids=["prose", "quitting", "stamped"])
def test_near_misses_do_not_read_as_the_shells_quit(text):
    assert reads(text)[0] is False


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang-router", "0.2.2", "src/routers/router_manager.rs", 343, "StatusCode::NOT_IMPLEMENTED,"),
    ("sglang-router", "0.2.2", "src/routers/router_manager.rs", 344,
     '"Model info endpoint not yet implemented in RouterManager",'),
    ("sglang-router", "0.2.2", "src/routers/router_manager.rs", 431,
     '"responses api not yet implemented in inference gateway mode",'),
    ("sglang-router", "0.2.2", "src/routers/http/pd_router.rs", 1215,
     '"Embeddings endpoint not implemented for PD router",'),
    ("sglang-router", "0.2.2", "src/routers/grpc/router.rs", 242, '"Health generate not yet implemented for gRPC",'),
    ("sglang-router", "0.2.2", "src/routers/mod.rs", 103, '"Responses delete endpoint not implemented",'),
    ("sglang", "0.4.2", "sglang/srt/managers/scheduler.py", 1787,
     'logger.error(f"Scheduler hit an exception: {traceback}")'),
    ("sglang", "0.4.2", "sglang/srt/managers/scheduler.py", 1788, "parent_process.send_signal(signal.SIGQUIT)"),
    ("sglang", "0.4.2", "sglang/srt/entrypoints/engine.py", 335, "signal.signal(signal.SIGQUIT, sigquit_handler)"),
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler.py", 6373, "parent_process.send_signal(signal.SIGQUIT)"),
    ("sglang", "0.1.16", "sglang/srt/server.py", 240, 'log_evel: str = "error",'),
    ("sglang", "0.1.16", "sglang/srt/server.py", 246, "ServerArgs(*args, log_level=log_evel, **kwargs)"),
    ("sglang", "0.1.16", "sglang/srt/server_args.py", 36, 'log_level: str = "info"'),
    ("sglang", "0.1.13", "sglang/srt/server.py", 589, 'log_level: str = "error",'),
    ("sglang", "0.1.13", "sglang/srt/server.py", 612, "log_level=log_level,"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_rules_cite_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
