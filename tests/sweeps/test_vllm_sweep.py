"""vLLM's loop on ``local`` end to end (issue 28, items 4 and 5): ``ddlab run sweep -p base
vllm-eagle3 -p grid '{num_speculative_tokens: [2, 4]}'`` runs the embedded target in vLLM's
dialect (no ``-p budget '[]'``: the family's default grid stands in for DDTree's), each cell
measured through ``/v1/completions`` with vLLM's own acceptance figure from ``/metrics``,
the target's replay fault classified from vLLM's log text and its silent wrong tokens
flagged by the lossless check; the report in the family's words.

Real parts only: the ``ddlab`` command, papermill, the target server, SQLite; a temp
project (tests/sweepkit.py) with the base's port free."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

import sweepkit
from labkit import DDLAB, REPO
from ddlab.api.sweep_verbs import family_grid
from ddlab.sweeps.plan import DEFAULT_GRID

FAULTS = "[{flags.debug_drop_verify_field: positions}, {flags.debug_drop_verify_field: seq_lens}]"
SWEEP = ["-p", "base", "vllm-eagle3", "-p", "grid", "{num_speculative_tokens: [2, 4]}",
         "-p", "extra", FAULTS, "-p", "requests", "2", "-p", "max_new_tokens", "32",
         "-p", "max_rounds", "3", "-p", "bracket", "False"]


def test_a_vllm_base_takes_its_familys_default_grid_in_place_of_ddtrees():
    grid = family_grid("vllm-eagle3", DEFAULT_GRID["budget"], DEFAULT_GRID["topk_cap"],
                       [True, False], "{num_speculative_tokens: [2, 4]}")
    assert grid == {"num_speculative_tokens": [2, 4], "cuda_graph": [True, False]}
    assert family_grid("vllm-eagle3", "[4, 16, 32]", "[1, 4]", None, None) == {
        "num_speculative_tokens": [2, 4], "cuda_graph": [True, False]}  # papermill's text


def test_the_line_names_the_grid_the_sweep_uses_not_only_the_familys_default(caplog):
    caplog.set_level("INFO", logger="ddlab")
    family_grid("vllm-eagle3", DEFAULT_GRID["budget"], DEFAULT_GRID["topk_cap"], None,
                "{num_speculative_tokens: [1, 8]}")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "{'num_speculative_tokens': [1, 8], 'cuda_graph': [True, False]}" in said, said
    assert "the family's default for cuda_graph" in said, said  # the one key not given


def test_an_sglang_base_keeps_the_ddtree_defaults():
    grid = family_grid("local", DEFAULT_GRID["budget"], DEFAULT_GRID["topk_cap"],
                       DEFAULT_GRID["cuda_graph"], None)
    assert grid == {"budget": DEFAULT_GRID["budget"], "topk_cap": DEFAULT_GRID["topk_cap"],
                    "cuda_graph": DEFAULT_GRID["cuda_graph"]}


def test_a_budget_given_on_a_vllm_base_is_still_refused_by_the_plan():
    from ddlab.core.errors import ConfigError
    from ddlab.sweeps.plan import plan_sweep

    grid = family_grid("vllm-eagle3", [8], DEFAULT_GRID["topk_cap"], None, None)
    assert grid["budget"] == [8]
    with pytest.raises(ConfigError, match="grid key 'budget'"):
        plan_sweep("vllm-eagle3", grid)


def _sweep(folder: Path) -> dict:
    project = sweepkit.make_project(folder)
    base = project.root / "params" / "base" / "vllm-eagle3.yaml"
    data = yaml.safe_load(base.read_text())
    data["flags"]["port"] = project.port
    base.write_text(yaml.safe_dump(data, sort_keys=False))
    done = subprocess.run([DDLAB, "run", "sweep", *SWEEP], capture_output=True, text=True,
                          cwd=REPO, env=project.env(), timeout=600)
    runs = project.runs()
    assert runs, f"no run folder:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return {"folder": str(folder), "port": project.port, "run_dir": str(runs[-1]),
            "returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The project and the run folder of one ``ddlab run sweep`` of vllm-eagle3 on local:
    built once per test run (sweepkit.once_per_run), its tests only read it."""
    built = sweepkit.once_per_run(tmp_path_factory, "vllm-sweep", _sweep)
    folder = Path(built["folder"])
    project = sweepkit.Project(root=folder / "project", state=folder / "state",
                               outputs=folder / "outputs", port=built["port"])
    done = subprocess.CompletedProcess([DDLAB, "run", "sweep", *SWEEP], built["returncode"],
                                       built["stdout"], built["stderr"])
    run_dir = Path(built["run_dir"])
    return project, done, run_dir, pd.read_csv(run_dir / "cells.csv")


def _cell(frame, status: str):
    rows = frame[frame["status"] == status]
    assert len(rows) == 1, frame[["name", "status", "kind"]].to_string()
    return rows.iloc[0]


@pytest.mark.slow
def test_every_cell_ran_the_embedded_target_in_vllms_dialect(swept):
    project, done, run_dir, frame = swept
    assert len(frame) == 8, frame[["name", "status"]].to_string()  # 2 baselines, 2x2, 2 faults
    assert set(frame["family"]) == {"vllm"}
    for folder in frame["run_dir"].dropna():
        unit = (Path(folder) / "unit.service").read_text()
        assert "-m ddlab.target \\\n    --dialect vllm ddlab-tiny \\\n" in unit, unit
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_each_num_speculative_tokens_has_its_acceptance_and_throughput_with_intervals(swept):
    _, _, _, frame = swept
    grid = frame[(frame["role"] == "grid") & (frame["status"] == "measured")]
    assert sorted(set(grid["num_speculative_tokens"])) == [2, 4]
    assert set(grid["cuda_graph"]) == {True, False}
    for _, row in grid.iterrows():
        # vLLM's mean acceptance length, with the bonus token: 1 .. tokens + 1
        assert 1 < row["accept_length"] <= row["num_speculative_tokens"] + 1, row.to_dict()
        assert 0 < row["output_tok_s_ci_low"] <= row["output_tok_s"] <= row["output_tok_s_ci_high"]
    for tokens, rows in grid.groupby("num_speculative_tokens"):  # greedy, lossless: graphs
        assert rows["accept_length"].nunique() == 1, rows[["name", "accept_length"]]  # change no token
    baselines = frame[frame["role"] == "baseline"]
    assert (baselines["status"] == "measured").all() and baselines["accept_length"].isna().all()


@pytest.mark.slow
def test_the_replay_fault_is_a_crash_read_in_vllms_dialect(swept):
    import json

    _, _, run_dir, frame = swept
    crashed = _cell(frame, "crashed")
    assert "positions" in crashed["name"]
    assert crashed["phase"] == "serving"  # after "Application startup complete.", at the probe
    verdict = json.loads((Path(crashed["run_dir"]) / "verdict.json").read_text())
    assert verdict["family"] == "vllm", verdict["family"]
    log = (Path(crashed["run_dir"]) / "journal.log").read_text()
    assert "EngineCore encountered a fatal error." in log  # the engine core's death, in vLLM's words
    assert "vllm.v1.engine.exceptions.EngineDeadError" in log


@pytest.mark.slow
def test_the_replay_faults_kind_is_read_from_vllms_text(swept):
    import json

    _, _, _, frame = swept
    crashed = _cell(frame, "crashed")
    assert crashed["kind"] == "cuda_graph_replay"  # vllm_replay_inputs: the copy_and_call frame
    verdict = json.loads((Path(crashed["run_dir"]) / "verdict.json").read_text())
    assert verdict["signature"] == "vllm_replay_inputs"
    assert verdict["cause"] == "AttributeError: 'NoneType' object has no attribute 'shape'"
    assert "`--enforce-eager`" in verdict["suggestion"] and "cudagraph_mode" in verdict["suggestion"]


@pytest.mark.slow
def test_the_silent_wrong_tokens_are_flagged_by_the_lossless_check(swept):
    _, _, _, frame = swept
    wrong = _cell(frame, "wrong_output")
    said = str(wrong["lossless"])  # against the no-speculation baseline's text, by characters
    assert "diverges at token" in said and "fails tolerance" in said, said
    assert "seq-lens" in wrong["name"]
    assert pd.notna(wrong["output_tok_s"])  # measured, so a plot shows how fast it is wrong


@pytest.mark.slow
def test_the_report_speaks_vllms_words(swept):
    from ddlab.report.plots import accept_length_vs_budget, heatmap

    _, done, run_dir, frame = swept
    html = (run_dir / "report.html").read_text()
    assert "num_speculative_tokens" in html and "mean acceptance length" in html
    figure = accept_length_vs_budget(frame)
    assert figure.axes[0].get_ylabel().startswith("mean acceptance length")
    assert any(ax.get_xlabel().startswith("num_speculative_tokens") for ax in figure.axes)
    assert "num_speculative_tokens x method" in heatmap(frame)._suptitle.get_text()
