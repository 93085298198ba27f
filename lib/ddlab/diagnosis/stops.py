"""How a server that did not crash was stopped, in the words of the line that says so.

Contract: :func:`stopped` reads a log's lines (its last run) and returns a short phrase naming the
stop — "stopped by Ctrl-C (KeyboardInterrupt)", "stopped by systemd (its "Stopping" line)" — when a
stop line follows the last progress line (a batch, an answered request), else None. The verdict of a
log that did not crash names it ("NOT CRASHED: stopped by SIGTERM (...), in phase launch") where it
would otherwise say "the server is serving" of a server that is no longer, or "still starting, or cut
short" of a start someone ended.

The texts are their writers' own:

- vLLM's SIGTERM handlers raise ``KeyboardInterrupt("terminated")`` while the server starts (vllm
  0.10.0 entrypoints/openai/api_server.py:1773-1777, 0.7.3 :941-943) and
  ``KeyboardInterrupt("MQLLMEngine terminated")`` in V0's engine process (0.10.0
  engine/multiprocessing/engine.py:434, 0.7.3 :385);
- a Ctrl-C is Python's ``KeyboardInterrupt`` with no message (SIGINT's default handler);
- SGLang's SIGTERM handler warns "SIGTERM received. ... Draining requests and shutting down..."
  (sglang 0.5.23 srt/managers/tokenizer_manager.py:4068);
- systemd writes "Stopping UNIT..." when it stops the unit;
- vLLM's HTTP server, cancelled by its own SIGINT/SIGTERM handler, says "Shutting down FastAPI HTTP
  server." (vllm 0.10.0 entrypoints/launcher.py:66-80); later releases' handler says "[shutdown] API
  server: shutdown triggered" (vllm 0.30.0 entrypoints/launchers/launcher.py:126-135, 0.27.1
  entrypoints/launcher.py:112);
- vLLM's engine core, told by its SIGINT/SIGTERM handler, says "Shutdown initiated (timeout=N)" (vllm 0.20.0
  v1/engine/core.py:1122-1127, :1238);
- uvicorn says "Shutting down" when its loop ends: a signal (uvicorn 0.54.0 server.py:351-356), or the
  application or a request limit asked it (server.py:275-282), so it names no signal.

Why a module of its own: the SGLang and vLLM readings both ask it, after their verdict is made; it
never changes whether a log crashed, only how a log that did not is named. :func:`exited_on_stop` is the one
exception, asked by :func:`.rootcause.candidates`: the traceback SGLang's own exit prints after the SIGTERM
drain, or a finalizer's that the interpreter's exit prints after the server's shutdown, is that stop, no crash.
"""

from __future__ import annotations

import re

from ddlab.diagnosis.exits import systemd_stopping
from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.tracebacks import Chain
from ddlab.diagnosis.vllm_log import VLLM_STATS

__all__ = ["stopped", "exited_on_stop", "SGLANG_SIGTERM_NOTICE", "VLLM_SHUTDOWN_TRIGGERED"]

# the two notices :func:`.rootcause.stop_asked` reads as well (its SIGTERM_NOTICE_RE)
SGLANG_SIGTERM_NOTICE = r"SIGTERM received\. signum=\S* frame=\S*\. Draining requests and shutting down"
VLLM_SHUTDOWN_TRIGGERED = r"\[shutdown\] API server: shutdown triggered"

_STOPS = (
    (re.compile(r"^KeyboardInterrupt: (?:MQLLMEngine )?terminated\b"),
     "stopped by SIGTERM (its handler raised KeyboardInterrupt: terminated)"),
    (re.compile(r"^KeyboardInterrupt$"), "stopped by Ctrl-C (KeyboardInterrupt)"),
    (re.compile(r"^KeyboardInterrupt\b"), "stopped by a signal (KeyboardInterrupt)"),
    (re.compile(SGLANG_SIGTERM_NOTICE), "stopped by SIGTERM (it drained its requests)"),
    (re.compile(rf"Shutting down FastAPI HTTP server\.|{VLLM_SHUTDOWN_TRIGGERED}"),
     "stopped by SIGINT or SIGTERM (vLLM shut its HTTP server down)"),
    (re.compile(r"Shutdown initiated \(timeout=\d+\)"), "stopped by SIGINT or SIGTERM (vLLM's engine: Shutdown initiated)"),
    (re.compile(r"^(?:INFO:\s+)?Shutting down$"), 'shut down (uvicorn: "Shutting down")'),
)
# vLLM's stats logger reports the interval before it (vllm 0.20.0 v1/metrics/loggers.py:217-230): its last
# line may come after the stop, and is no sign of serving past it
_PERIODIC = re.compile(VLLM_STATS)
# (round 117) SGLang's own exit after the SIGTERM drain: once no request remains ("Gracefully exiting... Remaining
# number of requests 0"), sigterm_watchdog calls kill_process_tree(os.getpid(), include_parent=True) (0.5.16
# managers/tokenizer_manager.py:2752, :2768), which kills the children and ends its own process with sys.exit(0)
# (0.5.16 utils/common.py:2024-2026); print_exception_wrapper catches Exception only (tokenizer_manager.py
# :3199-3200), so SystemExit leaves the event loop, printed with what the loop then cancels: uvicorn's lifespan
# task waiting on its queue (uvicorn 0.54.0 lifespan/on.py:137) raises CancelledError while it is handled. Not
# SystemExit of another code (print_exception_wrapper's sys.exit(1) after a real exception, :3206), nor a chain
# with any other exception
_CLEAN_EXIT = re.compile(r"SystemExit(?:: 0)?")
_CANCELLED = re.compile(r"(?:asyncio\.(?:exceptions\.)?)?CancelledError")
# (vLLM round 122) a weakref.finalize callback's error at the interpreter's exit: finalize registers its class's
# _exitfunc with atexit (CPython 3.12.1 Lib/weakref.py:569-574), which, once the main module has ended, calls each
# finalizer still alive (:660-666 'f()', through __call__ :590) and hands an Exception to sys.excepthook (:667-668)
# and goes on to the next: a traceback whose outermost frame is that _exitfunc, no exception that ended anything
# (torch registers its libraries' _del_library so: torch 2.8.0 torch/library.py:124, :456). Printed after the
# server's own shutdown, the process was already ending on the stop asked
_EXIT_FINALIZER = re.compile(r"(?:^|[/\\])weakref\.py$")


def _finalized_at_exit(chain: Chain) -> bool:
    """The chain's outermost traceback starts in weakref.finalize's atexit hook (``_exitfunc``)."""
    frames = chain.outermost.frames
    return bool(frames and frames[0].func == "_exitfunc" and _EXIT_FINALIZER.search(frames[0].file))


def exited_on_stop(chain: Chain | None) -> bool:
    """The traceback is the server's own clean exit (``SystemExit: 0`` and the tasks its dying loop cancelled)
    or a finalizer's error the interpreter's exit printed (:func:`_finalized_at_exit`): after the SIGTERM
    notice, the stop ending (:func:`.rootcause.candidates` drops it), not a crash."""
    texts = [raised.text.strip() for raised in chain.raised] if chain is not None else []
    return bool(texts and (_CLEAN_EXIT.fullmatch(texts[0]) and all(_CANCELLED.fullmatch(t) for t in texts[1:])
                           or _finalized_at_exit(chain)))


def stopped(lines: list[Line], progress: re.Pattern) -> str | None:
    """How the server was stopped (the module docstring), or None where no stop line follows the last
    line ``progress`` matches."""
    last = max((i for i, line in enumerate(lines) if progress.search(line.msg)
                and not _PERIODIC.search(line.msg)), default=-1)
    for line in lines[last + 1:]:
        if systemd_stopping(line):
            return 'stopped by systemd (its "Stopping" line)'
        msg = line.msg.strip()
        if said := next((what for stop, what in _STOPS if stop.search(msg)), None):
            return said
    return None
