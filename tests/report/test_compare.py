"""Sweeps compared: the same configs side by side, medians with 95% intervals as whiskers.

Configs are matched by what they are, not by hash: each demo picks a free port, so the
same cell has another hash in every sweep. Stored sweeps here are real plans with given
outcomes (``sweepkit.synthetic_sweep``) for the figure's parts, and real sweeps on the
embedded target (``ddlab run sweep``) through ``ddlab plot`` and the plot notebook.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

import ddlab
import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.sweeps.results import load_cells
from ddlab.sweeps.store import Store
from ddlab.report.compare import compare_figure, comparison_frame, config_label, sweep_list
from labkit import DDLAB, REPO, free_port

GRID = {"budget": [4], "topk_cap": [1], "cuda_graph": [False]}


@pytest.mark.parametrize("given, ids", [
    ("latest", ["latest"]),
    ("[A, B]", ["A", "B"]),
    (["A", " B "], ["A", "B"]),
], ids=["one", "papermill-text", "list"])
def test_sweeps_are_one_id_a_list_or_the_text_papermill_passes(given, ids):
    assert sweep_list(given) == ids


@pytest.mark.parametrize("given", ["[A, B", [], [""]], ids=["unclosed", "empty", "blank"])
def test_a_bad_sweep_list_says_what_it_takes(given):
    with pytest.raises(ConfigError, match="sweep id"):
        sweep_list(given)


def _measured(tok_s: float, half: float | None) -> tuple:
    ci = {} if half is None else {"output_tok_s_ci_low": tok_s - half,
                                  "output_tok_s_ci_high": tok_s + half}
    return ("measured", {"output_tok_s": tok_s, "accept_length": 2.0, **ci})


def test_the_same_config_is_matched_across_sweeps_whatever_its_port(tmp_path):
    store_path = tmp_path / "ddlab.sqlite"
    new = sweepkit.synthetic_sweep(store_path, [_measured(500, 20), _measured(900, 50),
                                                ("crashed", "cuda_graph_replay")],
                                   grid=GRID, extra=[["debug_drop_verify_field=x"]],
                                   sweep_id="new", fixed={"port": free_port()})
    old = sweepkit.synthetic_sweep(store_path, [_measured(480, None), _measured(700, None),
                                                _measured(650, None)],
                                   grid=GRID, extra=[["debug_drop_verify_field=x"]],
                                   sweep_id="old", fixed={"port": free_port()})
    assert {c.hash for c in new}.isdisjoint(c.hash for c in old), "other ports, other hashes"
    frame = comparison_frame({s: load_cells(s, store=store_path) for s in ("new", "old")})
    configs = frame.groupby("sweep_id")["config"].apply(list)
    assert configs["new"] == configs["old"] == [
        "no spec, graphs off", "b4 k1 graphs off", "b16 k4 graphs on, debug_drop_verify_field=x"]

    figure = compare_figure(frame)
    throughput, speedup = figure.axes
    bars = [c for c in throughput.containers if isinstance(c, BarContainer)]
    assert [len(b) for b in bars] == [2, 3], "new: its crash is no bar; old: three bars"
    whiskers = [c for c in throughput.containers if isinstance(c, ErrorbarContainer)]
    assert len(whiskers) == 1, "intervals where the sweep has them; the old one has none"
    assert "cuda_graph_replay" in [t.get_text() for t in throughput.texts]
    assert speedup.get_ylabel().startswith("speedup")
    labels = [t.get_text() for t in speedup.get_xticklabels()]
    assert labels == configs["new"]


def test_sweeps_of_other_workloads_are_flagged_in_the_figure_and_the_report(tmp_path):
    """4 requests x 64 tokens against 8 x 128: the tok/s of the two do not compare."""
    store_path = tmp_path / "ddlab.sqlite"
    outcomes = [_measured(500, 20), _measured(900, 50)]
    sweepkit.synthetic_sweep(store_path, outcomes, grid=GRID, sweep_id="short",
                             options={"requests": 4, "max_new_tokens": 64})
    sweepkit.synthetic_sweep(store_path, outcomes, grid=GRID, sweep_id="long",
                             options={"requests": 8, "max_new_tokens": 128})
    sweepkit.synthetic_sweep(store_path, outcomes, grid=GRID, sweep_id="long2",
                             options={"requests": 8, "max_new_tokens": 128, "concurrency": 1})
    said = ("the sweeps compared ran different workloads (short: 4 requests x 64 tokens, "
            "concurrency 1; long: 8 requests x 128 tokens, concurrency 1): their tok/s and "
            "speedups do not compare")
    store = Store(store_path)
    figure = ddlab.compare_sweeps(["short", "long"], store=store)
    title = figure._suptitle
    assert title.get_text().startswith("NOT COMPARABLE: these sweeps ran different workloads")
    assert title.get_color() == "#cf222e"
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert legend[0].endswith("4 requests x 64 tokens, concurrency 1") and \
        legend[1].endswith("8 requests x 128 tokens, concurrency 1")
    report = ddlab.load_report(["short", "long"], store=store)
    assert report.verdict.warnings == [said] and report.verdict.headline.endswith("; 1 warning")
    assert f"warning: {said}" in report.verdict.render()

    same = ddlab.compare_sweeps(["long", "long2"], store=store)
    assert not same._suptitle.get_text().startswith("NOT COMPARABLE")
    assert ddlab.load_report(["long", "long2"], store=store).verdict.warnings == []


def test_a_cell_is_named_by_its_values():
    assert config_label({"role": "grid", "budget": 16, "topk_cap": 4.0, "cuda_graph": True,
                         "point.budget": 16, "point.mem_fraction_static": 0.8}) == \
        "b16 k4 graphs on, mem_fraction_static=0.8"
    assert config_label({"role": "baseline", "cuda_graph": False, "budget": None}) == \
        "no spec, graphs off"


def _ddlab(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([DDLAB, *args], capture_output=True, text=True, cwd=REPO,
                          env=project.env(), timeout=300)


@pytest.mark.slow
def test_two_real_sweeps_compared_by_ddlab_plot_and_the_plot_notebook(tmp_path):
    project = sweepkit.make_project(tmp_path)
    small = ["--budget", "4", "--topk-cap", "1", "--cuda-graph", "false", "--requests", "2",
             "--max-new-tokens", "16", "--max-rounds", "4", "--no-bracket"]
    for _ in range(2):  # the same grid twice, each on a free port of its own
        done = _ddlab(project, "sweep", *small, "--set", f"port={free_port()}")
        assert done.returncode == 0, done.stderr[-3000:]
    with Store(project.store_path) as store:
        ids = store.sweep_ids()[::-1]  # the newest first: the report is the first one's

    out = tmp_path / "figures"
    plotted = _ddlab(project, "plot", *ids, "--out", str(out))
    assert plotted.returncode == 0, plotted.stderr[-3000:]
    assert str(out / "compare-output_tok_s.png") in plotted.stdout.splitlines()

    with sweepkit.using(project):
        figure = ddlab.compare_sweeps(ids)
    whiskers = [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(whiskers) == 2, "both sweeps measured intervals: both have whiskers"
    assert [t.get_text() for t in figure.axes[1].get_xticklabels()] == [
        "no spec, graphs off", "b4 k1 graphs off"], "matched across the two ports"
    with Store(project.store_path) as store:
        assert {c["name"] for s in ids for c in store.cells(s)} == {"local-nospec-nograph",
                                                                    "local-b4-k1-nograph"}

    notebook = _ddlab(project, "run", "plot", "-p", "sweep", json.dumps(ids))
    assert notebook.returncode == 0, notebook.stderr[-3000:]
    executed = json.loads(Path(notebook.stdout.splitlines()[-1]).with_name("plot.ipynb")
                          .read_text())
    compare = next(c for c in executed["cells"] if "compare_sweeps" in "".join(c["source"]))
    assert any("image/png" in o.get("data", {}) for o in compare["outputs"]), compare["outputs"]
    sweepkit.assert_host_put_back(project)
