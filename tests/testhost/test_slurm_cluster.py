"""A real one-node Slurm (tests/testhost/slurm.py): jobs run, are seen, cancelled, time out,
and the same works from inside the test host over its sshd, as ddlab's login host will.

The session's cluster (``slurm_cluster`` in tests/conftest.py, started in about 0.3 s)
serves the module. The TIMEOUT tests are marked slow: slurmctld checks time limits every
30 s, so an expired job ends 0 - 30 s later, and a ``--time=1`` job 60 - 90 s after it starts.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import paramiko
import pytest
from testhost.slurm import BASE_DIR, SlurmCluster
from testhost.ports import free_port
from testhost.procs import alive

# the harness's own checks: make test (make check's tests use the harness and fail if it breaks)
pytestmark = [pytest.mark.testhost, pytest.mark.slow]


def _skip_unless_possible() -> None:
    reason = SlurmCluster.skip_reason()
    if reason:
        pytest.skip(f"real Slurm unavailable: {reason}")


@pytest.fixture
def slurm(slurm_cluster):
    """The session's cluster."""
    return slurm_cluster


@pytest.fixture
def cluster(slurm):
    """The module's cluster, left with no job and the node idle after each test."""
    yield slurm
    slurm.cancel_all()
    slurm.wait_idle()


def _remote(client: paramiko.SSHClient, command: str) -> tuple[int, str, str]:
    _stdin, stdout, stderr = client.exec_command(command, timeout=30)
    out, err = stdout.read().decode(), stderr.read().decode()
    return stdout.channel.recv_exit_status(), out, err


def test_the_cluster_starts_fast_with_one_idle_node_outside_tmp(slurm):
    assert slurm.start_s < 10, f"start-up took {slurm.start_s:.2f}s"
    assert slurm.dir.is_relative_to(BASE_DIR)
    assert not any(slurm.dir.is_relative_to(p) for p in ("/tmp", "/var/tmp"))
    sinfo = slurm.run(["sinfo", "-h", "-o", "%P %a %T %N"]).stdout.split("\n")
    assert f"debug* up idle {slurm.node}" in sinfo
    conf = dict(line.split("=", 1) for line in slurm.run(["scontrol", "show", "config"]).stdout
                .splitlines() if " = " in line)
    conf = {key.strip(): value.strip() for key, value in conf.items()}
    assert conf["ClusterName"] == slurm.cluster_name
    assert conf["MinJobAge"] == "86400 sec"
    assert conf["JobCompType"] == "jobcomp/filetxt"
    assert set(slurm.pids) == {"munged", "slurmctld", "slurmd"}


def test_a_job_runs_and_writes_its_output(cluster):
    job = cluster.sbatch('echo "hello from $SLURM_JOB_ID on $SLURMD_NODENAME"; pwd')
    record = cluster.wait_state(job, "COMPLETED")
    assert record["ExitCode"] == "0:0"
    assert cluster.output(job) == f"hello from {job} on {cluster.node}\n{cluster.jobs_dir}\n"
    logged = [r for r in cluster.jobcomp_records() if r["JobId"] == str(job)]
    assert [r["JobState"] for r in logged] == ["COMPLETED"]


def test_a_failing_job_ends_FAILED_with_its_exit_code(cluster):
    job = cluster.sbatch("echo about to fail; exit 3")
    record = cluster.wait_state(job, "FAILED")
    assert (record["ExitCode"], record["Reason"]) == ("3:0", "NonZeroExitCode")


def test_squeue_shows_a_running_job(cluster):
    job = cluster.sbatch("sleep 60")
    cluster.wait_state(job, "RUNNING")
    shown = cluster.run(["squeue", "-h", "-j", str(job), "-o", "%i %T %P %N"]).stdout.split()
    assert shown == [str(job), "RUNNING", "debug", cluster.node]


def test_scancel_gives_CANCELLED_and_ends_the_jobs_processes(cluster):
    job = cluster.sbatch("echo $$ > pid.$SLURM_JOB_ID; exec sleep 300")
    cluster.wait_state(job, "RUNNING")
    pid_file = cluster.jobs_dir / f"pid.{job}"
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the job never wrote its pid"
        time.sleep(0.02)
    pid = int(pid_file.read_text())
    cluster.run(["scancel", str(job)])
    record = cluster.wait_state(job, "CANCELLED")
    assert record["ExitCode"] == "0:15"
    assert not os.path.exists(f"/proc/{pid}")
    assert [r["JobState"] for r in cluster.jobcomp_records() if r["JobId"] == str(job)] == ["CANCELLED"]


def test_an_urgent_job_preempts_a_debug_job(cluster):
    low = cluster.sbatch("sleep 300", "--exclusive")
    cluster.wait_state(low, "RUNNING")
    high = cluster.sbatch("sleep 300", "--partition=urgent")
    assert cluster.wait_state(low, "PREEMPTED", timeout_s=20)["JobState"] == "PREEMPTED"
    cluster.wait_state(high, "RUNNING")


def test_a_node_going_down_ends_its_jobs_NODE_FAIL(cluster):
    job = cluster.sbatch("sleep 300")
    cluster.wait_state(job, "RUNNING")
    cluster.fail_node("test")
    try:
        record = cluster.wait_state(job, "NODE_FAIL", timeout_s=10)
    finally:
        cluster.resume_node()
    assert record["Reason"] == "NodeDown"
    cluster.wait_state(cluster.sbatch("true"), "COMPLETED")  # the node takes jobs again


def test_slurm_commands_work_inside_the_test_host_over_its_sshd(cluster, testhost):
    system_conf = Path("/etc/slurm/slurm.conf").exists()  # a machine with its own Slurm
    client = testhost.ssh_client()
    try:
        # without attach the login host needs SLURM_CONF (the munge socket is in slurm.conf)
        assert system_conf or _remote(client, "sinfo -h")[0] != 0
        rc, out, err = _remote(client, cluster.login_command(["sinfo", "-h", "-o", "%P %T"]))
        assert rc == 0, err
        assert "debug* idle" in out
        with cluster.attached(testhost):  # /etc/slurm inside the host's mount namespace only
            jobs = cluster.jobs_dir
            rc, out, err = _remote(
                client, f"sbatch --parsable --chdir={jobs} --output={jobs}/%j.out --wrap "
                        "'echo from-ssh; readlink /proc/self/ns/pid; exec sleep 300'")
            assert rc == 0, err
            job = int(out.strip())
            deadline = time.monotonic() + 15
            while _remote(client, f"squeue -h -j {job} -o %T")[1].strip() != "RUNNING":
                assert time.monotonic() < deadline, "the job never ran"
                time.sleep(0.05)
            rc, out, err = _remote(client, f"scancel {job}")
            assert rc == 0, err
            deadline = time.monotonic() + 15
            while "JobState=CANCELLED" not in _remote(client, f"scontrol show job -o {job}")[1]:
                assert time.monotonic() < deadline, "never CANCELLED"
                time.sleep(0.05)
        assert Path("/etc/slurm/slurm.conf").exists() == system_conf  # this machine's: untouched
        assert system_conf or _remote(client, "sinfo -h")[0] != 0  # detached again
    finally:
        client.close()
    first, ns = cluster.output(job).split("\n")[:2]
    assert first == "from-ssh"
    # the job ran on this machine (slurmd is here), not in the test host's pid namespace
    assert ns == os.readlink("/proc/self/ns/pid")
    assert ns != testhost.run(["readlink", "/proc/self/ns/pid"]).stdout.strip()


def test_a_jobs_server_on_loopback_is_reachable_from_the_test_host(cluster, testhost):
    (cluster.jobs_dir / "marker").write_text("served by a job")
    port = free_port()
    job = cluster.sbatch(f"exec python3 -m http.server {port} --bind 127.0.0.1")
    cluster.wait_state(job, "RUNNING")
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, cluster.output(job)
            time.sleep(0.05)
    fetch = ("import urllib.request as u; "
             f"print(u.urlopen('http://127.0.0.1:{port}/marker', timeout=10).read().decode())")
    assert testhost.run(["python3", "-c", fetch]).stdout == "served by a job\n"


def test_a_second_cluster_runs_alongside_and_stop_ends_everything_it_started(slurm):
    other = SlurmCluster().start()
    try:
        assert other.ctld_port not in (slurm.ctld_port, slurm.slurmd_port)
        assert other.cluster_name != slurm.cluster_name
        # a job that leaves a process outside its own process tree (double fork + setsid)
        job = other.sbatch("( setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > escaped ); "
                           "exec sleep 300")
        other.wait_state(job, "RUNNING")
        escaped = other.jobs_dir / "escaped"
        deadline = time.monotonic() + 10
        while not escaped.exists() or not escaped.read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        pids = [*other.pids.values(), int(escaped.read_text())]
        folder = other.dir
    finally:
        other.stop()
    left = [pid for pid in pids if alive(pid)]
    assert left == []
    assert not folder.exists()
    assert slurm.run(["sinfo", "-h", "-o", "%T"]).stdout.split()[0] in ("idle", "mixed")


def test_a_job_over_its_memory_ends_OUT_OF_MEMORY_with_cgroups():
    _skip_unless_possible()
    reason = SlurmCluster.memory_skip_reason("cgroup")
    if reason:
        pytest.skip(reason)
    with SlurmCluster(memory="cgroup") as cluster:
        job = cluster.sbatch("python3 -c 'b = bytearray(300 << 20); b[::4096] = b\"x\" * (len(b) // 4096)'",
                             "--mem=100M")
        record = cluster.wait_state(job, "OUT_OF_MEMORY", timeout_s=30)
        assert record["Reason"] == "OutOfMemory"
        cluster.wait_state(cluster.sbatch("true"), "COMPLETED")  # within its memory: fine

