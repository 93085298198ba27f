"""Interrupts (issue 6, item 1): SIGINT (and SIGTERM) to ``ddlab watch``, to a
papermill-run sweep notebook's kernel and to ``ddlab run sweep``, during start-up
(``ddlab watch`` and papermill), during the bench (``ddlab run``) and during the restore
(all three): the kernel's code is the same whoever sends the SIGINT.

Whatever the moment: the baseline ends active (and answering ``/health``), the
variant is gone, the lock is released, finished cells are in the store once,
the output says how to resume, and resuming completes the grid.

For the restore moment the baseline is a server that answers ``/health`` only
2 s after it starts, with ``baseline_port`` set (``faultkit``'s ``slow``
baseline), so a restore waits for ``/health`` for seconds, as a real SGLang
restore does for minutes; elsewhere a process that just runs.
"During start-up" uses a server frozen with SIGSTOP right after it was
started (a start-up hang), so the moment cannot slip past.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import faultkit as fk
import pytest

import sweepkit
from ddlab.sweeps.store import DONE_STATES, Store, integrity_ok
from labkit import KV_OOM, REPO, last_json, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PAPERMILL = str(Path(sys.executable).with_name("papermill"))
GRID = ["-p", "budget", "[4]", "-p", "topk_cap", "4", "-p", "cuda_graph", "false",  # 2 cells
        # the interrupt, not the figures, is under test: one round a cell, no re-measuring,
        # no probes or lossless check (READY comes after them: the bench moment's window is
        # its bench alone either way)
        "-p", "max_rounds", "3", "-p", "ci_target", "0", "-p", "bracket", "False",
        "-p", "probe", "False"]
# a bench of ~2 s to hit, in one round (the resume measures both cells again the same way)
BENCH_SIZE = ["-p", "requests", "8", "-p", "max_new_tokens", "128"]
QUICK_SIZE = ["-p", "requests", "1", "-p", "max_new_tokens", "8", "-p", "warmup", "0"]


@pytest.fixture(scope="module")
def th_slow(testhost, tmp_path_factory):
    """The test host (systemd over SSH) with a slow baseline."""
    with fk.bench_for(tmp_path_factory.mktemp("interrupts-th"), testhost, baseline="slow") as bench:
        yield bench


@pytest.fixture(scope="module")
def th_quick(testhost, tmp_path_factory):
    with fk.bench_for(tmp_path_factory.mktemp("interrupts-thq"), testhost) as bench:
        yield bench


@pytest.fixture(scope="module")
def local_slow(tmp_path_factory):
    """This machine (process manager) with a slow baseline."""
    with fk.bench_for(tmp_path_factory.mktemp("interrupts-local"), baseline="slow") as bench:
        yield bench


@pytest.fixture(scope="module")
def local_quick(tmp_path_factory):
    with fk.bench_for(tmp_path_factory.mktemp("interrupts-localq")) as bench:
        yield bench


def _fresh(bench: fk.Bench, tmp_path: Path) -> fk.Bench:
    """The bench as a test must find it: baseline running (and answering, when it is a
    server), nothing deployed; its own outputs folder."""
    wait_for(bench.baseline_active, timeout_s=60, what="the baseline to run before the test")
    if bench.baseline_port:
        wait_for(lambda: fk.answers(bench, bench.baseline_port), timeout_s=60,
                 what="the baseline to answer before the test")
    assert bench.lock() is None and bench.variants() == []
    bench.project.outputs = tmp_path / "outputs"
    return bench


def _put_back_and_answering(bench: fk.Bench) -> None:
    bench.assert_put_back()
    if bench.baseline_port:
        assert fk.answers(bench, bench.baseline_port), "the baseline answers /health"


# --- ddlab watch -----------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ddlab_watch_interrupted_during_start_up_restores(th_quick, tmp_path, sig):
    bench = _fresh(th_quick, tmp_path)
    deployed = fk.ddlab_in(bench, "deploy", "--host", "th")
    assert deployed.returncode == 0, deployed.stderr
    service = bench.current_service()
    bench.signal_service(service, signal.SIGSTOP)  # frozen in start-up: never ready on its own
    watch = fk.popen_ddlab(bench, "watch", "--host", "th", "--probe", "--timeout", "300")
    wait_for(lambda: (bench.lock() or {}).get("holder", {}).get("pid") == watch.pid,
             timeout_s=60, what="the watch to hold the lock")
    wait_for(lambda: fk.in_phase(bench, "[watch "), timeout_s=30, what="the watch's first heartbeat")
    sent = fk.interrupt(watch.pid, sig)
    out, err = fk.finish(watch, timeout_s=120)
    took_s = time.monotonic() - sent
    assert watch.returncode == 130, err[-3000:]
    verdict = last_json(out)
    print(f"OUTCOME: {sig.name} in start-up: exit 130, restored {took_s:.1f} s after the signal; "
          f"{verdict['headline']}")
    assert verdict["state"] == "interrupted" and verdict["variant"] == bench.base, verdict
    assert "watch interrupted; the record is in" in err and "variant removed, baseline back" in err
    assert "ddlab deploy --host th" in err, "says how to go on"
    assert took_s < 60, f"restore after the interrupt took {took_s:.1f} s"
    assert json.loads((Path(verdict["run_dir"]) / "verdict.json").read_text())["state"] == "interrupted"
    _put_back_and_answering(bench)


def test_ddlab_watch_interrupted_during_the_restore_finishes_it_first(th_slow, tmp_path):
    """The variant crashes, the watch restores; SIGINT while the baseline is still starting
    is held until the baseline answers; the crash verdict is still printed."""
    bench = _fresh(th_slow, tmp_path)
    deployed = fk.ddlab_in(bench, "deploy", "--host", "th", "--set", KV_OOM)
    assert deployed.returncode == 0, deployed.stderr
    assert not bench.baseline_active()
    watch = fk.popen_ddlab(bench, "watch", "--host", "th", "--timeout", "120")
    wait_for(bench.baseline_active, timeout_s=90, what="the restore to start the baseline")
    assert not fk.answers(bench, bench.baseline_port), "interrupting inside the restore's wait"
    fk.interrupt(watch.pid)
    out, err = fk.finish(watch, timeout_s=120)
    assert watch.returncode == 130, err[-3000:]
    assert "restoring the baseline first (interrupt held until it is done)" in err
    verdict = last_json(out)
    assert (verdict["state"], verdict["kind"]) == ("crashed", "kv_pool_oom"), \
        "the verdict the watch reached is kept"
    assert "baseline back" in err
    _put_back_and_answering(bench)


# --- sweeps: papermill's kernel and ddlab run ---------------------------------------------


def _baseline(moment: str) -> str:
    """A slow baseline where the moment is its restore; a quick one elsewhere (cheaper)."""
    return "slow" if moment == "restore" else "quick"


def _reach(bench: fk.Bench, moment: str, proc: subprocess.Popen) -> None:
    """Wait until the sweep driven by ``proc`` is at ``moment``; fail if it ended first."""
    def alive(value):
        assert proc.poll() is None, f"the sweep ended before {moment}: {proc.communicate()}"
        return value

    if moment == "start-up":
        service = wait_for(lambda: alive(bench.current_service()), timeout_s=120,
                           what="the first cell's server to start")
        bench.signal_service(service, signal.SIGSTOP)  # a hang in start-up
        wait_for(lambda: alive(fk.in_phase(bench, "[watch ")), timeout_s=60,
                 what="the first cell's watch")
        assert fk.cells_done(bench) == 0
    elif moment == "bench":
        wait_for(lambda: alive(fk.in_phase(bench, "READY:")), timeout_s=120,
                 what="a ready cell, whose bench starts now")
        assert not (fk.in_phase(bench, "READY:") / "bench.json").exists(), "still benching"
    else:
        wait_for(lambda: alive(fk.cells_done(bench) == 2), timeout_s=180, what="every cell")
        wait_for(lambda: alive(bench.baseline_active()), timeout_s=60,
                 what="the restore to start the baseline")
        assert not fk.answers(bench, bench.baseline_port), "interrupting inside the restore's wait"


def _store_after_interrupt(bench: fk.Bench) -> tuple[str, set]:
    assert integrity_ok(bench.store_path)
    with Store(bench.store_path) as store:
        sweep_id = store.latest_sweep_id()
        assert store.sweep(sweep_id)["status"] == "interrupted"
        done = {h for h, s in store.cell_status(sweep_id).items() if s in DONE_STATES}
    return sweep_id, done


def _assert_resumed(bench: fk.Bench, sweep_id: str, done_before: set) -> None:
    counts = sweepkit.run_counts(bench.store_path, sweep_id)
    assert len(counts) == 2, counts
    for config_hash, states in counts.items():
        assert states.get("measured") == 1, (config_hash, states)
        if config_hash in done_before:
            assert sum(states.values()) == 1, f"a finished cell ran again: {states}"
    with Store(bench.store_path) as store:
        assert store.sweep(sweep_id)["status"] == "done"
    _put_back_and_answering(bench)


def _papermill(bench: fk.Bench, out: Path, *params: str) -> subprocess.Popen:
    return subprocess.Popen([PAPERMILL, "notebooks/sweep.ipynb", str(out), "--no-progress-bar",
                             "-p", "host", bench.host, *params],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env=bench.env())


def _first_output(path: Path) -> str:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get("text/plain", output.get("text", ""))
            return "".join(data) if isinstance(data, list) else data
    return ""


def _notebook_text(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join(json.dumps(o) for c in nb["cells"] for o in c.get("outputs", []))


# No "bench" moment here: a SIGINT mid-bench is the same KeyboardInterrupt in the same kernel
# code (ddlab.sweep's bench) whoever sends it, and test_sigint_to_ddlab_run_sweep[bench] has
# it; the start-up and restore moments check what is papermill's own (the notebook's first
# output and resume line, papermill -p resume latest). A bench moment here cost 15 CPU-s.
@pytest.mark.parametrize("moment", ["start-up", "restore"])
def test_sigint_to_the_sweep_notebooks_kernel(request, tmp_path, moment):
    """papermill notebooks/sweep.ipynb ...; SIGINT to the kernel (what Jupyter's
    'interrupt kernel' sends); then papermill -p resume latest."""
    bench = _fresh(request.getfixturevalue(f"local_{_baseline(moment)}"), tmp_path)
    out = tmp_path / "sweep.ipynb"
    proc = _papermill(bench, out, *GRID, *QUICK_SIZE)
    try:
        kernel = wait_for(lambda: fk.kernel_of(proc.pid), timeout_s=60, what="the kernel")
        _reach(bench, moment, proc)
        fk.interrupt(kernel)
        _, err = fk.finish(proc, timeout_s=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-3000:]
    sweep_id, done = _store_after_interrupt(bench)
    first = _first_output(out)
    assert first.startswith("SWEEP INTERRUPTED: 2 cells"), first
    assert f"resume it: ddlab run sweep -p resume {sweep_id}" in first, "the verdict says how"
    assert f"[sweep] resume with: ddlab run sweep -p resume {sweep_id}" in _notebook_text(out)
    assert len(done) == {"start-up": 0, "restore": 2}[moment]
    _put_back_and_answering(bench)

    resumed = _papermill(bench, tmp_path / "resumed.ipynb", "-p", "resume", "latest")
    _, err = fk.finish(resumed, timeout_s=240)
    assert resumed.returncode == 0, err[-3000:]
    assert _first_output(tmp_path / "resumed.ipynb").startswith("SWEEP DONE: 2 cells, 2 measured")
    _assert_resumed(bench, sweep_id, done)


# No "start-up" moment here: the kernel's code for a SIGINT in a cell's start-up is the
# papermill test's (test_sigint_to_the_sweep_notebooks_kernel[start-up]); putting a frozen
# server on the test host back after a SIGINT in its start-up is
# test_ddlab_watch_interrupted_during_start_up_restores (the same Lab restore); ddlab run's own
# output on an interrupt, and a resume of a sweep with no finished cell over ddlab run on the
# test host, are the bench moment's. A start-up moment here cost 10 CPU-s.
@pytest.mark.parametrize("moment", ["bench", "restore"])
def test_sigint_to_ddlab_run_sweep(request, tmp_path, moment):
    """ddlab run sweep on the test host; SIGINT to ddlab run (forwarded to its kernel)."""
    bench = _fresh(request.getfixturevalue(f"th_{_baseline(moment)}"), tmp_path)
    size = BENCH_SIZE if moment == "bench" else QUICK_SIZE
    proc = fk.popen_ddlab(bench, "run", "sweep", "-p", "host", "th", *GRID, *size)
    try:
        _reach(bench, moment, proc)
        fk.interrupt(proc.pid)
        out, err = fk.finish(proc, timeout_s=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    sweep_id, done = _store_after_interrupt(bench)
    assert out.startswith("INTERRUPTED: SWEEP INTERRUPTED: 2 cells"), out
    assert "interrupted: finished cells are kept" in out
    assert f"[sweep] resume with: ddlab run sweep -p resume {sweep_id}" in err
    run_dir = bench.project.runs()[-1]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    assert json.loads((run_dir / "verdict.json").read_text())["next_step"] == \
        f"resume it: ddlab run sweep -p resume {sweep_id}"
    assert len(done) == {"bench": 0, "restore": 2}[moment]
    _put_back_and_answering(bench)

    resumed = fk.ddlab_in(bench, "run", "sweep", "-p", "resume", sweep_id, timeout_s=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert re.match(r"(OK|WARNINGS): SWEEP DONE: 2 cells, 2 measured", resumed.stdout), resumed.stdout
    _assert_resumed(bench, sweep_id, done)
