"""The host lock: one ddlab run per host, the record of what it deployed, and who took it.

The lock is a JSON file, ``<state_dir>/lock.json`` on the host, created
atomically, whole: written to a private temp file, then hard-linked to its name,
which fails if the name exists (like O_EXCL), so two ddlab runs cannot both
take it and nobody ever reads a lock half written. It says who holds the host
(user, controller machine, pid, the command it runs, its project folder, since,
what for, and a ``token`` of its own) and what ddlab changed there (the baseline
service and whether it was active, the variant deployed), so any later ddlab run
can put the baseline back. ``state_dir`` is per host and user, not per checkout
(``~/.cache/ddlab`` by default): two checkouts on one machine see one lock for
``local``, as they share its ports and processes.

While a run holds the host its lock beats: every ``HEARTBEAT_S`` it is touched
(its mtime, by the host's own clock; the content is never rewritten for it, so a
beat can never write over the lock of a run that took the host meanwhile).

Who may take a held lock:

- its holder (same controller machine, same user) — a CLI ``ddlab deploy``
  leaves a *persistent* lock (pid null) that ``ddlab watch`` and
  ``ddlab restore`` of the same project (checkout) continue, and a ``restore``
  from anywhere (``adopt``: putting the host back is what the lock is kept for);
  while one of them runs, the lock names its pid, so a second run is refused
  (:class:`ddlab.lab.deploy.Lab`). Another checkout's sweep, deploy or watch is
  another run: it waits, or is told that ``ddlab restore`` frees the host;
- anyone, when the lock is *stale*: its pid is gone on this same controller.
  Taking a stale lock over says so (a message, never silently) and keeps the
  record, so the baseline state found by the dead run is not forgotten;
- anyone with ``force=True`` (``--force``), which also says so. The refusal
  offers ``--force`` only for a holder that is gone: on this controller its pid
  is dead (taken over anyway, above), from another one its lock has not beaten
  for ``STALE_AFTER_S``; a live holder's refusal offers ``wait_s`` (``--wait``)
  instead, which queues behind it (bounded, with a heartbeat naming it).

A run whose lock was taken knows it (:meth:`LockFile.check`): the run that
forced it leaves ``<state_dir>/preempted/<token>.json`` naming itself, before it
writes the lock, so the run it took the host from finds out who and when, even
after the taker has released the lock again; a lock naming another holder, or no
lock at all, says the same without the record. Every write of the lock checks
first and raises :class:`ddlab.core.errors.Preempted`, never writing over the
taker's record; a release leaves another run's lock alone.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field

from ddlab.core.errors import DdlabError, LockError, Preempted, StateFileError
from ddlab.core.log import get_logger
from ddlab.core.progress import Heartbeat
from ddlab.hosts.holders import STALE_AFTER_S, Holder, Preemption, now_utc, pid_alive
from ddlab.hosts.statefiles import read_state
from ddlab.hosts.transport import Transport

__all__ = ["Holder", "HostLock", "LockFile", "Preemption", "pid_alive", "HEARTBEAT_S",
           "STALE_AFTER_S", "WAIT_DEFAULT_S"]

log = get_logger(__name__)

HEARTBEAT_S = 15.0       # a holder touches its lock this often while it holds the host
WAIT_DEFAULT_S = 3600.0  # --wait without a number
WAIT_POLL_S = 1.0        # how often a waiting run tries the lock again
RECORDS_KEPT_MIN = 1440  # preemption records older than a day are removed


@dataclass
class HostLock:
    """The lock file's content: holder + what ddlab changed on the host."""

    holder: Holder
    baseline: dict = field(default_factory=dict)   # {"service": str, "was_active": bool}
    variant: dict = field(default_factory=dict)    # {"name", "hash", "service", "port", ...}

    @classmethod
    def from_json(cls, text: str) -> "HostLock":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict) -> "HostLock":
        baseline, variant = data.get("baseline") or {}, data.get("variant") or {}
        if not isinstance(baseline, dict) or not isinstance(variant, dict):
            raise TypeError("baseline and variant must be objects")
        return cls(holder=Holder.from_dict(data["holder"]), baseline=baseline, variant=variant)

    def to_json(self) -> str:
        return json.dumps({"holder": self.holder.__dict__, "baseline": self.baseline,
                           "variant": self.variant}, indent=2) + "\n"





class LockFile:
    """Acquire, read, update and release ``lock.json`` on one host; know when it was taken."""

    def __init__(self, transport: Transport, state_dir: str):
        self.transport = transport
        self.dir = transport.expand_path(state_dir).rstrip("/")
        self.path = f"{self.dir}/lock.json"
        self.held = False
        self.token = ""
        self.preemption: Preemption | None = None
        # this run took over a lock that could not be read: its record of the baseline is lost
        self.took_unreadable = False
        self._beater: threading.Thread | None = None
        self._stop_beating = threading.Event()

    @property
    def host(self) -> str:
        return self.transport.profile.name

    def read(self) -> HostLock | None:
        """The lock (None: no lock); one that cannot be read (too big, a symbolic link,
        not JSON, no holder: :mod:`ddlab.hosts.statefiles`) has holder "?" and says why."""
        try:
            data = read_state(self.transport, self.path)
            return None if data is None else HostLock.from_dict(data)
        except StateFileError as err:
            why = err.message
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            why = f"unreadable: {self.path} is no ddlab lock ({type(err).__name__}: {err})"[:300]
        return HostLock(holder=Holder("?", "?", None, "?", f"{why}; remove {self.path}"))

    # --- taking it -------------------------------------------------------------

    def acquire(self, what: str, *, persistent: bool = False, force: bool = False,
                wait_s: float | None = None, adopt: bool = False) -> HostLock:
        """Take the lock, or continue/take over one we may (module docstring); with
        ``wait_s``, queue behind a live holder for up to that many seconds; ``adopt``:
        continue a lock this user's ``ddlab deploy`` left in another checkout too."""
        mine = HostLock(holder=Holder.me(what, persistent=persistent))
        self.transport.make_private_dir(self.dir)
        if not wait_s:
            return self._take(mine, force, adopt)
        return self._queue(mine, force, wait_s, adopt)

    def _queue(self, mine: HostLock, force: bool, wait_s: float, adopt: bool) -> HostLock:
        """Try again every ``WAIT_POLL_S`` while a live run holds the host, a heartbeat
        naming it, until it is free or ``wait_s`` passed (a LockError saying so);
        Ctrl-C ends the wait, nothing taken."""
        beat = Heartbeat(f"{self.host}: waiting for the host", wait_s, interval_s=5.0)
        try:
            while True:
                try:
                    lock = self._take(mine, force, adopt)
                except LockError as busy:
                    if not busy.facts.get("live"):
                        raise
                    if beat.elapsed_s >= wait_s:
                        raise LockError(f"host {self.host!r}: still in use after waiting "
                                        f"{wait_s:.0f} s: {busy.message}",
                                        fix="wait longer (-p wait_s 7200), or use another host",
                                        holder=busy.facts.get("holder"), path=self.path,
                                        waited_s=round(beat.elapsed_s, 1)) from None
                    beat.beat(f"in use by {busy.facts['said']}")
                    time.sleep(max(0.0, min(WAIT_POLL_S, wait_s - beat.elapsed_s)))
                    continue
                if beat.elapsed_s >= WAIT_POLL_S:
                    beat.close(f"the host is this run's after {beat.elapsed_s:.0f} s")
                    log.info(f"{self.host}: the host is free after a wait of "
                             f"{beat.elapsed_s:.0f} s; this run holds it now")
                return lock
        finally:
            beat.close()

    def _take(self, mine: HostLock, force: bool, adopt: bool = False) -> HostLock:
        for _ in range(3):
            if self._create(mine):
                return self._hold(mine)
            held = self.read()
            if held is None:
                continue  # released between our two calls: try again
            holder = held.holder
            if holder.is_me() and holder.pid == os.getpid():  # this process: one run, one token
                mine.holder.token = holder.token or mine.holder.token
                return self._continue(held, mine)
            if holder.is_me() and holder.pid is None and (
                    adopt or holder.project in ("", mine.holder.project)):
                return self._continue(held, mine)  # left by this checkout's deploy: continued
            if holder.is_stale():
                log.warning(f"{self.host}: taking over the lock held by {holder.describe()}: "
                            "its process is gone")
                return self._continue(held, mine)
            if force:
                self.took_unreadable = holder.user == "?"
                live = holder.pid is not None and not holder.is_quiet(self.age_s())
                log.warning(f"{self.host}: taking over the lock held by {holder.describe()}: "
                            "--force given" + ("; that run, if it still runs, stops as "
                                               "preempted" if live else ""))
                self._record_preemption(held, mine)
                return self._continue(held, mine)
            raise self._busy(held)
        raise LockError(f"host {self.host!r}: lock {self.path} keeps changing",
                        fix="another ddlab run is racing for this host; retry in a moment")

    def _busy(self, held: HostLock) -> LockError:
        """Why the host is not ours, and what may be done: wait behind a live holder,
        ``--force`` only for one that is gone (or a lock no process holds)."""
        holder, host = held.holder, self.host
        facts = {"holder": holder.__dict__, "path": self.path}
        if holder.user == "?":
            return LockError(f"host {host!r}: {holder.what}", fix=f"look at it; `ddlab restore "
                             f"--host {host} --force` takes it over", **facts)
        age = self.age_s()
        said = holder.describe(age)
        if holder.pid is None:
            owner = "" if holder.is_me() else "its owner's "
            fix = f"{owner}`ddlab restore --host {host}` puts it back (-p wait_s 600 queues " \
                  "behind it)" + ("" if holder.is_me() else
                                  f"; if it is abandoned, `ddlab restore --host {host} --force`")
            return LockError(f"host {host!r} is held by {said}", live=True, said=said, fix=fix,
                             **facts)
        if holder.is_quiet(age):
            return LockError(f"host {host!r} is held by {said}: no heartbeat for more than "
                             f"{STALE_AFTER_S:.0f} s, so that run is gone or cut off from the "
                             "host", fix=f"take it over: `ddlab restore --host {host} --force` "
                                         "puts the host back as that run left it", **facts)
        return LockError(f"host {host!r} is in use by {said}", live=True, said=said,
                         fix="wait for it: -p wait_s 600 queues behind it (up to 600 s), or "
                             "use another host", **facts)

    def age_s(self) -> float | None:
        """Seconds since the lock was last written or beat, by the host's own clock
        (None: no lock, or the host cannot say)."""
        script = 'now=$(date +%s) && then=$(stat -c %Y -- "$1") && echo $((now - then))'
        done = self.transport.run(["sh", "-c", script, "sh", self.path], check=False)
        try:
            return max(0.0, float(done.stdout.strip()))
        except ValueError:
            return None

    def _create(self, lock: HostLock) -> bool:
        script = ('umask 077; tmp=$(mktemp "$1.XXXXXX") || exit 2; '
                  'cat > "$tmp" && ln "$tmp" "$1"; code=$?; rm -f "$tmp"; exit $code')
        done = self.transport.run(["sh", "-c", script, "sh", self.path],
                                  input=lock.to_json(), check=False)
        return done.exit_code == 0

    def _continue(self, held: HostLock, mine: HostLock) -> HostLock:
        """Keep the held record (baseline, variant) under our name."""
        lock = HostLock(holder=mine.holder, baseline=held.baseline, variant=held.variant)
        self._put(lock)
        return self._hold(lock)

    def _hold(self, lock: HostLock) -> HostLock:
        self.held, self.token, self.preemption = True, lock.holder.token, None
        return lock

    def _record_path(self, token: str) -> str:
        return f"{self.dir}/preempted/{token}.json"

    def _record_preemption(self, held: HostLock, mine: HostLock) -> None:
        """Before the lock names us: tell the run we take the host from who and when."""
        if held.holder.pid is None or not held.holder.token:
            return  # no process to tell (a persistent lock), or a ddlab without tokens
        folder = f"{self.dir}/preempted"
        self.transport.make_private_dir(folder)
        self.transport.run(["find", folder, "-name", "*.json", "-mmin", f"+{RECORDS_KEPT_MIN}",
                            "-delete"], check=False)
        record = {"by": mine.holder.__dict__, "at": now_utc(), "how": "took the host with --force at",
                  "took": held.holder.__dict__, "variant": held.variant}
        self.transport.write_file(self._record_path(held.holder.token),
                                  (json.dumps(record, indent=2) + "\n").encode(), mode=0o600)

    # --- holding it ------------------------------------------------------------

    def check(self) -> Preemption | None:
        """None while this run holds the lock; else who took it (the taker's record,
        else the lock's holder now, else "the lock was removed")."""
        if self.preemption is not None or not self.held:
            return self.preemption
        try:
            record = read_state(self.transport, self._record_path(self.token))
            if record is None:
                raise FileNotFoundError(self._record_path(self.token))
            taken = Preemption(by=record.get("by") or {}, at=str(record.get("at") or "?"),
                               how=str(record.get("how") or "took the host at"))
        except FileNotFoundError:
            held = self.read()
            if held is not None and held.holder.token == self.token:
                return None
            if held is None:
                taken = Preemption(by={}, at=now_utc(), how="the host's lock was removed while "
                                   "this run held it (by hand, or by a ddlab run since ended)")
            else:
                taken = Preemption(by=held.holder.__dict__, at=held.holder.since,
                                   how="has held the host's lock since")
        except (StateFileError, ValueError, AttributeError):
            taken = Preemption(by={}, at=now_utc(), how="another run left an unreadable record "
                               f"{self._record_path(self.token)}")
        self.preemption = taken
        return taken

    def preempted(self, taken: Preemption, verdict: dict | None = None) -> Preempted:
        """The error a run raises when the host was taken from it (exit code 9)."""
        return Preempted(f"host {self.host!r} was taken from this run: {taken.describe()}",
                         fix="the other run has the host now: run again when it is done "
                             "(-p wait_s 600 queues behind it); a sweep's resume runs its "
                             "preempted cell again", host=self.host, by=taken.by, at=taken.at,
                         how=taken.how, verdict=verdict or {})

    def write(self, lock: HostLock) -> None:
        """Record ``lock``; Preempted when the host is no longer this run's."""
        taken = self.check()
        if taken is not None:
            raise self.preempted(taken)
        self._put(lock)

    def _put(self, lock: HostLock) -> None:
        self.transport.write_file(self.path, lock.to_json().encode(), mode=0o600)

    def beat(self) -> Preemption | None:
        """Touch the lock (its heartbeat), unless it was taken: then who took it."""
        taken = self.check()
        if taken is None:
            self.transport.run(["touch", "-c", "--", self.path], check=False)
        return taken

    def start_beating(self) -> None:
        """Beat from a thread every ``HEARTBEAT_S`` until :meth:`stop_beating` or until
        the lock is found taken (then ``preemption`` says by whom)."""
        if self._beater is not None:
            return
        self._stop_beating.clear()
        self._beater = threading.Thread(target=self._beat_loop, daemon=True,
                                        name=f"ddlab-lock-{self.host}")
        self._beater.start()

    def _beat_loop(self) -> None:
        while not self._stop_beating.wait(HEARTBEAT_S):
            link = self.transport.link  # a dropped connection: the run's own commands reconnect
            if not self.held or self.transport.down_since is not None or (link and not link[-1]):
                continue
            try:
                if self.beat() is not None:
                    return
            except (DdlabError, OSError):
                continue

    def stop_beating(self) -> None:
        if self._beater is not None:
            self._stop_beating.set()
            self._beater.join(timeout=5.0)
            self._beater = None

    def forget_preemption(self) -> None:
        """Remove the record the taker left for this run (it has been read)."""
        if self.token:
            self.transport.run(["rm", "-f", "--", self._record_path(self.token)], check=False)

    def release(self) -> None:
        """Remove the lock, unless another run holds it now."""
        if self.check() is None:
            self.transport.run(["rm", "-f", "--", self.path])
        self.held = False

