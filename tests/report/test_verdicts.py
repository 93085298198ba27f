"""Verdicts and reports: the answer first. A sweep's verdict from its frame; a
notebook rendered to HTML with inputs hidden under a status banner; the index
of runs. The end-to-end runs (``ddlab run``) are in test_notebooks.py."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

import sweepkit
from ddlab.core.run_folders import record_verdict
from ddlab.lab.results import load_cells
from ddlab.report import html as report_html
from ddlab.report.verdicts import sweep_verdict
from labkit import REPLAY_FAULT

# plan order: baseline graphs off first (the lossless reference), then on
OUTCOMES = [("measured", {"output_tok_s": 200.0}), ("measured", {"output_tok_s": 100.0}),
            ("measured", {"output_tok_s": 150.0, "accept_length": 3.0}),
            ("measured", {"output_tok_s": 300.0, "accept_length": 3.0}),
            ("measured", {"output_tok_s": 250.0, "accept_length": 5.0}),
            ("measured", {"output_tok_s": 500.0, "accept_length": 5.0}),
            ("crashed", "cuda_graph_replay")]


@pytest.fixture
def frame(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, OUTCOMES, extra=[[REPLAY_FAULT]])
    return load_cells(store=path)


def test_a_done_sweeps_verdict_names_counts_kinds_best_and_the_crash(frame):
    verdict = sweep_verdict(frame, sweep_id="synthetic", status="done", resume="ddlab run ...")
    best = frame.iloc[5]["name"]
    assert verdict.headline == (
        "SWEEP DONE: 7 cells, 6 measured, 1 crashed (cuda_graph_replay). "
        f"Best: {best} (budget 16, cap 4, graphs off) at 500.0 tok/s, 2.50x over no speculation, "
        "accept length 5.00")
    fault = frame.iloc[6]["name"]
    assert verdict.next_step == f"{fault} crashed (cuda_graph_replay): try --disable-cuda-graph"
    assert verdict.render().splitlines()[0] == verdict.headline
    assert f"crashed: {fault}: cuda_graph_replay in serving" in verdict.render()
    html = verdict._repr_html_()
    assert html.index("SWEEP DONE") < html.index("next step") < html.index(fault)
    assert json.loads(json.dumps(verdict.to_dict(), default=str))["state"] == "done"


def test_a_stopped_sweeps_verdict_says_how_to_resume(frame):
    verdict = sweep_verdict(frame, sweep_id="s", status="interrupted",
                                   resume="ddlab run sweep -p resume s")
    assert verdict.headline.startswith("SWEEP INTERRUPTED: 7 cells")
    assert verdict.next_step == "resume it: ddlab run sweep -p resume s"


def test_a_sweep_without_crashes_suggests_narrowing(frame):
    measured = frame[frame["status"] == "measured"]
    verdict = sweep_verdict(measured, sweep_id="s", status="done")
    assert "0 crashed" in verdict.headline and "(" not in verdict.headline.split("crashed")[1][:2]
    assert verdict.next_step.startswith("narrow the grid around the best cell")


def _executed_notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"),
                nbformat.v4.new_code_cell("INPUT_MARKER = 'never shown'\nINPUT_MARKER", outputs=[
                    nbformat.v4.new_output("execute_result", {"text/plain": "'OUTPUT_MARKER'"},
                                           execution_count=1)], execution_count=1)]
    nbformat.write(nb, path)
    return path


def _rounds(*samples) -> dict:
    from ddlab.lab.stats import median_ci

    median, low, high = median_ci(samples)
    return {"output_tok_s": median, "output_tok_s_ci_low": low, "output_tok_s_ci_high": high,
            "output_tok_s_samples": list(samples), "accept_length": 4.0}


SPREAD_GRID = {"budget": [4, 16, 32], "topk_cap": [4], "cuda_graph": [False]}


def _spread_verdict(tmp_path, b4, b16, b32, base=(100.0, 102.0, 98.0, 101.0)):
    path = tmp_path / "ddlab.sqlite"
    outcomes = [("measured", _rounds(*base))] + [("measured", _rounds(*s)) for s in (b4, b16, b32)]
    sweepkit.synthetic_sweep(path, outcomes, grid=SPREAD_GRID)
    frame = load_cells(store=path)
    return frame, sweep_verdict(frame, sweep_id="synthetic", status="done")


def test_a_clear_best_cell_is_crowned_with_its_intervals(tmp_path):
    frame, verdict = _spread_verdict(tmp_path, (150.0, 152.0, 149.0, 151.0),
                                     (200.0, 203.0, 198.0, 201.0), (250.0, 252.0, 248.0, 251.0))
    best = frame.iloc[3]
    assert f"Best: {best['name']} (budget 32, cap 4, graphs off) at 250.5 [" in verdict.headline
    assert f"{best['speedup']:.2f}x [{best['speedup_ci_low']:.2f}-{best['speedup_ci_high']:.2f}]" \
        in verdict.headline
    assert "tie" not in verdict.headline and "within noise" not in verdict.headline


def test_cells_whose_intervals_overlap_are_a_tie_and_never_crowned(tmp_path):
    frame, verdict = _spread_verdict(tmp_path, (150.0, 152.0, 149.0, 151.0),
                                     (240.0, 262.0, 228.0, 251.0), (250.0, 270.0, 232.0, 255.0))
    b16, b32 = frame.iloc[2]["name"], frame.iloc[3]["name"]
    assert "Best:" not in verdict.headline
    assert f"Fastest, a tie within noise: {b32} (budget 32" in verdict.headline
    assert f"ties with {b16} (budget 16, cap 4, graphs off) (95% intervals overlap)" in verdict.headline
    assert frame.iloc[1]["name"] not in verdict.headline.split("ties with")[1], "b4 is apart"
    assert verdict.next_step.startswith("tell the tied cells apart")


def test_a_speedup_whose_interval_holds_one_is_within_noise(tmp_path):
    base = (100.0, 140.0, 70.0, 120.0)
    frame, verdict = _spread_verdict(tmp_path, (60.0, 62.0, 61.0, 60.5), (80.0, 81.0, 79.0, 80.5),
                                     (110.0, 111.0, 109.0, 110.5), base=base)
    assert frame.iloc[3]["within_noise"] == True  # noqa: E712
    assert "over no speculation (within noise)" in verdict.headline


def test_html_hides_inputs_and_opens_with_the_status_banner(tmp_path):
    notebook = _executed_notebook(tmp_path / "run.ipynb")
    html = report_html.render_html(notebook, tmp_path / "report.html", banner={
        "status": "failed", "headline": "ConfigError: budget=0", "error": "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123",
        "notebook": "sweep.ipynb"}).read_text()
    body = html[html.index("<body"):]
    first = re.search(r"<body[^>]*>\s*(<div[^>]*>\s*<h2[^>]*>[^<]*)", body).group(1)
    assert "FAILED: ConfigError: budget=0" in first and "#cf222e" in first
    assert "OUTPUT_MARKER" in html and "A title" in html
    assert "INPUT_MARKER = " not in html, "inputs hidden"
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in html, "secrets masked in the banner"


def test_the_index_lists_runs_newest_first_with_their_verdicts(tmp_path):
    for name, status, headline in [("20260101T000000Z-sweep-a", "ok", "SWEEP DONE: a"),
                                   ("20260102T000000Z-plot-b", "failed", "ConfigError: b")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps(
            {"notebook": name.split("-")[1] + ".ipynb", "status": status, "headline": headline,
             "started_utc": name[:16]}))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{not json")
    html = report_html.write_index(tmp_path).read_text()
    assert html.index("ConfigError: b") < html.index("SWEEP DONE: a"), "newest first"
    assert "href='20260101T000000Z-sweep-a/report.html'" in html
    assert ">failed</td>" in html and ">ok</td>" in html


def test_a_verdict_is_recorded_only_where_a_run_folder_is_given(tmp_path):
    record_verdict({"state": "done"}, None)
    record_verdict({"state": "done"}, tmp_path / "missing")
    assert not (tmp_path / "missing").exists(), "a folder is never made up"
    record_verdict({"state": "done", "headline": "SWEEP DONE"}, tmp_path)
    assert json.loads((tmp_path / "verdict.json").read_text())["headline"] == "SWEEP DONE"


def test_a_sweep_that_found_crashes_is_amber_never_green(frame):
    verdict = sweep_verdict(frame, sweep_id="synthetic", status="done").to_dict()
    assert report_html.has_findings(verdict)
    found = report_html.banner_html({"status": "ok", "headline": verdict["headline"],
                                     "_findings": True})
    clean = report_html.banner_html({"status": "ok", "headline": "SWEEP DONE: 2 cells",
                                     "_findings": False})
    assert report_html.FINDINGS_COLOUR in found and report_html.STATUS_COLOURS["ok"] not in found
    assert report_html.STATUS_COLOURS["ok"] in clean
    assert "_findings" not in found, "a hidden key, never a row"
    failed = report_html.banner_html({"status": "failed", "headline": "x", "_findings": True})
    assert report_html.STATUS_COLOURS["failed"] in failed, "red stays red"


def test_the_display_table_puts_each_interval_beside_its_figure(tmp_path):
    from ddlab.report.verdicts import SweepReport

    frame, verdict = _spread_verdict(tmp_path, (150.0, 152.0, 149.0, 151.0),
                                     (200.0, 203.0, 198.0, 201.0), (250.0, 252.0, 248.0, 251.0))
    table = SweepReport(sweep_id="s", frame=frame, verdict=verdict).table()
    row = table.iloc[3]
    assert row["tok_s_ci"] == f"{frame.iloc[3]['output_tok_s_ci_low']:.0f}-" \
                              f"{frame.iloc[3]['output_tok_s_ci_high']:.0f}"
    assert row["speedup_ci"].count("-") == 1 and "noise" not in row["speedup_ci"]
    base = table.iloc[0]
    assert base["speedup"] == 1.0 and base["speedup_ci"] == "", "the baseline against itself: no interval"
