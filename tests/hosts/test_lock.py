"""The host lock: one ddlab run per host, the record that lets a later run restore, and
sharing a host: waiting behind a live holder, ``--force`` only for one that is gone, and
a run whose host was taken knowing who took it (never a crash).

The other run is always a real second process (tests/labkit.py's
``holder_script``): the same process continues its own lock by design. Waiting is
driven through the real ``ddlab`` command, as a user waits.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import ddlab
from ddlab.core.errors import LockError, Preempted
from ddlab.hosts import lock as host_lock
from ddlab.hosts.lock import Holder, HostLock
from ddlab.lab.deploy import Lab
from labkit import DDLAB, REPO, clean, free_port, holder_script, site_fixture  # noqa: F401
from labkit import said as labkit_said
from labkit import wait_for
from testhost.procs import alive

site = site_fixture("systemd-ssh", "process-local")


@pytest.fixture
def other_run(site):
    """Start a second ddlab run holding the site's lock (optionally deploying); ends it after."""
    procs = []

    def start(*variant_args: str, deploy: bool = False, force: bool = False) -> subprocess.Popen:
        argv = holder_script(site.yaml, deploy=str(site.base) if deploy else "",
                             force=force) + list(variant_args)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ})
        procs.append(proc)
        line = proc.stdout.readline()
        assert line == "holding\n", f"the other run did not start: {line!r} {proc.stderr.read()}"
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def test_the_lock_file_is_private_and_says_who_holds_it(clean):
    site = clean
    with Lab(site.profile, what="a look around") as lab:
        lock = site.lock()
        assert lock["holder"] == {**lock["holder"], "user": getpass.getuser(),
                                  "controller": socket.gethostname(), "pid": os.getpid(),
                                  "what": "a look around"}
        mode = site.transport.run(["stat", "-c", "%a", lab.lockfile.path]).stdout
        assert mode.strip() == "600"


def test_a_second_run_is_refused_naming_the_holder(clean, other_run):
    site = clean
    holder = other_run()
    with pytest.raises(LockError) as info:
        Lab(site.profile, what="a second run").open()
    text = str(info.value)
    assert f"{getpass.getuser()}@{socket.gethostname()} (pid {holder.pid}: `python -c`, in " \
           f"{REPO})" in text
    assert re.search(r"for \"a test's other run\", heartbeat \d s ago", text), text
    assert "--force" not in text, "a live holder is no holder to force out"
    assert "wait for it: wait_s=600 queues behind it" in text
    assert info.value.holder["pid"] == holder.pid
    assert site.baseline_active() and site.lock()["holder"]["pid"] == holder.pid
    holder.send_signal(signal.SIGINT)  # the other run ends normally: its lock goes with it
    assert holder.wait(timeout=30) != 0
    assert site.lock() is None


@pytest.mark.slow
def test_a_stale_lock_is_taken_over_with_a_message_and_its_record_restored(clean, other_run):
    site = clean
    holder = other_run(f"port={free_port()}", deploy=True)  # baseline stopped, variant running
    variant = site.lock()["variant"]["service"]
    site.made.append(variant)
    assert not site.baseline_active() and site.installed(variant)
    holder.kill()  # no restore, no release: a job killed with -9
    holder.wait(timeout=30)
    with labkit_said() as said:
        done = ddlab.restore(site.profile)
    assert any("taking over the lock held by" in s and f"pid {holder.pid}" in s
               and "its process is gone" in s for s in said), said
    assert done == (f"{site.name}: removed {variant}; baseline {site.baseline} active again; "
                    "lock released")
    assert site.baseline_active() and not site.installed(variant) and site.lock() is None


@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_force_takes_a_live_lock_saying_so(clean, other_run):
    site = clean
    holder = other_run()
    with labkit_said() as said, Lab(site.profile, what="forced", force=True):
        assert site.lock()["holder"]["what"] == "forced"
    assert len(said) == 1 and f"pid {holder.pid}" in said[0] and "--force given" in said[0]


@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_an_unreadable_lock_is_refused_until_forced(clean):
    site = clean
    Path(site.lock_path).parent.mkdir(parents=True, exist_ok=True)
    Path(site.lock_path).write_text("{half a lock")
    with pytest.raises(LockError, match=r"unreadable: .*lock.json is not JSON .*; remove "):
        Lab(site.profile).open()
    with Lab(site.profile, force=True):
        assert site.lock()["holder"]["user"] == getpass.getuser()


def test_a_holder_that_exited_and_waits_to_be_reaped_is_gone():
    """A zombie (exited, its parent not yet reading its status) answers ``kill(pid, 0)``: an
    orphaned kernel under an init slow to reap kept its dead run's lock live (a resume refused
    with "heartbeat 2 s ago" in a fresh clone's suite, 2026-12-07)."""
    child = os.fork()
    if child == 0:
        os._exit(0)  # exits at once; this test does not reap it until the checks are done
    try:
        wait_for(lambda: not alive(child), timeout_s=10, what="the child to exit")  # a zombie: not reaped yet
        os.kill(child, 0)  # still found by the signal
        assert not host_lock.pid_alive(child)
        holder = Holder.me("a run whose process exited", persistent=False)
        holder.pid = child
        assert holder.is_stale()
        assert host_lock.pid_alive(os.getpid())
    finally:
        os.waitpid(child, 0)
    assert not host_lock.pid_alive(child)


def test_lock_records_round_trip_and_describe_themselves():
    lock = HostLock(holder=Holder.me("sweep x", persistent=True),
                    baseline={"service": "sglang.service", "was_active": True},
                    variant={"name": "v", "hash": "h", "service": "ddlab-v.service", "port": 1,
                             "run_dir": "/r"})
    again = HostLock.from_json(lock.to_json())
    assert again == lock and json.loads(lock.to_json())["holder"]["pid"] is None
    assert "no process: left by `" in lock.holder.describe()
    assert ", held until `ddlab restore`" in lock.holder.describe()
    assert not lock.holder.is_stale(), "a persistent lock is never stale"
    dead = Holder.me("x", persistent=False)
    dead.pid = _dead_pid()
    assert dead.is_stale()
    elsewhere = Holder(**{**dead.__dict__, "controller": "another-machine"})
    assert not elsewhere.is_stale(), "a pid of another controller cannot be checked"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# --- sharing a host: wait, force only what is gone, know who took it ------------------------


def _ddlab(*args: str) -> subprocess.Popen:
    return subprocess.Popen([DDLAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)


def _stderr_lines(proc: subprocess.Popen, until: str, timeout_s: float = 30) -> list[str]:
    """Lines of the process's stderr, read until one contains ``until``."""
    lines, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if until in line:
            return lines
    raise AssertionError(f"no line with {until!r} in: {''.join(lines)}")


@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_the_cli_offers_wait_not_force_for_a_live_holder(clean, other_run):
    site = clean
    holder = other_run()
    with _ddlab("restore", "--host", str(site.yaml)) as refused:
        out, err = refused.communicate(timeout=60)
    assert refused.returncode == 1, err
    assert f"(pid {holder.pid}: `python -c`" in err and re.search(r"heartbeat \d s ago", err)
    assert "wait for it: --wait 600 queues behind it" in err and "--force" not in err
    assert site.lock()["holder"]["pid"] == holder.pid


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_wait_queues_behind_a_live_holder_naming_it_then_takes_the_host(clean, other_run):
    site = clean
    holder = other_run()
    with _ddlab("restore", "--host", str(site.yaml), "--wait", "60") as waiting:
        lines = _stderr_lines(waiting, "waiting for the host")
        assert f"in use by {getpass.getuser()}@{socket.gethostname()} (pid {holder.pid}" in lines[-1]
        assert "/60s" in lines[-1] and "heartbeat" in lines[-1]
        time.sleep(1.5)
        assert waiting.poll() is None, "still queued while the holder runs"
        holder.send_signal(signal.SIGINT)  # the holder ends: its lock goes with it
        out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert "the host is free after a wait of" in err
    assert out.strip().endswith("no variant was deployed; lock released")
    assert site.lock() is None


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_wait_is_bounded_and_says_so(clean, other_run):
    site = clean
    holder = other_run()
    started = time.monotonic()
    with _ddlab("restore", "--host", str(site.yaml), "--wait=2") as waiting:
        out, err = waiting.communicate(timeout=60)
    took_s = time.monotonic() - started
    assert waiting.returncode == 1 and 2 <= took_s < 20, (took_s, err)
    last = err.strip().splitlines()[-1]
    assert f"still in use after waiting 2 s: host '{site.name}' is in use by" in last
    assert f"pid {holder.pid}" in last and "wait longer (--wait 7200)" in last
    assert site.lock()["holder"]["pid"] == holder.pid, "the holder's lock is untouched"


@pytest.mark.slow
@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_wait_ends_on_ctrl_c_taking_nothing(clean, other_run):
    site = clean
    holder = other_run()
    with _ddlab("restore", "--host", str(site.yaml), "--wait") as waiting:
        lines = _stderr_lines(waiting, "waiting for the host")
        assert "/3600s" in lines[-1], "--wait alone: an hour"
        waiting.send_signal(signal.SIGINT)
        started = time.monotonic()
        out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 130 and time.monotonic() - started < 10, err
    assert "interrupted" in err
    assert site.lock()["holder"]["pid"] == holder.pid and site.baseline_active()


@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_a_dead_holders_lock_is_taken_over_without_force(clean, other_run):
    site = clean
    holder = other_run()
    holder.kill()
    holder.wait(timeout=30)
    with labkit_said() as said, Lab(site.profile, what="after it"):
        assert site.lock()["holder"]["pid"] == os.getpid()
    assert any(f"pid {holder.pid}" in s and "its process is gone" in s for s in said), said
    assert site.lock() is None


def _foreign_lock(site, *, minutes_old: int) -> dict:
    """A lock as a run on another controller machine leaves it, last beat that long ago."""
    holder = {"user": "alice", "controller": "elsewhere", "pid": 4242, "what": "sweep x",
              "since": "2026-01-01T00:00:00Z", "command": "ddlab sweep --budget 32",
              "project": "/home/alice/ddlab", "token": "feedface0001"}
    site.transport.make_private_dir(site.profile.state_dir)
    site.transport.write_file(site.lock_path, json.dumps({"holder": holder}).encode())
    if minutes_old:
        site.transport.run(["touch", "-d", f"{minutes_old} minutes ago", site.lock_path])
    return holder


@pytest.mark.parametrize("site", ["systemd-ssh"], indirect=True, ids=str)
def test_force_is_offered_for_a_holder_whose_heartbeat_is_old_not_for_a_fresh_one(clean):
    site = clean
    _foreign_lock(site, minutes_old=0)
    with pytest.raises(LockError) as fresh:
        Lab(site.profile).open()
    text = str(fresh.value)
    assert "alice@elsewhere (pid 4242: `ddlab sweep --budget 32`, in /home/alice/ddlab)" in text
    assert re.search(r"heartbeat \d s ago", text), text
    assert "--force" not in text and "wait_s=600" in text

    _foreign_lock(site, minutes_old=10)
    with pytest.raises(LockError) as quiet:
        Lab(site.profile).open()
    text = str(quiet.value)
    assert "heartbeat 10 min ago: no heartbeat for more than 120 s" in text
    assert f"`ddlab restore --host {site.name} --force`" in text and "wait_s" not in text
    with Lab(site.profile, force=True):
        record = json.loads(site.transport.read_file(
            f"{site.profile.state_dir}/preempted/feedface0001.json"))
        assert record["by"]["pid"] == os.getpid() and record["took"]["controller"] == "elsewhere"


@pytest.mark.parametrize("site", ["process-local", "systemd-ssh"], indirect=True, ids=str)
def test_a_held_lock_beats(clean, monkeypatch):
    site = clean
    monkeypatch.setattr(host_lock, "HEARTBEAT_S", 0.2)
    with Lab(site.profile) as lab:
        site.transport.run(["touch", "-d", "5 minutes ago", site.lock_path])
        assert lab.lockfile.age_s() >= 290
        wait_for(lambda: lab.lockfile.age_s() < 5, timeout_s=10, what="a heartbeat")
        assert site.lock()["holder"]["pid"] == os.getpid(), "a beat never rewrites the lock"


def test_a_run_whose_host_was_taken_knows_who_and_leaves_the_host_alone(clean, other_run):
    site = clean
    with Lab(site.profile, what="the victim") as lab:
        lab.stop_baseline()
        assert not site.baseline_active()
        token = lab.lockfile.token
        taker = other_run(force=True)  # a real second run takes the host with --force
        taken = lab.taken()
        assert taken.by["pid"] == taker.pid and taken.by["what"] == "a test's other run"
        assert f"(pid {taker.pid}: `python -c`" in taken.describe()
        assert "took the host with --force at 20" in taken.describe()
        with pytest.raises(Preempted) as info:
            lab.start_variant(site.variant())
        assert info.value.exit_code == 9 and f"pid {taker.pid}" in str(info.value)
        assert info.value.by["pid"] == taker.pid
        lab.restore()  # nothing: the host, and the baseline it stopped, are the taker's now
        assert site.lock()["holder"]["pid"] == taker.pid and not site.baseline_active()
    assert site.lock()["holder"]["pid"] == taker.pid, "closing left the taker's lock alone"
    assert site.lock()["baseline"]["service"] == site.baseline, "the record went with the lock"
    records = site.transport.run(["ls", f"{site.profile.state_dir}/preempted"]).stdout
    assert token not in records, "the record for the victim is gone once read"
    taker.kill()
    taker.wait(timeout=30)
    ddlab.restore(site.profile)  # the taker's lock, stale now, holds what to put back
    assert site.baseline_active() and site.lock() is None


@pytest.mark.parametrize("site", ["process-local"], indirect=True, ids=str)
def test_a_deploy_left_by_another_checkout_is_waited_for_not_continued(clean):
    site = clean
    left = Holder.me("deploy local-b8", persistent=True)
    left.project, left.command = "/home/me/other-checkout", "ddlab deploy --set budget=8"
    variant = {"name": "local-b8", "service": "ddlab-local-b8.service"}
    Path(site.lock_path).parent.mkdir(parents=True, exist_ok=True)
    Path(site.lock_path).write_text(HostLock(holder=left, variant=variant).to_json())
    with pytest.raises(LockError) as info:
        Lab(site.profile, what="a sweep in this checkout").open()
    text = str(info.value)
    assert "(no process: left by `ddlab deploy --set budget=8`, held until `ddlab restore`, " \
           "in /home/me/other-checkout)" in text
    assert f"`ddlab restore --host {site.name}` puts it back (wait_s=600 queues behind it)" in text
    assert site.lock()["variant"] == variant, "the other checkout's variant is left alone"
    with Lab(site.profile, what="restore", adopt=True):  # a restore puts back what it left
        assert site.lock()["variant"] == variant and site.lock()["holder"]["what"] == "restore"
    left.project = str(REPO)  # this checkout's own deploy: its next run continues it
    Path(site.lock_path).write_text(HostLock(holder=left, variant=variant).to_json())
    with Lab(site.profile, what="this checkout's watch"):
        assert site.lock()["holder"]["pid"] == os.getpid()
