"""How the server's process ended, as systemd or the shell wrote it, and which run to read.

Contract: :func:`exit_of` reads the unstamped lines of a log (systemd's
"Main process exited, code=killed, status=9/KILL", "Failed with result
'oom-kill'", the kernel's "Out of memory: Killed process", a shell's
"line 48: 28 Killed python3 ...", "Fatal Python error: ...", KServe's
"Failed to start model server: ...") and returns an :class:`Exit`: the
status, whether it failed, and why in one line. A SIGTERM after systemd's
"Stopping ..." and exit 0 are not failures. ``killed`` is true when the
process got SIGKILL from outside (the shell's ``Killed``, systemd's
``oom-kill``); SGLang's launcher also SIGKILLs itself after a child failed,
which the caller tells apart by the launcher's "Received sigquit" line.
:func:`last_run` keeps the lines of the unit's last start when a journal holds
several. Two exits are read from lines that are no exit's own: :func:`ended_unasked` (the
resource tracker's warning ending a startup no one stopped) and :func:`router_start_panic`
(tokio's panic on the thread that starts sgl-router, which ends it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ddlab.diagnosis.logtext import Line

__all__ = ["Exit", "exit_of", "last_run", "OOM_KILLER", "SHELL_QUIT_RE", "CRASHED_EXIT", "ENDED_UNASKED",
           "ended_unasked", "systemd_stopping", "ROUTER_START_PANIC", "router_start_panic"]

# ddlab's exit status for a crash, for scripts: `ddlab watch` on a crashed variant and
# `ddlab diagnose` on a crash log (docs/DESIGN.md has the whole table).
CRASHED_EXIT = 3

_EXIT_RE = re.compile(r"Main process exited, (?P<status>code=(?P<code>\w+), status=(?P<value>[^\s,;]+))")
_RESULT_RE = re.compile(r"Failed with result '(?P<result>[^']+)'")
_STOPPING_RE = re.compile(r"^Stopping\b")
# (round 64) and bash's word for a job SIGQUIT ended ("Quit (core dumped)", SIGQUIT's default action dumps
# core): a signal sent to it, which SGLang's children send their parent when they fail (0.4.2
# managers/scheduler.py:1787-1788 after "Scheduler hit an exception"; 0.5.23 :6373) and the launcher's
# handler (0.4.2 entrypoints/engine.py:329-335) answers unless the process that embeds the engine has none
_SHELL_DEATH_RE = re.compile(r"^(?:\S+: line \d+:\s+\d+\s+)?(?P<what>Killed|Aborted|Segmentation fault)"
                             r"\b|^(?:\S+: line \d+:\s+\d+\s+Quit\b|Quit(?: \(core dumped\))?\s*$)"
                             r"|^Fatal Python error: (?P<fatal>.+)")
# the shell's line for a job SIGQUIT ended (its script form included)
SHELL_QUIT_RE = re.compile(r"^(?:\S+: line \d+:\s+\d+\s+)?Quit\b")
_START_RE = re.compile(r"^Start(?:ing|ed) \S")
# (vLLM round 68) KServe's huggingfaceserver loads the model and starts its server inside one try in __main__ and,
# whatever raises there, logs "Failed to start model server: <the exception's str>" and exits 1 (kserve v0.13.0
# python/huggingfaceserver/huggingfaceserver/__main__.py:254-255; v0.14.0 :259-260): the record is its exit
_KSERVE_EXIT_RE = re.compile(r"\bkserve ERROR \[__main__\.py:<module>\(\):\d+\] Failed to start model server: \S")
OOM_KILLER = "killed by the kernel OOM killer (host memory ran out)"
# (round 30) CPython's resource tracker warns of what its clients left registered only once every process
# that shared it has exited: it reads EOF then (Lib/multiprocessing/resource_tracker.py:8, main()'s
# finally, :249-256 in 3.12; :211-218 in 3.8). Mid-startup, with no stop asked (SIGTERM's notice, Ctrl-C,
# systemd's "Stopping"), the server's processes were ended without a word: killed from outside
_TRACKER_RE = re.compile(r"resource_tracker: There appear to be \d+ leaked \S+ objects to clean up at "
                         r"shutdown")
_ASKED_RE = re.compile(r"^KeyboardInterrupt\b|SIGTERM received\. |^Stopping\b")
ENDED_UNASKED = ("the server's processes all ended mid-startup with no error and no stop asked (CPython's "
                 "resource_tracker warned of leaked objects at its shutdown): killed from outside")

# (round 71) sgl-router (Rust, ``sglang_router_rs``) built its Router inside the async start-up that Router.start
# runs: ``server::startup`` -> ``AppState::new`` -> ``Router::new`` -> ``wait_for_healthy_workers`` with a
# ``reqwest::blocking::Client`` (sgl-router src/router.rs of Jan-Jun 2025; sglang issue 7901's backtrace: router.rs:319,
# server.rs:37, :343, lib.rs:293; fixed by PR 7619). Dropping that client's runtime there is tokio's panic "Cannot
# drop a runtime in a context where blocking is not allowed" (tokio src/runtime/blocking/shutdown.rs:51, the place
# the panic prints) on the thread running start: Python's (Rust names it '<unnamed>') or a binary's 'main'. Unwound,
# pyo3 raises it in Python as PanicException, a BaseException (pyo3 src/panic.rs), past launch_router's ``except
# Exception`` (sglang-router 0.1.6 launch_router.py:432) and out of main (:474): the router exits at start-up.
# A panic on one of actix's workers ('actix-rt|system:0|arbiter:N') ends that worker only.
_ROUTER_LINE_RE = re.compile(r"\bsglang_router_rs::|\[Router \(Rust\)\]")
_START_PANIC_RE = re.compile(r"^thread '(?:<unnamed>|main)' panicked at .*\btokio-[\d.]+/src/runtime/blocking/"
                             r"shutdown\.rs:\d+")
ROUTER_START_PANIC = ("sgl-router panicked on the thread that starts it (tokio: a runtime dropped inside the "
                      "async start-up, 'Cannot drop a runtime in a context where blocking is not allowed'): the "
                      "router exited at start-up")


@dataclass
class Exit:
    status: str | None = None
    failed: bool = False
    why: str | None = None
    killed: bool = False
    lines: list[Line] = field(default_factory=list)


def _exit_line(msg: str, stopping: bool) -> tuple[str | None, str | None, bool]:
    """(status, why, failed) that one line says about how the server ended."""
    if exited := _EXIT_RE.search(msg):
        code, value = exited["code"], exited["value"]
        clean = code == "exited" and value.split("/")[0] == "0"
        asked = stopping and value.split("/")[-1] in ("TERM", "INT", "HUP", "15", "2", "143", "130")
        failed = not clean and not asked
        return exited["status"], f"main process exited: {exited['status']}" if failed else None, failed
    if result := _RESULT_RE.search(msg):
        oom = result["result"] == "oom-kill"
        return None, OOM_KILLER if oom else f"systemd: failed with result '{result['result']}'", True
    if "killed by the OOM killer" in msg or "Out of memory: Killed process" in msg:
        return None, OOM_KILLER, True
    if _SHELL_DEATH_RE.search(msg):
        return msg, msg, True
    if _KSERVE_EXIT_RE.search(msg):
        return "code=exited, status=1", msg, True
    return None, None, False


def exit_of(lines: list[Line]) -> Exit:
    """How the process ended, from the unstamped lines (see the module docstring)."""
    seen, stopping = Exit(), False
    for line in lines:
        # (vLLM round 39) a line that carried vLLM's stamp at a quiet level is a record of vLLM's logger
        # (``Line.record``), never a shell's word: "Aborted request %s." is the frontend's INFO when a
        # request is aborted (vllm 0.8.5.post1 v1/engine/async_llm.py:411; "Aborted request(s) %s.",
        # 0.23.0 :721), not bash's "Aborted (core dumped)"
        if line.stamped or line.record:
            continue
        msg = line.msg.strip()
        stopping = stopping or bool(_STOPPING_RE.search(msg))
        status, why, failed = _exit_line(msg, stopping)
        if status or why:
            seen.lines.append(line)
            seen.status = status or seen.status
            seen.failed = seen.failed or failed
            seen.killed = seen.killed or why == OOM_KILLER or bool(re.search(r"\bKilled\b", msg))
            if why and (seen.why is None or OOM_KILLER not in seen.why):
                seen.why = why if seen.why is None or why == OOM_KILLER else seen.why
    return seen


def _systemds(line: Line) -> bool:
    """A line systemd wrote about the unit (its ident, or a bare line naming a .service), none of the
    server's own."""
    return not line.stamped and (line.ident == "systemd" or (line.ident is None and ".service" in line.msg))


def systemd_stopping(line: Line) -> bool:
    """systemd's "Stopping UNIT..." line: the unit is being stopped, as asked."""
    return _systemds(line) and bool(_STOPPING_RE.search(line.msg.strip()))


def last_run(lines: list[Line]) -> list[Line]:
    """The lines of the unit's last run, when the journal holds several."""
    starts = [i for i, ln in enumerate(lines) if _systemds(ln) and _START_RE.search(ln.msg)]
    # (vLLM round 29) a start the journal shows nothing of the server's after (a restart loop's journal
    # ending on systemd's "Started" line) is no run yet: the last run that shows anything is the one before
    while len(starts) > 1 and all(not ln.msg.strip() or _systemds(ln) for ln in lines[starts[-1]:]):
        starts.pop()
    if len(starts) < 2:
        return lines
    cut = starts[-1]
    while cut - 1 in starts and lines[cut - 1].msg.startswith("Starting"):
        cut -= 1
    return lines[cut:]


def ended_unasked(lines: list[Line], phase: str) -> Line | None:
    """The resource tracker's leak warning that ends a startup (``phase`` before ``ready``) no stop was
    asked of: the server's processes were killed without a word (see :data:`ENDED_UNASKED`)."""
    if phase in ("ready", "serving") or any(_ASKED_RE.search(ln.msg.strip()) for ln in lines):
        return None
    return next((ln for ln in reversed(lines) if _TRACKER_RE.search(ln.msg)), None)


def router_start_panic(lines: list[Line]) -> Line | None:
    """tokio's runtime-drop panic on the thread that starts sgl-router, in a log of the router's own lines: the
    router exited at start-up (see :data:`ROUTER_START_PANIC`)."""
    if not any(_ROUTER_LINE_RE.search(ln.msg) for ln in lines):
        return None
    return next((ln for ln in lines if _START_PANIC_RE.search(ln.msg.strip())), None)
