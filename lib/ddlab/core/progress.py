"""Heartbeats for bounded waits: never a silent wait.

A :class:`Heartbeat` shows where a wait stands (label, elapsed of its bound,
a status such as the server's startup phase) at least every ``interval_s``:

- in a Jupyter kernel (JupyterLab, or papermill headless) as one status line
  updated in place (``display_id``), so the executed notebook keeps the last;
  under plain papermill also on papermill's terminal (:mod:`ddlab.core.kernel`),
  where nothing else would show it;
- in a terminal as one line rewritten in place;
- anywhere else (CI logs, pipes) as one printed line per interval.

Every beat is also appended to ``record`` (a file) when given, and
:meth:`close` writes the final line, so a wait leaves a trace however it ends.
Lines are masked (:mod:`ddlab.core.redact`) first: a status may quote a log.

A :class:`Pace` says how far a job of N steps (a sweep's cells) is, for the line
logged as each step ends: ``3/10 done, 1m12s elapsed, about 2m48s left``, then
``10/10 done in 4m12s`` (a sweep's: ``[sweep] cell 3/10: measured; 1m12s elapsed,
about 2m48s left``). Those lines are the progress a pipe (CI, ``tee``) keeps,
where a bar rewritten in place would sit still for minutes with a false ETA.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, TextIO

from ddlab.core.kernel import in_kernel, terminal, to_terminal
from ddlab.core.redact import redact_text

__all__ = ["Heartbeat", "Pace", "VerdictPlace", "duration_words", "in_kernel"]


class Heartbeat:
    """One wait's visible status line; use as a context manager or call close()."""

    def __init__(self, label: str, total_s: float | None = None, *, interval_s: float = 5.0,
                 stream: TextIO | None = None, record: Path | None = None, started: float | None = None):
        """``started``: the monotonic time the wait began, where it began before this line (now by default)."""
        self.label = label
        self.total_s = total_s
        self.interval_s = interval_s
        self.stream = stream or sys.stderr
        self.record = Path(record) if record else None
        self.started = time.monotonic() if started is None else started
        self._last_beat = float("-inf")
        self._last_text = ""
        self._handle = None
        # a line rewritten in place only by the main thread: a pool's hosts (worker
        # threads) each print whole lines, which interleave legibly
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)()) \
            and threading.current_thread() is threading.main_thread()
        self._kernel = stream is None and in_kernel()
        self._terminal = terminal() if self._kernel else None  # plain papermill's
        self._terminal_open = False  # a line rewritten in place there, not yet ended

    def __enter__(self) -> "Heartbeat":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def line(self, status: str) -> str:
        bound = f"/{self.total_s:.0f}s" if self.total_s else "s"
        return f"[{self.label}] {self.elapsed_s:6.1f}{bound}  {status}"

    def beat(self, status: str, *, force: bool = False) -> None:
        """Show ``status`` if an interval has passed (or ``force``); cheap to call often."""
        now = time.monotonic()
        if not force and now - self._last_beat < self.interval_s:
            return
        self._last_beat = now
        self._show(self.line(status))

    @contextlib.contextmanager
    def ticking(self, status, *, stale_s: float | None = None) -> Iterator[None]:
        """Beat ``status`` (a text, or a callable giving one) from a thread while the
        block runs, whenever no beat came for ``stale_s`` (default: the interval): for a
        blocking call (an SSH connect or command to a host that does not answer) that
        cannot beat itself, so even it is never a silent wait."""
        stop = threading.Event()
        stale = stale_s or self.interval_s

        def tick() -> None:
            while not stop.wait(min(stale, self.interval_s) / 2):
                if time.monotonic() - self._last_beat >= stale:
                    try:
                        text = status() if callable(status) else status
                    except Exception:  # noqa: BLE001 - a status must never end the wait
                        text = "waiting"
                    self.beat(text, force=True)

        ticker = threading.Thread(target=tick, daemon=True, name="ddlab-heartbeat")
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join(1.0)

    def close(self, final: str | None = None) -> None:
        """Write the final line (default: the last status) and end the in-place line."""
        if final is not None:
            self._show(self.line(final))
        if self._tty and self._last_text:
            self.stream.write("\n")
            self.stream.flush()
        if self._terminal_open:
            to_terminal(self._last_text)
            self._terminal_open = False
        self._last_text = ""

    def _show(self, text: str) -> None:
        text = redact_text(text)  # a status quotes the server's log, which may hold secrets
        self._last_text = text
        if self.record:
            with self.record.open("a", encoding="utf-8") as f:
                f.write(text + "\n")
        if self._kernel:
            self._show_in_kernel(text)
            if self._terminal is not None:
                self._terminal_open = self._terminal.isatty()
                to_terminal(text, end="" if self._terminal_open else "\n")
        elif self._tty:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _show_in_kernel(self, text: str) -> None:
        from IPython.display import display

        if self._handle is None:
            self._handle = display({"text/plain": text}, raw=True, display_id=True)
        else:
            self._handle.update({"text/plain": text}, raw=True)


class VerdictPlace:
    """A place in a notebook's output, shown now and filled later (the verdict
    goes first even though it is known last). Outside a kernel it does nothing:
    terminals print the verdict when it comes."""

    def __init__(self, placeholder: str):
        self._handle = None
        if in_kernel():
            from IPython.display import display

            self._handle = display({"text/plain": placeholder}, raw=True, display_id=True)

    def update(self, obj) -> None:
        """Fill the place with ``obj`` (rich display) or a plain string."""
        if self._handle is None:
            return
        if isinstance(obj, str):
            self._handle.update({"text/plain": obj}, raw=True)
        else:
            self._handle.update(obj)


class Pace:
    """Steps done of ``total``, the time since it started and the time left at this pace."""

    def __init__(self, total: int):
        self.total = total
        self.started = time.monotonic()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def said(self, done: int, *, count: bool = True) -> str:
        """``3/10 done, 1m12s elapsed, about 2m48s left``; the last: ``10/10 done in 4m12s``
        (without ``count``, where the line says k/N already: ``1m12s elapsed, ...``)."""
        elapsed = self.elapsed_s
        head = f"{done}/{self.total} done" if count else ""
        if done >= self.total:
            return f"{head or 'done'} in {duration_words(elapsed)}"
        left = f"about {duration_words(elapsed / done * (self.total - done))} left" if done \
            else "time left unknown"
        return ", ".join(p for p in (head, f"{duration_words(elapsed)} elapsed", left) if p)


def duration_words(seconds: float) -> str:
    """``42s``, ``4m12s``, ``1h03m``: a duration as a person reads it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
