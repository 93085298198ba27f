"""A real GPU-host stand-in for tests: a private systemd and an sshd on loopback.

Follows ``../shared/facts/testhost.md``: ``unshare --pid --fork --mount`` boots
``/lib/systemd/systemd --system --unit=basic.target`` with private tmpfs on
/tmp and /var/tmp, and ``systemd-run`` starts a key-only sshd on 127.0.0.1 at
a free port. Commands over that SSH connection run inside the namespace and
see its systemd, so ``systemctl``, ``journalctl`` and ``systemd-run`` are real.

Why each choice:

- The namespace's /tmp is a private tmpfs, so everything the host must see
  (sshd config, host key, authorized_keys, test files) lives in
  ``shared_dir`` under ``/var/lib/ddlab-testhost/<random>/``: the same path
  inside and outside. A checkout or venv under /tmp (a fresh clone there) is
  bound back into the namespace at its own path, so its units can run it. It is removed at shutdown; a dir left by a killed run
  is removed by the next start once its owner pid is gone.
- /var/log/journal gets a private tmpfs too: several test hosts may run at
  once on one machine and must not write the machine's journal files.
- Boot units that would change the machine itself (sysctl, kernel modules,
  binfmt, sysusers, remount, utmp) are masked on systemd's command line.
- ``setpriv --pdeathsig KILL`` on unshare and on the namespace's init: if the
  test process dies without teardown (kill -9), the whole namespace dies.
- Every process is found from the ``unshare`` we started, by pid, never by name.

The file system is otherwise shared, but for /run, where systemd mounts its
own tmpfs: test profiles put their units in ``UNIT_DIR`` (/run/systemd/system),
so a unit never lands on the machine. Each host's systemd runs in cgroups of its
own (``ddlab-testhost-<id>`` in every hierarchy but cpuset), removed at
shutdown: several test hosts may run at once (pytest-xdist workers), and on
cgroup v1 two systemds started from one cgroup would otherwise share
``/system.slice/<unit>`` for units of the same name.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import paramiko

from testhost.ports import free_port
from testhost.procs import children, descendants, exe, ns_pid, remove_stale

__all__ = ["TestHost", "unavailable_reason", "BASE_DIR", "SSHD_UNIT", "UNIT_DIR"]

BASE_DIR = Path(os.environ.get("DDLAB_TESTHOST_DIR", "/var/lib/ddlab-testhost"))
SSHD_UNIT = "ddlab-test-sshd.service"
# Where units go: the host's own /run (systemd mounts a private tmpfs there), so two test
# hosts on one machine never see each other's unit files, nor leave any on the machine.
UNIT_DIR = "/run/systemd/system"
SYSTEMD = "/lib/systemd/systemd"
SSHD = "/usr/sbin/sshd"
_SYSTEMD_EXE, _SSHD_EXE = os.path.realpath(SYSTEMD), os.path.realpath(SSHD)
_REPO = Path(__file__).resolve().parents[2]
_MASKED = ("systemd-sysctl.service", "systemd-modules-load.service", "systemd-binfmt.service",
           "proc-sys-fs-binfmt_misc.automount", "systemd-sysusers.service",
           "systemd-remount-fs.service", "systemd-update-utmp.service")
_PRIVATE = ("/tmp", "/var/tmp")  # a fresh tmpfs inside the host
_BOOT = ("mount -t proc proc /proc && mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp"
         " && { [ ! -d /var/log/journal ] || mount -t tmpfs tmpfs /var/log/journal; }"
         "{keep}{cgroup}"
         f' && exec {SYSTEMD} --system --unit=basic.target "$@"')
CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cgroup_dirs(name: str) -> list[Path]:
    """The host's own cgroup in each mounted hierarchy, under this process's cgroup there
    (not cpuset: a new cpuset cgroup takes no task until its cpus and mems are set)."""
    mounts = {}
    for line in Path("/proc/mounts").read_text().splitlines():
        _, where, kind, options, *_ = line.split()
        if kind == "cgroup2":
            mounts[""] = Path(where)
        elif kind == "cgroup" and "cpuset" not in options.split(","):
            for option in options.split(","):
                if option not in ("rw", "relatime", "nosuid", "nodev", "noexec"):
                    mounts[option] = Path(where)
    dirs: dict[Path, Path] = {}  # mount point -> the host's cgroup there
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        where = next((mounts[c] for c in controllers.split(",") if c in mounts), None)
        if where is not None:
            dirs.setdefault(where, where / path.lstrip("/") / name)
    return list(dirs.values())


def _cgroup_script(dirs: list[Path]) -> str:
    """Move the booting shell (and so its systemd) into its own cgroups. A systemd in a
    container takes the cgroup it starts in as its root, so two test hosts never share
    a unit's cgroup (on cgroup v1 both would be /system.slice/<unit>, and stopping a unit
    in one would kill the other's processes of that name)."""
    import shlex

    return "".join(f" && mkdir -p {shlex.quote(str(d))} && echo $$ > {shlex.quote(str(d))}/cgroup.procs"
                   for d in dirs)


def _kept_paths(extra=()) -> list[Path]:
    """What the host's services must run that lives under its private /tmp: this
    checkout and the Python running the tests (a clone in /tmp, a venv there)."""
    wanted = sorted({_REPO, Path(sys.prefix).resolve(), *(Path(p).resolve() for p in extra)})
    private = [p for p in wanted if any(p.is_relative_to(t) for t in _PRIVATE)]
    return [p for p in private if not any(p != q and p.is_relative_to(q) for q in private)]


def _boot_script(stage: Path, keep=(), cgroups=()) -> str:
    """``_BOOT`` with each kept path bound to a folder in ``stage`` (both sides see it)
    before the tmpfs hides it, and bound back after (the mounts stay in the namespace);
    then the shell moves into the host's own ``cgroups``."""
    import shlex

    before, after = [], []
    for n, path in enumerate(_kept_paths(keep)):
        hold, where = shlex.quote(str(stage / str(n))), shlex.quote(str(path))
        before.append(f"mkdir -p {hold} && mount --bind {where} {hold} && ")
        after.append(f" && mkdir -p {where} && mount --bind {hold} {where} && umount {hold}")
    return "".join(before) + _BOOT.replace("{keep}", "".join(after)).replace(
        "{cgroup}", _cgroup_script(list(cgroups)))
_TOOLS = ("unshare", "nsenter", "setpriv", "ssh-keygen")


def unavailable_reason() -> str | None:
    """Why this machine cannot boot the test host, or None when it can."""
    if os.geteuid() != 0:
        return "not root (unshare --pid --mount and systemd need uid 0)"
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (util-linux, openssh-client); run `make hostdeps`"
    for path, package in ((SSHD, "openssh-server"), (SYSTEMD, "systemd")):
        if not os.access(path, os.X_OK):
            return f"no {path} ({package}); run `make hostdeps`"
    return None


class TestHost:
    """One booted test host. ``start()`` boots it; ``shutdown()`` (idempotent) ends it.

    Attributes once started: ``hostname`` ("127.0.0.1"), ``user`` ("root"),
    ``ssh_port``, ``client_key`` and ``known_hosts`` (Paths), ``host_key_pub``
    ("ssh-ed25519 AAAA..."), ``systemd_pid`` (this machine's pid of the
    namespace's init), ``shared_dir`` (a dir both sides see at the same path),
    ``boot_s`` (unshare to `running`), ``sshd_s`` (systemd-run to banner).
    """

    __test__ = False  # not a pytest test class

    hostname = "127.0.0.1"
    user = "root"

    def __init__(self, base_dir: Path = BASE_DIR, keep=()):
        """``keep``: more folders under /tmp or /var/tmp the host must see (this
        checkout and the running Python always are)."""
        self.base_dir = Path(base_dir).resolve()
        self.keep = tuple(keep)
        if any(self.base_dir.is_relative_to(private) for private in _PRIVATE):
            raise ValueError(f"base_dir={self.base_dir}: the host's /tmp and /var/tmp are private; "
                             f"use a dir both sides see, e.g. {BASE_DIR}")
        self.shared_dir: Path | None = None
        self.ssh_port = 0
        self.systemd_pid = 0
        self.boot_s = self.sshd_s = float("nan")
        self._unshare: subprocess.Popen | None = None
        self.cgroups: list[Path] = []

    # -- lifecycle -------------------------------------------------------------------

    def start(self, boot_timeout_s: float = 60.0) -> "TestHost":
        """Boot systemd, start sshd; on any failure tear down and raise."""
        atexit.register(self.shutdown)
        try:
            self._make_dir()
            self._make_keys()
            t0 = time.monotonic()
            self._boot(t0 + boot_timeout_s)
            self.boot_s = time.monotonic() - t0
            t1 = time.monotonic()
            self._start_sshd(t1 + boot_timeout_s)
            self.sshd_s = time.monotonic() - t1
        except BaseException:
            self.shutdown()
            raise
        return self

    def shutdown(self, timeout_s: float = 15.0) -> None:
        """`systemctl poweroff`, wait bounded, then SIGKILL the init by pid; remove the dir."""
        atexit.unregister(self.shutdown)
        proc, self._unshare = self._unshare, None
        if proc is not None and proc.poll() is None:
            try:
                self.run(["systemctl", "poweroff"], check=False, timeout=5)
            except subprocess.SubprocessError:
                pass
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                if self.systemd_pid in children(proc.pid):
                    os.kill(self.systemd_pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        for top in self.cgroups:  # empty now that its processes are gone: remove, leaves first
            for folder in sorted((p for p in top.rglob("*") if p.is_dir()), reverse=True):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()
        if self.shared_dir is not None:
            shutil.rmtree(self.shared_dir, ignore_errors=True)
            self.shared_dir = None

    def __enter__(self) -> "TestHost":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # -- using it --------------------------------------------------------------------

    def run(self, argv, check: bool = True, timeout: float = 30,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run argv inside the host's namespaces (nsenter -m -p); text in, text out."""
        cmd = ["nsenter", "-t", str(self.systemd_pid), "-m", "-p", "--", *map(str, argv)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
        if check and done.returncode != 0:
            err = subprocess.CalledProcessError(done.returncode, list(argv), done.stdout, done.stderr)
            err.add_note(f"stderr: {done.stderr.strip()[-2000:]}")
            raise err
        return done

    def ssh_client(self) -> paramiko.SSHClient:
        """A plain paramiko client logged in to this host (its key checked, never added):
        what a test uses to talk to the sshd without ddlab's transport in between."""
        client = paramiko.SSHClient()
        client.load_host_keys(str(self.known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        client.connect(self.hostname, port=self.ssh_port, username=self.user,
                       key_filename=str(self.client_key), look_for_keys=False,
                       allow_agent=False, timeout=10)
        return client

    def profile(self, **overrides) -> dict:
        """A host profile dict for ``ddlab.hosts.HostProfile.from_dict`` reaching this host."""
        profile = {
            "transport": "ssh", "hostname": self.hostname, "port": self.ssh_port,
            "user": self.user, "identity_file": str(self.client_key),
            "known_hosts": str(self.known_hosts), "service_manager": "systemd",
            "unit_dir": UNIT_DIR, "baseline_service": "",
            "python": sys.executable, "workdir": str(_REPO),
            "state_dir": str(self.shared_dir / "state"),
            "connect_timeout_s": 10, "command_timeout_s": 60,
        }
        profile.update(overrides)
        return profile

    def sshd_main_pid(self) -> int:
        """This machine's pid of the listening sshd (0 when it is not running)."""
        inner = self.run(["systemctl", "show", "-p", "MainPID", "--value", SSHD_UNIT]).stdout.strip()
        if inner in ("", "0"):
            return 0
        for pid in descendants(self.systemd_pid):
            if ns_pid(pid) == int(inner):
                return pid
        return 0

    def sshd_session_pids(self) -> list[int]:
        """This machine's pids of the server-side sshd processes of open connections."""
        main = self.sshd_main_pid()
        if not main:
            return []
        return [pid for pid in descendants(main) if exe(pid) == _SSHD_EXE]

    def kill_ssh_sessions(self) -> int:
        """SIGKILL every per-connection sshd process (drops every client); returns how many."""
        pids = self.sshd_session_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    @contextlib.contextmanager
    def sshd_unreachable(self):
        """The host stops answering SSH while inside: the listening sshd is frozen
        (a new connection gets no banner) and every open connection is dropped; it
        is thawed on the way out, whatever happened inside."""
        main = self.sshd_main_pid()
        os.kill(main, signal.SIGSTOP)
        try:
            self.kill_ssh_sessions()
            yield
        finally:
            os.kill(main, signal.SIGCONT)

    def restart_sshd(self, timeout_s: float = 30.0) -> None:
        """`systemctl restart` the sshd unit (drops every connection), wait for its banner."""
        self.run(["systemctl", "restart", SSHD_UNIT])
        if not self._wait_sshd(time.monotonic() + timeout_s):
            raise RuntimeError(f"sshd did not answer on port {self.ssh_port} after restart:\n"
                               + self._journal_tail(SSHD_UNIT))

    # -- start-up steps --------------------------------------------------------------

    def _make_dir(self) -> None:
        self.base_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        remove_stale(self.base_dir)
        self.shared_dir = self.base_dir / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.shared_dir.mkdir(mode=0o700)
        (self.shared_dir / "owner.pid").write_text(f"{os.getpid()}\n")
        (self.shared_dir / "state").mkdir(mode=0o700)
        self.cgroups = _cgroup_dirs(f"ddlab-testhost-{self.shared_dir.name}")

    def _make_keys(self) -> None:
        self.client_key = self.shared_dir / "client_ed25519"
        self.host_key = self.shared_dir / "ssh_host_ed25519_key"
        for key in (self.client_key, self.host_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ddlab-test",
                            "-f", str(key)], check=True, capture_output=True, timeout=30)
        shutil.copyfile(f"{self.client_key}.pub", self.shared_dir / "authorized_keys")
        self.host_key_pub = " ".join(Path(f"{self.host_key}.pub").read_text().split()[:2])
        self.known_hosts = self.shared_dir / "known_hosts"

    def _boot(self, deadline: float) -> None:
        log = open(self.shared_dir / "systemd.out", "wb")
        masks = [f"systemd.mask={unit}" for unit in _MASKED]
        with log:
            self._unshare = subprocess.Popen(
                ["setpriv", "--pdeathsig", "KILL", "unshare", "--pid", "--fork", "--mount",
                 "--propagation", "private", "--", "setpriv", "--pdeathsig", "KILL",
                 "env", "container=ddlab", "/bin/sh", "-c",
                 _boot_script(self.shared_dir / "kept", self.keep, self.cgroups),
                 "sh", *masks],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, cwd="/")
        while not self.systemd_pid:
            kids = children(self._unshare.pid)
            if kids and exe(kids[0]) == _SYSTEMD_EXE:
                self.systemd_pid = kids[0]
            else:
                self._check_alive(deadline, "systemd to start")
                time.sleep(0.01)
        while True:
            state = self.run(["systemctl", "is-system-running"], check=False).stdout.strip()
            if state in ("running", "degraded"):
                return
            self._check_alive(deadline, f"`systemctl is-system-running` (last: {state!r})")
            time.sleep(0.05)

    def _check_alive(self, deadline: float, waiting_for: str) -> None:
        if self._unshare.poll() is not None or time.monotonic() > deadline:
            out = (self.shared_dir / "systemd.out").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"test host: gave up waiting for {waiting_for}; "
                               f"unshare exit={self._unshare.poll()}\n{out}")

    def _start_sshd(self, deadline: float) -> None:
        """Start sshd at a free loopback port; another process may take it first, so retry."""
        config = self.shared_dir / "sshd_config"
        for _attempt in range(3):
            self.ssh_port = free_port()
            config.write_text(_sshd_config(self.shared_dir, self.ssh_port))
            self.run(["systemd-run", f"--unit={SSHD_UNIT}", "-p", "RuntimeDirectory=sshd",
                      "--", SSHD, "-D", "-e", "-f", str(config)])
            if self._wait_sshd(min(deadline, time.monotonic() + 10)):
                self.known_hosts.write_text(f"[{self.hostname}]:{self.ssh_port} {self.host_key_pub}\n")
                return
            self.run(["systemctl", "stop", SSHD_UNIT], check=False)
            self.run(["systemctl", "reset-failed", SSHD_UNIT], check=False)
            while self.run(["systemctl", "show", "-p", "LoadState", "--value", SSHD_UNIT],
                           check=False).stdout.strip() not in ("not-found", ""):
                self._check_alive(deadline, "the failed sshd unit to unload")
                time.sleep(0.05)
        raise RuntimeError("test host: sshd did not come up:\n" + self._journal_tail(SSHD_UNIT))

    def _wait_sshd(self, deadline: float) -> bool:
        """True once 127.0.0.1:ssh_port serves OUR host key (not another test host's sshd)."""
        want = self.host_key_pub.split()[1]
        while time.monotonic() < deadline:
            if _server_key(self.ssh_port) == want:
                return True
            state = self.run(["systemctl", "is-active", SSHD_UNIT], check=False).stdout.strip()
            if state not in ("active", "activating", "reloading"):
                return False
            time.sleep(0.02)
        return False

    def _journal_tail(self, unit: str) -> str:
        return self.run(["journalctl", "-u", unit, "-n", "30", "--no-pager"], check=False).stdout


def _sshd_config(keydir: Path, port: int) -> str:
    return "\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", "AddressFamily inet",
        f"HostKey {keydir}/ssh_host_ed25519_key",
        f"AuthorizedKeysFile {keydir}/authorized_keys",
        "PubkeyAuthentication yes", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
        "StrictModes no", "UsePAM no", "PidFile none", "UseDNS no",
        "MaxSessions 100", "MaxStartups 100", "AllowTcpForwarding yes",
        "Subsystem sftp internal-sftp", "LogLevel VERBOSE", "",
    ])


def _server_key(port: int) -> str | None:
    """The base64 host key served on 127.0.0.1:port, or None when nothing answers."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError:
        return None
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=5)
        return transport.get_remote_server_key().get_base64()
    except (paramiko.SSHException, OSError, EOFError):
        return None
    finally:
        transport.close()


