"""Figures of a workload sweep: functions take the levels frame and return a Figure.

The frame is :func:`ddlab.sweeps.levels.load_levels`'s (a row per cell and level).

- :func:`pareto`: per-user tok/s against total tok/s, a curve per config through its
  levels (each point labelled with its concurrency), the no-speculation baseline's curve
  dashed black: a config whose curve lies up and right of the baseline's gives both
  more per user and more in total (vLLM's ``plot_pareto`` axes).
- :func:`speedup_vs_concurrency`: each config's speedup at each level with its 95 %
  interval as an error bar, the 1x line, levels on a log axis.

A frame without levels (a single-level sweep) gives None: nothing to draw, and a
notebook cell shows nothing. Made without pyplot, as :mod:`ddlab.report.plots`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddlab.report.figure_base import SweepFigure, _need

__all__ = ["pareto", "speedup_vs_concurrency", "workload_figures"]


def _configs(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    measured = frame[frame["output_tok_s"].notna()]
    return [(name, rows.sort_values("concurrency"))
            for name, rows in measured.groupby("name", sort=False)]


def _colours(levels: pd.DataFrame) -> dict[str, str]:
    """One colour per speculative config, the same in every workload figure (the Pareto
    also draws the baselines, the speedup figure does not: counting them shifted colours)."""
    spec = levels[levels["role"] != "baseline"]
    return {name: f"C{n}" for n, name in enumerate(spec["name"].drop_duplicates())}


def _err(rows: pd.DataFrame, metric: str):
    low, high = rows.get(f"{metric}_ci_low"), rows.get(f"{metric}_ci_high")
    if low is None or high is None or low.isna().all():
        return None
    values = rows[metric].to_numpy(dtype=float)
    return np.vstack([np.nan_to_num(values - low.to_numpy(dtype=float)),
                      np.nan_to_num(high.to_numpy(dtype=float) - values)]).clip(min=0)


def pareto(levels: pd.DataFrame) -> Figure | None:
    """Per-user tok/s (y) against total tok/s (x), a curve per config, the baseline dashed."""
    if levels is None or levels.empty:
        return None
    _need(levels, "name", "role", "concurrency", "output_tok_s", "user_tok_s")
    fig = SweepFigure(figsize=(7.5, 4.8))
    ax = fig.subplots()
    baselines = iter(("black", "dimgray", "darkgray"))  # one per graphs setting (and host)
    colours = _colours(levels)
    for name, rows in _configs(levels):
        baseline = (rows["role"] == "baseline").all()
        ax.errorbar(rows["output_tok_s"], rows["user_tok_s"], xerr=_err(rows, "output_tok_s"),
                    yerr=_err(rows, "user_tok_s"), marker="s" if baseline else "o",
                    linestyle="--" if baseline else "-",
                    color=next(baselines, "gray") if baseline else colours[name],
                    capsize=2, label=f"{name} (no speculation)" if baseline else name)
        for _, row in rows.iterrows():
            ax.annotate(f"c{int(row['concurrency'])}", (row["output_tok_s"], row["user_tok_s"]),
                        textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("total output throughput (tok/s)")
    ax.set_ylabel("per-user throughput (tok/s per request)")
    ax.set_title("Pareto: per user against total, by concurrency (c = requests in flight)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def speedup_vs_concurrency(levels: pd.DataFrame) -> Figure | None:
    """Speedup over no speculation at each level, a line per config, 95% error bars."""
    if levels is None or levels.empty:
        return None
    _need(levels, "name", "role", "concurrency", "speedup")
    fig = SweepFigure(figsize=(7.5, 4.2))
    ax = fig.subplots()
    spec = levels[(levels["role"] != "baseline") & levels["speedup"].notna()]
    colours = _colours(levels)
    for name, rows in _configs(spec):
        ax.errorbar(rows["concurrency"], rows["speedup"], yerr=_err(rows, "speedup"),
                    marker="o", capsize=3, color=colours[name], label=name)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="no speculation (1x)")
    ax.set_xscale("log", base=2)
    ticks = sorted(int(c) for c in levels["concurrency"].dropna().unique())
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel("speedup over no speculation (x)")
    ax.set_title("Where speculation stops paying: speedup by concurrency, 95% intervals",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def workload_figures(levels: pd.DataFrame) -> list:
    """The report's workload figures: the Pareto and the speedup by concurrency."""
    return [f for f in (pareto(levels), speedup_vs_concurrency(levels)) if f is not None]
