"""ddlab's one logger tree: ``logging.getLogger("ddlab.<package>.<module>")``.

What ddlab tells a person as it works (a baseline stopped, a cell started, a
lock taken over) is a log record on a logger under ``ddlab``; what a wait looks
like while it lasts is the other channel, :mod:`ddlab.core.progress`. Nothing
in the library prints to the terminal or takes a ``say`` callback.

By default the ``ddlab`` logger has one handler that writes INFO and above, as
the bare message, to whatever ``sys.stderr`` is at that moment (a terminal, a
notebook cell's stderr, a test's capture); in a kernel run by plain papermill a
second handler writes them on papermill's terminal too (:mod:`ddlab.core.kernel`:
there nothing else shows the notebook's stderr). Records still propagate, so an
application that configures :mod:`logging` itself sees them too; it may call
:func:`quiet` to drop ddlab's own handler. ``DDLAB_LOG=debug`` shows debug
records (remote commands, reconnects).
"""

from __future__ import annotations

import logging
import os
import sys

from ddlab.core.kernel import terminal, to_terminal

__all__ = ["get_logger", "quiet", "ROOT"]

ROOT = "ddlab"


class _CurrentStderr(logging.StreamHandler):
    """A StreamHandler bound to ``sys.stderr`` as it is when a record comes,
    not as it was at import (notebook kernels and test captures swap it)."""

    def __init__(self):
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ assigns it; the property wins
        pass


class _PapermillTerminal(logging.Handler):
    """The same lines on plain papermill's terminal (see :func:`ddlab.core.kernel.terminal`)."""

    def emit(self, record):
        try:
            to_terminal(self.format(record))
        except Exception:  # noqa: BLE001 - logging's own convention
            self.handleError(record)


def _own(handler: logging.Handler) -> logging.Handler:
    handler.setFormatter(logging.Formatter("%(message)s"))
    # the embedded server (ddlab.target) logs in SGLang's format through its own handler
    handler.addFilter(lambda record: not record.name.startswith(f"{ROOT}.target"))
    logging.getLogger(ROOT).addHandler(handler)
    return handler


def _install() -> logging.Handler:
    logger = logging.getLogger(ROOT)
    for handler in logger.handlers:
        if isinstance(handler, _CurrentStderr):
            return handler
    handler = _own(_CurrentStderr())
    if terminal() is not None:
        _own(_PapermillTerminal())
    level = os.environ.get("DDLAB_LOG", "info").upper()
    logger.setLevel(getattr(logging, level, logging.INFO))
    return handler


_HANDLER = _install()


def get_logger(name: str) -> logging.Logger:
    """The logger of a ddlab module (pass ``__name__``)."""
    return logging.getLogger(name if name.startswith(ROOT) else f"{ROOT}.{name}")


def quiet() -> None:
    """Remove ddlab's console handlers (records still propagate to the root logger)."""
    logger = logging.getLogger(ROOT)
    for handler in [h for h in logger.handlers if isinstance(h, (_CurrentStderr, _PapermillTerminal))]:
        logger.removeHandler(handler)
