"""The process service manager: a server without systemd (most GPU containers).

Each service has a folder ``<state_dir>/services/<name>/`` (mode 0700) with
``spec.json`` (argv, env, workdir; 0600, it may hold secrets), and per start:
``pid`` (the process group), ``child`` (the server's pid), ``invocation``,
``log`` (stdout + stderr of this start; the previous start's is ``log.prev``),
``status`` (the exit status, written when the server ends) and ``stopped``
(present when ddlab stopped it, so a stop is not reported as a crash).

How a start works, and why: a launcher ``sh`` (constant script; every value
is a positional argument, nothing is interpolated into shell text) prepares
the files and starts a wrapper with ``setsid`` in the background, so the
wrapper leads its own session and process group and survives the command
channel; it returns once the wrapper wrote its pid (from inside the new
session, so ``state`` can tell it from a reused pid by its session id) and
its server's pid, ``child`` (or the status of a start that failed before it).
The wrapper runs ``env -- K=V... argv`` in the workdir, waits for it and
writes ``$?`` to ``status``. A reader between the wrapper's start and its
writing ``child`` (atomically, as every file it writes) sees ``activating``
with no main pid: the main pid of a running service never changes under a
reader (it was the wrapper's there before). ``stop`` sends TERM to the whole group
(then CONT, as systemd does, so that a stopped process gets it), waits
(bounded), then KILL. The environment is the login environment plus
``env`` (unlike systemd's clean one: containers keep CUDA paths there). A
background job of a non-interactive shell ignores SIGINT; stop uses TERM.
"""

from __future__ import annotations

import json
import time
import uuid

from ddlab.core.errors import ConfigError, ServiceError
from ddlab.hosts.services import (ServiceManager, ServiceSpec, ServiceState, read_log_file,
                                  unit_name)

__all__ = ["ProcessManager"]

_LAUNCH = r"""w=$1 d=$2 inv=$3; shift 3
cd "$d" || exit 111
[ ! -f log ] || mv -f log log.prev
[ ! -f invocation ] || mv -f invocation invocation.prev
rm -f status status.tmp stopped child child.tmp pid pid.tmp
printf '%s\n' "$inv" > invocation
: > log
chmod 600 log
setsid sh -c "$w" ddlab-service "$d" "$@" </dev/null >/dev/null 2>&1 &
i=0
while { [ ! -f pid ] || { [ ! -f child ] && [ ! -f status ]; }; } && [ "$i" -lt 1000 ]; do
  sleep 0.005; i=$((i + 1))
done
[ -f pid ] || { echo "ddlab: the service wrapper did not start" >&2; exit 112; }
cat pid
"""

_WRAPPER = r"""d=$1 wd=$2; shift 2
trap 'stopping=1' TERM INT
printf '%s\n' "$$" > "$d/pid.tmp" && mv -f "$d/pid.tmp" "$d/pid"
if cd "$wd" 2>>"$d/log"; then
  "$@" >>"$d/log" 2>&1 </dev/null &
  child=$!
  printf '%s\n' "$child" > "$d/child.tmp" && mv -f "$d/child.tmp" "$d/child"
  while :; do wait "$child"; code=$?; kill -0 "$child" 2>/dev/null || break; done
else
  code=126
fi
printf '%s\n' "$code" > "$d/status.tmp" && mv -f "$d/status.tmp" "$d/status"
"""

_STATE = r"""cd "$1" 2>/dev/null || exit 0
[ ! -f spec.json ] || echo installed=1
for f in pid child status invocation stopped; do
  if [ -f "$f" ]; then v=; read -r v < "$f"; printf '%s=%s\n' "$f" "$v"; fi
done
if [ -f pid ]; then read -r p < pid; s=; read -r s 2>/dev/null < "/proc/$p/stat"; printf 'stat=%s\n' "$s"; fi
exit 0
"""


class ProcessManager(ServiceManager):
    """Services as detached process groups with files under ``state_dir``."""

    stop_timeout_s = 10.0

    def __init__(self, transport, state_dir: str):
        super().__init__(transport)
        self.state_dir = state_dir.rstrip("/")
        self._root: str | None = None

    def _dir(self, name: str) -> str:
        if self._root is None:
            self._root = self.transport.expand_path(self.state_dir)
        return f"{self._root}/{unit_name(name)[:-len('.service')]}"

    def install(self, spec: ServiceSpec) -> None:
        if "=" in spec.argv[0]:
            raise ConfigError(f"argv[0]={spec.argv[0]!r}: must not contain '='",
                              fix="use the program's path", value=spec.argv[0])
        folder = self._dir(spec.name)
        self.transport.make_private_dir(folder)
        data = {"argv": list(spec.argv), "env": dict(spec.env), "workdir": spec.workdir}
        self.transport.write_file(f"{folder}/spec.json", json.dumps(data).encode(), mode=0o600)

    def start(self, name: str) -> str:
        folder, state = self._dir(name), self.state(name)
        if state.load_state == "not-found":
            raise ServiceError(f"{name}: not installed in {folder}", fix="install(spec) first")
        if state.running:
            raise ServiceError(f"{name}: already running (pid {state.main_pid})",
                               fix="stop it first")
        spec = json.loads(self.transport.read_file(f"{folder}/spec.json"))
        invocation = uuid.uuid4().hex
        command = ["env", "--", *(f"{k}={v}" for k, v in spec["env"].items()), *spec["argv"]]
        self.transport.run(["sh", "-c", _LAUNCH, "ddlab-launch", _WRAPPER, folder, invocation,
                            spec["workdir"] or self.transport.expand_path("~"), *command])
        return invocation

    def stop(self, name: str) -> None:
        files = self._files(name)
        if not _alive(files):
            return
        folder, group = self._dir(name), files["pid"]
        self.transport.run(["touch", "--", f"{folder}/stopped"])
        for sig, wait_s in (("TERM", self.stop_timeout_s), ("KILL", 5.0)):
            self.transport.run(["kill", f"-{sig}", "--", f"-{group}"], check=False)
            if sig == "TERM":  # as systemd does: a stopped (hung) process gets the TERM now
                self.transport.run(["kill", "-CONT", "--", f"-{group}"], check=False)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                if not _alive(self._files(name)):
                    return
                time.sleep(0.1)
        raise ServiceError(f"{name}: process group {group} survived TERM and KILL",
                           fix=f"look at it on the host: ps -g {group}")

    def remove(self, name: str) -> None:
        self.stop(name)
        self.transport.run(["rm", "-rf", "--", self._dir(name)])

    def state(self, name: str) -> ServiceState:
        return _state_of(self._files(name))

    def definition_path(self, name: str) -> str | None:
        state = self.state(name)
        return None if state.load_state == "not-found" else f"{self._dir(name)}/spec.json"

    def _files(self, name: str) -> dict:
        done = self.transport.run(["sh", "-c", _STATE, "ddlab-state", self._dir(name)])
        return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)

    def logs(self, name: str, invocation: str | None = None) -> str:
        """The log of that start, a last line without its newline too (bounded, no link)."""
        path = self._log_path(name, invocation)
        return "" if path is None else read_log_file(self, path, 0, partial=True)[0]

    def read_logs(self, name, *, invocation=None, cursor=None):
        """From a byte cursor, bounded, never through a symbolic link (services.py)."""
        path = self._log_path(name, invocation)
        if path is None:
            return "", cursor
        tag = path.rsplit("/", 1)[1] + "@" + (invocation or self._files(name).get("invocation", ""))
        offset = int(cursor.rsplit(":", 1)[1]) if cursor and cursor.startswith(tag + ":") else 0
        text, offset = read_log_file(self, path, offset)
        return text, f"{tag}:{offset}"

    def _log_path(self, name: str, invocation: str | None) -> str | None:
        """The log file of that start: current, previous, or None when it is gone."""
        folder = self._dir(name)
        if invocation is None:
            return f"{folder}/log"
        files = self._files(name)
        if invocation == files.get("invocation"):
            return f"{folder}/log"
        try:
            previous = self.transport.read_file(f"{folder}/invocation.prev").decode().strip()
        except FileNotFoundError:
            return None
        return f"{folder}/log.prev" if previous == invocation else None


def _alive(files: dict) -> bool:
    """The wrapper still runs: its pid leads its own session, is no zombie, wrote no status."""
    fields = files.get("stat", "").rsplit(")", 1)
    if "status" in files or len(fields) != 2 or "pid" not in files:
        return False
    state, _ppid, _pgrp, session = fields[1].split()[:4]
    return state not in ("Z", "X") and session == files["pid"]


def _state_of(files: dict) -> ServiceState:
    common = {"invocation_id": files.get("invocation", ""),
              "main_pid": int(files.get("child") or files.get("pid") or 0)}
    if "installed" not in files:
        return ServiceState("inactive", "dead", load_state="not-found")
    if "pid" not in files:
        return ServiceState("inactive", "dead", **common)
    if _alive(files):
        if not files.get("child"):  # the wrapper runs, its server not yet forked: no main pid to name
            return ServiceState("activating", "start", **{**common, "main_pid": 0})
        return ServiceState("active", "running", **common)
    common["main_pid"] = 0
    status = int(files["status"]) if files.get("status", "").strip().isdigit() else None
    kind = None if status is None else ("killed" if status > 128 else "exited")
    number = status - 128 if kind == "killed" else status
    if "stopped" in files or status == 0:
        return ServiceState("inactive", "dead", "success", number, kind, **common)
    result = "exit-code" if kind == "exited" else "signal"
    return ServiceState("failed", "failed", result, number, kind, **common)
