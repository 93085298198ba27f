"""Pool sweeps: one sweep's cells spread over several hosts at once.

Each slot (a host, or one of a Slurm cluster's ``max_jobs`` job slots:
:func:`ddlab.hosts.pools.slots`) is a thread holding its own :class:`Lab`:
its own lock, its baseline stopped once and put back when it is done, also on
an error and on Ctrl-C. Free slots take the next cell from one queue, a host's
pinned cells (its own baselines) first. A cell that errors goes back to the
queue for the other hosts; a host that errors ``MAX_ERRORS_IN_A_ROW`` times in a
row, or cannot be held at all (unreachable, lock held), is reported and its
cells go to the others. A host another ddlab run takes (``--force``) is left out
at once, its cell ``preempted`` and given to the others; when what is left has no
host, the sweep ends ``preempted`` (:class:`ddlab.core.errors.Preempted`), its
resume runs those cells. One store, one report: every run records its host.

Why threads and not processes: the work is waiting on hosts (a server's start,
its requests), progress must reach one terminal or notebook, and Ctrl-C must
reach every host from the one kernel a notebook interrupts. A signal only
reaches the main thread, so on Ctrl-C it raises KeyboardInterrupt in each
worker (``PyThreadState_SetAsyncExc``), never inside a block that holds
interrupts (:func:`ddlab.core.interrupts.held_interrupts`: recording an install,
putting a baseline back), and waits, bounded and with progress, until every
slot has put its host back.
"""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass, field

from ddlab.core.errors import DdlabError, HostError, Preempted
from ddlab.core.interrupts import HELD_LOCK, HELD_THREADS, as_interrupt, forget_thread, interrupt_thread
from ddlab.core.log import get_logger
from ddlab.core.progress import Heartbeat, Pace
from ddlab.hosts.pools import slots as slots_of
from ddlab.hosts.profiles import HostProfile
from ddlab.lab.deploy import Lab
from ddlab.sweeps.store import Store

__all__ = ["run_pool", "CellQueue", "CellSteps"]

log = get_logger(__name__)

MAX_ERRORS_IN_A_ROW = 3
WIND_DOWN_S = 600.0  # how long Ctrl-C waits for the hosts to be put back


class CellQueue:
    """The cells left, shared by the slots; thread-safe.

    ``take(host)`` gives the next cell that host may run (its pinned cells first,
    never one that failed there), waiting while cells in flight elsewhere might
    still come back; None when nothing is left for it."""

    def __init__(self, cells):
        self.pending = list(cells)
        self.pace = Pace(len(self.pending))  # each cell's end line: k/N, elapsed, time left
        self.ended = 0
        self.in_flight = 0
        self.failed_on: dict[str, set] = {}   # cell hash -> hosts it errored on
        self.closed = False
        self.cond = threading.Condition()

    def take(self, host: str):
        with self.cond:
            while not self.closed:
                cell = next((c for c in self.pending if c.host == host), None) or next(
                    (c for c in self.pending if not c.host
                     and host not in self.failed_on.get(c.hash, ())), None)
                if cell is not None:
                    self.pending.remove(cell)
                    self.in_flight += 1
                    return cell
                if not self.in_flight:
                    return None
                self.cond.wait(0.5)
            return None

    def done(self, cell) -> None:
        with self.cond:
            self.in_flight -= 1
            self.cond.notify_all()

    def finished(self) -> str:
        """One more cell finished: how far the queue is (``3/10 done, ... left``)."""
        with self.cond:
            self.ended += 1
            return self.pace.said(self.ended)

    def give_back(self, cell, host: str) -> None:
        """A cell that errored on ``host``: the other hosts may take it."""
        with self.cond:
            self.in_flight -= 1
            self.failed_on.setdefault(cell.hash, set()).add(host)
            self.pending.insert(0, cell)
            self.cond.notify_all()

    def left(self, live_hosts: set[str]) -> list:
        """Cells no live host can take (pinned to a failed host, or failed on all)."""
        with self.cond:
            return [c for c in self.pending if (c.host and c.host not in live_hosts)
                    or (not c.host and live_hosts <= self.failed_on.get(c.hash, set()))]

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


@dataclass
class _Slot:
    """One place a cell runs: a host (or a cluster's job slot) and its thread."""

    profile: HostProfile
    thread: threading.Thread | None = None
    # set when its worker ends: not Thread.is_alive(), which a join() interrupted by
    # Ctrl-C can leave False for a thread that still runs (CPython 3.11)
    ended: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    cells: int = 0
    interrupted: bool = False
    bracketing: list = field(default_factory=list)
    not_back: dict | None = None  # its production could not be put back: what and why

    @property
    def host(self) -> str:
        return self.profile.name

    @property
    def label(self) -> str:
        return self.host + (f" slot {self.profile.slot}" if self.profile.slot or
                            self.profile.scheduler == "slurm" else "")


@dataclass(frozen=True)
class CellSteps:
    """What a slot does, given by :mod:`ddlab.sweeps.run` (which calls this module):
    ``hold(sweep, store, variants, profile=, abandon=)`` a context giving a held Lab;
    ``run(lab, store, sweep, cell)`` one cell, its status; ``bracket(lab, store, sweep,
    host=)`` the host's baselines measured again."""

    hold: object
    run: object
    bracket: object


def run_pool(sweep, store: Store, todo: list, steps: CellSteps) -> None:
    """Run ``todo`` (cells of an open sweep) over the sweep's hosts; returns when every
    cell ran or no host can take what is left (then HostError naming the hosts and the
    cells); Ctrl-C puts every host back, then raises KeyboardInterrupt."""
    places = [_Slot(p) for p in slots_of(sweep.profiles)]
    lost = store.abandon_runs(sweep.sweep_id)  # a killed process's runs; resumed here
    if lost:
        log.info(f"[sweep] {sweep.sweep_id}: {lost} run(s) left unfinished by a killed "
                 "process marked lost; their cells run again")
    queue = CellQueue(todo)
    brackets: set[str] = set()   # hosts whose baselines were measured again
    guard = threading.Lock()
    log.info(f"[sweep] {sweep.sweep_id}: {len(todo)} cells over {len(places)} slots: "
             + ", ".join(s.label for s in places))

    def work(slot: _Slot) -> None:
        variants = [c.variant for c in todo if c.host in ("", slot.host)]
        held: list[Lab] = []
        with Store(store.path) as mine:
            try:
                with steps.hold(sweep, mine, variants, profile=slot.profile,
                                abandon=False) as lab:
                    held.append(lab)
                    _cells(slot, lab, mine, queue, sweep, steps)
                    with guard:
                        mine_to_bracket = slot.host not in brackets
                        brackets.add(slot.host)
                    if mine_to_bracket and sweep.options.bracket and slot.cells:
                        steps.bracket(lab, mine, sweep, host=slot.host)
            except BaseException as err:  # recorded; the main thread reports it
                slot.error = err
                slot.not_back = _left_down(held[0], slot, err) if held else None
            finally:
                forget_thread()
                slot.ended.set()

    for slot in places:
        slot.thread = threading.Thread(target=work, args=(slot,), daemon=True,
                                       name=f"ddlab-pool-{slot.label}")
        slot.thread.start()
    try:
        with as_interrupt():  # the Ctrl-C can land in the wait's lock (threading's RuntimeError)
            while not all(s.ended.wait(0.2) for s in places):
                pass
    except KeyboardInterrupt:
        _wind_down(places, queue)
        raise
    _report(places, queue, sweep)


def _cells(slot: _Slot, lab: Lab, store: Store, queue: CellQueue, sweep,
           steps: CellSteps) -> None:
    errors = 0
    while True:
        cell = queue.take(slot.host)
        if cell is None:
            return
        n = len(sweep.skipped) + len(sweep.finished) + 1
        log.info(f"[sweep] {slot.label}: cell {n}/{len(sweep.cells)}: {cell.variant.name} "
                 f"({cell.label})")
        try:
            status = steps.run(lab, store, sweep, cell)
        except Preempted as taken:  # the host is another run's: this slot is done
            log.info(f"[sweep] {slot.label}: {cell.variant.name}: preempted: {taken.message}")
            queue.give_back(cell, slot.host)
            raise
        except DdlabError as err:
            errors += 1
            others = "" if cell.host else "; another host takes it"
            log.info(f"[sweep] {slot.label}: {cell.variant.name}: error: {err}{others}")
            queue.give_back(cell, slot.host)
            if errors >= MAX_ERRORS_IN_A_ROW:
                raise HostError(f"{slot.label}: {errors} cells in a row ended in an error; "
                                "the host is left out of the rest of the sweep",
                                fix=f"check {slot.host}; resume redoes what is left",
                                host=slot.host) from err
            continue
        except Exception:  # not ddlab's: the host is left out, its cell goes to the others
            queue.give_back(cell, slot.host)  # (dropped, it read as run: the sweep said done)
            raise
        except BaseException:  # an interrupt: the wind-down puts every host back
            queue.done(cell)
            raise
        errors = 0
        slot.cells += 1
        sweep.finished.append(cell.hash)
        queue.done(cell)
        log.info(f"[sweep] {slot.label}: {cell.variant.name}: {status}; {queue.finished()}")


def _left_down(lab: Lab, slot: _Slot, err: BaseException) -> dict | None:
    """What a slot that failed left on its host, by its lock's record: its production
    stopped (or a variant running), when putting it back failed too; None when the
    host is back, or another run took it (the taker's to put back)."""
    record = lab.lock
    if record is None or lab.preemption is not None or isinstance(err, Preempted):
        return None
    baseline = record.baseline or {}
    down = baseline.get("service") if baseline.get("was_active") else None
    if not down and not record.variant:
        return None
    why = f"{type(err).__name__}: {getattr(err, 'message', err)}"
    command = f"ddlab restore --host {shlex.quote(slot.profile.handle)}"
    what = (f"its production ({down}) is stopped" if down else
            f"its variant {record.variant.get('service')} may still run")
    return {"host": slot.host, "baseline": down or "", "variant": record.variant.get("service", ""),
            "why": why, "command": command,
            "words": f"{slot.label}: {what} and could not be put back ({why}); when the "
                     f"host answers, run: {command}"}


def _report(places: list[_Slot], queue: CellQueue, sweep) -> None:
    """Hosts that failed are named, and any whose production could not be put back
    (``sweep.not_back``); cells no host could run make the sweep fail."""
    failed = [s for s in places if s.error is not None]
    for s in failed:
        log.info(f"[sweep] {s.label} failed: {type(s.error).__name__}: {s.error}")
    sweep.not_back = [s.not_back for s in failed if s.not_back]
    for down in sweep.not_back:
        log.warning(f"[sweep] {down['words']}")
    live = {s.host for s in places if s.error is None}
    left = queue.left(live) if live else list(queue.pending)
    taken = next((s.error for s in failed if isinstance(s.error, Preempted)), None)
    if (left or not live) and taken is not None:
        raise taken  # the sweep ends preempted: its resume runs what is left
    if left or not live:
        names = ", ".join(c.variant.name + (f" ({c.host}'s own {c.role})" if c.host else "")
                          for c in left)
        first = failed[0].error if failed else None
        hosts = ", ".join(f"{s.label} ({type(s.error).__name__})" for s in failed)
        raise HostError(f"pool sweep {sweep.sweep_id}: {len(left)} cell(s) no host could run: "
                        f"{names or 'all'}; hosts that failed: {hosts or 'none'}",
                        fix="fix those hosts, then resume: " + sweep.resume_command(),
                        host=sweep.host) from first
    if failed:
        log.info(f"[sweep] {sweep.sweep_id}: every cell ran on the other hosts; left out: "
                 + ", ".join(s.label for s in failed))


def _wind_down(places: list[_Slot], queue: CellQueue) -> None:
    """Ctrl-C: no new cell; each worker interrupted outside its held blocks; wait,
    with progress and a bound, until every host is put back."""
    queue.close()
    log.info("[sweep] interrupted: stopping every host's cell and putting its baseline back")
    beat = Heartbeat("pool: putting hosts back", WIND_DOWN_S, interval_s=5.0)
    deadline = time.monotonic() + WIND_DOWN_S
    try:
        while any(not s.ended.is_set() for s in places) and time.monotonic() < deadline:
            for s in places:
                with HELD_LOCK:  # checked and raised in one step (core.interrupts)
                    if not s.ended.is_set() and not s.interrupted \
                            and s.thread.ident not in HELD_THREADS:
                        s.interrupted = interrupt_thread(s.thread)
            alive = [s.label for s in places if not s.ended.is_set()]
            beat.beat(f"waiting for {', '.join(alive)}" if alive else "done")
            time.sleep(0.1)
        beat.close("every host put back" if not any(not s.ended.is_set() for s in places)
                   else "gave up waiting")
    except KeyboardInterrupt:
        beat.close()
        alive = [s.host for s in places if not s.ended.is_set()]
        log.warning("[sweep] interrupted again: not waiting for "
                    f"{', '.join(alive)}; put them back with `ddlab restore --host NAME`")
        return
    for s in places:
        if not s.ended.is_set():
            log.warning(f"[sweep] {s.label} still busy after {WIND_DOWN_S:.0f} s: put it back "
                        f"with `ddlab restore --host {s.host}`")
