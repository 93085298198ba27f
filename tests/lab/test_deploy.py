"""Deploy and restore: the baseline comes back whatever ends the job.

Real sites (tests/labkit.py): the target server as the variant, a running
baseline service, systemd on the test host over SSH and processes on this
machine. The watch itself is tests/test_watch.py's; here the job ends at once
(an exception, a real SIGINT, a baseline that will not start again).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading

import pytest

import ddlab
from ddlab.core.errors import CommandError
from ddlab.core.interrupts import HELD_LOCK, HELD_THREADS, interrupt_thread
from ddlab.hosts.services import ServiceSpec
from ddlab.lab.deploy import Lab, deployed
from labkit import clean, kinds, said, site_fixture, wait_for  # noqa: F401 (clean: a fixture)

site = site_fixture("systemd-ssh", "process-local")


def test_deploy_stops_the_baseline_records_it_and_an_exception_puts_it_back(clean):
    site = clean
    variant = site.variant()
    with pytest.raises(RuntimeError, match="the notebook cell failed"), \
            deployed(site.profile, variant) as (lab, dep):
        assert not site.baseline_active() and site.installed(dep.service)
        lock = site.lock()
        baseline = dict(lock["baseline"])
        backup = {k: baseline.pop(k) for k in ("definition", "backup", "sha256")}
        assert baseline == {"service": site.baseline, "was_active": True,
                            "state_found": "active/running"}
        assert site.transport.read_file(backup["backup"]) == \
            site.transport.read_file(backup["definition"]), "a copy of it, before it was stopped"
        assert lock["variant"]["name"] == variant.name and lock["variant"]["invocation"]
        assert lock["holder"]["pid"] == os.getpid()
        assert (dep.run_dir / "unit.service").read_text().count("ExecStart=") == 1
        raise RuntimeError("the notebook cell failed")
    site.assert_put_back(dep.service)


def test_a_real_sigint_in_the_block_puts_the_baseline_back(clean):
    site = clean
    with pytest.raises(KeyboardInterrupt), deployed(site.profile, site.variant()) as (lab, dep):
        os.kill(os.getpid(), signal.SIGINT)
        wait_for(lambda: False, timeout_s=10, what="the SIGINT")  # interrupted here
    site.assert_put_back(dep.service)


@pytest.mark.parametrize("site", kinds("process-local"), indirect=True, ids=str)
def test_a_pool_interrupt_sent_as_the_restore_reads_the_hosts_lock_never_cuts_it_short(clean):
    """A pool's Ctrl-C interrupts each host's thread once, by the pool's own rule (raised only
    while the thread is in no held block, sweeps/pool.py _wind_down). Sent the moment a
    thread's restore reads the host's lock, it must not land: it cut the restore short and
    left that host's baseline down (seen once, a fresh clone's pool Ctrl-C test)."""
    site, sent = clean, []

    def worker():
        with deployed(site.profile, site.variant()) as (lab, dep):
            check = lab.lockfile.check

            def check_then_interrupt():  # the wind-down's step, at the worst moment
                with HELD_LOCK:
                    if threading.get_ident() not in HELD_THREADS:
                        sent.append(interrupt_thread(threading.current_thread()))
                return check()

            lab.lockfile.check = check_then_interrupt
            done.append(dep)
        done.append("restored")

    done: list = []
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(120)
    assert not thread.is_alive()
    assert sent == [] and done[-1] == "restored", (sent, done)
    site.assert_put_back(done[0].service)


def test_a_second_sigint_during_the_restore_waits_for_it(clean, capfd):
    site = clean
    interrupt = lambda text: "stopped and removed" in text and os.kill(os.getpid(), signal.SIGINT)
    with said(interrupt), Lab(site.profile) as lab:
        lab.stop_baseline()
        dep = lab.start_variant(site.variant())
        with pytest.raises(KeyboardInterrupt):
            lab.restore()  # SIGINT arrives in the middle; raised once the restore is done
    assert "interrupt held until it is done" in capfd.readouterr().err
    site.assert_put_back(dep.service)


@pytest.mark.slow
def test_a_new_variant_replaces_the_one_running(clean):
    site = clean
    first, second = site.variant(), site.variant()
    with Lab(site.profile) as lab:
        lab.stop_baseline()
        one = lab.start_variant(first)
        two = lab.start_variant(second)
        assert not site.installed(one.service) and site.installed(two.service)
        assert site.lock()["variant"]["service"] == two.service
        lab.restore()
    site.assert_put_back(two.service)


def test_a_baseline_that_was_not_running_is_left_as_found(clean):
    site = clean
    site.manager.stop(site.baseline)
    with deployed(site.profile, site.variant()) as (lab, dep):
        assert site.lock()["baseline"]["was_active"] is False
    assert not site.baseline_active() and not site.installed(dep.service) and site.lock() is None


def test_a_lab_that_deployed_nothing_releases_the_lock(clean):
    site = clean
    with Lab(site.profile, what="a look around") as lab:
        assert site.lock()["holder"]["what"] == "a look around"
        assert lab.current is None
    assert site.lock() is None


@pytest.mark.slow
@pytest.mark.parametrize("site", kinds("systemd-ssh"), indirect=True, ids=str)
def test_a_baseline_that_does_not_come_back_keeps_the_lock_for_a_later_restore(clean):
    site = clean
    flag = site.testhost.shared_dir / f"baseline-may-start-{os.getpid()}"
    flag.touch()
    name = site.baseline.replace(".service", "-picky.service")
    unit = (f"[Service]\nExecStartPre=/bin/test -e {flag}\n"
            f"ExecStart={sys.executable} -c 'import time; time.sleep(3600)'\n")
    site.manager.install(ServiceSpec(name, ["unused"], unit_text=unit))
    site.manager.start(name)
    profile = dataclasses.replace(site.profile, baseline_service=name)
    try:
        with Lab(profile) as lab:
            lab.stop_baseline()
            flag.unlink()
            with pytest.raises(CommandError, match=f"systemctl start {name}"):
                lab.restore(timeout_s=10)
        assert site.lock()["baseline"]["was_active"] is True, "the record outlives the job"
        flag.touch()
        said = ddlab.restore(profile)
        assert said.endswith(f"baseline {name} active again; lock released")
        assert site.manager.state(name).running and site.lock() is None
    finally:
        site.manager.remove(name)
        flag.unlink(missing_ok=True)


def test_a_dry_run_says_it_did_not_check_that_the_baseline_exists():
    """Issue 12's audit: a misspelt baseline_service read "stopped meanwhile" in a dry run,
    which never asks the host; it now says what it did not check."""
    from ddlab.hosts.profiles import load_host
    from ddlab.lab.plans import DryRun, make_plan

    shown = DryRun(make_plan(load_host("local", baseline_service="sglangg.service"))).render()
    assert "not checked: whether sglangg.service (baseline_service) exists on local" in shown
    assert "not checked" not in DryRun(make_plan(load_host("local"))).render()
