"""The Jupyter kernel ddlab may be running in, and who started it.

A notebook's kernel is a child process of what runs the notebook, so its parent's
command line says who that is (:func:`launcher`):

- ``papermill``: the user's own ``papermill notebooks/sweep.ipynb out.ipynb -p ...``;
- ``jupyter``: a JupyterLab (or notebook, nbconvert) server;
- ``""``: not in a kernel, or a kernel someone else runs (``ddlab run``, a script
  calling papermill's Python API), who keeps the run's records itself.

Under plain papermill nobody shows the notebook's output in the terminal (papermill
keeps it for the output notebook), but the kernel inherited papermill's stderr:
:func:`terminal` is that stream, so the library's progress and verdict reach the
person who typed the command (``ddlab run`` relays the notebook's stderr itself,
and a JupyterLab server's log is no place for them: there it is None).

In any kernel, ddlab's own errors show briefly (:func:`show_errors_briefly`, set
up by ``import ddlab``): the notebook's own frames (the cell's line) and the
error, whose last line says what was given and the fix, not 70-120 lines of the
library's frames above it, which papermill would print in the terminal and keep
in the output notebook. Any other exception keeps its whole traceback, and
``%tb`` / ``%debug`` still see every frame of a ddlab error (so does a kernel
started with ``DDLAB_LOG=debug``: there ddlab's errors show whole).
"""

from __future__ import annotations

import functools
import os
import sys
import types
from pathlib import Path
from typing import TextIO

__all__ = ["in_kernel", "launcher", "parent_argv", "papermill_args", "terminal", "to_terminal",
           "show_errors_briefly"]

_PACKAGE = str(Path(__file__).resolve().parents[1])  # lib/ddlab: the frames left out


def in_kernel() -> bool:
    """True inside a Jupyter kernel (live or under papermill)."""
    if "IPython" not in sys.modules:  # a kernel has imported it long before any ddlab call
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def parent_argv(pid: int | None = None) -> list[str]:
    """The command line of this process's parent (or of ``pid``); [] when unreadable."""
    pid = os.getppid() if pid is None else pid
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def papermill_args(argv: list[str]) -> list[str] | None:
    """What follows ``papermill`` in ``argv`` (``python .venv/bin/papermill IN OUT -p ...``,
    ``python -m papermill ...``); None when ``argv`` is no papermill command."""
    for i, part in enumerate(argv[:3]):
        if os.path.basename(part) == "papermill":
            return argv[i + 1:]
        if part == "-m" and argv[i + 1:i + 2] == ["papermill"]:
            return argv[i + 2:]
    return None


@functools.cache
def launcher() -> str:
    """``papermill``, ``jupyter`` or ``""``: see the module docstring."""
    if not in_kernel():
        return ""
    argv = parent_argv()
    if papermill_args(argv) is not None:
        return "papermill"
    if any(os.path.basename(part).startswith("jupyter") for part in argv[:3]):
        return "jupyter"
    return ""


@functools.cache
def terminal() -> TextIO | None:
    """The terminal of the plain papermill that runs this kernel, else None (also when
    papermill echoes the notebook's output itself, ``--log-output``)."""
    if launcher() != "papermill" or "--log-output" in parent_argv():
        return None
    # ipykernel points fd 2 at a pipe it forwards into the notebook and keeps the
    # inherited stream as a copy: write to that copy, so a line lands in the terminal
    # only, not in the output notebook too.
    fd = getattr(sys.stderr, "_original_stdstream_copy", None)
    fd = fd if isinstance(fd, int) else sys.__stderr__.fileno()
    try:
        return open(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace")
    except OSError:
        return None


def to_terminal(text: str, *, end: str = "\n") -> bool:
    """Write ``text`` on the papermill terminal (see :func:`terminal`), over whatever
    partial line papermill's cell bar left there; False when there is none."""
    stream = terminal()
    if stream is None:
        return False
    start = "\r\033[K" if stream.isatty() else "\r"
    try:
        stream.write(start + text + end)
        stream.flush()
    except (OSError, ValueError):
        return False
    return True


def show_errors_briefly(errors: tuple) -> bool:
    """In a kernel, show ``errors`` (ddlab's) with the frames of the notebook only: IPython's
    own traceback of the cell's line, then the error. Why IPython's ``set_custom_exc``: it
    is the kernel's one hook for how an exception raised by a cell is shown, and what it
    shows is what ipykernel sends, so papermill's terminal, the output notebook and
    JupyterLab all get the short form; sys.excepthook is never called in a kernel. Left
    alone when someone else set a handler. True when set (or set already)."""
    if not in_kernel() or os.environ.get("DDLAB_LOG", "").lower() == "debug":
        return False
    from IPython import get_ipython

    shell = get_ipython()
    if shell.custom_exceptions not in ((), errors):
        return False
    shell.set_custom_exc(errors, _brief)
    return True


def _brief(shell, etype, value, tb, tb_offset=None):
    """IPython's custom-exception handler: the traceback up to the first frame of the
    library, the chain of causes left out (the message says what counts); shown, and
    kept whole in ``sys.last_traceback`` for ``%tb`` and ``%debug``."""
    saved = value.__cause__, value.__context__, value.__suppress_context__
    value.__cause__, value.__suppress_context__ = None, True
    try:
        stb = shell.InteractiveTB.structured_traceback(etype, value, _without_library(tb),
                                                       tb_offset=tb_offset)
    finally:
        value.__cause__, value.__context__, value.__suppress_context__ = saved
    shell._showtraceback(etype, value, stb)
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    return None


def _without_library(tb):
    """A copy of the traceback ``tb`` that ends before its first frame inside ddlab."""
    kept = []
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE + os.sep):
        kept.append(tb)
        tb = tb.tb_next
    short = None
    for frame in reversed(kept):
        short = types.TracebackType(short, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return short
