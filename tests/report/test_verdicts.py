"""Verdicts and reports: the answer first. A sweep's verdict from its frame; a
notebook rendered to HTML with inputs hidden under a status banner; the index
of runs. The end-to-end runs (``ddlab run``) are in test_notebooks.py."""

from __future__ import annotations

import json
import re

from html import escape

import nbformat
import pandas as pd
import pytest

import sweepkit
from ddlab.core.run_folders import record_verdict
from ddlab.sweeps.results import load_cells
from ddlab.sweeps.store import Store
from ddlab.report import page
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
        f"SWEEP DONE: 7 cells, 6 measured, 1 crashed (cuda_graph_replay). Best: {best} at "
        "500.0 tok/s, 2.50x")
    assert verdict.details[0] == (f"best: {best} (budget 16, cap 4, graphs off) at 500.0 tok/s, "
                                  "2.50x over no speculation, accept length 5.00")
    fault = frame.iloc[6]["name"]
    assert verdict.next_step == f"{fault} crashed (cuda_graph_replay): try --disable-cuda-graph"
    assert verdict.render().splitlines()[:3] == [verdict.headline, verdict.details[0],
                                                 f"next step: {verdict.next_step}"]
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
    nb.cells = [nbformat.v4.new_markdown_cell("# A title\n\nHow to run it headless."),
                nbformat.v4.new_markdown_cell("## A section"),
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
    assert f"Best: {best['name']} at 250.5 tok/s, {best['speedup']:.2f}x" in verdict.headline
    assert f"best: {best['name']} (budget 32, cap 4, graphs off) at 250.5 [" in verdict.details[0]
    assert f"{best['speedup']:.2f}x [{best['speedup_ci_low']:.2f}-{best['speedup_ci_high']:.2f}]" \
        in verdict.details[0]
    assert "tie" not in verdict.render() and "within noise" not in verdict.render()


def test_cells_whose_intervals_overlap_are_a_tie_and_never_crowned(tmp_path):
    frame, verdict = _spread_verdict(tmp_path, (150.0, 152.0, 149.0, 151.0),
                                     (240.0, 262.0, 228.0, 251.0), (250.0, 270.0, 232.0, 255.0))
    b16, b32 = frame.iloc[2]["name"], frame.iloc[3]["name"]
    assert "Best:" not in verdict.headline
    assert f"No winner within noise (2 tie; fastest {b32} at 252.5 tok/s)" in verdict.headline
    assert verdict.details[0].startswith(f"fastest, a tie within noise: {b32} (budget 32")
    assert verdict.details[1].startswith(f"ties with it (95% intervals overlap): {b16} (budget 16, "
                                         "cap 4, graphs off) at ")
    assert frame.iloc[1]["name"] not in verdict.details[1], "b4 is apart"
    assert verdict.next_step.startswith("tell the tied cells apart")


def test_a_speedup_whose_interval_holds_one_is_within_noise(tmp_path):
    base = (100.0, 140.0, 70.0, 120.0)
    frame, verdict = _spread_verdict(tmp_path, (60.0, 62.0, 61.0, 60.5), (80.0, 81.0, 79.0, 80.5),
                                     (110.0, 111.0, 109.0, 110.5), base=base)
    assert frame.iloc[3]["within_noise"] == True  # noqa: E712
    assert verdict.headline.endswith("x (within noise)")
    assert "over no speculation (within noise)" in verdict.details[0]


def test_html_hides_inputs_and_opens_with_the_status_banner(tmp_path):
    notebook = _executed_notebook(tmp_path / "run.ipynb")
    html = report_html.render_html(notebook, tmp_path / "report.html", banner={
        "status": "failed", "headline": "ConfigError: budget=0", "error": "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123",
        "notebook": "sweep.ipynb"}).read_text()
    body = html[html.index("<body"):]
    first = re.search(r"<body[^>]*>\s*(<div[^>]*>\s*<h2[^>]*>[^<]*)", body).group(1)
    assert "FAILED: ConfigError: budget=0" in first and "#cf222e" in first
    assert "OUTPUT_MARKER" in html and "<h2>A section</h2>" in html
    assert "A title" not in html and "headless" not in html, \
        "the notebook's own title and how-to: the page's title says what ran"
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


@pytest.mark.parametrize("status, found, word, colour", [
    ("ok", {}, "OK", "GREEN"),
    ("ok", {"warnings": ["load: ..."]}, "WARNINGS", "AMBER"),
    ("ok", {"summary": {"crashed": 1}, "warnings": ["load: ..."]}, "CRASHES", "RED"),
    ("ok", {"summary": {"wrong_output": 1}}, "WRONG OUTPUT", "RED"),
    ("failed", {"summary": {"crashed": 1}}, "FAILED", "RED"),
    ("interrupted", {}, "INTERRUPTED", "AMBER"),
    ("crashed", {}, "CRASHED", "RED"),
    ("timeout", {}, "TIMEOUT", "AMBER"),
], ids=["ok", "warnings", "crashes", "wrong-output", "failed", "interrupted", "crashed", "timeout"])
def test_the_banners_word_and_colour_agree(status, found, word, colour):
    """Never amber under "OK:": the word says what the colour means."""
    from ddlab.report import page

    expected = getattr(page, colour)
    assert report_html.banner_word(status, found) == (word, expected)
    html = report_html.banner_html({"status": status, "headline": "SWEEP DONE: 2 cells",
                                    "_verdict": found})
    title = re.search(r"<h2 style='[^']*color:([^;']+)[^']*'>([^<]*)</h2>", html)
    assert title.group(1) == expected and title.group(2).startswith(f"{word}: ")
    assert f"border-left:8px solid {expected}" in html
    assert "_verdict" not in html, "a hidden key, never a row"


def test_a_sweep_that_found_crashes_is_red_and_says_so(frame):
    verdict = sweep_verdict(frame, sweep_id="synthetic", status="done").to_dict()
    assert report_html.banner_word("ok", verdict)[0] == "CRASHES"
    assert "CRASHES: SWEEP DONE" in sweep_verdict(frame, sweep_id="s", status="done")._repr_html_()


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
    assert base["speedup"] == "1.00" and base["speedup_ci"] == "", "the baseline against itself: no interval"


# --- honest comparisons (issue 22): a speedup only over its own graphs setting's baseline,
# a bracket that failed, a headline that stays one line ---------------------------------

def _no_graphs_baseline(tmp_path):
    """The issue's case: the graphs-on baseline crashed, graphs-on cells were measured."""
    path = tmp_path / "ddlab.sqlite"
    outcomes = [("measured", {"output_tok_s": 200.0}), ("crashed", "cuda_graph_capture"),
                *OUTCOMES[2:6]]
    sweepkit.synthetic_sweep(path, outcomes)
    return path, load_cells(store=path)


def test_a_speedup_without_its_own_baseline_is_na_in_verdict_table_csv_and_report(tmp_path):
    import ddlab
    from ddlab.report.sweep_page import render_sweep_page

    path, frame = _no_graphs_baseline(tmp_path)
    on = list(frame[(frame["cuda_graph"] == True) & (frame["role"] == "grid")]["name"])  # noqa: E712
    note = "n/a: the graphs-on baseline crashed (cuda_graph_capture)"
    verdict = sweep_verdict(frame, sweep_id="synthetic", status="done")
    assert verdict.warnings == [f"speedup {note}: {on[0]}, {on[1]} (2 cells)"]
    assert verdict.headline.endswith("; 1 warning") and len(verdict.headline) <= 160
    assert f"warning: speedup {note}" in verdict.render()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    report = ddlab.load_report("synthetic", store=Store(path), run_dir=run_dir)
    table = report.table().set_index("name")
    assert list(table.loc[on, "speedup"]) == ["n/a", "n/a"]
    assert list(table.loc[on, "speedup_note"]) == [note, note]
    csv = pd.read_csv(run_dir / "cells.csv").set_index("name")
    assert csv.loc[on, "speedup"].isna().all() and list(csv.loc[on, "speedup_note"]) == [note] * 2
    assert json.loads((run_dir / "verdict.json").read_text())["warnings"] == verdict.warnings
    html = render_sweep_page(report, tmp_path / "report.html", banner={
        "status": "ok", "headline": verdict.headline}).read_text()
    table_html = html[html.index("id='ddlab-table'"):html.index("id='ddlab-figures'")]
    assert table_html.count(">n/a<") == 2 and table_html.count(note) == 2
    banner = html[html.index("id='ddlab-verdict'"):html.index("id='ddlab-provenance'")]
    assert f"warning: speedup {note}" in banner and "WARNINGS" not in banner, \
        "red (a crash) outranks amber"


def test_a_crashed_bracket_is_in_the_verdict_and_the_csv(tmp_path):
    import ddlab

    path = tmp_path / "ddlab.sqlite"
    cells = sweepkit.synthetic_sweep(path, OUTCOMES[:6])
    sweepkit.bracket_run(path, "synthetic", cells[0], "crashed",
                         {"state": "crashed", "kind": "kv_pool_oom"})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    report = ddlab.load_report("synthetic", store=Store(path), run_dir=run_dir)
    said = (f"drift not measured: {cells[0].variant.name}'s re-measurement after the grid "
            "crashed (kv_pool_oom)")
    assert report.verdict.warnings == [said]
    assert f"warning: {said}" in report.verdict.render().splitlines()
    assert report.verdict.headline.endswith("; 1 warning")
    assert report_html.banner_word("ok", report.verdict.to_dict()) == ("WARNINGS", page.AMBER)
    csv = pd.read_csv(run_dir / "cells.csv").set_index("name")
    assert csv.loc[cells[0].variant.name, "bracket_note"] == \
        "drift not measured: its re-measurement after the grid crashed (kv_pool_oom)"
    assert csv.loc[cells[0].variant.name, "bracket_rounds"] == 0


def _noisy(samples, host_busy=True) -> dict:
    metrics = _rounds(*samples)
    if host_busy:
        metrics["load_warning"] = ("other processes used 45% of the host's CPU while it was "
                                   "measured; load average 2.71 -> 2.71 on 2 cores")
    return metrics


def test_the_headline_of_a_47_cell_all_ties_sweep_on_a_noisy_host_is_one_short_line(tmp_path):
    """A noisy host's sweep used to say ~600 characters: every tie, every warning."""
    grid = {"budget": [2, 4, 8, 16, 32], "topk_cap": [1, 2, 4, 8], "cuda_graph": [True, False]}
    extra = [{"mem_fraction_static": f} for f in (0.5, 0.6, 0.7, 0.8, 0.9)]
    spread = [(60.0 + i, 100.0, 140.0 - i, 110.0) for i in range(45)]
    outcomes = [("measured", _noisy((70.0, 100.0, 130.0, 95.0)))] * 2 + \
               [("measured", _noisy(s)) for s in spread]
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, outcomes, grid=grid, extra=extra)
    frame = load_cells(store=path)
    assert len(frame) == 47
    verdict = sweep_verdict(frame, sweep_id="synthetic", status="done")
    headline = verdict.headline
    assert len(headline) <= 160 and "\n" not in headline, (len(headline), headline)
    assert headline.startswith("SWEEP DONE: 47 cells, 47 measured, 0 crashed. No winner within "
                               "noise (45 tie; fastest "), headline
    assert headline.endswith("; 1 warning")
    assert verdict.render().count(headline) == 1 and verdict.render().splitlines()[0] == headline
    assert any(d.startswith("ties with it (95% intervals overlap): ") and d.endswith("; and 38 more")
               for d in verdict.details), verdict.details
    assert any("(47 cells) measured on a busy host" in d for d in verdict.details)
    assert verdict.next_step.startswith("tell the tied cells apart")


def test_a_long_headline_loses_its_details_never_its_line(tmp_path):
    """Crash kinds, a pool's host names and a long best cell's name give way first."""
    verdict = sweep_verdict(load_cells(store=_long_names(tmp_path)), sweep_id="s", status="done")
    verdict.summary["crash_kinds"] = [f"kind_number_{i}" for i in range(12)]
    verdict.summary["best"]["name"] = "local-" + "x" * 150
    assert len(verdict.headline) <= 160 and "kind_number" not in verdict.headline
    assert "…" in verdict.headline and verdict.headline.startswith("SWEEP DONE: 7 cells")
    verdict.error = "HostError: " + "y" * 300
    assert len(verdict.headline) == 160 and verdict.headline.endswith("…")
    assert f"stopped by: {verdict.error}" in verdict.details, "the whole of it below"


def _long_names(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, OUTCOMES, extra=[[REPLAY_FAULT]])
    return path


def test_a_notebook_report_shows_the_headline_once_and_the_details_under_it(tmp_path, frame):
    """The sweep notebook displays its verdict first; the page's banner says it, so the
    notebook's display of it is left out (nbconvert's page showed it twice)."""
    verdict = sweep_verdict(frame, sweep_id="synthetic", status="done")
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output
    nb.cells = [nbformat.v4.new_code_cell("report = ddlab.sweep()", outputs=[
        out("display_data", {"text/plain": verdict.render(), "text/html": verdict._repr_html_()})])]
    nbformat.write(nb, tmp_path / "sweep.ipynb")
    html = report_html.render_html(tmp_path / "sweep.ipynb", tmp_path / "report.html", banner={
        "status": "ok", "headline": verdict.headline, "next step": verdict.next_step,
        "_verdict": verdict.to_dict()}, title="sweep local b4.16 x cap4 x graphs").read_text()
    assert html.count(verdict.headline) == 1
    banner = html[html.index("id='ddlab-verdict'"):html.index("id='ddlab-provenance'")]
    assert all(escape(d) in banner for d in verdict.details) and "1 crashed cell" in banner
    assert "<title>sweep local b4.16 x cap4 x graphs — ddlab</title>" in html
