"""Sweep results as DataFrames: columns read from each cell's config, speedup over
the baseline with the same CUDA-graph setting, summaries. A synthetic sweep in a
real store (real plans and configs, given outcomes) pins the arithmetic; the
session's real sweep checks it holds on measured data."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.sweeps.results import load_cells, resolve_sweep, summarize
from ddlab.sweeps.store import Store
from fieldkit import LOGS, read_log
from labkit import REPLAY_FAULT


def _m(tok_s: float, accept: float | None = None) -> dict:
    return {"output_tok_s": tok_s, "accept_length": accept, "ttft_ms_p50": 5.0}


# Plan order: baseline off (eager first: the lossless reference), baseline on, b4 on,
# b4 off, b16 on, b16 off, the fault cell.
OUTCOMES = [("measured", _m(200)), ("measured", _m(100)), ("measured", _m(150, 3.0)),
            ("measured", _m(300, 3.0)), ("measured", _m(250, 5.0)), ("measured", _m(500, 5.0)),
            ("crashed", "cuda_graph_replay")]


@pytest.fixture
def synthetic(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, OUTCOMES, extra=[[REPLAY_FAULT]])
    return path


def test_each_row_describes_its_cell_from_its_config(synthetic):
    frame = load_cells("synthetic", store=synthetic)
    assert list(frame["role"]) == ["baseline"] * 2 + ["grid"] * 4 + ["extra"]
    assert list(frame["algorithm"]) == ["NONE"] * 2 + ["DDTREE"] * 5
    assert list(frame["cuda_graph"]) == [False, True, True, False, True, False, True]
    assert frame["budget"].isna().tolist()[:2] == [True, True]
    assert list(frame["budget"][2:]) == [4, 4, 16, 16, 16], "the fault cell has the base's budget"
    assert set(frame["topk_cap"][2:]) == {4}
    fault = frame.iloc[6]
    assert (fault["status"], fault["kind"], fault["phase"]) == ("crashed", "cuda_graph_replay", "serving")
    assert fault["point.debug_drop_verify_field"] == "positions"
    assert frame["kind"][:6].isna().all()


def test_speedup_is_over_the_baseline_with_the_same_cuda_graph(synthetic):
    frame = load_cells("synthetic", store=synthetic)
    speedups = frame["speedup"].tolist()
    assert speedups[:6] == pytest.approx([1.0, 1.0, 1.5, 1.5, 2.5, 2.5])
    assert math.isnan(speedups[6]), "a crashed cell has no speedup"


def test_a_cell_whose_own_graphs_baseline_is_missing_has_no_speedup_and_says_why(tmp_path):
    """The issue's case: the graphs-on baseline crashed; graphs-on cells were given their
    speedup over the graphs-off baseline (1.84x = 642.8 / 350.3), with no note."""
    path = tmp_path / "ddlab.sqlite"
    outcomes = [("measured", _m(100)), ("crashed", "cuda_graph_capture"), *OUTCOMES[2:6],
                ("crashed", "cuda_graph_replay")]
    sweepkit.synthetic_sweep(path, outcomes, extra=[[REPLAY_FAULT]])
    frame = load_cells(store=path)
    graphs_on = frame[(frame["cuda_graph"] == True) & (frame["status"] == "measured")]  # noqa: E712
    assert len(graphs_on) == 2 and graphs_on["speedup"].isna().all(), graphs_on["speedup"].tolist()
    assert graphs_on["speedup_ci_low"].isna().all() and graphs_on["within_noise"].isna().all()
    assert set(graphs_on["speedup_note"]) == {
        "n/a: the graphs-on baseline crashed (cuda_graph_capture)"}
    off = frame[frame["cuda_graph"] == False]  # noqa: E712
    assert off["speedup"].tolist() == pytest.approx([1.0, 3.0, 5.0]), "graphs off: its own baseline"
    assert off["speedup_note"].isna().all() and pd.isna(frame.iloc[6]["speedup_note"]), \
        "a crashed cell has no tok/s, so nothing to say about its speedup"
    s = summarize(frame)
    assert s["no_speedup"] == {"n/a: the graphs-on baseline crashed (cuda_graph_capture)":
                               list(graphs_on["name"])}
    csv = tmp_path / "cells.csv"
    frame.to_csv(csv, index=False)
    rows = pd.read_csv(csv).set_index("name")
    assert rows.loc[graphs_on["name"].iloc[0], "speedup_note"].startswith("n/a: the graphs-on")
    assert pd.isna(rows.loc[graphs_on["name"].iloc[0], "speedup"])


def test_a_sweep_without_baselines_says_each_speedup_has_none(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, [("measured", _m(150, 3.0))],
                             grid={"budget": [4], "topk_cap": [4], "cuda_graph": [True]},
                             baseline=False)
    frame = load_cells(store=path)
    assert frame["speedup"].isna().all()
    assert frame["speedup_note"].tolist() == ["n/a: the sweep has no graphs-on baseline to compare with"]
    assert "no_speedup" not in summarize(frame), "no baseline asked for: nothing to warn of"


def test_a_failed_bracket_leaves_drift_not_measured_in_its_row(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    cells = sweepkit.synthetic_sweep(path, OUTCOMES, extra=[[REPLAY_FAULT]])
    sweepkit.bracket_run(path, "synthetic", cells[0], "crashed",
                         {"state": "crashed", "kind": "kv_pool_oom"})
    sweepkit.bracket_run(path, "synthetic", cells[1], "error",
                         {"state": "error", "cause": "HostError: gone"})
    frame = load_cells(store=path)
    assert frame["bracket_note"].tolist()[:2] == [
        "drift not measured: its re-measurement after the grid crashed (kv_pool_oom)",
        "drift not measured: its re-measurement after the grid failed: HostError: gone"]
    assert frame["bracket_note"][2:].isna().all() and (frame["bracket_rounds"] == 0).all()
    assert frame["drift"].isna().all()
    assert summarize(frame)["drift_not_measured"] == {
        cells[0].variant.name: frame["bracket_note"][0], cells[1].variant.name: frame["bracket_note"][1]}
    sweepkit.bracket_run(path, "synthetic", cells[0], "bracket", {"state": "ready"},
                         {"output_tok_s": 210.0, "output_tok_s_samples": [205.0, 210.0, 215.0]})
    assert pd.isna(load_cells(store=path)["bracket_note"][0]), "a later bracket that measured"


def test_the_terminals_bracket_line_says_the_drift_or_how_the_re_measurement_ended():
    from ddlab.diagnosis.diagnosis import diagnose
    from ddlab.lab.verdict import Verdict
    from ddlab.sweeps.run import _bracket_words

    first = {"output_tok_s_samples": [200.0, 204.0, 196.0]}

    def ended(state: str, log: str) -> Verdict:
        return Verdict(state, "local-nospec", "local", "ddlab-local-nospec.service", 3.0, diagnose(log))

    oom = read_log(LOGS / "kv_pool_oom.journal.log")
    assert _bracket_words(first, None, ended("crashed", oom)) == "crashed (kv_pool_oom): drift not measured"
    assert _bracket_words(first, None, ended("timeout", "")) == "timeout: drift not measured"
    slower = {"output_tok_s_samples": [180.0, 184.0, 176.0]}
    words = _bracket_words(first, slower, ended("ready", ""))
    assert words.startswith("measured again: 180.0 tok/s against 200.0 at the start, drift 0.90x ["), words
    # one round each: a ratio with no interval to speak of
    assert _bracket_words({"output_tok_s_samples": [200.0]}, {"output_tok_s_samples": [210.0]},
                          ended("ready", "")) == "measured again: 210.0 tok/s against 200.0 at the start, drift 1.05x"


@pytest.mark.slow
def test_the_real_sweeps_speedups_follow_its_own_throughputs(tmp_path_factory):
    shared = sweepkit.shared_sweep(tmp_path_factory)
    frame = load_cells(shared.sweep_id, store=shared.project.store_path)
    base = frame[frame["role"] == "baseline"].set_index("cuda_graph")["output_tok_s"]
    measured = frame[frame["status"] == "measured"]
    assert len(measured) == 6 and set(base.index) == {True, False}
    for _, row in measured.iterrows():
        assert row["speedup"] == pytest.approx(row["output_tok_s"] / base[row["cuda_graph"]])
        if row["role"] == "baseline":  # itself over itself: 1x, no interval to speak of
            assert row["speedup"] == 1.0 and pd.isna(row["speedup_ci_low"])
        else:
            assert row["speedup_ci_low"] <= row["speedup"] <= row["speedup_ci_high"]
    spec = measured[measured["role"] == "grid"]
    assert spec["accept_length"].notna().all() and measured["ttft_ms_p50"].notna().all()


@pytest.mark.slow
def test_the_baselines_are_bracketed_and_pooled(tmp_path_factory):
    """The shared sweep measures each baseline again after the grid: the baseline row's
    tok/s is the median of both measurements' rounds, and its drift is their ratio."""
    import statistics

    from ddlab.sweeps.store import Store

    shared = sweepkit.shared_sweep(tmp_path_factory)
    frame = load_cells(shared.sweep_id, store=shared.project.store_path)
    with Store(shared.project.store_path) as store:
        brackets = store.bracket_metrics(shared.sweep_id)
        cells = {c["config_hash"]: c for c in store.cells(shared.sweep_id)}
    baselines = frame[frame["role"] == "baseline"]
    assert set(brackets) == set(baselines["config_hash"]), "every measured baseline, again"
    for _, row in baselines.iterrows():
        first = cells[row["config_hash"]]["metrics"]["output_tok_s_samples"]
        later = [x for m in brackets[row["config_hash"]] for x in m["output_tok_s_samples"]]
        assert row["bracket_rounds"] == len(later) == 3
        assert row["output_tok_s"] == pytest.approx(statistics.median(first + later))
        assert row["drift"] == pytest.approx(statistics.median(later) / statistics.median(first))
        # the terminal said what the re-measurement found, in the figures the report pools
        said = [m for m in shared.messages if m.startswith(f"[sweep] bracket {row['name']}: ")]
        assert len(said) == 1, shared.messages
        words = re.fullmatch(r"\[sweep\] bracket \S+: measured again: ([\d.]+) tok/s against ([\d.]+) at the "
                             r"start, drift ([\d.]+)x \[([\d.]+)-([\d.]+)\]", said[0])
        assert words, said[0]
        now, then, drift, low, high = map(float, words.groups())
        assert now == pytest.approx(statistics.median(later), abs=0.05)
        assert then == pytest.approx(statistics.median(first), abs=0.05)
        assert drift == pytest.approx(row["drift"], abs=0.005) and low <= drift <= high
    spec = frame[frame["role"] == "grid"]
    assert (spec["bracket_rounds"] == 0).all(), "only baselines are bracketed"


def test_summary_counts_kinds_and_the_best_cell(synthetic):
    s = summarize(load_cells(store=synthetic))
    assert (s["cells"], s["measured"], s["crashed"], s["pending"], s["errors"]) == (7, 6, 1, 0, 0)
    assert s["crash_kinds"] == ["cuda_graph_replay"]
    assert s["best"]["output_tok_s"] == 500 and s["best"]["budget"] == 16
    assert s["best"]["cuda_graph"] == False and s["best"]["speedup"] == pytest.approx(2.5)  # noqa: E712


def test_a_stopped_sweep_shows_pending_and_timeout_cells(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    outcomes = [*OUTCOMES[:4], ("timeout", None), ("pending", None), ("pending", None)]
    sweepkit.synthetic_sweep(path, outcomes, extra=[[REPLAY_FAULT]], status="interrupted")
    frame = load_cells(store=path)
    assert list(frame["status"][4:]) == ["timeout", "pending", "pending"]
    assert frame["kind"][4] == "timeout"
    s = summarize(frame)
    assert (s["measured"], s["crashed"], s["pending"]) == (4, 1, 2) and s["crash_kinds"] == ["timeout"]


def test_latest_is_the_newest_sweep_and_an_unknown_one_lists_the_known(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, OUTCOMES, extra=[[REPLAY_FAULT]], sweep_id="older")
    sweepkit.synthetic_sweep(path, OUTCOMES, extra=[[REPLAY_FAULT]], sweep_id="newer")
    with Store(path) as store:
        assert resolve_sweep(store, "latest") == resolve_sweep(store, "") == "newer"
        with pytest.raises(ConfigError) as info:
            resolve_sweep(store, "nope")
    assert "sweep='nope': no such sweep" in str(info.value) and "older, newer" in str(info.value)


def test_an_empty_store_says_how_to_make_a_sweep(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_cells(store=tmp_path / "ddlab.sqlite")
    assert "none yet: run notebooks/sweep.ipynb" in str(info.value)


def test_the_frame_is_plain_pandas(synthetic):
    frame = load_cells(store=synthetic)
    assert isinstance(frame, pd.DataFrame) and frame["speedup"].dtype == "float64"
    assert frame["position"].tolist() == list(range(7))
