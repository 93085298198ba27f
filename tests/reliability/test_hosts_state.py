"""Issue 23, round three: what a host gives back is bounded and never an authority.

Each test reproduces one finding on the real systemd + sshd test host (items 1, 2,
4, 10, 15 of the issue) and asserts what must hold now; docs/reliability.md's
"Round three (issue 23)" lists what each saw before and after.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

import faultkit as fk
from ddlab.core.errors import StateFileError
from ddlab.hosts.installs import Installs
from ddlab.hosts.services import LEFT_OUT, ServiceSpec
from labkit import wait_for

pytestmark = [pytest.mark.timeout(300)]

PYTHON = fk.PYTHON
BIG_LOG_MB = int(os.environ.get("DDLAB_TEST_BIG_LOG_MB", "1024"))
AGENT_RSS_LIMIT_MB = 256


@pytest.fixture(scope="module")
def thp(testhost, tmp_path_factory):
    """A bench on the test host whose services are process groups (logs in files)."""
    with fk.bench_for(tmp_path_factory.mktemp("thp"), testhost, manager="process") as bench:
        yield bench


@pytest.fixture
def idle(th) -> list[str]:
    """``--base`` of a variant that runs and idles: these tests read the host's state
    files around a deploy, not the server (faultkit's ``idle_base``)."""
    return ["--base", fk.idle_base(th)]


def _state_path(bench: fk.Bench, name: str) -> str:
    return f"{bench.state_dir}/{name}"


def _agents_peak_mb() -> dict[int, float]:
    """Every ddlab command agent on this machine (the test host's share its /proc): its
    peak resident memory (VmHWM), in MB."""
    peaks = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"ddlab-agent" not in (proc / "cmdline").read_bytes():
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks[int(proc.name)] = int(line.split()[1]) / 1024
        except (OSError, ValueError):
            continue
    return peaks


class _Sampler(threading.Thread):
    """The largest agent peak seen while it runs (agents end with their ddlab process)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_mb, self.done = 0.0, threading.Event()

    def run(self):
        while not self.done.wait(0.1):
            self.peak_mb = max([self.peak_mb, *_agents_peak_mb().values()])

    def stop(self) -> float:
        self.done.set()
        self.join()
        return self.peak_mb


# --- 1: a big log is read bounded, a note; never a lost connection --------------------


def test_i01_a_1_gb_log_is_a_note_not_a_lost_connection_and_the_agent_stays_small(thp):
    assert fk.ddlab_in(thp, "deploy", "--host", "th").returncode == 0
    service = thp.current_service()
    wait_for(lambda: fk.answers(thp, thp.port), timeout_s=60, what="the variant to answer")
    log = f"{thp.state_dir}/services/{service.removesuffix('.service')}/log"
    filler = "x" * 99
    thp.transport.run(["sh", "-c", 'yes "$2" | head -c "$3" >> "$1"', "sh", log, filler,
                       str(BIG_LOG_MB << 20)], timeout_s=120)
    sampler = _Sampler()
    sampler.start()
    start = time.monotonic()
    watched = fk.ddlab_in(thp, "watch", "--host", "th", "--timeout", "120")
    took_s = time.monotonic() - start
    peak_mb = sampler.stop()
    print(f"{BIG_LOG_MB} MB log: watch took {took_s:.1f} s, agent peak RSS {peak_mb:.0f} MB")
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert "READY" in watched.stdout and "CONNECTION LOST" not in watched.stdout
    assert 0 < peak_mb < AGENT_RSS_LIMIT_MB, f"the agent peaked at {peak_mb:.0f} MB"
    run_dir = Path(json.loads(thp.transport.read_file(thp.lock_path))["variant"]["run_dir"])
    evidence = "".join(p.read_text(errors="replace") for p in run_dir.glob("*.log"))
    assert LEFT_OUT in evidence and "MB) of log left out here" in evidence
    restored = fk.ddlab_in(thp, "restore", "--host", "th")
    assert restored.returncode == 0, restored.stderr
    thp.assert_put_back()
    assert thp.baseline_active(), "production answers after"


# --- 10: a process log's cursor counts the bytes read -------------------------------


def test_i10_invalid_utf8_in_a_process_log_never_moves_the_cursor_past_a_line(thp):
    name = f"{thp.prefix}-bytes"
    script = ("import sys, time; w = sys.stdout.buffer\n"
              "w.write(b'\\xff\\xfe' * 2000 + b'\\n'); w.flush(); time.sleep(1.5)\n"
              "for i in range(3):\n"
              "    w.write(b'line %d \\xc3\\n' % i); w.flush(); time.sleep(0.5)\n"
              "time.sleep(60)\n")
    thp.manager.install(ServiceSpec(name, [PYTHON, "-c", script], workdir="/"))
    try:
        invocation = thp.manager.start(name)
        text, cursor = "", None

        def caught_up():
            nonlocal text, cursor
            more, cursor = thp.manager.read_logs(name, invocation=invocation, cursor=cursor)
            text += more
            return "line 2" in text

        wait_for(caught_up, timeout_s=20, what="the lines after the invalid bytes")
        assert [f"line {i}" in text for i in range(3)] == [True] * 3, text[-300:]
        log = f"{thp.state_dir}/services/{name}/log"
        size = int(thp.transport.run(["stat", "-c", "%s", "--", log]).stdout)
        assert int(cursor.rsplit(":", 1)[1]) == size, "the cursor is the bytes read"
    finally:
        thp.manager.remove(name)


# --- 15: a log that is a symbolic link is never followed -----------------------------


def test_i15_a_log_replaced_by_a_link_to_a_secret_is_never_echoed(thp):
    name = f"{thp.prefix}-link"
    secret = f"{thp.testhost.shared_dir}/secret-{name}"
    thp.transport.write_file(secret, b"TOKEN=hunter2-do-not-print\n", mode=0o600)
    thp.manager.install(ServiceSpec(name, [PYTHON, "-c", "print('hello', flush=True); "
                                           "import time; time.sleep(60)"], workdir="/"))
    try:
        invocation = thp.manager.start(name)
        log = f"{thp.state_dir}/services/{name}/log"
        wait_for(lambda: "hello" in thp.manager.logs(name), timeout_s=20, what="its first line")
        thp.transport.run(["ln", "-sf", "--", secret, log])
        reads, cursor = [], None
        for _ in range(4):
            more, cursor = thp.manager.read_logs(name, invocation=invocation, cursor=cursor)
            reads.append(more)
        reads.append(thp.manager.logs(name))
        assert not any("hunter2" in text for text in reads), reads
        said = "".join(reads)
        assert said.count("is a symbolic link: not read") == 1, said
    finally:
        thp.manager.remove(name)
        thp.transport.run(["rm", "-f", "--", secret])


# --- 2: hostile state files are refused before anything stops ------------------------


def _hostile(bench: fk.Bench, path: str, kind: str) -> None:
    """Put a hostile state file at ``path`` on the host."""
    if kind == "symlink":  # to a file only root may read
        bench.transport.run(["ln", "-sf", "--", "/etc/shadow", path])
    elif kind == "huge":
        bench.transport.run(["sh", "-c", 'yes "{}" | head -c 100M > "$1"', "sh", path])
    else:
        data = {"deep": b"[" * 100_000 + b"]" * 100_000,
                "binary": bytes(range(256)) * 64}[kind]
        bench.transport.write_file(path, data, mode=0o600)


@pytest.mark.parametrize("kind", ["deep", "huge", "binary", "symlink"])
def test_i02_a_hostile_installed_json_stops_nothing_and_restore_force_works(th, kind):
    path = _state_path(th, "installed.json")
    th.transport.make_private_dir(th.state_dir)
    _hostile(th, path, kind)
    try:
        done = fk.ddlab_in(th, "deploy", "--host", "th")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        line = [x for x in done.stderr.splitlines() if "unreadable:" in x]
        assert line and f"remove {path}" in line[0], done.stderr
        assert th.baseline_active(), "production was never stopped"
        assert th.lock() is None and th.variants() == []
        forced = fk.ddlab_in(th, "restore", "--host", "th", "--force")
        assert forced.returncode == 0 and "Traceback" not in forced.stderr, forced.stderr
        assert th.baseline_active(), "production answers after"
    finally:
        th.transport.run(["rm", "-f", "--", path])


def test_i02_a_100_mb_state_file_is_refused_in_under_a_second(th):
    path = _state_path(th, "installed.json")
    th.transport.make_private_dir(th.state_dir)
    _hostile(th, path, "huge")
    try:
        installs = Installs(th.transport, th.state_dir)
        took = []
        for _ in range(5):
            start = time.monotonic()
            with pytest.raises(StateFileError, match="larger than 1 MB"):
                installs.read()
            took.append(time.monotonic() - start)
        print(f"100 MB state file refused in {sorted(took)[2] * 1000:.0f} ms (median of 5; "
              f"max {max(took) * 1000:.0f} ms)")
        assert max(took) < 1.0
    finally:
        th.transport.run(["rm", "-f", "--", path])


def test_i02_after_a_deploy_a_hostile_installed_json_still_gets_production_back(th, idle):
    assert fk.ddlab_in(th, "deploy", "--host", "th", *idle).returncode == 0
    variant = th.current_service()
    path = _state_path(th, "installed.json")
    saved = th.transport.read_file(path)
    _hostile(th, path, "deep")
    try:
        done = fk.ddlab_in(th, "restore", "--host", "th", "--force")
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"unreadable: {path}" in done.stderr and f"remove {path}" in done.stderr
        assert th.baseline_active(), "the profile's baseline is back all the same"
        assert th.manager.state(variant).running, "a variant not known as ddlab's is left alone"
    finally:
        th.transport.write_file(path, saved, mode=0o600)
    assert fk.ddlab_in(th, "restore", "--host", "th").returncode == 0
    th.assert_put_back()
    assert th.manager.state(variant).load_state == "not-found"


@pytest.mark.parametrize("kind", ["deep", "binary", "symlink", "huge"])
def test_i02_a_bad_lock_json_is_one_line_and_restore_force_puts_production_back(th, kind, idle):
    assert fk.ddlab_in(th, "deploy", "--host", "th", *idle).returncode == 0
    variant = th.current_service()
    th.transport.run(["rm", "-f", "--", th.lock_path])
    _hostile(th, th.lock_path, kind)
    try:
        done = fk.ddlab_in(th, "deploy", "--host", "th")
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        said = [x for x in done.stderr.splitlines() if "unreadable:" in x]
        assert len(said) == 1 and f"unreadable: {th.lock_path}" in said[0], done.stderr
        assert f"remove {th.lock_path}" in said[0]
        forced = fk.ddlab_in(th, "restore", "--host", "th", "--force")
        assert forced.returncode == 0 and "Traceback" not in forced.stderr, forced.stderr
        assert th.baseline_active(), "the profile's baseline is put back"
    finally:
        th.transport.run(["rm", "-f", "--", th.lock_path])
        th.manager.remove(variant)
        Installs(th.transport, th.state_dir).forget(variant)
    assert th.lock() is None


# --- 4: restore starts only the profile's baseline ----------------------------------


def test_i04_restore_never_starts_a_unit_the_hosts_lock_names_as_the_baseline(th, idle):
    canary = f"ddlab-test-canary-{th.base}.service"
    ran = f"{th.testhost.shared_dir}/canary-{th.base}-ran"
    th.manager.install(ServiceSpec(canary, ["/bin/sh", "-c", f"touch {ran}; sleep 3600"],
                                   workdir="/"))
    try:
        assert fk.ddlab_in(th, "deploy", "--host", "th", *idle).returncode == 0
        assert not th.baseline_active()
        lock = th.lock()
        lock["baseline"] = {"service": canary, "was_active": True}
        th.transport.write_file(th.lock_path, json.dumps(lock).encode(), mode=0o600)
        done = fk.ddlab_in(th, "restore", "--host", "th")
        assert done.returncode == 0, done.stderr
        assert f"names {canary} as the baseline" in done.stderr
        assert th.manager.state(canary).active_state != "active"
        assert not Path(ran).exists(), "the canary never ran"
        assert f"baseline {th.baseline} active again" in done.stdout
        th.assert_put_back()
    finally:
        th.manager.remove(canary)
        Path(ran).unlink(missing_ok=True)
