"""The host lock: one ddlab run per host, and the record that lets a later run restore.

The other run is always a real second process (tests/labkit.py's
``holder_script``): the same process continues its own lock by design.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

import ddlab
from ddlab.core.errors import LockError
from ddlab.hosts.lock import Holder, HostLock
from ddlab.lab.deploy import Lab
from labkit import clean, free_port, holder_script, site_fixture  # noqa: F401 (clean: a fixture)
from labkit import said as labkit_said

site = site_fixture("systemd-ssh", "process-local")


@pytest.fixture
def other_run(site):
    """Start a second ddlab run holding the site's lock (optionally deploying); ends it after."""
    procs = []

    def start(*variant_args: str, deploy: bool = False) -> subprocess.Popen:
        argv = holder_script(site.yaml, deploy=str(site.base) if deploy else "") + list(variant_args)
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
    assert f"{getpass.getuser()}@{socket.gethostname()} (pid {holder.pid})" in text
    assert "for \"a test's other run\"" in text
    assert f"ddlab restore --host {site.name} --force" in text
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
    with pytest.raises(LockError, match="unreadable lock file"):
        Lab(site.profile).open()
    with Lab(site.profile, force=True):
        assert site.lock()["holder"]["user"] == getpass.getuser()


def test_lock_records_round_trip_and_describe_themselves():
    lock = HostLock(holder=Holder.me("sweep x", persistent=True),
                    baseline={"service": "sglang.service", "was_active": True},
                    variant={"name": "v", "hash": "h", "service": "ddlab-v.service", "port": 1,
                             "run_dir": "/r"})
    again = HostLock.from_json(lock.to_json())
    assert again == lock and json.loads(lock.to_json())["holder"]["pid"] is None
    assert "no process: held until `ddlab restore`" in lock.holder.describe()
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
