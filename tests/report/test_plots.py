"""Plots take a DataFrame and return a Figure: graphs on and off side by side,
crashed cells drawn in place with their kind, the baseline as a reference line.
Read back from the figures' own artists (titles, lines, texts), on the
session's real sweep and on synthetic frames."""

from __future__ import annotations

import io

import pytest
from matplotlib.figure import Figure

import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.sweeps.results import load_cells
from ddlab.report import plots


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    shared = sweepkit.shared_sweep(tmp_path_factory)
    return load_cells(shared.sweep_id, store=shared.project.store_path)


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def _line(ax, label: str):
    """The data line of ``label``: a plain line, or an error bar set's line."""
    bars = [c.lines[0] for c in ax.containers if c.get_label() == label]
    return next(iter(bars), None) or next(line for line in ax.get_lines()
                                          if line.get_label() == label)


@pytest.mark.slow
def test_accept_length_vs_budget_has_graphs_on_and_off_and_the_crash(frame):
    fig = plots.accept_length_vs_budget(frame)
    assert isinstance(fig, Figure)
    on, off, on_strip, off_strip = fig.axes  # the data axes, and the crash strips below them
    assert (on.get_title(), off.get_title()) == ("CUDA graphs on", "CUDA graphs off")
    assert _texts(on_strip) == ["cuda_graph_replay (k=4)"], "the fault cell, at its budget"
    assert _texts(on) == [] and _texts(off_strip) == [], "never on the data axis"
    assert on_strip.get_yticks().size == 0, "the strip has no y scale: a crash has no value"
    for ax in (on, off):
        line = _line(ax, "top-k cap 4")
        assert list(line.get_xdata()) == [4, 16]
        low, high = line.get_ydata()
        assert high > low, "accept length rises with the budget"
    assert on.get_ylabel() == "accept length (tokens per verify)"


@pytest.mark.slow
def test_throughput_and_speedup_show_the_baseline(frame):
    fig = plots.throughput_vs_budget(frame)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any(label.startswith("no speculation (") for label in labels)
    speed = plots.speedup_vs_budget(frame)
    reference = next(line for line in speed.axes[1].get_lines()
                     if line.get_label().startswith("no speculation"))
    assert list(reference.get_ydata()) == [1.0, 1.0], "speedup 1 is the baseline itself"


@pytest.mark.slow
def test_heatmap_holds_the_grid_only(frame):
    """An extra cell is no grid point (the fault cell shares budget 16, cap 4 with
    one): the line plots mark it; the heatmap's squares are the grid's."""
    fig = plots.heatmap(frame, "output_tok_s")
    on, off = fig.axes[:2]
    assert (on.get_title(), off.get_title()) == ("CUDA graphs on", "CUDA graphs off")
    for ax in (on, off):
        assert len(_texts(ax)) == 2 and all(float(t) > 0 for t in _texts(ax))


@pytest.mark.slow
def test_overview_gives_the_reports_figures_and_they_render(frame):
    figures = plots.overview(frame)
    assert len(figures) == 4
    for fig in figures:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")
    assert figures[0]._repr_png_().startswith(b"\x89PNG"), "shows itself in a notebook"


@pytest.mark.parametrize("call", [
    lambda f: plots.metric_vs_budget(f, "bogus_tok_s"),
    lambda f: plots.heatmap(f, "bogus_tok_s"),
    lambda f: plots.accept_length_vs_budget(f.drop(columns=["budget"])),
], ids=["metric", "heatmap", "missing-budget"])
@pytest.mark.slow
def test_an_unknown_column_lists_the_available_ones(frame, call):
    with pytest.raises(ConfigError) as info:
        call(frame)
    text = str(info.value)
    assert ": not in the frame; available columns: sweep_id, position, name" in text
    assert "accept_length" in text


def test_one_graph_mode_is_one_subplot(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    grid = {"budget": [4, 16], "topk_cap": [1, 4], "cuda_graph": [True]}
    outcomes = [("measured", {"output_tok_s": 100.0, "accept_length": None}),
                ("measured", {"output_tok_s": 120.0, "accept_length": 2.0}),
                ("crashed", "cuda_oom"),
                ("measured", {"output_tok_s": 160.0, "accept_length": 4.0}),
                ("timeout", None)]
    sweepkit.synthetic_sweep(path, outcomes, grid=grid)
    frame = load_cells(store=path)
    fig = plots.accept_length_vs_budget(frame)
    data, strip = fig.axes
    assert data.get_title() == "CUDA graphs on"
    assert sorted(_texts(strip)) == ["cuda_oom (k=4)", "timeout (k=4)"]
    assert sorted(_texts(plots.heatmap(frame, "accept_length").axes[0])) == [
        "2", "4", "x cuda_oom", "x timeout"]


def test_throughput_and_speedup_carry_their_intervals_as_error_bars(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    grid = {"budget": [4, 16], "topk_cap": [4], "cuda_graph": [False]}
    samples = {"base": [100.0, 104.0, 96.0, 101.0], "b4": [150.0, 160.0, 140.0, 155.0],
               "b16": [200.0, 230.0, 170.0, 210.0]}
    outcomes = [("measured", _with_ci(samples[k])) for k in ("base", "b4", "b16")]
    sweepkit.synthetic_sweep(path, outcomes, grid=grid)
    frame = load_cells(store=path)
    fig = plots.throughput_vs_budget(frame)
    bars = [c for c in fig.axes[0].collections if type(c).__name__ == "LineCollection"]
    assert len(bars) == 1, "one error bar set for the cap's line"
    spans = [seg[:, 1] for seg in bars[0].get_segments()]
    assert [tuple(round(y, 1) for y in span) for span in spans] == [
        (frame.loc[i, "output_tok_s_ci_low"].round(1), frame.loc[i, "output_tok_s_ci_high"].round(1))
        for i in (1, 2)]
    assert any(type(p).__name__ == "Rectangle" or "Polygon" in type(p).__name__
               for p in fig.axes[0].patches), "the baseline's interval is a band"
    speed = plots.speedup_vs_budget(frame)
    speed_bars = [c for c in speed.axes[0].collections if type(c).__name__ == "LineCollection"]
    low, high = speed_bars[0].get_segments()[1][:, 1]
    assert (low, high) == pytest.approx((frame.loc[2, "speedup_ci_low"],
                                         frame.loc[2, "speedup_ci_high"]))
    assert low < frame.loc[2, "speedup"] < high


def _with_ci(samples: list[float]) -> dict:
    from ddlab.lab.stats import median_ci

    median, low, high = median_ci(samples)
    return {"output_tok_s": median, "output_tok_s_ci_low": low, "output_tok_s_ci_high": high,
            "output_tok_s_samples": samples, "accept_length": 2.0}


@pytest.mark.slow
def test_explorer_switches_metric_and_filters(frame):
    explorer = plots.explorer(frame, "accept_length")
    first = bytes(explorer.image.value)
    assert first.startswith(b"\x89PNG")
    explorer.metric.value = "output_tok_s"
    redrawn = bytes(explorer.image.value)
    assert redrawn.startswith(b"\x89PNG") and redrawn != first
    explorer.graphs.value = (False,)
    assert set(explorer.filtered()["cuda_graph"]) == {False}
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == plots.Explorer.NOTE
    assert "application/vnd.jupyter.widget-view+json" in bundle
