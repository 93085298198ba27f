"""kill -9 (issue 6, item 2): the sweep process killed mid-cell, on the real test host.

``tests/test_sweep.py`` kills a local sweep between commits; here the kill lands
while a cell's server runs on the systemd test host (and, second case, on the
kernel of a ``ddlab run sweep``). Afterwards: the store opens cleanly, the
lock left behind names a dead pid and is taken over with a message, every
finished cell is there once, the cell in flight is marked lost and redone, and
no variant unit or server process is left on the host.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import textwrap

import faultkit as fk
import pytest

import sweepkit
from ddlab.sweeps.store import DONE_STATES, Store, integrity_ok
from ddlab.sweeps.run import run_sweep
from labkit import said, wait_for
from testhost.procs import alive

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

GRID = {"budget": [4], "topk_cap": [4], "cuda_graph": [False]}  # + 1 baseline cell
# the kill, not the figures, is under test: no probes or lossless check (a cell's server
# still runs for seconds: the kill lands in it)
OPTIONS = {**fk.SMALL, "probe": False}


def _sweep_script(bench: fk.Bench) -> list[str]:
    code = textwrap.dedent(f"""
        from ddlab.sweeps.store import Store
        from ddlab.sweeps.plan import SweepOptions, plan_sweep
        from ddlab.sweeps.run import run_sweep
        plan = plan_sweep({bench.base!r}, {GRID!r})
        run_sweep(plan, host="th", options=SweepOptions(**{OPTIONS!r}),
                  store=Store({str(bench.store_path)!r}))
    """)
    return [fk.PYTHON, "-c", code]


def _mid_cell(bench: fk.Bench, proc) -> str | None:
    """The service of a cell in flight once at least one cell is committed."""
    assert proc.poll() is None, "the sweep ended before the kill"
    service = bench.current_service()
    if fk.cells_done(bench) >= 1 and service and bench.main_pid(service):
        return service
    return None


def test_kill_9_mid_cell_on_the_test_host_then_resume(th, tmp_path):
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    with subprocess.Popen(_sweep_script(bench), env=bench.env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) as proc:
        try:
            service = wait_for(lambda: _mid_cell(bench, proc), timeout_s=120,
                               what="a cell in flight after a committed one")
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert integrity_ok(bench.store_path), "the store opens cleanly"
    with Store(bench.store_path) as store:
        sweep_id = store.latest_sweep_id()
        done_before = {h for h, s in store.cell_status(sweep_id).items() if s in DONE_STATES}
        assert store.sweep(sweep_id)["status"] == "running", "nobody could mark it"
    lock = bench.lock()
    assert lock["holder"]["pid"] == proc.pid and lock["variant"]["service"] == service
    assert bench.variants() == [service], "what kill -9 leaves: the cell's server still runs"
    assert not bench.baseline_active()

    with bench.using(), Store(bench.store_path) as store, said() as messages:
        sweep = run_sweep(resume=sweep_id, store=store)
        status = store.cell_status(sweep_id)
    assert sweep.status == "done"
    print("OUTCOME: " + " | ".join(m for m in messages if "lock" in m or "lost" in m
                                   or "stopped and removed" in m)[:600])
    taken = [m for m in messages if "taking over the lock held by" in m]
    assert taken and f"pid {proc.pid}" in taken[0] and "its process is gone" in taken[0], messages
    assert any("1 run(s) left unfinished by a killed process marked lost" in m for m in messages)
    assert any(f"stopped and removed {service}" in m for m in messages), "the orphan went first"
    assert len(status) == 2 and set(status.values()) <= set(DONE_STATES), "the full grid"
    counts = sweepkit.run_counts(bench.store_path, sweep_id)
    for config_hash, states in counts.items():
        assert sum(n for s, n in states.items() if s in DONE_STATES) == 1, states
        if config_hash in done_before:
            assert sum(states.values()) == 1, f"a finished cell ran again: {states}"
    lost = [h for h, states in counts.items() if "lost" in states]
    assert len(lost) == 1 and lost[0] not in done_before, "the interrupted cell, redone"
    bench.assert_put_back()  # no unit, no server process on the host, baseline back


@pytest.mark.parametrize("victim", ["kernel", "ddlab-run"])
def test_kill_9_of_a_ddlab_run_sweep(th, tmp_path, victim):
    """The sweep process of a ``ddlab run`` is its kernel. Killed, the run ends as failed
    with its report; ``ddlab run`` itself killed, its kernel notices the orphaning and
    exits (no clean-up: it is the same as a killed kernel, without a report). Either
    way ``-p resume latest`` takes the lock over and finishes the grid."""
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    proc = fk.popen_ddlab(bench, "run", "sweep", "-p", "host", "th", "-p", "budget", "[4]",
                          "-p", "topk_cap", "4", "-p", "cuda_graph", "false",
                          "-p", "requests", "1", "-p", "max_new_tokens", "8",
                          "-p", "max_rounds", "3", "-p", "ci_target", "0",
                          "-p", "bracket", "False", "-p", "probe", "False",
                          "-p", "warmup", "0")  # 2 cells: the kill lands in the second
    try:
        kernel = wait_for(lambda: fk.kernel_of(proc.pid), timeout_s=60, what="the kernel")
        wait_for(lambda: _mid_cell(bench, proc), timeout_s=120, what="a cell in flight")
        os.kill(kernel if victim == "kernel" else proc.pid, signal.SIGKILL)
        out, err = fk.finish(proc, timeout_s=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_dir = bench.project.runs()[-1]
    record = json.loads((run_dir / "run.json").read_text())
    if victim == "kernel":
        assert proc.returncode == 1, err[-3000:]
        assert out.startswith("FAILED: DeadKernelError: Kernel died"), out
        assert "a sweep resumes with `ddlab run sweep -p resume latest`" in out
        assert record["status"] == "failed" and (run_dir / "report.html").is_file()
    else:
        assert proc.returncode == -signal.SIGKILL and record["status"] == "running"
        wait_for(lambda: not alive(kernel), timeout_s=30, what="the orphaned kernel to exit")
    assert integrity_ok(bench.store_path)
    lock = bench.lock()
    assert lock["holder"]["pid"] == kernel and lock["variant"], "the dead kernel's lock is left"

    resumed = fk.ddlab_in(bench, "run", "sweep", "-p", "resume", "latest", timeout_s=240)
    # the verdict (why it failed) is on stdout, the progress on stderr: both, when it fails
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert re.match(r"(OK|WARNINGS): SWEEP DONE: 2 cells, 2 measured", resumed.stdout), resumed.stdout
    assert f"pid {kernel}" in resumed.stderr and "its process is gone" in resumed.stderr
    with Store(bench.store_path) as store:
        sweep_id = store.latest_sweep_id()
    counts = sweepkit.run_counts(bench.store_path, sweep_id)
    assert all(states.get("measured") == 1 for states in counts.values()), counts
    bench.assert_put_back()

RACE = """
import multiprocessing, sys, traceback
from ddlab.sweeps.store import Store

def open_store(path, barrier, errors):
    barrier.wait()
    try:
        with Store(path) as store:
            store.latest_sweep_id()
    except Exception as err:
        errors.put(f"{type(err).__name__}: {err}")

if __name__ == "__main__":
    errors = multiprocessing.Queue()
    for attempt in range(40):
        barrier = multiprocessing.Barrier(3)
        procs = [multiprocessing.Process(target=open_store, args=(f"{sys.argv[1]}/s{attempt}.sqlite",
                                                                  barrier, errors))
                 for _ in range(3)]
        [p.start() for p in procs]
        [p.join() for p in procs]
    while not errors.empty():
        print(errors.get())
"""


def test_a_new_store_opened_by_several_processes_at_once_opens_in_each(tmp_path):
    """A sweep and a plot notebook (or sweeps on two hosts) starting together: SQLite
    refuses the switch to WAL at once ("database is locked"), without its busy wait;
    the store waits instead (it failed 20 times in 450 opens before)."""
    script = tmp_path / "race.py"
    script.write_text(RACE)
    done = subprocess.run([fk.PYTHON, str(script), str(tmp_path)], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "", done.stdout[:2000]
    assert all(integrity_ok(path) for path in tmp_path.glob("s*.sqlite"))
