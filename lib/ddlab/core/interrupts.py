"""Ctrl-C that cannot cut a step in half, and Ctrl-C for threads that signals never reach.

- :func:`held_interrupts`: hold SIGINT (and SIGTERM) for a block (recording what ddlab
  installs, putting a baseline back), then raise KeyboardInterrupt if one came. Only
  the main thread can handle signals; another thread is marked in :data:`HELD_THREADS`
  for the block instead.
- :func:`interrupt_thread`: raise KeyboardInterrupt in another thread (a pool sweep's
  worker for one host, :mod:`ddlab.sweeps.pool`), never inside its held blocks: the caller
  checks :data:`HELD_THREADS` and raises while holding :data:`HELD_LOCK`, which a thread
  takes to enter a held block, so no interrupt lands in a block entered after the check.
- :func:`forget_thread`: a thread that ends drops its marks (an interrupt that came while
  it entered a block could leave one, and thread idents are reused).
- :func:`from_interrupt` / :func:`as_interrupt`: an error raised while a Ctrl-C was being
  handled is that Ctrl-C; ``as_interrupt`` sends it on up as a KeyboardInterrupt, so the
  handlers that record, stop and put back on a Ctrl-C see one.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
import time
import weakref
from typing import Iterator

from ddlab.core.errors import DdlabError
from ddlab.core.log import get_logger

__all__ = ["held_interrupts", "starting", "from_interrupt", "as_interrupt", "interrupt_thread", "forget_thread", "HELD_LOCK",
           "HELD_THREADS", "STARTING"]

log = get_logger(__name__)

HELD_THREADS: dict[int, int] = {}  # thread ident -> depth of held_interrupts blocks
HELD_LOCK = threading.Lock()
# A thread in threading's limbo that no Thread.start() is starting any more, for this long, is
# a leftover (see interrupt_thread), not a thread being started.
LEFTOVER_S = 0.5
_limbo_seen: weakref.WeakKeyDictionary[threading.Thread, float] = weakref.WeakKeyDictionary()
# What a Ctrl-C while ddlab starts says (the console script's guard, ddlab.start, and the
# CLI's own, around its parser): nothing began.
STARTING = "ddlab: interrupted while starting; nothing was done"


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """While a command starts (its imports, its parser): a SIGINT is only noted, never raised
    inside the code running at that moment (inside an import's weakref callback Python
    swallows it, "Exception ignored in ...", and the command went on); one noted raises
    KeyboardInterrupt when the block ends. Silent, unlike :func:`held_interrupts`; the main
    thread only (elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


@contextlib.contextmanager
def held_interrupts(message: str) -> Iterator[None]:
    """Hold SIGINT (and SIGTERM) for the block, then raise KeyboardInterrupt if one came;
    in a thread other than the main one, mark the thread held for the block."""
    if threading.current_thread() is not threading.main_thread():
        ident = threading.get_ident()
        with HELD_LOCK:
            HELD_THREADS[ident] = HELD_THREADS.get(ident, 0) + 1
        try:
            yield
        finally:
            with HELD_LOCK:
                HELD_THREADS[ident] -= 1
                if not HELD_THREADS[ident]:
                    del HELD_THREADS[ident]
        return
    received: list[int] = []

    def hold(signum, frame):
        received.append(signum)
        log.warning(f"{message} (interrupt held until it is done)")

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        raise KeyboardInterrupt


def interrupt_thread(thread: threading.Thread, exc_type=KeyboardInterrupt) -> bool:
    """Raise ``exc_type`` in ``thread`` at its next Python instruction; False (nothing
    raised: ask again) while any thread is being started. The caller holds
    :data:`HELD_LOCK` and has checked that ``thread`` is not in :data:`HELD_THREADS`.

    A thread being started has a thread state that carries its parent's ident until the
    new thread first runs (CPython 3.11 sets it in the parent, then again in the child),
    and ``PyThreadState_SetAsyncExc`` raises in the first state with the ident it is
    given, the newest: the interrupt meant for a host's worker could kill the heartbeat
    thread it was starting, before that thread said it had started, leaving the worker
    in ``Thread.start()`` for ever and the pool's wind-down waiting on it (seen: 4 of 11
    Ctrl-C runs on a loaded machine; a plain SetAsyncExc misses 9 times in 50 against a
    thread that starts threads in a loop). ``threading`` moves a thread out of its
    ``_limbo`` only after the new thread runs, and changes ``_limbo`` under its
    ``_active_limbo_lock``: holding that lock, an empty limbo means no such state
    exists, and none can appear before the exception is set.

    An interrupt can also land in ``Thread.start()`` between its putting the thread in
    ``_limbo`` and starting it (3.11 checks for one as the limbo lock's ``__exit__``
    returns): ``start()`` raises, the thread never runs, and its entry stays in ``_limbo``
    for ever (seen: a test's every later ask was "ask again" until its bound, one fresh
    clone in three). Such a leftover does not hold an interrupt back: limbo entries all
    older than :data:`LEFTOVER_S` while no thread is inside ``Thread.start()`` are leftovers."""
    lock, limbo = getattr(threading, "_active_limbo_lock", None), getattr(threading, "_limbo", None)
    with lock if lock is not None else contextlib.nullcontext():
        if limbo and _being_started(limbo):
            return False
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   ctypes.py_object(exc_type))
    return True


def _being_started(limbo: dict) -> bool:
    """Whether a thread in ``limbo`` may still be being started: some ``Thread.start()`` is on
    a thread's stack, or a thread came into limbo less than :data:`LEFTOVER_S` ago. (Which
    thread a start() starts is not read: other threads' frame locals are left alone.)"""
    now = time.monotonic()
    ages = [now - _limbo_seen.setdefault(t, now) for t in list(limbo)]
    return min(ages) < LEFTOVER_S or _starting_somewhere()


def _starting_somewhere() -> bool:
    """Whether some thread is inside ``Thread.start()`` now, read from every thread's stack."""
    code = threading.Thread.start.__code__
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code is code:
                return True
            frame = frame.f_back
    return False


def forget_thread(ident: int | None = None) -> None:
    """Drop the held marks of the thread ``ident`` (this one by default), as it ends."""
    with HELD_LOCK:
        HELD_THREADS.pop(threading.get_ident() if ident is None else ident, None)


def from_interrupt(err: BaseException) -> bool:
    """``err`` was raised while a Ctrl-C (a KeyboardInterrupt) was being handled: CPython's
    threading turns one that lands inside ``Condition.wait``'s ``_acquire_restore`` into
    ``RuntimeError: release unlocked lock`` from the ``with`` around it (3.11.7
    Lib/threading.py:283, :336, :626-629; paramiko's handshake waits so), and an exception
    raised in an ``except``/``finally`` that a Ctrl-C entered carries it the same way. Either
    is the user's interrupt, not ddlab's error."""
    seen = err.__context__
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__context__
    return False


@contextlib.contextmanager
def as_interrupt() -> Iterator[None]:
    """Inside: an error not of ddlab's raised while a Ctrl-C was being handled
    (:func:`from_interrupt`) goes on up as a KeyboardInterrupt chained to it. Around the blocks
    whose ``except KeyboardInterrupt`` records a run as interrupted, stops its cells and puts the
    baseline back: without it such an error passed them, a sweep was called failed and its cell's
    run left running. A DdlabError goes on as it is, as at the CLI's top (a restore that failed
    after the Ctrl-C says so and how to finish it)."""
    try:
        yield
    except KeyboardInterrupt:
        raise
    except Exception as err:
        if isinstance(err, DdlabError) or not from_interrupt(err):
            raise
        raise KeyboardInterrupt(f"{type(err).__name__}: {err}") from err
