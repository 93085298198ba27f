"""Server faults (issue 6, item 4): a crash loop under ``Restart=always``, a server
that hangs before it is ready, and a server that dies in the middle of the bench.

All on real servers (ddlab's target) with faults from its existing switches or
from outside (signals), never a fault mode added to the target: the crash loop
is ``mem_fraction_static=0.001`` (the KV pool does not fit) under
``unit.restart=always``; the hang is the server frozen with SIGSTOP during
start-up (a process stuck in a driver or on a dead file system looks the same
from outside); the mid-bench deaths are the server killed with SIGKILL during
the bench, and the replay fault (``debug_drop_verify_field``) with the probe
off, which is ready and dies on the bench's first speculative verify.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import faultkit as fk
import pytest

from ddlab.config.variants import make_variant
from ddlab.diagnosis.diagnosis import phase_of
from ddlab.lab.deploy import deployed
from ddlab.sweeps.store import Store
from ddlab.sweeps.plan import SweepOptions, plan_sweep
from ddlab.sweeps.run import run_sweep
from ddlab.lab.watch import watch
from labkit import KV_OOM, REPLAY_FAULT, last_json, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(params=["systemd-ssh", "process-local"])
def bench(request, tmp_path):
    bench = request.getfixturevalue("th" if request.param == "systemd-ssh" else "local")
    bench.project.outputs = tmp_path / "outputs"
    assert bench.baseline_active() and bench.lock() is None and bench.variants() == []
    yield bench
    if bench.lock() is not None:
        fk.ddlab_in(bench, "restore", "--host", bench.host)


# --- a crash loop under Restart=always --------------------------------------------------


def test_a_crash_loop_under_restart_always_is_a_crash_with_its_restart_count(th, tmp_path):
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    deploy = fk.ddlab_in(bench, "deploy", "--host", "th", "--set", KV_OOM,
                         "--set", "unit.restart=always", "--set", "unit.restart_sec=0.3")
    assert deploy.returncode == 0, deploy.stderr
    service = bench.current_service()
    wait_for(lambda: bench.manager.state(service).n_restarts >= 2, timeout_s=60,
             what="systemd to restart the crashing server twice")
    started = time.monotonic()
    watched = fk.ddlab_in(bench, "watch", "--host", "th", "--probe", "--timeout", "60")
    assert watched.returncode == 3, watched.stderr[-3000:]
    verdict = last_json(watched.stdout)
    print(f"OUTCOME: {verdict['headline']}")
    assert verdict["state"] == "crashed" and verdict["kind"] == "kv_pool_oom", verdict
    assert verdict["restarts"] >= 2, "the restart count since ddlab started it"
    assert f"{verdict['restarts']} restarts" in verdict["headline"]
    assert verdict["probes"] == [], "never ready, never probed"
    assert time.monotonic() - started < 30
    bench.assert_put_back()


def test_a_crash_loop_in_a_sweep_is_recorded_as_crashed(th, tmp_path):
    bench = th
    bench.project.outputs = tmp_path / "outputs"
    with bench.using(), Store(bench.store_path) as store:
        plan = plan_sweep(bench.base, {"budget": [4]}, baseline=False,
                          extra=[[KV_OOM, "unit.restart=always", "unit.restart_sec=0.2"]])
        sweep = run_sweep(plan, host="th", options=SweepOptions(**fk.CHEAP), store=store)
        cells = store.cells(sweep.sweep_id)
    assert [c["status"] for c in cells] == ["measured", "crashed"]
    assert cells[1]["verdict"]["kind"] == "kv_pool_oom" and cells[1]["metrics"] is None
    bench.assert_put_back()


# --- a hang before ready ----------------------------------------------------------------


def test_a_server_that_hangs_before_ready_ends_as_timeout_with_the_log_tail(bench):
    with bench.using():
        variant = make_variant(bench.base, [])
        with deployed(bench.profile, variant) as (lab, dep):
            wait_for(lambda: "Load weight begin" in lab.manager.logs(dep.service), timeout_s=60,
                     what="the server to begin loading weights")
            bench.signal_service(dep.service, signal.SIGSTOP)
            started = time.monotonic()
            verdict = watch(lab, timeout_s=4, heartbeat_s=1)
            took_s = time.monotonic() - started
        restore_s = time.monotonic() - started - took_s
    print(f"OUTCOME: {bench.host}: {verdict.headline}; watch {took_s:.1f} s, restore {restore_s:.1f} s; "
          f"last line {verdict.log_tail[-1][:120]!r}")
    assert verdict.state == "timeout" and not verdict.diagnosis.crashed, verdict.render()
    assert verdict.headline.startswith(f"TIMEOUT: {variant.name} on {bench.host} not ready after 4 s")
    journal = (Path(verdict.run_dir) / "journal.log").read_text()
    assert verdict.diagnosis.phase == phase_of(journal), "stuck where the log stopped"
    assert verdict.diagnosis.phase in ("load_weights", "memory_pool", "graph_capture")
    assert any("Load weight begin" in line for line in verdict.log_tail), verdict.log_tail
    assert verdict.log_tail[-1] == journal.strip().splitlines()[-1], "the tail ends where it hung"
    saved = json.loads((Path(verdict.run_dir) / "verdict.json").read_text())
    assert saved["state"] == "timeout" and saved["log_tail"] == verdict.log_tail
    assert 4 <= took_s < 10, f"the watch took {took_s:.1f} s for a 4 s timeout"
    assert restore_s < 15, f"removing the frozen server took {restore_s:.1f} s"
    bench.assert_put_back()


# --- death in the middle of the bench -------------------------------------------------


def test_servers_that_die_mid_bench_are_crashed_cells_with_their_diagnosis(bench):
    """Three cells, probe off: one measured, one SIGKILLed during its bench, one that
    crashes on the bench's first verify (the replay fault)."""
    killed = []

    def kill_second_cell_mid_bench():
        folder = wait_for(lambda: _benching(bench, "budget=8"), timeout_s=120,
                          what="the second cell's bench")
        service = bench.current_service()
        killed.append((folder, bench.signal_service(service, signal.SIGKILL)))

    killer = threading.Thread(target=kill_second_cell_mid_bench, daemon=True)
    killer.start()
    options = SweepOptions(requests=8, max_new_tokens=128, warmup=1, probe=False, grace_s=0,
                           timeout_s=60, ci_target=None, bracket=False)  # one round a cell
    with bench.using(), Store(bench.store_path) as store:
        plan = plan_sweep(bench.base, {"budget": [4, 8]}, baseline=False, extra=[[REPLAY_FAULT]])
        sweep = run_sweep(plan, host=bench.host, options=options, store=store)
        cells = store.cells(sweep.sweep_id)
    killer.join(timeout=10)
    assert killed, "the second cell was killed during its bench"
    assert sweep.status == "done"
    assert [c["status"] for c in cells] == ["measured", "crashed", "crashed"]
    dead = cells[1]["verdict"]
    print(f"OUTCOME: {bench.host}: killed mid-bench: {dead['headline']}; replay: "
          f"{cells[2]['verdict']['headline']}")
    assert dead["kind"] == "unknown" and dead["phase"] == "serving", dead
    assert ("killed by signal 9" in dead["cause"]                       # process manager
            or "code=killed, status=9/KILL" in dead["cause"]), dead     # systemd's own line
    assert cells[1]["metrics"] is None
    replay = cells[2]["verdict"]
    assert (replay["kind"], replay["phase"]) == ("cuda_graph_replay", "serving"), replay
    assert "--disable-cuda-graph" in replay["suggestion"]
    for cell in cells[1:]:
        folder = Path(cell["run_dir"])
        assert {"journal.log", "verdict.json", "bench.json"} <= {p.name for p in folder.iterdir()}
        bench_json = json.loads((folder / "bench.json").read_text())
        assert bench_json["summary"]["n_failed"] >= 1, "the bench saw the death"
    bench.assert_put_back()


def _benching(bench: fk.Bench, label: str) -> Path | None:
    folder = fk.in_phase(bench, "READY:")
    if folder is not None and folder.name.endswith(label) and not (folder / "bench.json").exists():
        return folder
    return None
