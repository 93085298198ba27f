"""Load (issue 6, item 7): a sweep against the local target and against the systemd
test host, run to the end in this process, leaks nothing. The long figure (50 cells)
is a benchmark, ``bench/load.py``, with its results in docs/performance.md; the
suite proves the behaviour on a few cells.

Counted before and after (after a one-cell warm-up sweep, so lazily created
things — paramiko's and httpx's — are already there): this process's open file
descriptors, threads (Python's and the kernel's tasks), child processes and
listening sockets (the SSH tunnels' local ends), target servers on the sweep's
port, and the test host's sshd session processes (SSH connections). During
the sweep the test host's sshd session processes are sampled: one persistent
connection (as many processes as the test's own one), however many cells.

Cells are cheap (one request of 8 tokens, no probe): the target's start-up
dominates, about 2-3 s a cell on 2 cores.
"""

from __future__ import annotations

import threading
import time

import faultkit as fk
import pytest

from ddlab.sweeps.store import Store
from ddlab.sweeps.plan import SweepOptions, plan_sweep
from ddlab.sweeps.run import run_sweep

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

GRID = {"budget": [1, 3], "topk_cap": [4]}  # 2 cells: a leak per cell shows as 2


@pytest.fixture(params=["process-local", "systemd-ssh"])
def bench(request, tmp_path_factory):
    testhost = request.getfixturevalue("testhost") if request.param == "systemd-ssh" else None
    with fk.bench_for(tmp_path_factory.mktemp(f"load-{request.param}"), testhost) as bench:
        yield bench


def _sweep(bench: fk.Bench, grid: dict) -> tuple:
    with bench.using(), Store(bench.store_path) as store:
        plan = plan_sweep(bench.base, grid, baseline=False)
        sweep = run_sweep(plan, host=bench.host, options=SweepOptions(**fk.CHEAP), store=store)
        return sweep, store.cells(sweep.sweep_id)


def test_a_sweep_runs_to_the_end_and_leaks_nothing(bench, capsys):
    warm, _ = _sweep(bench, {"budget": [2]})
    assert warm.status == "done"
    before = fk.settled(fk.resources(bench), bench, timeout_s=5)
    sessions = []
    stop = threading.Event()

    def sample():
        while not stop.wait(0.5):
            if bench.testhost is not None:
                sessions.append(len(bench.testhost.sshd_session_pids()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        sweep, cells = _sweep(bench, GRID)
    finally:
        stop.set()
        sampler.join()
    took_s = time.monotonic() - started
    after = fk.settled(before, bench)
    with capsys.disabled():
        print(f"\n{len(cells)}-cell sweep on {bench.host} ({bench.profile.service_manager}): {took_s:.0f} s, "
              f"{took_s / len(cells):.2f} s/cell; before {before}; after {after}; "
              f"ssh sessions during: max {max(sessions, default=0)}")
    assert sweep.status == "done"
    assert len(cells) == 2 and {c["status"] for c in cells} == {"measured"}
    assert all(c["metrics"]["n_ok"] == 1 for c in cells)
    assert after == before, f"leaked: before {before}, after {after}"
    if bench.testhost is not None:  # before: the bench's own one connection
        assert max(sessions) <= 2 * before["ssh_sessions"], \
            f"one connection for the whole sweep; sampled {sorted(set(sessions))}"
    bench.assert_put_back()
