"""Who holds a host, and who took it from a run: the lock file's people.

A :class:`Holder` is one ddlab run as the host's lock (:mod:`ddlab.hosts.lock`)
records it: user, controller machine, pid (None: a lock that outlives its process,
held until ``ddlab restore``), the command line (secrets masked), the project folder
(checkout) it runs in, since when, what for, and a ``token`` of this hold.
``describe`` is what every refusal and every preempted verdict says of it.

Whether a holder is gone decides what a refused run is offered: on this controller
its pid says (``is_stale``: taken over with a message); from another controller the
pid cannot be checked, and its lock's heartbeat decides (``is_quiet``: not touched
for ``STALE_AFTER_S``, so ``--force`` is offered). A :class:`Preemption` is who
took a host from a run, how and when.
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ddlab.core.errors import DdlabError
from ddlab.core.paths import project_root
from ddlab.core.redact import redact_argv
from ddlab.core.version import __version__

__all__ = ["Holder", "Preemption", "pid_alive", "now_utc", "STALE_AFTER_S"]

STALE_AFTER_S = 120.0    # a lock of another machine not touched for this long: its run is gone


def pid_alive(pid: int) -> bool:
    """True when a process with this pid runs on this machine. A zombie does not: it has
    exited and only waits for its parent to read its status (an orphaned kernel whose
    ``ddlab run`` was killed, under an init that is slow to reap or never does, as a
    container's shell or Python as PID 1), and ``kill(pid, 0)`` still finds it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as fh:  # "pid (comm) state ...": comm may hold ") "
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False  # gone since the signal
    except (OSError, IndexError):
        return True  # no /proc (not Linux): the signal's answer


def now_utc() -> str:
    """Now, in UTC, as the lock and its records write times."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _command() -> str:
    """This process's command line as a person would recognise it (secrets masked)."""
    argv = [a for a in sys.argv if isinstance(a, str)]
    if not argv:
        return ""
    name = Path(argv[0]).name
    if "ipykernel" in name:
        return "a notebook's kernel"
    words = ["python", *argv] if name in ("-c", "-m", "") else [name, *argv[1:]]
    text = " ".join(redact_argv(words))
    return text if len(text) <= 200 else text[:197] + "..."


def _project() -> str:
    try:
        return str(project_root())
    except DdlabError:
        return ""


def _ago(age_s: float) -> str:
    return f"{age_s:.0f} s ago" if age_s < 120 else f"{age_s / 60:.0f} min ago"


@dataclass
class Holder:
    user: str
    controller: str
    pid: int | None
    since: str
    what: str
    ddlab: str = __version__
    command: str = ""   # the holder's command line (secrets masked)
    project: str = ""   # the project folder (checkout) it runs in
    token: str = ""     # this hold's own id: a run that finds another there was preempted

    @classmethod
    def me(cls, what: str, *, persistent: bool) -> "Holder":
        return cls(user=getpass.getuser(), controller=socket.gethostname(),
                   pid=None if persistent else os.getpid(), since=now_utc(), what=what,
                   command=_command(), project=_project(), token=uuid.uuid4().hex[:12])

    @classmethod
    def from_dict(cls, data: dict) -> "Holder":
        """A holder as a lock file (of any ddlab version) records it."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def who(self) -> str:
        """``alice@box (pid 12: `ddlab sweep ...`, in /home/alice/ddlab)``."""
        command = f"`{self.command}`" if self.command else ""
        how = (f"pid {self.pid}" + (f": {command}" if command else "") if self.pid else
               "no process" + (f": left by {command}" if command else "")
               + ", held until `ddlab restore`")
        where = f", in {self.project}" if self.project else ""
        return f"{self.user}@{self.controller} ({how}{where})"

    def describe(self, age_s: float | None = None) -> str:
        beat = ("" if age_s is None else f", heartbeat {_ago(age_s)}" if self.pid
                else f", last written {_ago(age_s)}")
        return f"{self.who()} since {self.since} for {self.what!r}{beat}"

    def is_me(self) -> bool:
        return self.user == getpass.getuser() and self.controller == socket.gethostname()

    def is_stale(self) -> bool:
        """Its process is gone; only decidable on the same controller machine."""
        return (self.pid is not None and self.controller == socket.gethostname()
                and not pid_alive(self.pid))

    def is_quiet(self, age_s: float | None) -> bool:
        """A run of another machine whose lock has not beaten for ``STALE_AFTER_S``: gone,
        or cut off from the host (its pid cannot be checked from here)."""
        return (self.pid is not None and self.controller != socket.gethostname()
                and age_s is not None and age_s > STALE_AFTER_S)



@dataclass(frozen=True)
class Preemption:
    """Who took the host from a run, how and when (``by``: the taker's holder fields)."""

    by: dict
    at: str
    how: str

    def describe(self) -> str:
        if not self.by:
            return f"{self.how} (noticed at {self.at})"
        return f"{Holder.from_dict(self.by).who()} {self.how} {self.at}"

    def to_dict(self) -> dict:
        return {"by": self.by, "at": self.at, "how": self.how, "said": self.describe()}
