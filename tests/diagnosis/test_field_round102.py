"""Held-out round 102 (issue 24): a routing test whose sgl-router panics at its start while its two SGLang servers
are ready, then stopped by the harness: the label's miss, disputed, ddlab's reading kept.

Round 102 (h102001, h102003, h102005-h102009; users' own log repositories and one thread) was measured once on main
at 66b14a51: crashed 6/7, kind 6/7, phase 5/6. docs/diagnosis.md, "Held-out round 102", tells the round.

- h102006 (Luoxiaogan/sglang_CUSTOM's test framework, SGLang 0.4.9.post3): both servers ready, then
  ``python -m sglang_router.launch_router`` panics in tokio ("Cannot drop a runtime in a context where blocking is not
  allowed") on the thread that calls Router.start; pyo3's PanicException (a BaseException) passes launch_router's
  ``except Exception`` (sglang-router 0.1.6 launch_router.py:429, :432, :474, :478, router.py:123, the log's frames):
  the router exited at its launch. The harness then SIGTERMs both servers (0.4.9.post3
  managers/tokenizer_manager.py:1821, :1353, :1287) and force-kills one: neither died of its own. Labelled not
  crashed, ready; ddlab reads crashed, unknown, launch, as round 35's h35001 (the same framework's run of the same
  day, the same panic and SIGTERMs) is labelled. Kind disputed [None, unknown], phase disputed [ready, launch];
  crashed stays as labelled (the corpus has no crashed dispute): a known miss (known_misses.json).
- No rule added (no lib change: dumpfull reads every fixture the same).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.exits import router_start_panic
from ddlab.diagnosis.logtext import split_lines
from fieldkit import KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 102)


def test_round102_is_folded_into_work_with_one_dispute_and_its_crashed_left():
    assert _IDS == ["h102001", "h102003", "h102005", "h102006", "h102007", "h102008", "h102009"]
    assert disputed(REAL_MANIFEST, _IDS) == ["h102006"]
    assert REAL_MANIFEST["h102006"]["kind_disputed"] == [None, "unknown"]
    assert REAL_MANIFEST["h102006"]["phase_disputed"] == ["ready", "launch"]
    assert REAL_MANIFEST["h102006"]["second_look"]
    assert {i: KNOWN_MISSES["real"][i] for i in _IDS if i in KNOWN_MISSES["real"]} == {"h102006": ["crashed"]}


def test_h102006_reads_as_the_second_look_and_as_h35001_of_the_same_harness():
    found, same = real("h102006"), real("h35001")
    assert (found.crashed, found.kind, found.phase) == (True, "unknown", "launch")
    assert (same.crashed, same.kind, same.phase) == (True, "unknown", "launch")
    assert (REAL_MANIFEST["h35001"]["crashed"], REAL_MANIFEST["h35001"]["kind"]) == (True, "unknown")
    assert found.cause.startswith("pyo3_runtime.PanicException: Cannot drop a runtime")


# --- what the reading rests on: the router's panic, not the harness's stop ---------------------------------------

# round 71's rule reads the router's exit here too: tokio's panic on the thread that starts it, under its own lines
def test_round71s_router_start_panic_reads_the_routers_exit_in_h102006():
    lines = split_lines((REAL / "h102006.log").read_text(encoding="utf-8"))
    panic = router_start_panic(lines)
    assert panic is not None and "tokio-1.46.1/src/runtime/blocking/shutdown.rs:51:21" in panic.msg


def _lines() -> list[str]:
    return (REAL / "h102006.log").read_text(encoding="utf-8").splitlines()


def _without(lines: list[str], first: str, last: str) -> str:
    start = next(i for i, ln in enumerate(lines) if first in ln)
    end = next(i for i, ln in enumerate(lines) if ln.startswith(last))
    return "\n".join(lines[:start] + lines[end + 1:]) + "\n"


# near miss: the same log without the router's stderr (its panic and PanicException) is the harness stopping two
# ready servers (SIGTERM, the drain, the force-kill, its own RuntimeError): no crash, ready, as the label reads it
def test_the_harness_stopping_its_ready_servers_without_the_router_panic_is_no_crash():
    assert reads(_without(_lines(), "[ERROR] stderr:", "pyo3_runtime.PanicException"), family="sglang") == \
        (False, None, "ready")


# near miss: the servers' lines up to the router's start, and the harness's stop lines after them, are no crash
def test_the_servers_stopped_by_sigterm_alone_are_no_crash():
    lines = _lines()
    cut = next(i for i, ln in enumerate(lines) if "Router failed to start" in ln)
    stop = [ln for ln in lines[cut:] if "[worker_" in ln or "Stopping server" in ln or "Force killing" in ln]
    assert any("SIGTERM received" in ln for ln in stop) and any("Force killing" in ln for ln in stop)
    assert reads("\n".join(lines[:cut] + stop) + "\n", family="sglang") == (False, None, "ready")


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_CITED = [
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 429, "router.start()"),
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 432, "except Exception as e:"),
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 474, "launch_router(router_args)"),
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 478, "main()"),
    ("sglang-router", "0.1.6", "sglang_router/router.py", 123, "self._router.start()"),
    ("sglang", "0.4.10.post2", "sglang/srt/managers/tokenizer_manager.py", 1988,
     'f"SIGTERM received. {signum=} {frame=}. Draining requests and shutting down..."'),
    ("sglang", "0.4.10.post2", "sglang/srt/managers/tokenizer_manager.py", 1486,
     'f"Gracefully exiting... remaining number of requests {remain_num_req}"'),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
