"""Service managers: start, stop, observe and read the logs of one server on a host.

One interface (:class:`ServiceManager`), three ways a host runs a server:

- :class:`SystemdManager`: a unit file in ``unit_dir`` (secret-named
  variables apart, in a 0600 ``EnvironmentFile``), ``systemctl``, the
  journal. State comes from one ``systemctl show``; logs of *this* start only
  come from ``journalctl`` matched on the start's invocation id, so an earlier
  crash never pollutes a later diagnosis.
- :class:`ProcessManager` (:mod:`ddlab.hosts.processes`): for hosts without systemd
  (most GPU containers): a detached process group with pid, status and log
  files under the profile's ``state_dir``.
- :class:`SlurmManager` (:mod:`ddlab.hosts.slurm`): a batch job submitted on a
  Slurm login host; the server runs on the node Slurm allocates, its log is the
  job's output file on shared storage.

All answer ``state()`` with one command over the transport's persistent
connection (a few ms), because a watcher polls it every ~0.2 s to see a crash
within a second. ``read_logs(name, cursor=...)`` returns only what is new
since the cursor, for the same watcher. Names are validated (no ``/``, no
``..``) before anything touches the host.

Logs are read bounded (the transport returns a command's first MB and last few
MB): what was left out is one line starting with :data:`LEFT_OUT` in the text, and a
file cursor counts the bytes *read*, never the text re-encoded (a log with
invalid UTF-8 would otherwise move the cursor past lines not yet read, issue 23).
A log file past a few MB is read as its first 512 KB and its last 2 MB, the middle
never read; it is opened without following a symbolic link (``dd iflag=nofollow``):
a log replaced by a link to a secret file is refused, said once, never echoed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ddlab.core.bounded import HEAD_BYTES, LEFT_OUT, TAIL_BYTES, bounded_lines
from ddlab.core.checks import check_env_name
from ddlab.core.errors import ConfigError
from ddlab.core.log import get_logger
from ddlab.hosts.transport import Transport

__all__ = ["ServiceSpec", "ServiceState", "ServiceManager", "unit_name", "SCHEDULER_ENDED",
           "LEFT_OUT", "bounded_lines"]

log = get_logger(__name__)


# Slurm's own end states for a job: the scheduler ended it (its time limit, a preemption,
# a node failure, the memory cgroup, an scancel by someone else ...), not the server.
SCHEDULER_ENDED = ("TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "CANCELLED", "DEADLINE",
                   "BOOT_FAIL", "REVOKED")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9:_.@-]*")


def unit_name(name: str) -> str:
    """``name`` as a systemd unit name (``.service`` added); ConfigError for unsafe names."""
    stem = name[:-len(".service")] if name.endswith(".service") else name
    if not isinstance(name, str) or not _NAME.fullmatch(stem) or ".." in stem:
        raise ConfigError(f"service name {name!r}: must be letters, digits and : _ . @ - "
                          "(no '/', no '..')", fix="e.g. ddlab-ddtree-b32.service", value=name)
    return f"{stem}.service"


@dataclass(frozen=True)
class ServiceSpec:
    """What to run: ``argv`` with ``env`` in ``workdir``; ``unit_text`` is the rendered
    systemd unit (``ddlab.config.units.render_unit``); when absent a plain one is made from argv."""

    name: str
    argv: list
    env: dict = field(default_factory=dict)
    workdir: str | None = None
    unit_text: str | None = None

    def __post_init__(self):
        unit_name(self.name)
        if not self.argv or not all(isinstance(a, str) for a in self.argv):
            raise ConfigError(f"argv={self.argv!r}: must be a non-empty list of strings",
                              fix="e.g. ['/usr/bin/python3', '-m', 'sglang.launch_server']")
        if self.workdir is not None and any(c in str(self.workdir) for c in "\n\r\0"):
            raise ConfigError(f"workdir={self.workdir!r}: must not contain line breaks or NUL",
                              fix="use a plain directory path", value=self.workdir)
        for key in self.env:
            check_env_name(key)

    @property
    def unit(self) -> str:
        return unit_name(self.name)


@dataclass(frozen=True)
class ServiceState:
    """A service's state in systemd's words (the process manager maps onto them).

    ``active_state``: active | activating | deactivating | inactive | failed;
    ``sub_state``: running | exited | dead | auto-restart | failed ...;
    ``result``: success | exit-code | signal | core-dump | ...;
    ``exit_status``: the main process's exit code (or signal number when
    ``exit_kind`` is killed/dumped), None before it ended; ``n_restarts``:
    automatic restarts since the last manual start. A Slurm job adds
    ``scheduler_state`` (its ``JobState``: PENDING, RUNNING, TIMEOUT ...),
    ``scheduler_reason`` (its ``Reason``) and ``node`` (where it runs, ``BatchHost``);
    ``result`` is ``scheduler-ended`` when Slurm ended it (:data:`SCHEDULER_ENDED`).
    """

    active_state: str
    sub_state: str
    result: str = ""
    exit_status: int | None = None
    exit_kind: str | None = None
    n_restarts: int = 0
    invocation_id: str = ""
    main_pid: int = 0
    load_state: str = "loaded"
    scheduler_state: str = ""
    scheduler_reason: str = ""
    node: str = ""

    @property
    def running(self) -> bool:
        return self.active_state == "active" and self.sub_state == "running"

    @property
    def scheduler_ended(self) -> bool:
        """The scheduler ended it (a Slurm TIMEOUT, PREEMPTED ...): not a crash of the server."""
        return self.result == "scheduler-ended"

    @property
    def failed(self) -> bool:
        """It crashed: failed, restarting after a crash, or ended with a non-success result."""
        return (self.active_state == "failed" or self.sub_state == "auto-restart"
                or (self.active_state == "inactive" and self.result not in ("", "success")))

    def to_dict(self) -> dict:
        return {**self.__dict__, "running": self.running, "failed": self.failed,
                "scheduler_ended": self.scheduler_ended}


class ServiceManager:
    """install -> start -> state/logs ... -> stop -> remove, for one host's transport."""

    def __init__(self, transport: Transport):
        self.transport = transport
        self._said_links: set[str] = set()  # logs found to be symbolic links (said once)

    def install(self, spec: ServiceSpec) -> None:
        raise NotImplementedError

    def start(self, name: str) -> str:
        """Start it; returns the invocation id of this start."""
        raise NotImplementedError

    def stop(self, name: str) -> None:
        raise NotImplementedError

    def remove(self, name: str) -> None:
        """Stop it and remove every trace of the installation (idempotent)."""
        raise NotImplementedError

    def state(self, name: str) -> ServiceState:
        raise NotImplementedError

    def definition_path(self, name: str) -> str | None:
        """Where the host keeps the service's definition (its unit file, its spec);
        None when it has none."""
        raise NotImplementedError

    def definition(self, name: str) -> str | None:
        """The text of the service's definition, as the host has it now (None: none)."""
        path = self.definition_path(name)
        if path is None:
            return None
        try:
            return self.transport.read_file(path).decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None

    def reload(self) -> None:
        """Make the manager read definitions written behind its back (systemd: daemon-reload)."""

    def env_file(self, name: str) -> str | None:
        """Where the host keeps the service's secret-named variables, apart from its
        world-readable definition (None: the definition is private already)."""
        return None

    def logs(self, name: str, invocation: str | None = None) -> str:
        """The log of one start (the current one by default)."""
        return self.read_logs(name, invocation=invocation)[0]

    def read_logs(self, name: str, *, invocation: str | None = None,
                  cursor: str | None = None) -> tuple[str, str | None]:
        """(text, cursor): log lines after ``cursor`` (all when None), and where to resume."""
        raise NotImplementedError


def read_log_file(manager: ServiceManager, path: str, offset: int, *,
                  partial: bool = False) -> tuple[str, int]:
    """(complete lines from byte ``offset`` of the log file at ``path``, the offset after
    them), bounded: past :data:`~ddlab.core.bounded.HEAD_BYTES` +
    :data:`~ddlab.core.bounded.TAIL_BYTES` bytes the middle is never
    read (a 1 GB log costs two short reads); a path that is a symbolic link is not
    followed: said once (a log line and a note in the text), nothing read. ``partial``:
    a last line without its newline too (a whole log, not a cursor's step)."""
    done = manager.transport.run(["sh", "-c", _READ_LOG, "ddlab-log", path, str(int(offset)),
                                  str(HEAD_BYTES), str(TAIL_BYTES)], check=False)
    if done.exit_code == 3 or "symbolic link" in done.stderr:
        if path in manager._said_links:
            return "", offset
        manager._said_links.add(path)
        why = (f"{path} is a symbolic link: not read (a log is read only as the file the "
               "service manager made; it may point at a secret)")
        log.warning(f"{manager.transport.profile.name}: {why}")
        return f"{LEFT_OUT} {why}\n", offset
    if done.exit_code != 0 and not done.stdout_bytes:
        return "", offset  # no log (yet), or gone
    at, skipped = done.skipped
    for line in done.stderr.splitlines():
        if line.startswith("ddlab-left-out "):
            at, skipped = HEAD_BYTES, skipped + int(line.split()[2])
    text, covered = bounded_lines(done.stdout_bytes, (at, skipped), partial=partial)
    return text, offset + covered


# the first HEAD and the last TAIL bytes after the offset, never the middle; no link followed
_READ_LOG = r"""p=$1 o=$2 h=$3 t=$4
[ ! -L "$p" ] || { echo "ddlab: a symbolic link" >&2; exit 3; }
size=$(stat -c %s -- "$p" 2>/dev/null) || exit 4
if [ $((size - o)) -le $((h + t)) ]; then
  exec dd if="$p" iflag=nofollow,skip_bytes skip="$o" bs=64K status=none
fi
dd if="$p" iflag=nofollow,skip_bytes,count_bytes skip="$o" count="$h" bs=64K status=none || exit $?
echo "ddlab-left-out $h $((size - t - o - h))" >&2
exec dd if="$p" iflag=nofollow,skip_bytes skip=$((size - t)) bs=64K status=none
"""
