"""A sweep on a Slurm cluster (issue 16, item 2): every cell a batch job, on the real
one-node Slurm of tests/testhost/slurm.py, its login host this machine.

The profile queues two jobs at once (``max_jobs: 2``: two slots, each with its own
lock folder and port). One extra cell's server sits in weight loading until the
test makes its job run out of time (``scontrol update TimeLimit=0``): Slurm ends it
TIMEOUT, which the sweep records as ``scheduler_ended``, never as a crash.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import threading

import pytest
import yaml

import sweepkit
from ddlab import api
from labkit import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

GRID = {"budget": [4, 16], "topk_cap": [4], "cuda_graph": [False]}
STUCK = {"debug_load_delay_s": 120}  # a server that runs but is not ready for two minutes
OPTIONS = {"requests": 1, "max_new_tokens": 8, "warmup": 0, "probe": False,
           "max_rounds": 3, "bracket": False, "timeout_s": 150.0}


@pytest.fixture
def cluster_project(slurm_host, tmp_path):
    """A project whose host ``cluster`` is the test Slurm, two jobs at a time."""
    project = sweepkit.make_project(tmp_path)
    profile = {"scheduler": "slurm", "state_dir": str(tmp_path / "slurm-state"), "max_jobs": 2,
               "description": "the test cluster"}
    (project.root / "params" / "hosts" / "cluster.yaml").write_text(yaml.safe_dump(profile))
    with sweepkit.using(project):
        yield project


def _jobs(cluster) -> list[tuple[str, str, str]]:
    out = cluster.run(["squeue", "-h", "-o", "%A|%j|%T"]).stdout.split()
    return [tuple(line.split("|")) for line in out]


def _expire_the_stuck_job(cluster, stop: threading.Event) -> threading.Thread:
    def act():
        while not stop.is_set():
            for job, name, state in _jobs(cluster):
                if "delay" in name and state == "RUNNING":
                    cluster.expire(int(job))
                    return
            stop.wait(0.2)

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def test_a_sweep_on_slurm_runs_each_cell_as_a_job_and_a_time_limit_is_not_a_crash(
        cluster_project, slurm_cluster):
    stop = threading.Event()
    expirer = _expire_the_stuck_job(slurm_cluster, stop)
    try:
        report = api.sweep(host="cluster", budget=GRID["budget"], topk_cap=GRID["topk_cap"],
                           cuda_graph=GRID["cuda_graph"], extra=[STUCK], ci_target=0.05,
                           store=None, **OPTIONS)
    finally:
        stop.set()
        expirer.join()
    frame = report.frame
    assert list(frame["status"]) == ["measured", "measured", "measured", "scheduler_ended"], \
        frame[["name", "status", "kind"]]
    stuck = frame.iloc[-1]
    assert stuck["kind"] == "slurm_timeout" and "TIMEOUT" in stuck["cause"]
    assert set(frame["host"]) == {"cluster"}, "one host: the cluster (its slots are not hosts)"
    assert frame[frame["role"] == "grid"]["speedup"].notna().all()
    headline, details = report.verdict.headline, "\n".join(report.verdict.details)
    assert "0 crashed" in headline and "1 ended by the scheduler" in headline, headline
    assert "ended by the scheduler, not crashed (slurm_timeout)" in details, details
    assert "time_limit" in report.verdict.next_step
    jobs = [line for line in slurm_cluster.run(["scontrol", "show", "job", "-o"]).stdout.splitlines()
            if "JobName=ddlab-" in line]
    assert len(jobs) >= 4, "every cell was a batch job"
    assert _jobs(slurm_cluster) == [], "no job left queued or running"
    assert set(frame["node"].dropna()) == {slurm_cluster.node}, "each cell's node is kept"
    assert report.verdict.notes == [
        f"no baseline: Slurm jobs are ephemeral (nothing was stopped or put back); cells ran on "
        f"node(s) {slurm_cluster.node}"], "said once for the sweep, not per cell"
    assert report.verdict.notes[0] in report.verdict.render()


def test_ctrl_c_in_a_slurm_sweep_leaves_no_job_queued_or_running(cluster_project, slurm_cluster):
    code = textwrap.dedent(f"""
        from ddlab import api
        api.sweep(host="cluster", budget=[4, 8, 16], topk_cap=[4], cuda_graph=[False],
                  extra=[{STUCK!r}], **{OPTIONS!r})
    """)
    env = {**cluster_project.env(), "SLURM_CONF": str(slurm_cluster.conf)}
    with subprocess.Popen([sweepkit.PYTHON, "-c", code], env=env, stderr=subprocess.PIPE,
                          text=True) as proc:
        wait_for(lambda: len([j for j in _jobs(slurm_cluster) if j[2] == "RUNNING"]) >= 2
                 or proc.poll() is not None, timeout_s=120, what="two jobs running")
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    assert _jobs(slurm_cluster) == [], "Ctrl-C leaves no job queued or running"
    states = [line for line in slurm_cluster.run(["scontrol", "show", "job", "-o"]).stdout.splitlines()
              if "JobName=ddlab-" in line and "JobState=CANCELLED" in line]
    assert states, "the running jobs were cancelled"
