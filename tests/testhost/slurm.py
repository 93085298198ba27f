"""A real one-node Slurm cluster for tests: Debian 12's slurm-wlm 22.05 + munge, no slurmdbd.

Follows ``/work/shared/facts/slurm.md``. ``SlurmCluster().start()`` writes a private
configuration under ``/var/lib/ddlab-test-slurm/<pid>-<random>/`` and starts, as root,
a private ``munged`` (its own key and socket in that folder), ``slurmctld`` and ``slurmd``
(the node is this machine, ``hostname -s``, at 127.0.0.1) on two free ports, with a
unique ``ClusterName`` and a random ``FirstJobId``, so several clusters (parallel test
sessions) never share anything, and the machine's ``/etc/munge``, ``/run/munge`` and
``/etc/slurm`` are not touched. From ``start()`` to the node ``idle``: 0.25 - 0.5 s;
``stop()``: 0.25 - 0.5 s.

Why each choice:

- The state folder is NOT under /tmp or /var/tmp: those are private tmpfs inside the
  test host (tests/testhost/host.py), and a command run over its sshd must read the same
  ``slurm.conf``, reach the same munge socket (``AuthInfo=socket=...``: /run/munge is not
  shared with the test host, whose systemd mounts its own /run) and see the jobs' output.
- The daemons run in the foreground (``-D``, ``munged -F``) under a small *keeper*
  process (this file run as a script) that is a child subreaper: ``slurmd`` double-forks
  each ``slurmstepd``, which would otherwise be reparented to PID 1 (never reaped here, and
  out of reach). Under the keeper every job process stays a descendant of a process we
  started, so ``stop()`` ends exactly those, by pid, never by name. The keeper dies with
  the test process (``PR_SET_PDEATHSIG``) and takes the daemons with it.
- ``MinJobAge=86400``: end states stay in ``scontrol show job`` for a day. Without slurmdbd
  ``sacct`` only answers "Slurm accounting storage is disabled"; the other durable record is
  the ``jobcomp/filetxt`` log (``jobcomp`` attribute, ``jobcomp_records()``).
- ``SchedulerParameters=batch_sched_delay=0``: a batch job is never placed at submit time
  (sbatch asks only "could it run"); the next scheduler pass places it. The default delay
  lets that wait up to 3 s; with 0 it is the controller's next 1 s tick (measured: RUNNING
  0.03 - 0.9 s after sbatch returned, median 0.6 s; ``sbatch --wrap true`` to COMPLETED
  about 1 s; ``scancel`` to CANCELLED under 0.15 s). Except the first job of a fresh
  cluster: the first scheduler pass, which reads SchedulerParameters, comes 3 s after
  slurmctld started, so that job runs about 3 s after ``start()``.
- ``JobRequeue=0``: a batch job on a failing node ends NODE_FAIL instead of being requeued.
- Two partitions on the one node: ``debug`` (default) and ``urgent`` (higher
  ``PriorityTier``); ``PreemptType=preempt/partition_prio`` + ``PreemptMode=CANCEL``, so
  an ``urgent`` job that needs the CPUs of ``debug`` jobs cancels them: PREEMPTED.

Using it from inside the test host (``tests/testhost/host.py``): a command over the test
host's sshd runs in its PID + mount namespace but on the same file system (except /tmp,
/var/tmp) and network. ``attach(host)`` bind-mounts this cluster's config folder on
``/etc/slurm`` inside that mount namespace only (the machine's /etc/slurm is untouched), so
plain ``sbatch``/``squeue``/``scontrol``/``scancel`` there find it with no environment, as
on a real login host. Without ``attach``, prefix commands with ``login_env()``
(``SLURM_CONF=...``; ``login_command(argv)`` builds that shell line). Consequences:

- Jobs run as root on THIS machine, outside the test host's namespaces (slurmd is here):
  they do not see the test host's /tmp, /var/tmp or its systemd, but do share its network,
  so a server a job starts on 127.0.0.1:PORT is reachable from the test host's SSH
  sessions and from the test process alike. Give jobs ``--chdir``/``--output`` in
  ``jobs_dir`` (or another folder outside /tmp): the default is the submitter's cwd (over
  SSH that is /root, a real folder of this machine).
- ``sbatch`` copies the submitting environment into the job (``--export=ALL``).
- ``slurmctld`` listens on 0.0.0.0:<ctld_port> (it ignores ``NoInAddrAny``); ``slurmd``
  on 127.0.0.1 only. These machines have loopback networking only.

End states and how to reach each on one node (``scontrol show job -o ID`` ``JobState=``;
while ending it reads COMPLETING, then the final state):

- COMPLETED: exit 0. FAILED: non-zero exit (``Reason=NonZeroExitCode ExitCode=3:0``).
- CANCELLED: ``scancel ID`` (``ExitCode=0:15``).
- TIMEOUT (``Reason=TimeLimit``): slurmctld checks time limits only every 30 s
  (``PERIODIC_TIMEOUT``, compiled in; no slurm.conf knob), counted from its start, and
  limits are whole minutes (``--time=0:10`` is rounded UP to 1 minute; ``--time=0`` means
  no limit). So ``--time=1`` ends TIMEOUT 60 - 90 s after the job starts (measured 87 s
  for a cluster's first job, which starts 3 s after slurmctld). Faster: ``expire(ID)`` (``scontrol update JobId=ID TimeLimit=0``, as root): the job
  ends TIMEOUT at the next check, 0 - 30 s later (``next_timelimit_check()`` says when).
  ``OverTimeLimit=0``.
- OUT_OF_MEMORY: only ``task/cgroup`` reports it (slurmstepd takes it from the memory
  cgroup's oom-kill events), so NOT without cgroups. ``SlurmCluster(memory="cgroup")``
  (this machine's cgroup-v1 memory controller) confines each job to its ``--mem``; a job
  over it is killed by the kernel and ends OUT_OF_MEMORY (``Reason=OutOfMemory
  ExitCode=0:125``) about 1 s later. Without cgroups, ``memory="kill"``
  (``jobacct_gather/linux`` + ``OverMemoryKill``, polled every second) kills a job over
  ``--mem`` too, but it ends FAILED (``Reason=JobLaunchFailure ExitCode=0:9``, and
  "exceeded memory limit" in its output).
- NODE_FAIL (``Reason=NodeDown``): ``fail_node()`` (``scontrol update NodeName=...
  State=DOWN``) ends the running jobs NODE_FAIL at once and their processes are killed;
  ``ReturnToService=2`` brings the node back to idle about 1 s later (slurmd still answers);
  ``resume_node()`` waits for that. Killing slurmd instead takes ``SlurmdTimeout`` (300 s).
- PREEMPTED: submit to ``debug`` with ``--exclusive`` (or using all CPUs), then a job to
  ``-p urgent``: the first ends PREEMPTED within about 1 s, the urgent job then runs.
- Not tried: BOOT_FAIL (node boot/power saving), DEADLINE (``--deadline``), REVOKED
  (federation), SPECIAL_EXIT and REQUEUE* (requeue is off: ``JobRequeue=0``).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Self

try:
    from testhost.procs import alive, descendants, kill_quietly, remove_stale
except ImportError:  # the keeper (`python -I slurm.py keep PLAN`): only its own folder
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from procs import alive, descendants, kill_quietly, remove_stale

__all__ = ["BASE_DIR", "SlurmCluster", "SlurmError", "parse_record"]

BASE_DIR = Path(os.environ.get("DDLAB_TEST_SLURM_DIR", "/var/lib/ddlab-test-slurm"))
SBIN = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")
PLUGIN_DIRS = ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
               "/usr/lib/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm")
PERIODIC_TIMEOUT_S = 30  # slurmctld's time-limit check interval (compiled in, 22.05)
_PRIVATE = ("/tmp", "/var/tmp")
_FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
          "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")


class SlurmError(RuntimeError):
    """The cluster did not start or a Slurm command failed; the message has log tails."""


def parse_record(line: str) -> dict[str, str]:
    """``Key=Value Key=Value ...`` (one ``scontrol show -o`` or jobcomp line) to a dict.
    Values may hold spaces: a value runs up to the next `` Key=``."""
    keys = list(_KEY.finditer(line))
    out = {}
    for i, match in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
        out[match.group(1)] = line[match.end():end].strip()
    return out


class SlurmCluster:
    """One private one-node Slurm cluster. ``start()`` / ``stop()`` (idempotent), or ``with``.

    Attributes once started: ``dir`` (the state folder), ``conf`` (its slurm.conf),
    ``conf_dir``, ``env`` (``SLURM_CONF`` and PATH for a command here), ``cluster_name``,
    ``node``, ``ctld_port``, ``slurmd_port``, ``munge_socket``, ``jobs_dir`` (a folder for
    job scripts and output both sides of the test host see), ``jobcomp`` (the completion
    log), ``start_s`` (start() to node idle), ``ctld_started`` (time.time() of slurmctld's
    start, the phase of its 30 s time-limit checks).
    """

    __test__ = False

    def __init__(self, base_dir: Path = BASE_DIR, *, kill_wait_s: int = 5,
                 memory: str | None = None, debug: str = "debug", extra_conf: str = ""):
        """``memory``: None (default): ``--mem`` is bookkeeping only. ``"kill"``: memory is a
        consumable resource and a job over its ``--mem`` is killed (jobacct_gather/linux,
        OverMemoryKill, polled each second; it ends FAILED). ``"cgroup"``: task/cgroup confines
        jobs in a cgroup-v1 memory cgroup; over ``--mem`` the kernel kills it: OUT_OF_MEMORY
        (``memory_skip_reason("cgroup")`` says whether this machine allows it). With either,
        a job without ``--mem`` gets ``DefMemPerCPU=64`` MiB. ``debug``: SlurmctldDebug and
        SlurmdDebug. ``extra_conf``: lines appended to slurm.conf."""
        if memory not in (None, "kill", "cgroup"):
            raise ValueError(f"memory={memory!r}: None, 'kill' or 'cgroup'")
        self.base_dir = Path(base_dir).resolve()
        if any(self.base_dir.is_relative_to(p) for p in _PRIVATE):
            raise ValueError(f"base_dir={self.base_dir}: /tmp and /var/tmp are private inside "
                             f"the test host; use a folder both sides see, e.g. {BASE_DIR}")
        self.kill_wait_s = kill_wait_s
        self.memory = memory
        self._made_cgroup: Path | None = None
        self.debug = debug
        self.extra_conf = extra_conf
        self.dir: Path | None = None
        self.node = socket.gethostname().split(".")[0]
        self.cluster_name = "ddlab" + secrets.token_hex(4)
        self.ctld_port = self.slurmd_port = 0
        self.start_s = float("nan")
        self.ctld_started = 0.0
        self.pids: dict[str, int] = {}
        self._keeper: subprocess.Popen | None = None
        self._attached: list = []

    # -- can it run here -------------------------------------------------------------

    @staticmethod
    def skip_reason() -> str | None:
        """Why no cluster can start on this machine (None when one can): not root, a
        binary or plugin missing, or a private munged that does not work."""
        if os.geteuid() != 0:
            return "not root (slurmd and a private munged run as uid 0 here)"
        missing = [p for p in SBIN.values() if not os.access(p, os.X_OK)]
        missing += [c for c in CLIENTS if shutil.which(c) is None]
        missing += [c for c in ("munge", "unmunge") if shutil.which(c) is None]
        if missing:
            return (f"missing {', '.join(missing)} (Debian: slurm-wlm munge); "
                    "run tests/testhost/install-slurm.sh as root")
        if not _plugin_dir():
            return f"no Slurm plugin folder with jobcomp_filetxt.so in {', '.join(PLUGIN_DIRS)}"
        return _munge_trial(str(BASE_DIR))

    @staticmethod
    def memory_skip_reason(memory: str | None) -> str | None:
        """Why ``SlurmCluster(memory=memory)`` cannot enforce memory here (None: it can)."""
        if memory == "cgroup":
            if not os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
                return ("no cgroup-v1 memory controller at /sys/fs/cgroup/memory (Slurm 22.05 "
                        "on cgroup v2 needs a systemd-delegated slurmd); OUT_OF_MEMORY unreachable")
            if not os.path.exists(os.path.join(_plugin_dir() or "", "task_cgroup.so")):
                return "no task_cgroup.so plugin"
        if memory and not os.path.exists(os.path.join(_plugin_dir() or "", "jobacct_gather_linux.so")):
            return "no jobacct_gather_linux.so plugin"
        return None

    # -- lifecycle -------------------------------------------------------------------

    def start(self, timeout_s: float = 30.0) -> Self:
        """Write the config, start munged, slurmctld, slurmd; wait for the node idle.
        On failure: stop what started and raise SlurmError with the daemons' log tails."""
        atexit.register(self.stop)
        t0 = time.monotonic()
        try:
            self._make_dir()
            from testhost.ports import free_ports  # here: this file also runs as the keeper script

            for _attempt in range(3):  # a free port may be taken before slurmctld binds it
                self.ctld_port, self.slurmd_port = free_ports(2, "0.0.0.0")  # slurmctld binds every address
                self.conf.write_text(self._slurm_conf())
                if self._launch(t0 + timeout_s):
                    break
            else:
                raise SlurmError("the daemons did not start (ports taken?)\n" + self.log_tails())
            self._wait_idle_node(t0 + timeout_s)
            self.start_s = time.monotonic() - t0
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 20.0) -> None:
        """Cancel every job, wait (bounded) for them to end, end the daemons and every job
        process by pid (through the keeper), remove the state folder."""
        atexit.unregister(self.stop)
        for host in list(self._attached):
            self.detach(host)
        keeper, self._keeper = self._keeper, None
        if keeper is not None and keeper.poll() is None:
            deadline = time.monotonic() + timeout_s / 2
            try:
                if self.run(["scancel", "--quiet", "--user=root"], timeout=5).returncode == 0:
                    while self.run(["squeue", "-h", "-o", "%A"], timeout=5).stdout.strip():
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.1)
            except subprocess.SubprocessError:
                pass
            keeper.send_signal(signal.SIGTERM)  # it ends its daemons, then every descendant
            try:
                keeper.wait(timeout=timeout_s / 2)
            except subprocess.TimeoutExpired:
                for pid in descendants(keeper.pid):
                    kill_quietly(pid, signal.SIGKILL)
                keeper.kill()
                keeper.wait(timeout=5)
        elif keeper is not None:
            keeper.wait()
        self.pids = {}
        if self._made_cgroup is not None:
            try:
                self._made_cgroup.rmdir()  # empty once the jobs ended; busy if another cluster uses it
            except OSError:
                pass
            self._made_cgroup = None
        if self.dir is not None and not os.environ.get("DDLAB_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- paths and environment -------------------------------------------------------

    @property
    def conf_dir(self) -> Path:
        return self.dir / "etc"

    @property
    def conf(self) -> Path:
        return self.conf_dir / "slurm.conf"

    @property
    def jobs_dir(self) -> Path:
        return self.dir / "jobs"

    @property
    def jobcomp(self) -> Path:
        return self.dir / "jobcomp.txt"

    @property
    def munge_socket(self) -> Path:
        return self.dir / "munge" / "munge.socket"

    @property
    def env(self) -> dict[str, str]:
        """The environment for a Slurm command run on this machine."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))}
        env["SLURM_CONF"] = str(self.conf)
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        return env

    def login_env(self) -> dict[str, str]:
        """What a command in the test host (over its sshd) needs to use this cluster when it
        is not ``attach``-ed: only SLURM_CONF (the munge socket is named in slurm.conf)."""
        return {"SLURM_CONF": str(self.conf)}

    def login_command(self, argv) -> str:
        """A shell line for an SSH session: ``SLURM_CONF=... argv...`` (quoted)."""
        pre = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.login_env().items())
        return f"{pre} {shlex.join(map(str, argv))}"

    # -- the test host ---------------------------------------------------------------

    def attach(self, host) -> None:
        """Make plain Slurm commands in the test host (``host.run`` and its sshd) use this
        cluster: bind ``conf_dir`` on /etc/slurm inside the host's mount namespace only."""
        if not Path("/etc/slurm").is_dir():
            raise SlurmError("/etc/slurm does not exist (slurm-client creates it); "
                             "use login_env() / login_command() instead")
        host.run(["mount", "--bind", str(self.conf_dir), "/etc/slurm"])
        self._attached.append(host)

    def detach(self, host) -> None:
        """Undo ``attach`` (umount inside the host; nothing if the host is gone)."""
        if host in self._attached:
            self._attached.remove(host)
            try:
                host.run(["umount", "/etc/slurm"], check=False, timeout=10)
            except (subprocess.SubprocessError, OSError):
                pass

    @contextmanager
    def attached(self, host):
        self.attach(host)
        try:
            yield self
        finally:
            self.detach(host)

    # -- using it --------------------------------------------------------------------

    def run(self, argv, check: bool = True, timeout: float = 30,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command here with SLURM_CONF set; text in, text out."""
        done = subprocess.run(list(map(str, argv)), check=False, capture_output=True, text=True,
                              env=self.env, timeout=timeout, input=input, cwd=self.jobs_dir)
        if check and done.returncode != 0:
            err = subprocess.CalledProcessError(done.returncode, list(argv), done.stdout, done.stderr)
            err.add_note(f"stderr: {done.stderr.strip()[-2000:]}")
            raise err
        return done

    def sbatch(self, command: str | None = None, *args: str, script: str | None = None,
               name: str = "ddlab-test") -> int:
        """Submit ``command`` (``--wrap``) or ``script`` (a batch script's text, on stdin) with
        extra sbatch ``args``; cwd and ``--output`` default to ``jobs_dir`` (``%j.out``)."""
        if (command is None) == (script is None):
            raise ValueError("give a command or a script")
        argv = ["sbatch", "--parsable", f"--job-name={name}", f"--chdir={self.jobs_dir}",
                f"--output={self.jobs_dir}/%j.out", *args]
        if command is not None:
            argv.append(f"--wrap={command}")
        done = self.run(argv, input=script)
        return int(done.stdout.strip().split(";")[0])

    def output(self, job_id: int) -> str:
        """The ``jobs_dir/<id>.out`` of a job submitted with ``sbatch()`` ('' if none yet)."""
        try:
            return (self.jobs_dir / f"{job_id}.out").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o ID`` as a dict ({} when the controller no longer knows it)."""
        done = self.run(["scontrol", "show", "job", "-o", str(job_id)], check=False)
        return parse_record(done.stdout.strip()) if done.returncode == 0 else {}

    def state(self, job_id: int) -> str:
        return self.job(job_id).get("JobState", "")

    def wait_state(self, job_id: int, states, timeout_s: float = 30.0,
                   poll_s: float = 0.05) -> dict[str, str]:
        """Poll until the job's JobState is one of ``states`` (a str or a set); its record.
        Raises SlurmError (with the record and log tails) when it ends in another state."""
        want = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout_s
        while True:
            record = self.job(job_id)
            state = record.get("JobState", "")
            if state in want:
                return record
            if state in _FINAL or time.monotonic() > deadline:
                raise SlurmError(f"job {job_id}: wanted {sorted(want)}, "
                                 f"{'ended' if state in _FINAL else 'still'} {state or '?'}: "
                                 f"{record}\n{self.log_tails(20)}")
            time.sleep(poll_s)

    def wait_idle(self, timeout_s: float = 30.0) -> None:
        """Until no job is pending/running/completing and the node is idle (between tests)."""
        deadline = time.monotonic() + timeout_s
        while True:
            queue = self.run(["squeue", "-h", "-o", "%A %T"]).stdout.strip()
            node = self._node_state()
            if not queue and node == "idle":
                return
            if time.monotonic() > deadline:
                raise SlurmError(f"not idle after {timeout_s}s: node {node!r}, queue {queue!r}")
            time.sleep(0.05)

    def cancel_all(self) -> None:
        self.run(["scancel", "--quiet", "--user=root"], check=False)

    def expire(self, job_id: int) -> None:
        """Make a job run out of time now: TIMEOUT at the controller's next time-limit
        check (0 - 30 s; ``next_timelimit_check()``)."""
        self.run(["scontrol", "update", f"JobId={job_id}", "TimeLimit=0"])

    def next_timelimit_check(self) -> float:
        """time.time() of slurmctld's next time-limit check (every 30 s from its start; each
        may drift later by a fraction of a second, so allow ~1 s)."""
        elapsed = time.time() - self.ctld_started
        return self.ctld_started + PERIODIC_TIMEOUT_S * (int(elapsed // PERIODIC_TIMEOUT_S) + 1)

    def fail_node(self, reason: str = "ddlab-test") -> None:
        """Set the node DOWN: its running jobs end NODE_FAIL (killed). ``resume_node()`` after."""
        self.run(["scontrol", "update", f"NodeName={self.node}", "State=DOWN", f"Reason={reason}"])

    def resume_node(self, timeout_s: float = 30.0) -> None:
        """Wait for the node to take jobs again; RESUME it when it is still down or drained
        (``ReturnToService=2`` usually brings it back by itself within about a second)."""
        if self._node_state().startswith(("down", "drain")):
            self.run(["scontrol", "update", f"NodeName={self.node}", "State=RESUME"], check=False)
        deadline = time.monotonic() + timeout_s
        while self._node_state() not in ("idle", "mixed", "allocated"):
            if time.monotonic() > deadline:
                raise SlurmError(f"node not back after RESUME: {self._node_state()!r}")
            time.sleep(0.05)

    def jobcomp_records(self) -> list[dict[str, str]]:
        """The completion log (jobcomp/filetxt): one dict per ended job, oldest first."""
        try:
            lines = self.jobcomp.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []
        return [parse_record(line) for line in lines if line.strip()]

    def log_tails(self, lines: int = 40) -> str:
        """The last lines of the daemons' logs (for error messages)."""
        if self.dir is None:
            return ""
        parts = []
        for name in ("keeper.log", "munged.log", "slurmctld.out", "slurmctld.log",
                     "slurmd.out", "slurmd.log"):
            path = self.dir / "log" / name
            try:
                text = path.read_text(errors="replace").splitlines()[-lines:]
            except FileNotFoundError:
                continue
            if not text:
                continue
            parts.append(f"--- {path} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(parts)

    # -- start-up steps --------------------------------------------------------------

    def _make_dir(self) -> None:
        self.base_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        remove_stale(self.base_dir)
        self.dir = self.base_dir / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.dir.mkdir(mode=0o755)
        (self.dir / "owner.pid").write_text(f"{os.getpid()}\n")
        for sub in ("etc", "state", "spool", "log", "jobs", "munge"):
            (self.dir / sub).mkdir(mode=0o755)
        key = self.dir / "munge" / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(128))

    def _slurm_conf(self) -> str:
        d, node = self.dir, self.node
        cpus = len(os.sched_getaffinity(0))
        memory = max(256, _mem_total_mib() - 512)
        task = "task/none"
        if self.memory is None:
            mem_lines = ["SelectTypeParameters=CR_Core", "JobAcctGatherType=jobacct_gather/none"]
        else:
            mem_lines = ["SelectTypeParameters=CR_Core_Memory", "DefMemPerCPU=64",
                         "JobAcctGatherType=jobacct_gather/linux", "JobAcctGatherFrequency=task=1"]
        if self.memory == "kill":
            mem_lines.append("JobAcctGatherParams=OverMemoryKill")
        elif self.memory == "cgroup":
            task = "task/cgroup"
            (d / "etc" / "cgroup.conf").write_text(
                "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nCgroupMountpoint=/sys/fs/cgroup\n"
                "ConstrainRAMSpace=yes\nConstrainSwapSpace=no\nConstrainCores=no\n")
            cgroup = Path(f"/sys/fs/cgroup/memory/slurm_{node}")
            if not cgroup.exists() and self._made_cgroup is None:
                self._made_cgroup = cgroup  # slurmd creates it; stop() removes it when empty
        lines = [
            "# written by tests/testhost/slurm.py; removed when the cluster stops",
            f"ClusterName={self.cluster_name}",
            f"SlurmctldHost={node}(127.0.0.1)",
            "SlurmUser=root", "SlurmdUser=root",
            f"SlurmctldPort={self.ctld_port}", f"SlurmdPort={self.slurmd_port}",
            "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "CommunicationParameters=NoInAddrAny",
            f"StateSaveLocation={d}/state", f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log", f"SlurmdLogFile={d}/log/slurmd.log",
            f"SlurmctldDebug={self.debug}", f"SlurmdDebug={self.debug}",
            "LogTimeFormat=iso8601_ms",
            f"PlugStackConfig={d}/etc/plugstack.conf",
            "ProctrackType=proctrack/linuxproc", f"TaskPlugin={task}",
            "MpiDefault=none", "MailProg=/bin/true",
            "SchedulerType=sched/backfill", "SchedulerParameters=batch_sched_delay=0",
            "SelectType=select/cons_tres", *mem_lines,
            "PreemptType=preempt/partition_prio", "PreemptMode=CANCEL",
            "ReturnToService=2", "JobRequeue=0",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/filetxt", f"JobCompLoc={self.jobcomp}",
            "MinJobAge=86400", f"KillWait={self.kill_wait_s}", "OverTimeLimit=0",
            f"FirstJobId={1000 + secrets.randbelow(9_000_000)}",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN",
            f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP PriorityTier=1",
            f"PartitionName=urgent Nodes={node} Default=NO MaxTime=INFINITE State=UP PriorityTier=2",
            self.extra_conf, "",
        ]
        (d / "etc" / "plugstack.conf").write_text("# no SPANK plugins\n")
        return "\n".join(lines)

    def _launch(self, deadline: float) -> bool:
        """Start the keeper and wait for its report; True when every daemon came up."""
        status = self.dir / "keeper.json"
        status.unlink(missing_ok=True)
        logs = self.dir / "log"
        plan = {
            "status": str(status),
            "env": {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "SLURM_CONF": str(self.conf), "LANG": "C.UTF-8"},
            "cwd": str(self.dir),
            "daemons": [
                {"name": "munged", "log": str(logs / "munged.log"),
                 "argv": [SBIN["munged"], "-F", "--force", f"--socket={self.munge_socket}",
                          f"--key-file={self.dir}/munge/munge.key",
                          f"--pid-file={self.dir}/munge/munged.pid",
                          f"--seed-file={self.dir}/munge/munged.seed", "--num-threads=2"],
                 "ready": ["unix", str(self.munge_socket)]},
                {"name": "slurmctld", "log": str(logs / "slurmctld.out"),
                 "argv": [SBIN["slurmctld"], "-D", "-i", "-f", str(self.conf)],
                 "ready": ["tcp", self.ctld_port]},
                {"name": "slurmd", "log": str(logs / "slurmd.out"),
                 "argv": [SBIN["slurmd"], "-D", "-N", self.node, "-f", str(self.conf)],
                 "ready": ["tcp", self.slurmd_port]},
            ],
        }
        if self._keeper is not None:  # a previous attempt: end it first
            self._keeper.send_signal(signal.SIGTERM)
            self._keeper.wait(timeout=15)
        with open(logs / "keeper.log", "ab") as log:
            self._keeper = subprocess.Popen(
                [sys.executable, "-I", str(Path(__file__).resolve()), "keep", json.dumps(plan)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=str(self.dir))
        while True:
            try:
                report = json.loads(status.read_text())
            except (FileNotFoundError, ValueError):
                report = {}
            if report.get("state") == "ready":
                self.pids = report["pids"]
                self.ctld_started = report["started"]["slurmctld"]
                return True
            if report.get("state") == "failed" or self._keeper.poll() is not None:
                self._keeper.wait(timeout=15)
                self._keeper = None
                if "port" in report.get("error", "") or "Address already in use" in self.log_tails():
                    return False
                raise SlurmError(f"Slurm did not start: {report.get('error', 'keeper exited')}\n"
                                 + self.log_tails())
            if time.monotonic() > deadline:
                raise SlurmError("Slurm daemons did not start in time\n" + self.log_tails())
            time.sleep(0.01)

    def _node_state(self) -> str:
        done = self.run(["sinfo", "-h", "-n", self.node, "-o", "%T"], check=False, timeout=10)
        return done.stdout.strip().split("\n")[0].rstrip("*~#!%$@^-") if done.returncode == 0 else ""

    def _wait_idle_node(self, deadline: float) -> None:
        while (state := self._node_state()) != "idle":
            gone = [name for name, pid in self.pids.items() if not alive(pid)]
            if gone or self._keeper is None or self._keeper.poll() is not None:
                raise SlurmError(f"Slurm daemon(s) exited during start-up: {gone or 'keeper'}\n"
                                 + self.log_tails())
            if time.monotonic() > deadline:
                raise SlurmError(f"node {self.node} not idle in time (state {state!r})\n"
                                 + self.log_tails())
            time.sleep(0.02)


# -- helpers ---------------------------------------------------------------------------


def _plugin_dir() -> str | None:
    for path in PLUGIN_DIRS:
        if os.path.exists(os.path.join(path, "jobcomp_filetxt.so")):
            return path
    return None


@cache
def _munge_trial(base: str) -> str | None:
    """Start a throwaway munged with its own key and socket; encode and decode one
    credential. None when that works, else why (cached per process)."""
    base_dir = Path(base)
    try:
        base_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        trial = base_dir / f"munge-trial-{os.getpid()}-{secrets.token_hex(3)}"
        trial.mkdir(mode=0o755)
    except OSError as exc:
        return f"cannot create {base_dir}: {exc}"
    sock, key = trial / "sock", trial / "key"
    proc = None
    try:
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(128))
        proc = subprocess.Popen(
            [SBIN["munged"], "-F", "--force", f"--socket={sock}", f"--key-file={key}",
             f"--pid-file={trial}/pid", f"--seed-file={trial}/seed", "--num-threads=1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not _unix_ready(str(sock)):
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
                return f"munged does not start: {out.strip()[-500:] or 'timeout'}"
            time.sleep(0.01)
        cred = subprocess.run(["munge", "-n", "-S", str(sock)], check=False, capture_output=True,
                              timeout=10)
        back = subprocess.run(["unmunge", "-S", str(sock)], check=False, input=cred.stdout,
                              capture_output=True, timeout=10)
        if cred.returncode or back.returncode:
            return f"munge/unmunge fail: {(cred.stderr + back.stderr).decode(errors='replace')[-500:]}"
        return None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"munge trial failed: {exc}"
    finally:
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            proc.stdout.close()
        shutil.rmtree(trial, ignore_errors=True)


def _mem_total_mib() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    return 1024


def _unix_ready(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
            return True
        except OSError:
            return False


def _tcp_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# -- the keeper: `python slurm.py keep PLAN` -------------------------------------------

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


def _prctl(option: int, value: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def _keeper_main(plan_json: str) -> int:
    """Start the daemons in order, each once the previous answers; report to the status
    file; reap every orphan (slurmstepd) as the child subreaper; on SIGTERM (or the test
    process's death) end the daemons, then SIGKILL every descendant left, by pid."""
    plan = json.loads(plan_json)
    parent = os.getppid()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in pytest: the fixture stops us
    if os.getppid() != parent:
        return 1
    status = Path(plan["status"])

    def report(**fields) -> None:
        tmp = status.with_suffix(".tmp")
        tmp.write_text(json.dumps(fields))
        tmp.replace(status)

    def daemon_preexec() -> None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the keeper gone: the daemons go too

    procs: dict[str, subprocess.Popen] = {}
    started: dict[str, float] = {}
    error = ""
    for spec in plan["daemons"]:
        with open(spec["log"], "ab") as log:
            proc = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=plan["env"], cwd=plan["cwd"],
                                    preexec_fn=daemon_preexec)  # noqa: PLW1509 (one thread)
        procs[spec["name"]], started[spec["name"]] = proc, time.time()
        kind, where = spec["ready"]
        deadline = time.monotonic() + 20
        while not (_unix_ready(where) if kind == "unix" else _tcp_ready(where)):
            if proc.poll() is not None:
                error = f"{spec['name']} exited with {proc.returncode} (see {spec['log']})"
            elif time.monotonic() > deadline:
                error = f"{spec['name']} did not answer on {kind} {where} within 20 s"
            elif stopping:
                error = "stopped during start-up"
            if error:
                break
            time.sleep(0.01)
        if error:
            break
    if error:
        report(state="failed", error=error)
        stopping.append(1)
    else:
        report(state="ready", pids={n: p.pid for n, p in procs.items()}, started=started)
        print(f"keeper {os.getpid()}: started {', '.join(f'{n}={p.pid}' for n, p in procs.items())}",
              flush=True)
    while not stopping:
        try:
            pid, wstatus = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pid = 0
        if pid:
            for name, proc in procs.items():
                if proc.pid == pid:
                    proc.returncode = os.waitstatus_to_exitcode(wstatus)
                    print(f"keeper: {name} (pid {pid}) exited: {proc.returncode}", flush=True)
            continue
        time.sleep(0.1)
    # stop: daemons first (slurmd, slurmctld, munged), then whatever is left below us
    for name in reversed(list(procs)):
        if procs[name].returncode is None:
            kill_quietly(procs[name].pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while any(p.returncode is None for p in procs.values()) and time.monotonic() < deadline:
        try:
            pid, wstatus = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        for proc in procs.values():
            if pid and proc.pid == pid:
                proc.returncode = os.waitstatus_to_exitcode(wstatus)
        if not pid:
            time.sleep(0.02)
    for _round in range(50):
        left = descendants(os.getpid())
        if not left:
            break
        for pid in left:
            kill_quietly(pid, signal.SIGKILL)
        time.sleep(0.05)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
    print(f"keeper {os.getpid()}: stopped", flush=True)
    return 0


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "keep":
    sys.exit(_keeper_main(sys.argv[2]))
