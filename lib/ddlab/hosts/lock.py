"""The host lock: one ddlab run per host, and the record of what it deployed.

The lock is a JSON file, ``<state_dir>/lock.json`` on the host, created
atomically, whole: written to a private temp file, then hard-linked to its name,
which fails if the name exists (like O_EXCL), so two ddlab runs cannot both
take it and nobody ever reads a lock half written. It
says who holds the host (user, controller machine, pid, since, what for) and
what ddlab changed there (the baseline service and whether it was active, the
variant deployed), so any later ddlab run can put the baseline back.

Who may take a held lock:

- its holder (same controller machine, same user) — a CLI ``ddlab deploy``
  leaves a *persistent* lock (pid null) that ``ddlab watch`` and
  ``ddlab restore`` continue; while one of them runs, the lock names its
  pid, so a second run is refused (:class:`ddlab.lab.deploy.Lab`);
- anyone, when the lock is *stale*: its pid is gone on this same controller.
  Taking a stale lock over says so (a message, never silently) and keeps the
  record, so the baseline state found by the dead run is not forgotten;
- anyone with ``force=True`` (``--force``), which also says so.

Otherwise :class:`LockError` names the holder and what to do.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
from dataclasses import dataclass, field

from ddlab.core.errors import LockError
from ddlab.core.log import get_logger
from ddlab.core.version import __version__
from ddlab.hosts.transport import Transport

__all__ = ["Holder", "HostLock", "pid_alive"]

log = get_logger(__name__)


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Holder:
    user: str
    controller: str
    pid: int | None
    since: str
    what: str
    ddlab: str = __version__

    @classmethod
    def me(cls, what: str, *, persistent: bool) -> "Holder":
        return cls(user=getpass.getuser(), controller=socket.gethostname(),
                   pid=None if persistent else os.getpid(),
                   since=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), what=what)

    def describe(self) -> str:
        pid = f"pid {self.pid}" if self.pid else "no process: held until `ddlab restore`"
        return f"{self.user}@{self.controller} ({pid}) since {self.since} for {self.what!r}"

    def is_me(self) -> bool:
        return self.user == getpass.getuser() and self.controller == socket.gethostname()

    def is_stale(self) -> bool:
        """Its process is gone; only decidable on the same controller machine."""
        return (self.pid is not None and self.controller == socket.gethostname()
                and not pid_alive(self.pid))


@dataclass
class HostLock:
    """The lock file's content: holder + what ddlab changed on the host."""

    holder: Holder
    baseline: dict = field(default_factory=dict)   # {"service": str, "was_active": bool}
    variant: dict = field(default_factory=dict)    # {"name", "hash", "service", "port", ...}

    @classmethod
    def from_json(cls, text: str) -> "HostLock":
        data = json.loads(text)
        return cls(holder=Holder(**data["holder"]), baseline=data.get("baseline") or {},
                   variant=data.get("variant") or {})

    def to_json(self) -> str:
        return json.dumps({"holder": self.holder.__dict__, "baseline": self.baseline,
                           "variant": self.variant}, indent=2) + "\n"


class LockFile:
    """Acquire, read, update and release ``lock.json`` on one host."""

    def __init__(self, transport: Transport, state_dir: str):
        self.transport = transport
        self.dir = transport.expand_path(state_dir)
        self.path = f"{self.dir.rstrip('/')}/lock.json"
        self.held = False

    def read(self) -> HostLock | None:
        try:
            text = self.transport.read_file(self.path).decode()
        except FileNotFoundError:
            return None
        try:
            return HostLock.from_json(text)
        except (ValueError, KeyError, TypeError):
            return HostLock(holder=Holder("?", "?", None, "?", f"unreadable lock file {self.path}"))

    def acquire(self, what: str, *, persistent: bool = False, force: bool = False) -> HostLock:
        """Take the lock, or continue/take over one we may (module docstring)."""
        mine = HostLock(holder=Holder.me(what, persistent=persistent))
        self.transport.make_private_dir(self.dir)
        for _ in range(3):
            if self._create(mine):
                self.held = True
                return mine
            held = self.read()
            if held is None:
                continue  # released between our two calls: try again
            if held.holder.is_me() and held.holder.pid in (None, os.getpid()):
                return self._continue(held, mine)
            if held.holder.is_stale() or force:
                why = "its process is gone" if held.holder.is_stale() else "--force given"
                log.warning(f"{self.transport.profile.name}: taking over the lock held by "
                            f"{held.holder.describe()}: {why}")
                return self._continue(held, mine)
            raise LockError(
                f"host {self.transport.profile.name!r} is in use by {held.holder.describe()}",
                fix=(f"wait for it, or if it is abandoned run `ddlab restore --host "
                     f"{self.transport.profile.name} --force`"),
                holder=held.holder.__dict__, path=self.path)
        raise LockError(f"host {self.transport.profile.name!r}: lock {self.path} keeps changing",
                        fix="another ddlab run is racing for this host; retry in a moment")

    def _create(self, lock: HostLock) -> bool:
        script = ('umask 077; tmp=$(mktemp "$1.XXXXXX") || exit 2; '
                  'cat > "$tmp" && ln "$tmp" "$1"; code=$?; rm -f "$tmp"; exit $code')
        done = self.transport.run(["sh", "-c", script, "sh", self.path],
                                  input=lock.to_json(), check=False)
        return done.exit_code == 0

    def _continue(self, held: HostLock, mine: HostLock) -> HostLock:
        """Keep the held record (baseline, variant) under our name."""
        lock = HostLock(holder=mine.holder, baseline=held.baseline, variant=held.variant)
        self.write(lock)
        self.held = True
        return lock

    def write(self, lock: HostLock) -> None:
        self.transport.write_file(self.path, lock.to_json().encode(), mode=0o600)

    def release(self) -> None:
        self.transport.run(["rm", "-f", "--", self.path])
        self.held = False

