"""Variants as Slurm jobs, watched to their verdict, on a real one-node Slurm.

The variant is ddlab's own target server (the ``local`` base on a free port) run as a
batch job; the login host is the test host over SSH (the server is reached through
it, at the job's node) or this machine (local transport). A job Slurm ends is its own
outcome (``scheduler_ended``, exit 8), never a crash; a server that dies in its job is
a crash with its kind; Ctrl-C leaves no job in squeue. Every test checks that no job
is left (the ``slurm_host`` fixture) and that the job's folder is gone.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from pathlib import Path

import pytest

from ddlab.config.variants import make_variant
from ddlab.hosts.profiles import HostProfile
from ddlab.lab.deploy import NO_BASELINE_SLURM, deployed
from ddlab.lab.watch import watch
from labkit import KV_OOM, free_port, wait_for, write_base

SLOW_START = "debug_load_delay_s=120"  # the target sits in load_weights: a job that runs, not ready


def _variant(folder: Path, *overrides: str):
    return make_variant(write_base(folder), [f"port={free_port()}", *overrides])


def _once_running(cluster, job: str, action) -> threading.Thread:
    """``action()`` from another thread once the job runs (as a user or Slurm would act)."""
    def act():
        cluster.wait_state(int(job), "RUNNING", timeout_s=30, poll_s=0.1)
        action()

    thread = threading.Thread(target=act, daemon=True, name="slurm-test-action")
    thread.start()
    return thread


def _gone(lab_profile: HostProfile, service: str) -> bool:
    folder = Path(lab_profile.state_dir) / "jobs" / service.removesuffix(".service")
    return not folder.exists()


@pytest.mark.slow
def test_a_variant_runs_as_a_job_is_probed_through_the_login_host_and_cancelled_after(
        slurm_cluster, testhost, tmp_path):
    state_dir = testhost.shared_dir / f"slurm-{uuid.uuid4().hex[:6]}"
    profile = HostProfile.from_dict(testhost.profile(scheduler="slurm", state_dir=str(state_dir)),
                                    name="slurm-login")
    with slurm_cluster.attached(testhost):  # plain sbatch/scontrol in the test host find it
        with deployed(profile, _variant(tmp_path)) as (lab, dep):
            verdict = watch(lab, timeout_s=60, probe=True, grace_s=0.5)
            url = lab.server_url(dep)
        assert slurm_cluster.run(["squeue", "-h"]).stdout == "", "no job left"
    assert verdict.state == "ready" and verdict.exit_code == 0, verdict.render()
    assert all(p.ok and p.spec_verify_ct for p in verdict.probes), verdict.probes
    assert (verdict.service_state["scheduler_state"], verdict.service_state["node"]) == (
        "RUNNING", slurm_cluster.node)
    assert f":{dep.port}" not in url, "reached through the login host's tunnel, not directly"
    assert verdict.notes.count(NO_BASELINE_SLURM) == 1
    assert slurm_cluster.job(int(dep.invocation))["JobState"] == "CANCELLED"
    assert not (state_dir / "jobs" / dep.service.removesuffix(".service")).exists()
    assert not (state_dir / "lock.json").exists()


@pytest.mark.slow
def test_a_job_past_its_time_limit_is_scheduler_ended_not_a_crash(slurm_host, slurm_cluster, tmp_path):
    """Slurm's time limits are whole minutes, checked every 30 s: the job is made to run
    out of time (``scontrol update TimeLimit=0``) once its server is loading its weights (the
    phase the cause must name; expired as soon as it ran, a check within the second the
    target takes to import torch found it still in launch); TIMEOUT at the next check."""
    profile = slurm_host(time_limit="5")
    with deployed(profile, _variant(tmp_path, SLOW_START)) as (lab, dep):
        def expire_while_loading():
            wait_for(lambda: "Load weight begin" in lab.manager.logs(dep.service), timeout_s=60,
                     what="the server to start loading its weights")
            slurm_cluster.expire(int(dep.invocation))

        _once_running(slurm_cluster, dep.invocation, expire_while_loading)
        verdict = watch(lab, timeout_s=90)
    d = verdict.diagnosis
    assert (verdict.state, d.kind, d.crashed, verdict.exit_code) == (
        "scheduler_ended", "slurm_timeout", False, 8), verdict.render()
    assert verdict.headline.startswith("SCHEDULER ENDED THE JOB (not a crash)")
    for fact in (f"job {dep.invocation}", f"node {slurm_cluster.node}", "TIMEOUT (TimeLimit)",
                 "phase load_weights", "time_limit 5"):
        assert fact in d.cause, fact
    assert any("DUE TO TIME LIMIT" in line for line in d.evidence), d.evidence
    assert "raise time_limit" in verdict.next_step
    saved = json.loads((Path(verdict.run_dir) / "verdict.json").read_text())
    assert (saved["state"], saved["kind"], saved["exit_code"]) == ("scheduler_ended", "slurm_timeout", 8)
    assert verdict.notes == [NO_BASELINE_SLURM]
    assert _gone(profile, dep.service)


def test_a_job_cancelled_by_someone_else_is_scheduler_ended(slurm_host, slurm_cluster, tmp_path):
    profile = slurm_host()
    with deployed(profile, _variant(tmp_path, SLOW_START)) as (lab, dep):
        _once_running(slurm_cluster, dep.invocation,
                      lambda: slurm_cluster.run(["scancel", dep.invocation]))
        verdict = watch(lab, timeout_s=60)
    assert (verdict.state, verdict.diagnosis.kind, verdict.exit_code) == (
        "scheduler_ended", "slurm_cancelled", 8), verdict.render()
    assert "someone else" in verdict.next_step and f"sacct -j {dep.invocation}" in verdict.next_step
    assert _gone(profile, dep.service)


def test_a_server_crashing_in_its_job_is_a_crash_with_its_kind(slurm_host, tmp_path):
    profile = slurm_host()
    with deployed(profile, _variant(tmp_path, KV_OOM)) as (lab, dep):
        verdict = watch(lab, timeout_s=60, probe=True)
    d = verdict.diagnosis
    assert (verdict.state, d.kind, d.phase, verdict.exit_code) == (
        "crashed", "kv_pool_oom", "memory_pool", 3), verdict.render()
    state = verdict.service_state
    assert (state["scheduler_state"], state["scheduler_ended"], state["failed"]) == ("FAILED", False, True)
    assert "Not enough memory" in (Path(verdict.run_dir) / "journal.log").read_text()
    assert _gone(profile, dep.service)


def test_ctrl_c_during_the_watch_leaves_no_job_in_squeue(slurm_host, slurm_cluster, tmp_path):
    profile = slurm_host()
    with pytest.raises(KeyboardInterrupt) as caught:
        with deployed(profile, _variant(tmp_path, SLOW_START)) as (lab, dep):
            _once_running(slurm_cluster, dep.invocation, lambda: os.kill(os.getpid(), signal.SIGINT))
            watch(lab, timeout_s=60)
    assert caught.value.verdict.state == "interrupted"
    assert slurm_cluster.run(["squeue", "-h"]).stdout == ""
    assert slurm_cluster.job(int(dep.invocation))["JobState"] == "CANCELLED"
    assert _gone(profile, dep.service)
