"""Sweeps: the plan (no host), dry runs, a real sweep on ``local`` with its replay
crash, resume by config hash, and a sweep killed with ``kill -9`` then resumed.

The real sweeps run ddlab's target server through the process manager of a
temp project (see ``sweepkit``); the store is a real SQLite file read back
with a plain connection.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

import ddlab
import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.sweeps.store import DONE_STATES, Store
from ddlab.sweeps.plan import SweepOptions, describe_grid, plan_sweep, sweep_id_for
from ddlab.sweeps.run import run_sweep
from labkit import REPLAY_FAULT, said, wait_for


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return sweepkit.shared_sweep(tmp_path_factory)


# --- the plan ------------------------------------------------------------------------


def test_plan_has_one_baseline_per_cuda_graph_value_then_the_grid_then_extras():
    plan = plan_sweep("local", {"budget": [4, 32], "topk_cap": [8], "cuda_graph": [True, False]},
                      fixed=["mem_fraction_static=0.8"], extra=[[REPLAY_FAULT]])
    roles = [(c.role, c.label) for c in plan.cells]
    assert roles == [
        ("baseline", "baseline-cuda_graph=off"), ("baseline", "baseline-cuda_graph=on"),
        ("grid", "budget=4-topk_cap=8-cuda_graph=on"), ("grid", "budget=4-topk_cap=8-cuda_graph=off"),
        ("grid", "budget=32-topk_cap=8-cuda_graph=on"), ("grid", "budget=32-topk_cap=8-cuda_graph=off"),
        ("extra", "extra-debug_drop_verify_field=positions")]
    assert [c.position for c in plan.cells] == list(range(7))
    off, on = (c.variant.config.flags for c in plan.cells[:2])  # eager first: the reference
    assert "speculative-algorithm" not in on and "speculative-ddtree-budget" not in on
    assert "disable-cuda-graph" not in on and off["disable-cuda-graph"] is True
    grid_flags = plan.cells[5].variant.config.flags
    assert grid_flags["speculative-ddtree-budget"] == 32 and grid_flags["disable-cuda-graph"] is True
    assert all(c.variant.config.flags["mem-fraction-static"] == 0.8 for c in plan.cells), "fixed: all"
    assert plan.cells[6].variant.config.flags["debug-drop-verify-field"] == "positions"


@pytest.mark.parametrize("grid, baseline, roles", [
    ({"budget": [4, 16]}, True, ["baseline", "grid", "grid"]),
    ({"budget": [4, 16]}, False, ["grid", "grid"]),
    ({"cuda_graph": [False]}, True, ["baseline", "grid"]),
], ids=["graphs-not-swept", "no-baseline", "graphs-off-only"])
def test_plan_baselines(grid, baseline, roles):
    plan = plan_sweep("local", grid, baseline=baseline)
    assert [c.role for c in plan.cells] == roles
    if baseline:
        graph = grid.get("cuda_graph", [None])[0]
        assert plan.cells[0].point == ({} if graph is None else {"cuda_graph": graph})


def test_identical_configs_are_one_cell():
    plan = plan_sweep("local", {"budget": [16, 16, 4], "speculative_ddtree_topk_cap": [4]},
                      baseline=False, extra=[["budget=4", "topk_cap=4"], ["budget=8"]])
    assert [(c.role, c.point) for c in plan.cells] == [
        ("grid", {"budget": 16, "speculative_ddtree_topk_cap": 4}),
        ("grid", {"budget": 4, "speculative_ddtree_topk_cap": 4}),
        ("extra", {"budget": 8})], "the repeated 16 and the extra equal to a grid cell are dropped"
    assert len({c.hash for c in plan.cells}) == 3


def test_ddtree_knobs_on_a_base_that_runs_another_algorithm_are_refused():
    """0.5.23's own parser refuses --speculative-ddtree-* (tools/sglang_parse.py): a DFLASH
    base swept over budget would be a grid of commands no upstream server takes."""
    with pytest.raises(ConfigError, match="base dflash: runs DFLASH, but the grid varies "
                                          "budget, topk_cap, DDTree's knobs"):
        plan_sweep("dflash")
    assert len(plan_sweep("dflash", {"cuda_graph": [True, False]}).cells) == 4
    assert plan_sweep("dflash", {"budget": [4]}, fixed={"algorithm": "DDTREE"}).cells


@pytest.mark.parametrize("kwargs, words", [
    ({"budget": 0}, "budget=0: must be an integer >= 1"),  # the key as given
    ({"grid": {"budgett": [4]}}, "did you mean budget?"),
    ({"cuda_graph": "maybe"}, "cuda_graph='maybe': must be true or false"),
    ({"topk_cap": []}, None),
    ({"requests": 0}, "requests=0: must be an integer >= 1"),
    ({"extra": [{"budget": -1}]}, "budget=-1"),
    ({"base": "nosuchbase"}, "nosuchbase"),
], ids=["budget", "key-near-miss", "cuda-graph", "empty-list-means-absent", "requests",
        "extra-cell", "base"])
def test_a_bad_key_or_value_is_refused_before_anything_touches_the_host(project, kwargs, words):
    if words is None:  # an empty list leaves the dimension out: a valid dry run
        report = ddlab.sweep(dry_run=True, budget=[4], cuda_graph=[True], **kwargs)
        assert "point.topk_cap" not in report.frame.columns and len(report.frame) == 2
    else:
        with pytest.raises(ConfigError) as info:
            ddlab.sweep(**{"budget": [4], "topk_cap": [4], "cuda_graph": [True], **kwargs})
        assert words in str(info.value)
    assert not project.state.exists(), "no lock file, no service: the host was not touched"
    assert not sweepkit.target_pids(project.port)
    assert not project.store_path.exists() or not Store(project.store_path).sweep_ids()


# --- dry runs ----------------------------------------------------------------------


def test_dry_run_says_every_cell_and_touches_nothing(project, capsys):
    plan = plan_sweep("local", {"budget": [4, 16], "topk_cap": [1, 4], "cuda_graph": [True, False]},
                      extra=[[REPLAY_FAULT]])
    with Store(project.store_path) as store:
        sweep = run_sweep(plan, dry_run=True, store=store)
        assert store.sweep_ids() == [], "a dry run registers nothing: it must not be `latest`"
    printed = capsys.readouterr().err  # ddlab's log: the plan, whoever ran it
    assert sweep.status == "dry-run" and len(plan.cells) == 11
    for cell in plan.cells:
        assert f"{cell.variant.name} " in printed and cell.label in printed and cell.hash in printed
    assert printed.count("[to run]") == 11
    assert not project.state.exists() and not (project.outputs / "sweeps").exists()


def test_dry_run_through_the_job_reports_the_plan(project):
    report = ddlab.sweep(budget=[4, 16], topk_cap=4, cuda_graph=[True, False], dry_run=True)
    assert report.verdict.headline == "DRY RUN: 6 cells planned, 6 to run; nothing touched the host"
    assert report.verdict.next_step.startswith("run it")
    assert list(report.frame["status"]) == ["pending"] * 6
    assert list(report.frame["budget"].dropna()) == [4, 4, 16, 16]
    assert not project.state.exists() and Store(project.store_path).sweep_ids() == []


@pytest.mark.slow
def test_dry_run_of_a_resume_marks_the_finished_cells(shared, capsys):
    with sweepkit.using(shared.project), Store(shared.project.store_path) as store:
        before = store.sweep(shared.sweep_id)
        sweep = run_sweep(resume=shared.sweep_id, dry_run=True, store=store)
        assert store.sweep(shared.sweep_id) == before, "nothing written"
    printed = capsys.readouterr().err
    assert printed.count("[done, skipped]") == 7 and "[to run]" not in printed
    assert sweep.skipped == shared.hashes


# --- real sweeps on local ----------------------------------------------------------


@pytest.mark.slow
def test_sweep_on_local_measures_the_grid_and_records_the_replay_crash(shared):
    with Store(shared.project.store_path) as store:
        cells = store.cells(shared.sweep_id)
        record = store.sweep(shared.sweep_id)
    assert record["status"] == "done" and record["resume_command"].endswith(shared.sweep_id)
    assert [c["status"] for c in cells] == ["measured"] * 6 + ["crashed"]
    crash = cells[6]["verdict"]
    assert crash["kind"] == "cuda_graph_replay" and crash["phase"] == "serving"
    assert cells[6]["metrics"] is None
    for cell in cells[:6]:
        metrics = cell["metrics"]
        assert metrics["n_ok"] == 2 and metrics["output_tok_s"] > 0
        assert (metrics["accept_length"] is None) == (cell["role"] == "baseline")
        folder = Path(cell["run_dir"])
        assert {"journal.log", "verdict.json", "bench.json", "config.json"} <= {
            p.name for p in folder.iterdir()}
        assert json.loads((folder / "bench.json").read_text())["config"]["warmup"] == 1
    assert "journal.log" in {p.name for p in Path(cells[6]["run_dir"]).iterdir()}
    assert any("cell 7/7: crashed (cuda_graph_replay)" in m for m in shared.messages)
    sweepkit.assert_host_put_back(shared.project)


@pytest.mark.slow
def test_resume_of_a_finished_sweep_runs_nothing_again(shared):
    before = sweepkit.run_counts(shared.project.store_path, shared.sweep_id)
    with sweepkit.using(shared.project), Store(shared.project.store_path) as store, \
            said() as messages:
        sweep = run_sweep(resume=shared.sweep_id, store=store)
    assert sweep.status == "done" and sweep.finished == []
    assert sweep.skipped == shared.hashes, "matched by config hash"
    assert sweepkit.run_counts(shared.project.store_path, shared.sweep_id) == before
    assert not any("started" in m for m in messages), messages


@pytest.mark.slow
def test_resume_of_an_unknown_sweep_lists_the_known_ones(shared):
    with Store(shared.project.store_path) as store, pytest.raises(ConfigError) as info:
        run_sweep(resume="no-such-sweep", store=store)
    assert "resume='no-such-sweep': no such sweep" in str(info.value)
    assert shared.sweep_id in str(info.value)


@pytest.mark.slow
def test_a_sweep_killed_with_kill_9_and_resumed_runs_no_finished_cell_twice(project):
    """The issue's Must-show: kill -9 midway, resume, the full grid, nothing twice. (A grid
    of 2 and its baseline: 3 cells, killed after the first committed one.)"""
    grid = {"budget": [4, 8], "topk_cap": [4], "cuda_graph": [False]}
    with subprocess.Popen(sweepkit.sweep_script(project, grid), env=project.env(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as child:
        try:
            sweep_id = wait_for(lambda: _first_done(project), timeout_s=90,
                                what="a first committed cell")
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    with Store(project.store_path) as store:
        done_before = {h for h, s in store.cell_status(sweep_id).items() if s in DONE_STATES}
    lock = json.loads(project.lock_path.read_text())
    assert lock["holder"]["pid"] == child.pid, "the killed run left its lock behind"
    assert 1 <= len(done_before) < 3, "killed midway"

    with Store(project.store_path) as store, said() as messages:
        sweep = run_sweep(resume=sweep_id, store=store)
        status = store.cell_status(sweep_id)
    assert sweep.status == "done"
    assert any("taking over the lock held by" in m and f"pid {child.pid}" in m
               and "its process is gone" in m for m in messages), messages
    assert len(status) == 3 and set(status.values()) <= set(DONE_STATES), "the full grid"
    assert set(sweep.skipped) == done_before and not done_before & set(sweep.finished)
    counts = sweepkit.run_counts(project.store_path, sweep_id)
    for config_hash in status:
        finished_runs = sum(n for state, n in counts[config_hash].items() if state in DONE_STATES)
        assert finished_runs == 1, (config_hash, counts[config_hash])
    for config_hash in done_before:
        assert sum(counts[config_hash].values()) == 1, "a cell finished before the kill never ran again"
    states = {state for per_cell in counts.values() for state in per_cell}
    assert states <= {*DONE_STATES, "lost"}, "the killed run's cell in flight is marked lost"
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_a_sweep_killed_the_moment_a_cells_outcome_is_written_never_runs_that_cell_again(project):
    """The store records a run's outcome and its cell's as one commit: a kill -9 right after
    the first outcome is written (the moment CI once caught, between the two writes) leaves
    that cell finished, and the resume skips it."""
    grid = {"budget": [4], "topk_cap": [4], "cuda_graph": [False]}
    child = subprocess.run(sweepkit.sweep_script(project, grid, prelude=sweepkit.KILL_AT_FIRST_OUTCOME),
                           env=project.env(), capture_output=True, text=True, timeout=180)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    with Store(project.store_path) as store:
        sweep_id = store.latest_sweep_id()
        done_before = {h for h, s in store.cell_status(sweep_id).items() if s in DONE_STATES}
    first = sweepkit.run_counts(project.store_path, sweep_id)
    finished_first = {h for h, states in first.items() if set(states) & set(DONE_STATES)}
    assert len(finished_first) == 1 and done_before == finished_first, (first, done_before)

    with Store(project.store_path) as store:
        sweep = run_sweep(resume=sweep_id, store=store)
    assert sweep.status == "done" and set(sweep.skipped) == done_before
    counts = sweepkit.run_counts(project.store_path, sweep_id)
    assert len(counts) == 2 and all(sum(states.values()) == 1 for states in counts.values()), counts
    sweepkit.assert_host_put_back(project)


def _first_done(project) -> str | None:
    """The sweep's id once one of its cells is committed as finished."""
    if not project.store_path.exists():
        return None
    with Store(project.store_path) as store:
        sweep_id = store.latest_sweep_id()
        if sweep_id and any(s in DONE_STATES for s in store.cell_status(sweep_id).values()):
            return sweep_id
    return None


def test_sweep_options_are_checked_before_the_host():
    with pytest.raises(ConfigError) as info:
        SweepOptions(grace_s=-1)
    assert "grace_s=-1: must be a finite number of seconds >= 0" in str(info.value)


@pytest.mark.parametrize("base, grid, extra, words, described", [
    ("local", {"budget": [4, 16, 32], "topk_cap": [1, 4], "cuda_graph": [True, False]},
     [[REPLAY_FAULT]], "local-b4.16.32-cap1.4-graphs-1extra",
     "budget 4,16,32 × cap 1,4 × graphs on,off + 1 extra"),
    ("local", {"mem_fraction_static": [0.8, 0.9], "cuda_graph": [False], "budget": [8]}, [],
     "local-b8-nograph-mem0p8.0p9", "budget 8 × graphs off × mem_fraction_static 0.8,0.9"),
    ("ddtree", {"budget": [32]}, [], "local-ddtree-b32", "budget 32"),
], ids=["demo", "other-dimension", "other-base"])
def test_a_sweep_id_and_its_title_say_what_it_sweeps(base, grid, extra, words, described):
    plan = plan_sweep(base, grid, extra=extra)
    assert re.fullmatch(rf"\d{{8}}T\d{{6}}Z-{re.escape(words)}",
                        sweep_id_for(plan, "local", "local"))  # the base named when not the host's
    assert describe_grid(plan.grid, plan.extra) == described


def test_cells_are_named_by_what_they_change_not_by_the_fixed_overrides():
    """Lesson 3: every cell has the fixed overrides, so a name that spells them is noise
    (the H200 run's cells were `...-device-cuda-env-pythonpath-...`); the config and its
    hash still hold them."""
    plan = plan_sweep("local", {"budget": [4, 32], "cuda_graph": [True, False]},
                      fixed=["device=cuda", "env.PYTHONPATH=/opt/wheels", "mem_fraction_static=0.8"])
    names = [c.variant.name for c in plan.cells]
    assert names == ["local-nospec-nograph", "local-nospec", "local-b4", "local-b4-nograph",
                     "local-b32", "local-b32-nograph"], names
    for cell in plan.cells:
        assert cell.variant.config.env["PYTHONPATH"] == "/opt/wheels"
        assert cell.variant.config.flags["mem-fraction-static"] == 0.8
        assert "mem-fraction-static" in cell.variant.changes, "what it runs still says so"
    bare = plan_sweep("local", {"budget": [4, 32], "cuda_graph": [True, False]})
    assert {c.hash for c in plan.cells}.isdisjoint(c.hash for c in bare.cells)


@pytest.mark.slow
def test_a_ctrl_c_that_threading_turned_into_another_error_is_an_interrupted_sweep(tmp_path, monkeypatch):
    """A Ctrl-C landing in a thread wait's lock restore reaches the sweep as RuntimeError('release
    unlocked lock'), raised while the KeyboardInterrupt was handled (CPython 3.11.7
    Lib/threading.py:283, :336): the sweep is interrupted, its cell's run marked interrupted (a
    resume runs it again) and the host put back. Before: the sweep was called failed, with the
    run left running."""
    import ddlab.sweeps.run as running

    def ctrl_c_while_measuring(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("release unlocked lock")

    monkeypatch.setattr(running, "measure", ctrl_c_while_measuring)
    project = sweepkit.make_project(tmp_path)
    with sweepkit.using(project), Store(project.store_path) as store:
        plan = plan_sweep("local", {"budget": [4], "cuda_graph": [False]}, baseline=False)
        with pytest.raises(KeyboardInterrupt):
            run_sweep(plan, host="local", options=SweepOptions(**sweepkit.FAST_OPTIONS), store=store)
        sweep_id = store.latest_sweep_id()
        assert store.sweep(sweep_id)["status"] == "interrupted"
        states = [row[0] for row in store.db.execute("SELECT state FROM runs WHERE sweep_id = ?", (sweep_id,))]
    assert states == ["interrupted"], states
    sweepkit.assert_host_put_back(project)
