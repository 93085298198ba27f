"""The test host itself: a real systemd and a real sshd on loopback, torn down cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testhost.host import BASE_DIR, SSHD_UNIT, TestHost, unavailable_reason
from testhost.procs import alive

# the harness's own checks: make test (make check's tests use the harness and fail if it breaks)
pytestmark = [pytest.mark.testhost, pytest.mark.slow]


def _ssh_argv(host: TestHost, *extra: str) -> list[str]:
    return ["ssh", "-F", "/dev/null", "-i", str(host.client_key), "-p", str(host.ssh_port),
            "-o", f"UserKnownHostsFile={host.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", *extra, f"root@{host.hostname}"]


def test_systemd_is_running_in_its_own_namespaces(testhost):
    assert testhost.run(["systemctl", "is-system-running"], check=False).stdout.strip() in (
        "running", "degraded")
    assert testhost.run(["cat", "/proc/1/comm"]).stdout.strip() == "systemd"
    mounts = testhost.run(["findmnt", "-n", "-o", "FSTYPE", "/tmp"]).stdout.split()
    assert mounts == ["tmpfs"], "the host's /tmp must be private"
    assert testhost.boot_s < 30


def test_a_folder_under_tmp_it_must_run_is_bound_in_and_the_rest_of_tmp_stays_private(tmp_path):
    # a fresh clone (and its .venv) in /tmp: the host's units must find them there
    _skip_unless_possible()
    kept, hidden = tmp_path / "clone", tmp_path / "other"
    kept.mkdir(), hidden.mkdir()
    (kept / "file").write_text("seen")
    (hidden / "file").write_text("private")
    host = TestHost(keep=[kept]).start()
    try:
        assert host.run(["cat", str(kept / "file")]).stdout == "seen"
        assert host.run(["test", "-e", str(hidden / "file")], check=False).returncode == 1
        assert host.run(["findmnt", "-n", "-o", "FSTYPE", "/tmp"]).stdout.split() == ["tmpfs"]
        host.run(["sh", "-c", f"echo written > {kept}/back"])  # the same folder, not a copy
        assert (kept / "back").read_text() == "written\n"
    finally:
        host.shutdown()
    assert sorted(p.name for p in kept.iterdir()) == ["back", "file"]


def test_a_crashing_unit_is_seen_failed_with_its_status(testhost):
    unit = "ddlab-test-crashy-fixture"
    testhost.run(["systemd-run", f"--unit={unit}", sys.executable, "-c", "import sys; sys.exit(3)"])
    deadline = time.monotonic() + 10
    while testhost.run(["systemctl", "is-active", unit], check=False).stdout.strip() != "failed":
        assert time.monotonic() < deadline, "the unit never failed"
        time.sleep(0.05)
    log = testhost.run(["journalctl", "-u", unit, "-o", "cat", "--no-pager"]).stdout
    assert "status=3/NOTIMPLEMENTED" in log
    testhost.run(["systemctl", "reset-failed", unit])


def test_run_raises_with_the_output_when_check_is_on(testhost):
    with pytest.raises(subprocess.CalledProcessError) as info:
        testhost.run(["sh", "-c", "echo oops >&2; exit 4"])
    assert info.value.returncode == 4 and "oops" in info.value.stderr


def test_openssh_reaches_it_with_the_key_and_known_hosts(testhost):
    done = subprocess.run(_ssh_argv(testhost) + ["systemctl", "is-system-running"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("running", "degraded")


def test_passwords_are_refused(testhost):
    done = subprocess.run(_ssh_argv(testhost, "-o", "PreferredAuthentications=password,keyboard-interactive")
                          + ["true"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 255 and "Permission denied" in done.stderr


def test_sshd_listens_on_loopback_only(testhost):
    config = (testhost.shared_dir / "sshd_config").read_text().splitlines()
    assert "ListenAddress 127.0.0.1" in config
    assert testhost.profile()["hostname"] == "127.0.0.1"


def test_killing_sessions_drops_a_live_connection(testhost):
    client = testhost.ssh_client()
    try:
        assert testhost.sshd_session_pids(), "an open connection has server-side sshd processes"
        assert testhost.kill_ssh_sessions() >= 1
        deadline = time.monotonic() + 10
        while client.get_transport().is_active():
            assert time.monotonic() < deadline, "the client never saw the drop"
            time.sleep(0.02)
    finally:
        client.close()
    assert testhost.sshd_session_pids() == []


def test_restart_sshd_drops_connections_and_comes_back(testhost):
    client = testhost.ssh_client()
    try:
        testhost.restart_sshd()
        deadline = time.monotonic() + 10
        while client.get_transport().is_active():
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        client.close()
    again = testhost.ssh_client()
    _, out, _ = again.exec_command("systemctl is-active " + SSHD_UNIT)
    assert out.read().decode().strip() == "active"
    again.close()


def test_shutdown_ends_everything_and_removes_its_dir():
    _skip_unless_possible()
    host = TestHost(base_dir=BASE_DIR / f"own-{os.getpid()}").start()
    pid, shared = host.systemd_pid, host.shared_dir
    session = host.ssh_client()
    host.shutdown()
    session.close()
    assert not Path(f"/proc/{pid}").exists()
    assert not shared.exists()
    host.shutdown()  # idempotent
    host.base_dir.rmdir()


@pytest.mark.slow
def test_a_killed_test_process_takes_its_host_down():
    _skip_unless_possible()
    base = BASE_DIR / f"orphan-{os.getpid()}"
    script = ("import sys, time; from testhost.host import TestHost; "
              f"h = TestHost(base_dir={str(base)!r}).start(); "
              "print(h.systemd_pid, h.shared_dir, flush=True); time.sleep(600)")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).parent.parent)
    with child:
        try:
            pid, shared = child.stdout.readline().split()
        finally:
            os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and alive(int(pid)):
        assert time.monotonic() < deadline, "the namespace outlived its test process"
        time.sleep(0.05)
    assert Path(shared).exists()
    with TestHost(base_dir=base) as host:
        assert not Path(shared).exists(), "the next start removes a dead run's dir"
        assert host.shared_dir.exists()
    base.rmdir()


def test_a_base_dir_the_host_cannot_see_is_refused():
    with pytest.raises(ValueError, match="private"):
        TestHost(base_dir=Path("/tmp/somewhere"))


def _skip_unless_possible() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"real test host unavailable: {reason}")


@pytest.mark.parametrize("patch, words", [
    ({"geteuid": 1000}, "not root"),
    ({"missing": "nsenter"}, "missing nsenter"),
    ({"noexec": "/usr/sbin/sshd"}, "openssh-server"),
], ids=["not-root", "no-nsenter", "no-sshd"])
def test_skip_reasons_say_what_is_missing(monkeypatch, patch, words):
    import shutil

    import testhost.host as module

    real_which, real_access = shutil.which, os.access
    monkeypatch.setattr(module.os, "geteuid", lambda: patch.get("geteuid", 0))
    monkeypatch.setattr(module.shutil, "which",
                        lambda tool: None if tool == patch.get("missing") else real_which(tool))
    monkeypatch.setattr(module.os, "access",
                        lambda path, mode: path != patch.get("noexec") and real_access(path, mode))
    assert words in module.unavailable_reason()
