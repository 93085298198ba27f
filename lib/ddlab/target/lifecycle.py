"""How the target's process ends, as SGLang's does: a dead scheduler, SIGQUIT, SIGTERM, SIGINT.

Contract: ``Lifecycle(words)`` holds which of SGLang's handlers a signal would
meet, in the ``--log-format`` generation's words (``log_lines``):

- the **launch phase** (until the tokenizer manager's first request, the
  warmup's ``POST /generate``: :meth:`begin_running`): SIGQUIT meets the
  launcher's handler, ``Received sigquit from a child process. ...``
  (0.5.23 ``sglang/srt/entrypoints/engine.py:1970-1982``);
- the **running phase**: the tokenizer manager's, which replaced it
  (``managers/tokenizer_manager.py:2452-2459``): SIGQUIT is ``SIGQUIT
  received. signum=None, frame=None. It usually means one child failed.``
  (``:4072-4075``; asyncio calls the handler with no arguments) and SIGTERM
  drains (below).

A scheduler that dies sends its parent SIGQUIT (``scheduler.py:6372-6373``):
:meth:`child_failed` is that handler's work, from any thread: its line, then
``kill_process_tree(os.getpid())``, which logs ``kill_process_tree called:
...`` (0.5.14+, ``utils/common.py:2523-2526``) and SIGKILLs the process
(``:2548-2552``): the process ends by signal 9, as systemd reports SGLang's
(``code=killed, status=9/KILL``).

SIGTERM: before the HTTP server is up, the default action (SGLang's launcher
sets none while its schedulers start). HTTP up, launch phase, and SIGINT at any
time: uvicorn's graceful stop (its lifecycle lines), then the signal again, as
uvicorn's ``capture_signals`` does (uvicorn 0.54 ``server.py:332-349``). Running
phase: :meth:`drain`, the tokenizer manager's: ``SIGTERM received. ...``, then
``Gracefully exiting... Remaining number of requests N. ...`` until none is
left (``tokenizer_manager.py:3508-3570``), then 0.5.23 stops uvicorn and
exits 0 (its ``kill_process_tree`` lines before and after: the watchdog's and
``launch_server.py``'s ``finally``); 0.4 kills its own tree instead
(0.4.10.post2 ``tokenizer_manager.py:1460-1495``). SGLang's watchdog looks every
5 s; the target drains at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

from ddlab.target.http_server import uvicorn_log

__all__ = ["Lifecycle", "Stop"]

logger = logging.getLogger("ddlab.target")


class Stop(BaseException):
    """Raised in the main thread by SIGTERM or SIGINT once the HTTP server is up. Not an
    Exception, as KeyboardInterrupt is not: the signal can land while the serving loop
    starts a request's thread, inside socketserver's ``except Exception`` (it printed
    "Exception occurred during processing of request", and the target served on and
    ignored every later SIGTERM: 2 fresh-clone ``make test`` runs, 1 in 8 stops under
    requests)."""

    def __init__(self, signum: int, drain: bool):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.drain = signum, drain


class Lifecycle:
    def __init__(self, words):
        self.words, self.pid = words, os.getpid()
        self.running = self.http_up = self.stopping = False

    def install(self) -> None:
        """The handlers (only the main thread may set them; elsewhere the defaults stay)."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGQUIT, lambda signum, frame: self.child_failed())
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._stop)

    def begin_running(self) -> None:
        """The tokenizer manager's first request: its handlers replace the launcher's."""
        self.running = True

    def child_failed(self) -> None:
        """SIGQUIT's handler (a scheduler died, or someone sent it): the line, then the end."""
        logger.error(self.words.sigquit_running if self.running else self.words.sigquit_launch)
        self.kill_tree(include_parent=True)

    def kill_tree(self, include_parent: bool) -> None:
        """``kill_process_tree(os.getpid(), include_parent)``: the target has no children, so
        its line and, with the parent included, SIGKILL to this process."""
        line = self.words.kill_tree(self.pid, include_parent)
        if line:
            logger.info(line)
        if include_parent:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(self.pid, signal.SIGKILL)
            time.sleep(60)  # SIGKILL is not caught: this is never reached

    def _stop(self, signum, frame):
        if signum == signal.SIGINT and not self.http_up:
            raise KeyboardInterrupt  # Python's own handler, as SGLang's launcher keeps it
        if not self.http_up:
            self.exit_by(signum)
        if self.stopping:
            return  # one stop at a time; the first one ends the process
        self.stopping = True
        raise Stop(signum, drain=self.running and signum == signal.SIGTERM)

    def exit_by(self, signum: int) -> None:
        """End the process by ``signum`` (the default action), as an unhandled signal does."""
        logging.shutdown()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    def uvicorn_stop(self, server) -> None:
        """uvicorn's graceful stop: ``Server.shutdown``, the lifespan's, ``Finished ...``."""
        uvicorn_log.info("Shutting down")
        server.server_close()
        uvicorn_log.info("Waiting for application shutdown.")
        uvicorn_log.info("Application shutdown complete.")
        uvicorn_log.info("Finished server process [%d]", self.pid)

    def drain(self, server, in_flight) -> int:
        """The running phase's SIGTERM: wait for ``in_flight()`` (rids) to finish, then end."""
        words = self.words
        logger.warning(words.sigterm)
        last_said = None
        while True:
            rids = in_flight()
            if last_said is None or not rids or time.monotonic() - last_said >= 5:
                logger.info(words.gracefully_exiting(rids))
                last_said = time.monotonic()
            if not rids:
                break
            time.sleep(0.05)
        if not words.sigterm_stops_server:
            self.kill_tree(include_parent=True)
        self.kill_tree(include_parent=False)  # the SIGTERM watchdog's (tokenizer_manager.py:3559)
        self.uvicorn_stop(server)
        self.kill_tree(include_parent=False)  # launch_server.py's finally (launch_server.py:85-87)
        return 0
