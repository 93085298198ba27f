"""The workload sweep in the user's words (issue 27): plain papermill on the sweep notebook
with ``-p concurrency '[1, 4, 16]'`` from the copy's root, the venv's papermill, no
``DDLAB_*``: the run folder keeps the crossover in its verdict, ``levels.csv`` and a report
with the Pareto and the speedup by concurrency; every cell's server started once.

The -p options after the issue's command shrink the grid to one config and its baseline
and each level to a few short rounds (the grid's size is what tests/sweeps/test_workload.py
and the measured runs in docs/results.md cover, not this tier).
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(900)

TYPED = "papermill notebooks/sweep.ipynb out.ipynb -p budget 16 -p concurrency '[1, 4, 16]'"
SMALL = ("-p topk_cap 4 -p cuda_graph False -p requests 2 -p max_new_tokens 16 -p max_rounds 3 "
         "-p bracket False")


def test_papermill_workload_sweep_says_where_speculation_stops_paying(user):
    outputs = user.clone / "outputs"
    command = f"{TYPED} {SMALL}"
    with user.local():
        before = {p.parent for p in outputs.glob("*/run.json")}
        done = user.shell(command, cwd=user.clone, timeout_s=800)
        new = sorted({p.parent for p in outputs.glob("*/run.json")} - before)
    (user.clone / "out.ipynb").unlink(missing_ok=True)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr[-4000:]}"
    assert len(new) == 1, new
    run_dir = new[0]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["parameters"]["concurrency"] in ("[1, 4, 16]", [1, 4, 16]), run["parameters"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["headline"].startswith("SWEEP DONE: 2 cells x 3 levels"), verdict["headline"]
    assert verdict["workload"]["levels"] == [1, 4, 16]
    (config,) = verdict["workload"]["crossover"]
    assert f"crossover: {config['words']}" in verdict["details"]
    assert "workload: 2 cells x 3 levels (1, 4, 16) = 6 measurements" in done.stderr  # said first
    levels = (run_dir / "levels.csv").read_text().splitlines()
    assert len(levels) == 1 + 2 * 3  # a header, a row per cell and level
    page = (run_dir / "report.html").read_text()
    assert "Under load: Pareto and speedup by concurrency" in page
    sweep = outputs / "sweeps" / verdict["sweep_id"]
    banners = [log.read_text().count("The server is fired up") for log in sweep.glob("*/journal.log")]
    assert banners == [1, 1], banners  # one start per cell, none per level
