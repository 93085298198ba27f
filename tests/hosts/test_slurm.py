"""The Slurm service manager against a real one-node Slurm (tests/testhost/slurm.py).

The login host is this machine (local transport, ``SLURM_CONF`` naming the test
cluster); jobs run on its one node, which is this machine too. The SSH login host
(the test host) and the watch's verdicts on jobs are tests/lab/test_slurm_watch.py's.
Every test leaves no job queued or running.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import pytest

from ddlab.core.errors import ConfigError, HostError
from ddlab.hosts import connect, manager_for
from ddlab.hosts.profiles import HostProfile, load_host
from ddlab.hosts.services import ServiceSpec
from ddlab.hosts.slurm import SlurmManager, job_state, parse_record
from labkit import wait_for

# a real `scontrol show job -o` line of the test cluster (shortened), for the parser
RUNNING_LINE = ("JobId=7876229 JobName=ddlab-test UserId=root(0) GroupId=root(0) JobState=RUNNING "
                "Reason=None Dependency=(null) ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:05:00 "
                "Partition=debug NodeList=vm BatchHost=vm NumNodes=1 Command=(null) "
                "WorkDir=/var/lib/ddlab test/jobs StdOut=/var/lib/ddlab test/jobs/7876229.out Power=")


def _name() -> str:
    return f"ddlab-test-slurm-{uuid.uuid4().hex[:6]}"


def _ended(manager, name: str, timeout_s: float = 20):
    return wait_for(lambda: (s := manager.state(name)).scheduler_state not in
                    ("", "PENDING", "CONFIGURING", "RUNNING", "COMPLETING") and s,
                    timeout_s=timeout_s, what=f"{name}'s job to end")


# --- profiles and the state mapping, no cluster ---------------------------------------


def test_a_slurm_profile_picks_the_slurm_manager_with_jobs_under_the_state_dir(tmp_path):
    profile = HostProfile.from_dict({"scheduler": "slurm", "state_dir": str(tmp_path)}, name="c")
    manager = manager_for(connect(profile))
    assert isinstance(manager, SlurmManager) and manager.log_dir == f"{tmp_path}/jobs"
    argv = SlurmManager(connect(HostProfile.from_dict(
        {"scheduler": "slurm", "log_dir": "/shared/logs", "partition": "gpu", "account": "lab",
         "gres": "gpu:1", "time_limit": "30:00", "sbatch_options": ["--qos=high"]}))).sbatch_argv("x")
    assert argv == ["sbatch", "--parsable", "--job-name=ddlab-x", "--output=/shared/logs/x/slurm-%j.out",
                    "--chdir=/shared/logs/x", "--partition=gpu", "--account=lab", "--gres=gpu:1",
                    "--time=30:00", "--qos=high", "/shared/logs/x/job.sh"]


def test_the_example_profile_is_a_valid_slurm_host():
    profile = load_host("example-slurm")
    assert (profile.scheduler, profile.transport, profile.baseline_service) == ("slurm", "ssh", "")
    assert isinstance(manager_for(connect(profile)), SlurmManager)  # SSH connects lazily: not here


@pytest.mark.parametrize("data, key", [
    ({"scheduler": "slurm", "baseline_service": "sglang.service"}, "baseline_service"),
    ({"partition": "gpu"}, "partition"),
    ({"scheduler": "pbs"}, "scheduler"),
], ids=["slurm-with-baseline", "partition-without-slurm", "unknown-scheduler"])
def test_a_slurm_profile_that_cannot_work_is_refused_naming_the_key(data, key):
    with pytest.raises(ConfigError) as caught:
        HostProfile.from_dict(data, name="c")
    assert caught.value.key == key and caught.value.fix


@pytest.mark.parametrize("record, stopped, want", [
    ({"JobState": "PENDING", "Reason": "Priority"}, False, ("activating", "pending", "", False)),
    ({"JobState": "RUNNING", "BatchHost": "n1"}, False, ("active", "running", "", False)),
    ({"JobState": "COMPLETING", "Reason": "TimeLimit"}, False, ("deactivating", "completing", "", False)),
    ({"JobState": "COMPLETED", "ExitCode": "0:0"}, False, ("inactive", "dead", "success", False)),
    ({"JobState": "FAILED", "ExitCode": "3:0"}, False, ("failed", "failed", "exit-code", True)),
    ({"JobState": "FAILED", "ExitCode": "0:9"}, False, ("failed", "failed", "signal", True)),
    ({"JobState": "TIMEOUT", "ExitCode": "0:15"}, False, ("failed", "failed", "scheduler-ended", True)),
    ({"JobState": "PREEMPTED"}, False, ("failed", "failed", "scheduler-ended", True)),
    ({"JobState": "NODE_FAIL", "Reason": "NodeDown"}, False, ("failed", "failed", "scheduler-ended", True)),
    ({"JobState": "OUT_OF_MEMORY", "ExitCode": "0:125"}, False,
     ("failed", "failed", "scheduler-ended", True)),
    ({"JobState": "CANCELLED by 0", "ExitCode": "0:15"}, False,
     ("failed", "failed", "scheduler-ended", True)),
    ({"JobState": "CANCELLED", "ExitCode": "0:15"}, True, ("inactive", "dead", "success", False)),
    ({}, False, ("inactive", "dead", "unknown", True)),
], ids=["pending", "running", "completing", "completed", "failed", "killed", "timeout", "preempted",
        "node-fail", "oom", "cancelled-by-someone", "cancelled-by-ddlab", "forgotten"])
def test_each_slurm_state_in_systemds_words(record, stopped, want):
    state = job_state(record, job="12", stopped=stopped)
    assert (state.active_state, state.sub_state, state.result, state.failed) == want
    assert state.scheduler_ended == (want[2] == "scheduler-ended")


def test_a_real_scontrol_line_gives_state_node_and_time_limit():
    record = parse_record(RUNNING_LINE)
    assert record["WorkDir"] == "/var/lib/ddlab test/jobs" and record["TimeLimit"] == "00:05:00"
    state = job_state(record, job="7876229")
    assert (state.running, state.node, state.scheduler_state, state.scheduler_reason) == (
        True, "vm", "RUNNING", "")


# --- jobs on the real cluster -----------------------------------------------------------


def test_a_job_runs_its_quoted_argv_env_and_workdir_and_its_log_is_read_on(slurm_host, tmp_path):
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    profile = slurm_host(partition="debug", time_limit="5", sbatch_options=["--comment=ddlab-test"])
    manager = manager_for(connect(profile))
    name = _name()
    odd = ["a b", "it's", "$HOME", '"q"', "`x`"]
    code = "import os, sys, json; print(json.dumps([sys.argv[1:], os.getcwd(), os.environ['ODD']]))"
    manager.install(ServiceSpec(name, [sys.executable, "-c", code, *odd], env={"ODD": "x y $z 'q'"},
                                workdir=str(workdir)))
    job = manager.start(name)
    state = _ended(manager, name)
    assert (state.active_state, state.result, state.exit_status) == ("inactive", "success", 0)
    assert (state.scheduler_state, state.invocation_id, state.node) == ("COMPLETED", job, "vm")
    text, cursor = manager.read_logs(name, invocation=job)
    first, printed = text.splitlines()
    assert first == f"ddlab: job {job} starts on vm"
    assert json.loads(printed) == [odd, str(workdir), "x y $z 'q'"]
    assert manager.read_logs(name, invocation=job, cursor=cursor) == ("", cursor)
    shown = parse_record(connect(profile).run(["scontrol", "show", "job", "-o", job]).stdout)
    assert (shown["JobName"], shown["Partition"], shown["TimeLimit"], shown["Comment"]) == (
        name, "debug", "00:05:00", "ddlab-test")
    manager.remove(name)
    assert manager.state(name).load_state == "not-found"


def test_the_controller_is_asked_at_most_once_a_second_per_job(slurm_host):
    manager = manager_for(connect(slurm_host(sbatch_options=["--begin=now+3600"])))
    name = _name()
    manager.install(ServiceSpec(name, ["/bin/sleep", "300"], workdir="/"))
    manager.start(name)
    asked, started = [], time.monotonic()
    query = manager._query
    manager._query = lambda n: asked.append(n) or query(n)
    while time.monotonic() - started < 1.5:
        assert manager.state(name).sub_state == "pending"
        time.sleep(0.05)
    assert len(asked) == 2, "one answer per second stands for the polls in between"
    manager.remove(name)


def test_a_failing_job_is_failed_with_its_exit_status_not_scheduler_ended(slurm_host):
    manager = manager_for(connect(slurm_host()))
    name = _name()
    manager.install(ServiceSpec(name, [sys.executable, "-c", "raise SystemExit(3)"], workdir="/"))
    manager.start(name)
    state = _ended(manager, name)
    assert (state.active_state, state.result, state.exit_status, state.exit_kind) == (
        "failed", "exit-code", 3, "exited")
    assert state.failed and not state.scheduler_ended and state.scheduler_state == "FAILED"
    manager.remove(name)


def test_stop_cancels_a_pending_job_as_ddlabs_own_and_remove_leaves_nothing(slurm_host, slurm_cluster):
    manager = manager_for(connect(slurm_host(sbatch_options=["--begin=now+3600"])))
    name = _name()
    manager.install(ServiceSpec(name, ["/bin/sleep", "300"], workdir="/"))
    job = manager.start(name)
    state = manager.state(name)
    assert (state.active_state, state.sub_state, state.node) == ("activating", "pending", "")
    manager.stop(name)
    state = manager.state(name)
    assert (state.scheduler_state, state.active_state, state.scheduler_ended) == (
        "CANCELLED", "inactive", False), "ddlab's own scancel is a clean stop"
    assert slurm_cluster.run(["squeue", "-h", "-j", job]).stdout == ""
    folder = manager._dir(name)
    manager.remove(name)
    manager.remove(name)  # idempotent
    assert not connect(slurm_host()).run(["test", "-e", folder], check=False).ok


def test_a_silent_controller_keeps_the_last_state_for_a_while_then_is_a_host_error(
        slurm_host, slurm_cluster, monkeypatch, tmp_path):
    manager = manager_for(connect(slurm_host()))
    manager.query_interval_s = 0  # ask the controller at every call
    name = _name()
    manager.install(ServiceSpec(name, ["/bin/sleep", "300"], workdir="/"))
    manager.start(name)
    wait_for(lambda: manager.state(name).running, what="the job to run")
    (tmp_path / "broken.conf").write_text("")  # scontrol fails at once (a controller that
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "broken.conf"))  # is down takes ~18 s)
    started = time.monotonic()
    assert manager.state(name).running, "the last state stands"
    manager.controller_grace_s = time.monotonic() - started  # the grace is over
    time.sleep(0.01)
    with pytest.raises(HostError, match="Slurm does not answer") as caught:
        manager.state(name)
    assert caught.value.transient
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    manager.remove(name)
