"""``make demo``'s pieces: its grid is the issue's, and the job itself (sweep notebook,
then plot notebook, through ``ddlab run``) works on a reduced grid that keeps the
fault cell. The full demo (15 cells, 70-80 s on this 2-core machine) is timed by
hand, not run in the suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sweepkit
from ddlab import api, cli
from ddlab.api import tool_verbs


def test_the_demo_sweeps_the_issues_grid_with_the_replay_fault():
    p = api.DEMO_PARAMETERS
    assert (p["host"], p["budget"], p["topk_cap"], p["cuda_graph"]) == (
        "local", [4, 16, 32], [1, 4], [True, False])
    assert p["extra"] == [{"debug_drop_verify_field": "num_token_non_padded", "debug_drop_verify_mode": "raise"}]


@pytest.mark.slow
def test_the_demo_job_on_a_reduced_grid(tmp_path, monkeypatch, capsys):
    project = sweepkit.make_project(tmp_path)
    reduced = {**api.DEMO_PARAMETERS, "budget": [4], "topk_cap": [4], "cuda_graph": [True],
               "requests": 2, "max_new_tokens": 32,
               # the job's shape is under test, not its figures: short rounds, no bracket
               "min_time_s": 0, "max_rounds": 3, "bracket": False}
    monkeypatch.setattr(tool_verbs, "DEMO_PARAMETERS", reduced)  # where demo() reads it
    with sweepkit.using(project):
        assert cli.main(["demo"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    sweep_run, plot_run = project.runs()
    assert printed[-1] == str(plot_run / "report.html"), "the last line is the report's path"
    assert Path(printed[-1]).is_file()
    verdict = json.loads((sweep_run / "verdict.json").read_text())
    assert verdict["headline"].startswith("SWEEP DONE: 3 cells, 2 measured, 1 crashed (cuda_graph_replay)")
    assert verdict["crashes"][0]["kind"] == "cuda_graph_replay"
    assert json.loads((plot_run / "run.json").read_text())["parameters"] == {
        "sweep": verdict["sweep_id"]}
    index = (project.outputs / "index.html").read_text()
    assert index.count("report.html") == 2
    fixed_port = json.loads((sweep_run / "run.json").read_text())["parameters"]["fixed"]["port"]
    assert fixed_port != project.port and not sweepkit.target_pids(fixed_port)
    assert not project.lock_path.exists() and project.services() == []
