"""Shared parts of the reliability suite (a helper, not a test module).

Builds on ``tests/labkit.py`` (sites, ``ddlab`` runner, waits) and
``tests/sweepkit.py`` (temp projects, store counts). What it adds:

- :class:`Bench`: a temp ``DDLAB_ROOT`` (a :class:`sweepkit.Project`) whose
  host profile reaches either this machine (``local``, process manager) or the
  real test host (``th``, systemd or process manager over SSH), with a
  baseline service ddlab must stop and put back. The baseline is either a
  process that just runs (``quick``) or an HTTP server that answers ``/health``
  2 s after it starts, with ``baseline_port`` set (``slow``), so that a
  restore waits for ``/health`` the way a real SGLang restore does,
  long enough to be interrupted in. Its base config is ``test-<tag>``, so every
  unit it makes is ``ddlab-test-<tag>-...`` (the test host shares
  the machine's cgroups, and other suites run at once).
- resource counts of this process and the host (fds, threads, child
  processes, listening sockets, target servers, sshd sessions) for the
  leak checks, and the count of SSH logins the test host accepted, for
  "the host saw no command".
- ``shims/``: two tiny server entry points a base config can name as its
  ``module`` (found through ``env.PYTHONPATH``): ``argv_dump`` (records its
  real argv and environment, then idles) and ``sglang_like`` (SGLang's
  ``--api-key`` and its ``server_args=`` log line, in front of ddlab's target).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import yaml

import sweepkit
from ddlab.hosts import connect, manager_for
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.services import ServiceSpec
from labkit import DDLAB, REPO, free_port, wait_for
from testhost.host import SSHD_UNIT

HERE = Path(__file__).resolve().parent
SHIMS = HERE / "shims"
PYTHON = sys.executable
# Cheap cells: one short request, no probe; a cell is ~2-3 s, most of it the target's start.
# rounds capped at the 3 an interval needs, no bracketing (docs/measurement.md): the
# faults under test are the host's, not the figures'
CHEAP = {"requests": 1, "max_new_tokens": 8, "warmup": 0, "probe": False, "grace_s": 0.0,
         "timeout_s": 60.0, "max_rounds": 3, "bracket": False}
SMALL = {"requests": 2, "max_new_tokens": 32, "warmup": 0, "grace_s": 0.0, "timeout_s": 60.0,
         "max_rounds": 3, "bracket": False}


@dataclasses.dataclass
class Bench:
    """A temp project plus the host it drives (see the module docstring)."""

    project: sweepkit.Project
    host: str                  # profile name inside the project: "local" or "th"
    profile: HostProfile
    base: str                  # base config name: test-<tag>
    baseline: str              # the baseline service's name ("" for none)
    baseline_port: int | None
    testhost: object | None = None

    def __post_init__(self):
        self.transport = connect(self.profile)
        self.manager = manager_for(self.transport)

    # -- paths and environment --------------------------------------------------------

    @property
    def root(self) -> Path:
        return self.project.root

    @property
    def outputs(self) -> Path:
        return self.project.outputs

    @property
    def store_path(self) -> Path:
        return self.project.store_path

    @property
    def port(self) -> int:
        return self.project.port

    @property
    def state_dir(self) -> str:
        return self.profile.state_dir

    @property
    def lock_path(self) -> str:
        return f"{self.state_dir}/lock.json"

    @property
    def prefix(self) -> str:
        """Every variant unit of this bench starts with it."""
        return f"ddlab-{self.base}"

    def env(self, **extra) -> dict:
        return {**self.project.env(), **extra}

    @contextlib.contextmanager
    def using(self):
        with sweepkit.using(self.project):
            yield self

    # -- the host -----------------------------------------------------------------------

    def lock(self) -> dict | None:
        try:
            return json.loads(self.transport.read_file(self.lock_path))
        except FileNotFoundError:
            return None

    def baseline_active(self) -> bool:
        return bool(self.baseline) and self.manager.state(self.baseline).active_state == "active"

    def variants(self) -> list[str]:
        """This bench's variant services still installed on the host."""
        if self.profile.service_manager == "systemd":
            listed = self.transport.run(["ls", "-1", "--", self.profile.unit_dir]).stdout.split()
            return sorted(n for n in listed if n.startswith(f"{self.prefix}-") and n.endswith(".service"))
        folder = Path(self.state_dir) / "services"
        return sorted(p.name for p in folder.glob(f"{self.prefix}-*")) if folder.is_dir() else []

    def servers(self) -> list[int]:
        """Target server processes on this bench's variant port (anywhere on the machine)."""
        return sweepkit.target_pids(self.port)

    def assert_put_back(self) -> None:
        """Baseline running, no variant left (unit, process folder or process), no lock."""
        if self.baseline:
            assert self.baseline_active(), f"the baseline {self.baseline} runs again"
        assert self.variants() == [], f"variants left on the host: {self.variants()}"
        assert self.lock() is None, f"the lock is released: {self.lock()}"
        wait_for(lambda: not self.servers(), timeout_s=15, what="no variant server process left")

    def main_pid(self, service: str) -> int:
        """The service's main pid as the host's own tools see it (0: none)."""
        return self.manager.state(service).main_pid

    def signal_service(self, service: str, sig: int) -> int:
        """Send ``sig`` to the service's main process, on the host; returns the pid."""
        pid = wait_for(lambda: self.main_pid(service), timeout_s=30, what=f"{service}'s main pid")
        self.transport.run(["kill", f"-{int(sig)}", str(pid)])
        return pid

    def current_service(self) -> str | None:
        """The variant the host's lock records as deployed now."""
        lock = self.lock()
        return (lock or {}).get("variant", {}).get("service") or None

    def close(self) -> None:
        """Remove what tests left: variants, the lock; then the baseline itself."""
        with contextlib.suppress(Exception):
            for name in self.variants():
                self.manager.remove(name)
            self.transport.run(["rm", "-f", "--", self.lock_path])
            if self.baseline:
                self.manager.remove(self.baseline)
        self.transport.close()


def make_bench(folder: Path, testhost=None, *, manager: str = "systemd", baseline: str = "quick",
               connect_timeout_s: float = 10, **profile_overrides) -> Bench:
    """A :class:`Bench` in ``folder``: on the test host when given (profile ``th``), else local.

    ``baseline``: ``quick`` (a process that runs), ``slow`` (an HTTP server that
    answers ``/health`` after 2 s, with ``baseline_port``), or ``none``."""
    folder = Path(folder)
    project = sweepkit.make_project(folder)
    tag = uuid.uuid4().hex[:6]
    base = f"test-{tag}"
    data = yaml.safe_load((REPO / "params" / "base" / "local.yaml").read_text())
    data["flags"]["port"] = project.port
    (project.root / "params" / "base" / f"{base}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    service = {"none": ""}.get(baseline, f"ddlab-test-baseline-{tag}")
    baseline_port = free_port() if baseline == "slow" else None
    if testhost is not None:
        host = "th"
        service += ".service" if service and manager == "systemd" else ""
        profile = testhost.profile(service_manager=manager, baseline_service=service,
                                   state_dir=str(testhost.shared_dir / f"state-{tag}"), base=base,
                                   connect_timeout_s=connect_timeout_s, **profile_overrides)
    else:
        host = "local"
        profile = {"state_dir": str(project.state), "baseline_service": service, "base": base,
                   **profile_overrides}
    if baseline_port:
        profile["baseline_port"] = baseline_port
    (project.root / "params" / "hosts" / f"{host}.yaml").write_text(yaml.safe_dump(profile))
    bench = Bench(project=project, host=host, profile=HostProfile.from_dict(profile, name=host),
                  base=base, baseline=service, baseline_port=baseline_port, testhost=testhost)
    if service:
        _start_baseline(bench)
    return bench


# A production server stand-in that takes 2 s to answer /health, as SGLang takes minutes
# (stdlib only: a restore that waits for it costs no torch start-up).
SLOW_SERVER = """
import http.server, sys, time
time.sleep(2)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def _start_baseline(bench: Bench) -> None:
    if bench.baseline_port:  # a server that takes a while to answer /health, like SGLang
        folder = bench.testhost.shared_dir if bench.testhost else bench.project.root
        script = folder / f"slow-baseline-{bench.baseline}.py"  # a folder the host sees
        script.write_text(SLOW_SERVER)
        argv = [PYTHON, str(script), str(bench.baseline_port)]
    else:
        argv = [PYTHON, "-c", "import time; time.sleep(3600)"]
    bench.manager.install(ServiceSpec(bench.baseline, argv, workdir="/"))
    bench.manager.start(bench.baseline)
    wait_for(bench.baseline_active, what=f"{bench.baseline} to run")
    if bench.baseline_port:
        wait_for(lambda: answers(bench, bench.baseline_port), timeout_s=60,
                 what="the slow baseline to answer /health")


def answers(bench: Bench, port: int) -> bool:
    import httpx
    from ddlab.lab import http_client

    try:
        return http_client.get(bench.transport.http_base(port) + "/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def bench_for(folder: Path, testhost=None, **kwargs):
    bench = make_bench(folder, testhost, **kwargs)
    try:
        yield bench
    finally:
        bench.close()


# --- running ddlab ------------------------------------------------------------------


def ddlab_in(bench: Bench, *args: str, timeout_s: float = 180, env: dict | None = None):
    """The real ``ddlab`` command in the bench's project; text out."""
    return subprocess.run([DDLAB, *args], capture_output=True, text=True, timeout=timeout_s,
                          env=bench.env(**(env or {})), cwd=REPO)


class Drained(subprocess.Popen):
    """A ddlab process whose stdout and stderr are read as they come: undrained, a pipe
    fills (64 KiB) and the process blocks mid-run on its next heartbeat, which a loaded
    machine reaches sooner (the interrupted-envelope test waited 400 s for a trial that
    could not start). ``communicate`` waits and returns everything it wrote."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.said: dict[str, list[str]] = {"out": [], "err": []}
        self._readers = [threading.Thread(target=self._drain, args=(stream, self.said[name]),
                                          daemon=True)
                         for name, stream in (("out", self.stdout), ("err", self.stderr))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def communicate(self, input=None, timeout=None):  # noqa: A002 - Popen's own signature
        self.wait(timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.stdout, self.stderr):
            stream.close()
        return "".join(self.said["out"]), "".join(self.said["err"])


def popen_ddlab(bench: Bench, *args: str, env: dict | None = None) -> Drained:
    return Drained([DDLAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, env=bench.env(**(env or {})), cwd=REPO)


def finish(proc: subprocess.Popen, timeout_s: float = 120) -> tuple[str, str]:
    """Wait (bounded) for a process we started; kill it if it outlives the bound."""
    try:
        return proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def one_line(text: str) -> str:
    """The text, which must be exactly one non-empty line."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{text}"
    return lines[0]


def run_dirs(bench: Bench) -> list[Path]:
    """Run folders (deploys' and sweep cells'), oldest first."""
    folders = [*(bench.outputs / "runs").glob("*/"), *(bench.outputs / "sweeps").glob("*/*/")]
    return sorted(folders, key=lambda p: p.name)


def in_phase(bench: Bench, marker: str) -> Path | None:
    """The newest cell folder whose heartbeat.log shows ``marker`` (e.g. '[bench ')."""
    for folder in reversed(run_dirs(bench)):
        beat = folder / "heartbeat.log"
        if beat.is_file() and marker in beat.read_text(errors="replace"):
            return folder
    return None


def requests_served(bench: Bench) -> int:
    """Prefill batches the current variant logged so far (its own start-up warmup is one):
    how far a bench against it has got."""
    service = bench.current_service()
    if not service:
        return 0
    text = bench.transport.run(["journalctl", "-u", service, "-o", "cat", "--no-pager", "-q"],
                               check=False).stdout
    return text.count("Prefill batch")


def cells_done(bench: Bench) -> int:
    from ddlab.sweeps.store import DONE_STATES, Store

    if not bench.store_path.exists():
        return 0
    with Store(bench.store_path) as store:
        sweep_id = store.latest_sweep_id()
        return sum(s in DONE_STATES for s in store.cell_status(sweep_id).values()) if sweep_id else 0


def kernel_of(pid: int) -> int | None:
    """The Jupyter kernel started by process ``pid`` (its child running ipykernel)."""
    for child in descendants(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"ipykernel" in a for a in argv):
            return child
    return None


# --- resources ----------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (zombies left out), from /proc."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], list(parents.get(pid, []))
    while todo:
        kid = todo.pop()
        out.append(kid)
        todo += parents.get(kid, [])
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        out.append(pid)
    return out


def listening_ports() -> set[int]:
    """TCP ports this process listens on (the SSH tunnels' local ends, for one)."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as fh:
            for line in list(fh)[1:]:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:
                    ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def resources(bench: Bench | None = None) -> dict:
    """What a leak would show: this process's fds, threads, children and listening
    sockets; the bench's target servers and (on the test host) sshd sessions."""
    children = set(descendants(os.getpid()))
    # a test host's own tree is not ours: the bench's, and any other this worker started for
    # another test (its systemd starts and stops processes of its own meanwhile)
    inits = [pid for pid in children if _comm(pid) == "systemd"]
    if bench is not None and bench.testhost is not None:
        inits.append(bench.testhost.systemd_pid)
    for init in inits:
        children -= {init, *descendants(init), *_ancestors(init)}
    counts = {"fds": len(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
              "tasks": len(os.listdir("/proc/self/task")), "children": sorted(children),
              "listening": sorted(listening_ports())}
    if bench is not None:
        counts["servers"] = bench.servers()
        if bench.testhost is not None:
            counts["ssh_sessions"] = len(bench.testhost.sshd_session_pids())
    return counts


def settled(before: dict, bench: Bench | None = None, timeout_s: float = 20) -> dict:
    """Resources once they are back to ``before`` (threads and sockets wind down after
    a close), or as they are at the bound."""
    import gc

    deadline = time.monotonic() + timeout_s
    while True:
        gc.collect()
        now = resources(bench)
        if now == before or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


# --- the test host's view -------------------------------------------------------------


def sshd_logins(testhost) -> int:
    """How many SSH logins the test host's sshd has accepted so far."""
    text = testhost.run(["journalctl", "-u", SSHD_UNIT, "-o", "cat", "--no-pager", "-q"]).stdout
    return text.count("Accepted publickey")


def unit_file_mode(path: str, testhost) -> str:
    return testhost.run(["stat", "-c", "%a", path]).stdout.strip()


@contextlib.contextmanager
def killing_ssh(testhost, *, every_s: float, for_s: float | None = None, start_s: float = 0.0):
    """Kill every sshd session (server side) every ``every_s`` s, from ``start_s`` for
    ``for_s`` s (or until the block ends); yields the list of kill counts."""
    stop = threading.Event()
    kills: list[int] = []

    def loop():
        if stop.wait(start_s):
            return
        ends = time.monotonic() + for_s if for_s is not None else float("inf")
        while time.monotonic() < ends and not stop.is_set():
            kills.append(testhost.kill_ssh_sessions())
            stop.wait(every_s)

    thread = threading.Thread(target=loop, daemon=True, name="test-ssh-killer")
    thread.start()
    try:
        yield kills
    finally:
        stop.set()
        thread.join(timeout=30)


def interrupt(pid: int, sig: int = signal.SIGINT) -> float:
    """Send ``sig`` to a process we started; returns when (monotonic)."""
    os.kill(pid, sig)
    return time.monotonic()


def write_yaml(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def shim_base(bench: Bench, module: str, *, name: str, env: dict | None = None,
              flags: dict | None = None) -> str:
    """A base config ``<name>`` in the bench's project running ``python -m module``
    from ``shims/``; returns the base name."""
    data = yaml.safe_load((bench.root / "params" / "base" / f"{bench.base}.yaml").read_text())
    data["command"]["module"] = module
    data["env"] = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(SHIMS), **(env or {})}
    if flags is not None:
        data["flags"] = flags
    write_yaml(bench.root / "params" / "base" / f"{name}.yaml", data)
    return name


def idle_base(bench: Bench) -> str:
    """A base config ``<base>-idle`` whose server runs and idles (``shims/argv_dump``, no
    torch): for tests of the host's state files around a deploy, where the server itself
    is not under test (a target's start is ~1.2 CPU-s). Made once per bench."""
    name = f"{bench.base}-idle"
    if not (bench.root / "params" / "base" / f"{name}.yaml").is_file():
        root = bench.testhost.shared_dir if bench.testhost else bench.project.root.parent
        folder = Path(root) / f"idle-{bench.base}"  # a folder the host's processes see
        folder.mkdir(mode=0o777, exist_ok=True)
        folder.chmod(0o777)
        shim_base(bench, "argv_dump", name=name, env={"ARGV_DUMP_DIR": str(folder)})
    return name


def copy_notebooks_guard() -> None:
    """Notebooks are symlinked into projects; a test must never write into them."""
    for path in (REPO / "notebooks").glob("*.ipynb"):
        nb = json.loads(path.read_text())
        assert not any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), path



def answering(paths: dict[str, bytes]):
    """An HTTP handler class that answers GET ``paths`` with 200 and their bodies, 404
    otherwise, and logs nothing: a stranger on a variant's port."""
    import http.server

    class Answering(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path in paths else 404)
            self.end_headers()
            self.wfile.write(paths.get(self.path, b""))

        def log_message(self, *args):
            pass

    return Answering
