"""Service managers on real hosts: systemd units on the test host, and detached
processes on this machine and over SSH."""

from __future__ import annotations

import functools
import json
import stat
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from ddlab.core.errors import CommandError, ConfigError, ServiceError
from ddlab.hosts import connect, manager_for
from ddlab.hosts.processes import ProcessManager
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.services import ServiceSpec, ServiceState
from ddlab.hosts.systemd import SystemdManager, parse_show, plain_unit
from ddlab.hosts.transport import LocalTransport
from labkit import wait_for
from testhost.host import UNIT_DIR

PY = sys.executable


def _py(code: str, *args: str) -> list[str]:
    return [PY, "-u", "-c", textwrap.dedent(code), *args]


def _script(testhost, code: str, *args: str) -> list[str]:
    """argv running ``code`` from a file the host sees (a unit's ExecStart holds no newlines)."""
    path = testhost.shared_dir / f"script-{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent(code))
    return [PY, "-u", str(path), *args]


_wait_for = functools.partial(wait_for, timeout_s=15)


def _name(kind: str) -> str:
    return f"ddlab-test-{kind}-{uuid.uuid4().hex[:6]}"


# --- specs and states, no host -----------------------------------------------------


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", "", "x y", "-flag"],
                         ids=["dotdot", "slash", "dots", "empty", "space", "dash"])
def test_unsafe_service_names_are_refused_before_any_host(name):
    with pytest.raises(ConfigError, match="service name"):
        ServiceSpec(name, ["/bin/true"])


def test_spec_checks_argv_env_and_workdir():
    assert ServiceSpec("ddlab-x", ["/bin/true"]).unit == "ddlab-x.service"
    assert ServiceSpec("ddlab-x.service", ["/bin/true"]).unit == "ddlab-x.service"
    for bad in ({"argv": []}, {"argv": ["/bin/x", 3]}, {"env": {"A-B": "1"}},
                {"workdir": "/srv\nExecStart=/bin/evil"}):
        with pytest.raises(ConfigError):
            ServiceSpec("ddlab-x", **{"argv": ["/bin/true"], **bad})


def test_plain_unit_quotes_for_systemd():
    unit = plain_unit(ServiceSpec("ddlab-x", ["/usr/bin/python3", "-c", "print('%s $HOME')"],
                                  env={"A": "b c"}, workdir="/srv"))
    assert 'ExecStart=/usr/bin/python3 -c "print(\'%%s $$HOME\')"' in unit
    assert 'Environment="A=b c"' in unit and "WorkingDirectory=/srv" in unit


@pytest.mark.parametrize("show, running, failed, status", [
    ("ActiveState=active\nSubState=running\nResult=success\nExecMainCode=0\nExecMainStatus=0\n"
     "NRestarts=0\nMainPID=42\nInvocationID=ab", True, False, None),
    ("ActiveState=failed\nSubState=failed\nResult=exit-code\nExecMainCode=1\nExecMainStatus=3\n"
     "NRestarts=0\nMainPID=0", False, True, 3),
    ("ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nExecMainCode=1\n"
     "ExecMainStatus=1\nNRestarts=4\nMainPID=0", False, True, 1),
    ("ActiveState=inactive\nSubState=dead\nResult=success\nExecMainCode=2\nExecMainStatus=15\n"
     "NRestarts=0\nMainPID=0", False, False, 15),
], ids=["running", "exit-3", "crash-loop", "stopped"])
def test_systemctl_show_is_parsed(show, running, failed, status):
    state = parse_show(show)
    assert (state.running, state.failed, state.exit_status) == (running, failed, status)
    assert json.dumps(state.to_dict())


# --- systemd on the test host -------------------------------------------------------


@pytest.fixture(scope="module")
def ssh(testhost):
    with connect(HostProfile.from_dict(testhost.profile(), name="testhost")) as transport:
        yield transport


@pytest.fixture
def systemd(ssh):
    manager = SystemdManager(ssh, UNIT_DIR)
    names = []
    manager.track = names.append
    yield manager
    for name in names:
        manager.remove(name)
        assert not _exists(ssh, f"{UNIT_DIR}/{name}.service")


def _exists(transport, path: str) -> bool:
    """Whether ``path`` exists on the host (the test host's /run is its own)."""
    return transport.run(["test", "-e", path], check=False).exit_code == 0


def test_manager_for_follows_the_profile(ssh):
    assert isinstance(manager_for(ssh), SystemdManager)
    local = connect(HostProfile.from_dict({"state_dir": "/srv/ddlab"}, name="l"))
    assert isinstance(manager_for(local), ProcessManager)


def test_every_transport_and_manager_a_profile_may_name_has_a_row():
    """connect and manager_for read two tables (hosts.TRANSPORTS, hosts.MANAGERS): each
    name a profile accepts has its row, and no row is a name no profile can give."""
    from ddlab.hosts import MANAGERS, TRANSPORTS
    from ddlab.hosts.profiles import _CHOICES

    assert set(TRANSPORTS) == set(_CHOICES["transport"])
    assert set(MANAGERS) == set(_CHOICES["service_manager"]) | set(_CHOICES["scheduler"]) - {""}


@pytest.mark.parametrize("keys, kind", [
    ({}, ProcessManager), ({"service_manager": "systemd"}, SystemdManager),
], ids=["local-process", "local-systemd"])
def test_manager_for_reads_the_table(keys, kind):
    local = connect(HostProfile.from_dict({"state_dir": "/srv/ddlab", **keys}, name="l"))
    assert type(manager_for(local)) is kind and type(local).__name__ == "LocalTransport"


def test_systemd_unit_that_exits_3_is_failed_with_its_log(systemd):
    name = _name("exit3")
    systemd.track(name)
    systemd.install(ServiceSpec(name, _py(
        "import time; print('booting', flush=True); time.sleep(0.5); raise SystemExit(3)")))
    path = f"{UNIT_DIR}/{name}.service"
    assert systemd.transport.run(["stat", "-c", "%a", path]).stdout.strip() == "644"
    invocation = systemd.start(name)
    state = _wait_for(lambda: (s := systemd.state(name)).failed and s, what="the failure")
    assert (state.result, state.exit_status, state.exit_kind) == ("exit-code", 3, "exited")
    assert state.invocation_id == invocation and len(invocation) == 32
    # journald files a stream's lines asynchronously: under load systemd's own "exited"
    # line can come first, so wait (bounded) for the service's line too
    log = _wait_for(lambda: (t := systemd.logs(name, invocation)) and "booting" in t and t,
                    what="the service's own line in the journal")
    assert "status=3/NOTIMPLEMENTED" in log


def test_systemd_logs_are_of_this_start_only(systemd, testhost):
    name = _name("twice")
    systemd.track(name)
    marker = testhost.shared_dir / f"{name}.n"
    systemd.install(ServiceSpec(name, _script(testhost, """
        import sys, pathlib, time
        p = pathlib.Path(sys.argv[1])
        n = int(p.read_text()) + 1 if p.exists() else 1
        p.write_text(str(n))
        print(f"start number {n}", flush=True)
        time.sleep(0.5)  # journald attributes a line by the sender's /proc entry: a
        # process gone before journald reads the line loses its unit (journald's race)
        """, str(marker))))
    first = systemd.start(name)
    _wait_for(lambda: "start number 1" in systemd.logs(name, first), what="first log")
    _wait_for(lambda: systemd.state(name).active_state in ("inactive", "failed"),
              what="the first start to end")
    second = systemd.start(name)
    assert second != first
    _wait_for(lambda: "start number 2" in systemd.logs(name, second), what="second log")
    assert "start number 1" not in systemd.logs(name, second)
    assert "start number 2" not in systemd.logs(name, first)


def test_systemd_quick_clean_exit_keeps_its_invocation_and_log(systemd):
    name = _name("quick")
    systemd.track(name)
    # it lingers 0.5 s after printing: journald attributes a line to its unit by the
    # sender's cgroup, and a process gone before it looks loses the unit (journald's
    # own race, seen here under load), which would test journald, not ddlab
    systemd.install(ServiceSpec(name, _py("print('said and gone', flush=True); "
                                          "import time; time.sleep(0.5)")))
    invocation = systemd.start(name)
    _wait_for(lambda: systemd.state(name).active_state == "inactive", what="exit")
    assert len(invocation) == 32, "systemd unloads the unit; the journal still knows the start"
    _wait_for(lambda: "said and gone" in systemd.logs(name), what="the log, found by the journal")
    assert "said and gone" in systemd.logs(name, invocation)


def test_systemd_running_unit_stops_and_is_removed(systemd, testhost):
    name = _name("runs")
    systemd.install(ServiceSpec(name, _py("import time; print('up', flush=True); time.sleep(600)")))
    systemd.start(name)
    state = _wait_for(lambda: (s := systemd.state(name)).running and s, what="running")
    assert state.main_pid > 0 and not state.failed
    systemd.stop(name)
    state = systemd.state(name)
    assert (state.active_state, state.failed) == ("inactive", False)
    systemd.remove(name)
    systemd.remove(name)  # idempotent
    assert systemd.state(name).load_state == "not-found"
    assert not _exists(systemd.transport, f"{UNIT_DIR}/{name}.service")


def test_systemd_crash_loop_shows_restarts_rising(systemd):
    name = _name("loop")
    systemd.track(name)
    unit = plain_unit(ServiceSpec(name, _py("raise SystemExit(1)"))).replace(
        "Restart=no", "Restart=always\nRestartSec=100ms")
    unit = unit.replace("[Unit]", "[Unit]\nStartLimitIntervalSec=0")
    systemd.install(ServiceSpec(name, ["/bin/true"], unit_text=unit))
    systemd.start(name)
    seen = []

    def restarted_twice_and_seen_between():
        # each read is a systemctl call over the host's transport: under load one can take longer than the
        # 100 ms between a crash and its restart, so keep reading (the loop goes on) until one falls there
        seen.append(systemd.state(name))
        return seen[-1].n_restarts >= 2 and any(s.failed for s in seen)
    _wait_for(restarted_twice_and_seen_between, what="two restarts and a state read between them")
    assert seen[-1].n_restarts >= 2
    assert any(s.failed for s in seen), "between restarts the state reads as a crash"


def test_systemd_read_logs_before_the_first_line_is_empty_not_an_error(systemd):
    """A start polled before journald has written a line of it: journalctl with --show-cursor
    and nothing to show exits 1 with no word on systemd before 254 (systemd/systemd#26899,
    fixed by 9556e79; Debian 12 ships 252). No lines yet, not a failed command."""
    assert systemd.read_logs(_name("quiet"), invocation="0" * 32) == ("", None)
    with pytest.raises(CommandError, match="exited 1"):  # a failure that says why is still one
        systemd.read_logs(_name("quiet"), invocation="0" * 32, cursor="not-a-cursor")


def test_systemd_read_logs_returns_only_new_lines(systemd, testhost):
    name = _name("follow")
    systemd.track(name)
    systemd.install(ServiceSpec(name, _script(testhost, """
        import time
        for i in range(15):
            print(f"line {i}", flush=True)
            time.sleep(0.05)
        """)))
    invocation = systemd.start(name)
    chunks, cursor = [], None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        text, cursor = systemd.read_logs(name, invocation=invocation, cursor=cursor)
        chunks.append(text)
        if "Deactivated successfully" in text:
            break
        time.sleep(0.1)
    lines = [line.split(": ", 1)[1] for line in "".join(chunks).splitlines() if ": line " in line]
    assert lines == [f"line {i}" for i in range(15)], "every line once, in order"
    assert len([c for c in chunks if c]) > 1, "read in several pieces while it ran"
    assert systemd.read_logs(name, invocation=invocation, cursor=cursor)[0] == ""


def test_systemd_state_is_fast_enough_to_poll(systemd):
    name = _name("poll")
    systemd.track(name)
    systemd.install(ServiceSpec(name, _py("import time; time.sleep(600)")))
    systemd.start(name)
    times = []
    for _ in range(15):
        start = time.monotonic()
        systemd.state(name)
        times.append(time.monotonic() - start)
    median = sorted(times)[len(times) // 2]
    print(f"systemd state(): median {1000 * median:.1f} ms")
    assert median < 0.1


# --- the process manager, on this machine and over SSH ------------------------------


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.testhost)])
def procs(request, tmp_path):
    if request.param == "local":
        transport = connect(HostProfile.from_dict({}, name="local"))
        root = tmp_path / "state"
    else:
        transport = request.getfixturevalue("ssh")
        root = request.getfixturevalue("testhost").shared_dir / f"state-{uuid.uuid4().hex[:6]}"
    manager = ProcessManager(transport, str(root))
    manager.root = root
    names = []
    manager.track = names.append
    yield manager
    for name in names:
        manager.remove(name)
    if isinstance(transport, LocalTransport):
        transport.close()


def _alive(manager: ProcessManager, pid: int) -> bool:
    done = manager.transport.run(["cat", f"/proc/{pid}/stat"], check=False)
    return done.ok and done.stdout.rsplit(")", 1)[1].split()[0] != "Z"


def test_process_that_exits_3_reports_status_env_workdir_and_log(procs):
    name = _name("p-exit3")
    procs.track(name)
    assert procs.state(name).load_state == "not-found"
    procs.install(ServiceSpec(name, _py(
        "import os; print(os.getcwd(), os.environ['DDLAB_T']); raise SystemExit(3)"),
        env={"DDLAB_T": "$(touch canary) `x` 'q'"}, workdir="/etc"))
    never = procs.state(name)
    assert (never.active_state, never.invocation_id, never.failed) == ("inactive", "", False)
    invocation = procs.start(name)
    state = _wait_for(lambda: (s := procs.state(name)).failed and s, what="exit")
    assert (state.result, state.exit_status, state.exit_kind) == ("exit-code", 3, "exited")
    assert state.invocation_id == invocation
    assert procs.logs(name) == "/etc $(touch canary) `x` 'q'\n"
    folder = procs.root / name
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "spec.json").stat().st_mode) == 0o600
    assert not (Path("/etc") / "canary").exists()


def test_process_argv_arrives_byte_for_byte(procs):
    name = _name("p-argv")
    procs.track(name)
    args = ["a; touch /canary-ddlab", "$(id)", "`id`", "' \"", "ünï 🚀", "", "%s\\n"]
    procs.install(ServiceSpec(name, _py("import json, sys; print(json.dumps(sys.argv[1:]))", *args)))
    procs.start(name)
    _wait_for(lambda: not procs.state(name).running and procs.logs(name), what="output")
    assert json.loads(procs.logs(name)) == args
    assert not Path("/canary-ddlab").exists()


def test_process_stop_kills_the_whole_group_and_is_not_a_crash(procs):
    name = _name("p-group")
    procs.track(name)
    procs.install(ServiceSpec(name, _py(
        "import subprocess, time\np = subprocess.Popen(['sleep', '600'])\n"
        "print(p.pid, flush=True)\ntime.sleep(600)")))
    procs.start(name)
    state = _wait_for(lambda: (s := procs.state(name)).running and s, what="running")
    grandchild = int(_wait_for(lambda: procs.logs(name).strip(), what="grandchild pid"))
    procs.stop(name)
    after = procs.state(name)
    assert (after.active_state, after.result, after.failed) == ("inactive", "success", False)
    assert not _alive(procs, state.main_pid) and not _alive(procs, grandchild)


def test_process_ignoring_term_is_killed(procs):
    name = _name("p-stubborn")
    procs.track(name)
    procs.install(ServiceSpec(name, _py(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\ntime.sleep(600)")))
    procs.stop_timeout_s = 1.0
    procs.start(name)
    _wait_for(lambda: "ready" in procs.logs(name), what="ready")
    start = time.monotonic()
    procs.stop(name)
    assert time.monotonic() - start < 5
    assert not procs.state(name).running


def test_process_reads_running_right_after_start(procs):
    name = _name("p-at-once")
    procs.track(name)
    procs.install(ServiceSpec(name, _py("import time; time.sleep(600)")))
    for _ in range(3):
        procs.start(name)
        assert procs.state(name).running, "no window where a fresh start reads as dead"
        procs.stop(name)


def test_process_refuses_a_second_start_while_running(procs):
    name = _name("p-twice")
    procs.track(name)
    procs.install(ServiceSpec(name, _py("import time; time.sleep(600)")))
    procs.start(name)
    with pytest.raises(ServiceError, match="already running"):
        procs.start(name)
    with pytest.raises(ServiceError, match="not installed"):
        procs.start(_name("p-missing"))


def test_process_logs_are_kept_per_start(procs):
    name = _name("p-starts")
    procs.track(name)
    procs.install(ServiceSpec(name, _py("import uuid; print(uuid.uuid4().hex)")))
    first = procs.start(name)
    _wait_for(lambda: procs.state(name).active_state == "inactive" and procs.logs(name), what="first")
    first_log = procs.logs(name)
    second = procs.start(name)
    _wait_for(lambda: procs.logs(name, second) not in ("", first_log), what="second")
    assert procs.logs(name, first) == first_log != procs.logs(name, second)
    assert procs.logs(name, "f" * 32) == ""


def test_process_read_logs_returns_only_new_lines(procs):
    name = _name("p-follow")
    procs.track(name)
    procs.install(ServiceSpec(name, _py(
        "import sys, time\nfor i in range(15):\n    print(f'line {i}', flush=True); time.sleep(0.05)\n"
        "sys.stdout.write('partial')")))
    invocation = procs.start(name)
    text, cursor, chunks = "", None, []
    deadline = time.monotonic() + 15
    while "line 14" not in text and time.monotonic() < deadline:
        text, cursor = procs.read_logs(name, invocation=invocation, cursor=cursor)
        chunks.append(text)
        time.sleep(0.1)
    assert "".join(chunks).splitlines() == [f"line {i}" for i in range(15)]
    _wait_for(lambda: not procs.state(name).running, what="exit")
    assert procs.read_logs(name, cursor=cursor)[0] == "", "a partial last line waits for its newline"
    assert procs.logs(name).endswith("line 14\npartial")


def test_process_crash_is_seen_within_a_second_by_polling(procs):
    name = _name("p-crash")
    procs.track(name)
    procs.install(ServiceSpec(name, _py(
        "import time; time.sleep(0.5); print(repr(time.time()), flush=True); raise SystemExit(7)")))
    procs.start(name)
    state = _wait_for(lambda: (s := procs.state(name)).failed and s, what="crash")
    seen_at = time.time()
    died_at = float(procs.logs(name).strip())
    print(f"process crash seen {1000 * (seen_at - died_at):.0f} ms after it happened")
    assert state.exit_status == 7 and seen_at - died_at < 1.0


def test_a_detached_process_survives_a_dropped_connection(testhost, ssh):
    manager = ProcessManager(ssh, str(testhost.shared_dir / "state-drop"))
    name = _name("p-drop")
    manager.install(ServiceSpec(name, _py("import time; time.sleep(600)")))
    try:
        manager.start(name)
        _wait_for(lambda: manager.state(name).running, what="running")
        assert testhost.kill_ssh_sessions() >= 1
        assert manager.state(name).running, "the server outlives the SSH session that started it"
    finally:
        manager.remove(name)
    assert manager.state(name) == ServiceState("inactive", "dead", load_state="not-found")


def test_a_wrapper_whose_server_is_not_yet_forked_is_activating_with_no_main_pid():
    """The wrapper writes its pid, then forks the server and writes ``child``: between the two, ``state``
    named the wrapper's pid as the main pid and called the service active, and a moment later named the
    server's: a running baseline's pid changed under a reader (a dry-run test saw 3698, then 3718, in a
    loaded make check). Now that window is ``activating`` with no main pid."""
    from ddlab.hosts.processes import _state_of

    wrapper = {"installed": "1", "invocation": "inv", "pid": "3698",
               "stat": "3698 (sh) S 1 3698 3698 0 -1 4194304"}
    assert _state_of(wrapper) == ServiceState("activating", "start", invocation_id="inv", main_pid=0)
    assert not _state_of(wrapper).running
    forked = {**wrapper, "child": "3718"}
    assert _state_of(forked) == ServiceState("active", "running", invocation_id="inv", main_pid=3718)
    assert _state_of({**forked, "child": ""}).active_state == "activating", "a child file not yet written"
