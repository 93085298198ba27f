"""A workload sweep's verdict in words (issue 27): the crossover in the headline, one line
of at most 160 characters whatever the names (issue 22's rule), the detail below; a sweep
at one level reads as before. Frames are built from intervals, as load_levels gives them."""

from __future__ import annotations

import pandas as pd
import pytest

from ddlab.report.verdicts import HEADLINE_MAX, SweepVerdict
from ddlab.report.workload_words import workload_answer
from ddlab.report.workload_plots import pareto, speedup_vs_concurrency

LEVELS = (1, 4, 16, 64)


def _levels(configs: dict) -> pd.DataFrame:
    """configs: name -> one (low, high) speedup interval per level; a baseline at 1x."""
    rows = []
    for c in LEVELS:
        rows.append({"name": "base", "role": "baseline", "status": "measured", "concurrency": c,
                     "speedup": 1.0, "speedup_ci_low": None, "speedup_ci_high": None,
                     "output_tok_s": 100.0 * c ** 0.8, "user_tok_s": 100.0 / c ** 0.2})
        for name, intervals in configs.items():
            low, high = intervals[LEVELS.index(c)]
            mid = (low + high) / 2
            rows.append({"name": name, "role": "grid", "status": "measured", "concurrency": c,
                         "speedup": mid, "speedup_ci_low": low, "speedup_ci_high": high,
                         "output_tok_s": mid * 100.0 * c ** 0.8, "output_tok_s_ci_low": None,
                         "output_tok_s_ci_high": None, "user_tok_s": mid * 100.0 / c ** 0.2})
    return pd.DataFrame(rows)


def _verdict(configs: dict) -> SweepVerdict:
    frame = _levels(configs)
    summary = {"cells": 1 + len(configs), "measured": 1 + len(configs), "crashed": 0}
    return SweepVerdict(sweep_id="s", status="done", summary=summary,
                        workload=workload_answer(frame, []))


PAYS_THEN_LOSES = [(1.7, 2.1), (1.3, 1.5), (0.95, 1.05), (0.7, 0.9)]
EVERY = [(1.7, 2.1), (1.3, 1.5), (1.1, 1.2), (1.02, 1.1)]
NEVER = [(0.9, 1.1), (0.8, 0.95), (0.7, 0.9), (0.6, 0.8)]


def test_the_headline_names_the_config_that_pays_up_to_the_highest_level():
    verdict = _verdict({"local-b4": NEVER, "local-b16": PAYS_THEN_LOSES, "local-b32": EVERY})
    assert verdict.headline.startswith("SWEEP DONE: 4 cells x 4 levels (1-64), 4 measured")
    assert "local-b32 pays at every level tried (1-64; 1.06x [1.02-1.10] at 64)" in verdict.headline
    details = verdict.details
    assert ("crossover: local-b16 pays up to concurrency 4 (1.40x [1.30-1.50]); ties at 16; "
            "loses at 64 (0.80x [0.70-0.90])") in details
    assert "crossover: local-b4 never pays: ties at concurrency 1 (1.00x [0.90-1.10]); loses at 4 " \
           "(0.88x [0.80-0.95])" in details
    best = [line for line in details if line.startswith("best at concurrency")]
    assert len(best) == len(LEVELS) and best[0].startswith("best at concurrency 1: local-b16")
    assert "add higher levels" in verdict.next_step


def test_no_config_that_pays_is_said_so():
    verdict = _verdict({"local-b4": NEVER})
    assert verdict.headline.endswith("No config pays at any level tried (1-64)")
    assert "sweep smaller budgets" in verdict.next_step


@pytest.mark.parametrize("length", [40, 120], ids=["long-name", "very-long-name"])
def test_the_headline_stays_one_line_of_at_most_160_characters(length):
    name = "local-" + "x" * length
    verdict = _verdict({name: PAYS_THEN_LOSES, "other": EVERY[:1] + PAYS_THEN_LOSES[1:]})
    headline = verdict.headline
    assert len(headline) <= HEADLINE_MAX and "\n" not in headline, headline
    assert any(name in line for line in verdict.details)  # the whole name below it


def test_a_single_level_sweep_reads_as_before():
    summary = {"cells": 2, "measured": 2, "crashed": 0,
               "best": {"name": "local-b16", "output_tok_s": 500.0, "speedup": 2.5}}
    plain = SweepVerdict(sweep_id="s", status="done", summary=summary)
    assert plain.headline == "SWEEP DONE: 2 cells, 2 measured, 0 crashed. Best: local-b16 at 500.0 tok/s, 2.50x"
    assert "workload" not in plain.to_dict()


def test_the_pareto_draws_the_baselines_curve_and_each_configs():
    frame = _levels({"local-b16": PAYS_THEN_LOSES, "local-b32": EVERY})
    figure = pareto(frame)
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert labels == ["base (no speculation)", "local-b16", "local-b32"]
    speed = speedup_vs_concurrency(frame)
    assert [t.get_text() for t in speed.axes[0].get_xticklabels()] == [str(c) for c in LEVELS]


def test_a_config_has_one_colour_in_both_workload_figures():
    """The Pareto draws the baseline too, the speedup figure does not: before, counting the
    baseline shifted every config's colour between the two (H200 run, 2026-12-03)."""
    from matplotlib.colors import to_hex

    frame = _levels({"local-b16": PAYS_THEN_LOSES, "local-b32": EVERY})

    def colours(figure):  # each config's error-bar curve, by its label
        return {bars.get_label(): to_hex(bars.lines[0].get_color())
                for bars in figure.axes[0].containers if bars.get_label().startswith("local")}

    pareto_colours, speedup_colours = colours(pareto(frame)), colours(speedup_vs_concurrency(frame))
    assert set(pareto_colours) == {"local-b16", "local-b32"}
    assert pareto_colours == speedup_colours
    assert len(set(pareto_colours.values())) == 2


def test_the_explorer_offers_the_workload_views_only_with_levels():
    from ddlab.report.plots import VIEWS, explorer

    levels = _levels({"local-b16": PAYS_THEN_LOSES})
    levels["budget"] = [None if r == "baseline" else 16 for r in levels["role"]]
    levels["topk_cap"] = [None if r == "baseline" else 4 for r in levels["role"]]
    levels["cuda_graph"] = False
    cells = levels[levels["concurrency"] == 1]
    live = explorer(cells, "output_tok_s", levels=levels)
    assert list(live.view.options) == list(VIEWS)
    live.view.value = VIEWS[1]
    drawn = live.figure()
    assert drawn.axes[0].get_xlabel() == "total output throughput (tok/s)"
    live.caps.value = ()  # only the baseline left: its curve alone
    assert [t.get_text() for t in live.figure().axes[0].get_legend().get_texts()] == [
        "base (no speculation)"]
    assert list(explorer(cells, "output_tok_s").view.options) == [VIEWS[0]]
