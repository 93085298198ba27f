"""Plots of sweep results: functions take a DataFrame and return a Figure.

The frame is :func:`ddlab.sweeps.results.load_cells`'s (one row per cell). Figures
with a 95% interval (``<metric>_ci_low`` / ``_ci_high``: throughput, TTFT,
TPOT, speedup) are drawn with error bars, the baseline's as a band. Crashed
cells are never dropped: they are drawn at their budget on a strip *below* the
data axis (no value of the metric, so never at a plausible y), as a red x
labelled with their crash kind, so a plot shows which corner of the grid fails
and why. The caller saves or displays the figure. Figures are made
without pyplot, so nothing is shown twice in a notebook and no global state
leaks between calls.

The axes are the sweep's family's knobs (:func:`axis_of`): SGLang's DDTree budget on x,
a line per top-k cap; vLLM's ``num_speculative_tokens`` on x, a line per method, its
acceptance labelled as its own figure (mean acceptance length).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddlab.report.figure_base import DDTREE_AXIS, PlotAxis, SweepFigure, _need, axis_of
from ddlab.sweeps.results import METRICS

__all__ = ["metric_vs_budget", "axis_of", "PlotAxis", "by_host", "accept_length_vs_budget",
           "throughput_vs_budget",
           "speedup_vs_budget", "heatmap", "overview", "Explorer", "explorer"]

CRASHED = ("crashed", "timeout")
ENDED = ("scheduler_ended",)  # a job the scheduler ended (time limit, preemption): no crash


def _label(frame: pd.DataFrame, metric: str) -> str:
    return axis_of(frame).accept_label if metric == "accept_length" else METRICS.get(metric, metric)


def _graph_modes(frame: pd.DataFrame) -> list[bool]:
    modes = sorted(set(frame["cuda_graph"].dropna().astype(bool)), reverse=True)
    return modes or [True]


def _title(mode: bool) -> str:
    return "CUDA graphs on" if mode else "CUDA graphs off"


def metric_vs_budget(frame: pd.DataFrame, metric: str = "accept_length") -> Figure:
    """``metric`` against DDTree budget, one line per top-k cap, graphs on | off side by side
    (a vLLM sweep: against ``num_speculative_tokens``, a line per method; :func:`axis_of`).

    The no-speculation baseline is a dashed line; crashed cells are red x's
    at the axis bottom, labelled with their kind.
    """
    _need(frame, metric, "budget", "topk_cap", "cuda_graph", "status", "role")
    axis = axis_of(frame)
    if axis is not DDTREE_AXIS:
        _need(frame, axis.x, axis.group)
    modes = _graph_modes(frame)
    cells = frame[frame["role"] != "baseline"]
    grid = cells[cells["role"] == "grid"]  # an extra cell (a fault) joins no cap's line
    strip = bool(cells["status"].isin((*CRASHED, *ENDED)).any())
    fig = SweepFigure(figsize=(5.5 * len(modes), 4.6 if strip else 4))
    axes = fig.subplots(2 if strip else 1, len(modes), sharey="row", sharex="col", squeeze=False,
                        gridspec_kw={"height_ratios": [6, 1]} if strip else None)
    for column, (ax, mode) in enumerate(zip(axes[0], modes)):
        part = cells[cells["cuda_graph"] == mode]  # crashed and wrong cells: every one
        drawn = False
        for cap, rows in grid[grid["cuda_graph"] == mode].groupby(axis.group, dropna=False):
            ok = rows[(rows["status"] == "measured") & rows[metric].notna()].sort_values(axis.x)
            drawn = drawn or not ok.empty
            ax.errorbar(ok[axis.x], ok[metric], yerr=_yerr(ok, metric), marker="o", capsize=3,
                        label=f"{axis.group_label} {_fmt(cap)}")
        _baseline(ax, frame, mode, metric)
        _wrong(ax, part, metric, axis)
        if not drawn:
            _nothing_drawn(ax, part, metric)
        ax.set_title(_title(mode))
        _budget_limits(ax, grid, axis)
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        bottom = axes[1][column] if strip else ax
        if strip:
            _crash_strip(bottom, part, axis)
        bottom.set_xlabel(axis.x_label)
        _budget_ticks(bottom, grid, axis)
    axes[0][0].set_ylabel(_label(frame, metric))
    fig.suptitle(f"{_label(frame, metric)} vs {axis.x if axis is not DDTREE_AXIS else 'budget'}")
    fig.tight_layout()
    return fig


def accept_length_vs_budget(frame: pd.DataFrame) -> Figure:
    """Accept length (tokens per verify step) against the budget: :func:`metric_vs_budget`."""
    return metric_vs_budget(frame, "accept_length")


def throughput_vs_budget(frame: pd.DataFrame) -> Figure:
    """Output tok/s against the budget, 95% error bars: :func:`metric_vs_budget`."""
    return metric_vs_budget(frame, "output_tok_s")


def speedup_vs_budget(frame: pd.DataFrame) -> Figure:
    """Speedup over no speculation (same graphs setting) against the budget: :func:`metric_vs_budget`."""
    return metric_vs_budget(frame, "speedup")


def _fmt(value) -> str:
    if isinstance(value, str):
        return value
    return "none" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:g}"


def _yerr(rows: pd.DataFrame, metric: str):
    """Error bar lengths below and above each point from its 95% interval (0 unknown)."""
    low, high = f"{metric}_ci_low", f"{metric}_ci_high"
    if low not in rows or high not in rows or rows[low].isna().all():
        return None
    value = rows[metric].astype(float)
    return np.nan_to_num(np.vstack([value - rows[low].astype(float),
                                    rows[high].astype(float) - value]), nan=0.0).clip(min=0)


def _nothing_drawn(ax, part: pd.DataFrame, metric: str) -> None:
    """A panel with no value: why, in its middle (a speedup without its own baseline)."""
    notes = part["speedup_note"].dropna() if metric == "speedup" and "speedup_note" in part \
        else pd.Series(dtype=object)
    said = notes.iloc[0] if not notes.empty else f"no {METRICS.get(metric, metric)}"
    ax.text(0.5, 0.5, said.replace(": ", ":\n", 1), transform=ax.transAxes, ha="center",
            va="center", color="#9a6700", fontsize=9)


def _budget_limits(ax, grid: pd.DataFrame, axis: PlotAxis = DDTREE_AXIS) -> None:
    """The budgets' span (a log axis needs positive limits, also on an empty panel)."""
    budgets = sorted(set(grid[axis.x].dropna()))
    if budgets:
        ax.set_xlim(budgets[0] / 1.5, budgets[-1] * 1.5)


def _baseline(ax, frame: pd.DataFrame, mode: bool, metric: str) -> None:
    """The no-speculation line of this graphs setting (never the other one's)."""
    base = frame[(frame["role"] == "baseline") & (frame["status"] == "measured")]
    rows = base[(base["cuda_graph"] == mode) & base[metric].notna()]
    if rows.empty:
        return
    row = rows.iloc[0]
    where = f" on {row['host']}" if _hosts(frame)[1:] else ""  # a pool: each host has its own
    ax.axhline(row[metric], color="grey", linestyle="--", linewidth=1,
               label=f"no speculation{where} ({row[metric]:.3g})")
    low, high = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
    if metric != "speedup" and pd.notna(low) and pd.notna(high):  # its own ratio says nothing
        ax.axhspan(low, high, color="grey", alpha=0.15, linewidth=0)


def _wrong(ax, part: pd.DataFrame, metric: str, axis: PlotAxis = DDTREE_AXIS) -> None:
    """Cells that served other tokens than the model's own: drawn where they measured,
    as red rings off the lines, so a fast wrong cell never reads as the best one."""
    wrong = part[(part["status"] == "wrong_output") & part[metric].notna()]
    if wrong.empty:
        return
    ax.scatter(wrong[axis.x].fillna(1), wrong[metric], s=140, facecolors="none",
               edgecolors="red", linewidths=2, zorder=5, label="WRONG OUTPUT (not lossless)")
    for _, row in wrong.iterrows():
        ax.annotate(f"wrong ({axis.group_short}={_fmt(row[axis.group])})", (row[axis.x], row[metric]),
                    xytext=(6, -10), textcoords="offset points", color="red", fontsize=7)


def _crash_strip(ax, part: pd.DataFrame, axis: PlotAxis = DDTREE_AXIS) -> None:
    """Crashed cells on their own strip under the data axis: a red x at the cell's budget
    with its kind; the strip has no y scale, so a crash never reads as a low value."""
    ax.set_yticks([])
    ax.set_ylim(0, 1)
    ended = part[part["status"].isin(ENDED)]
    label = "crashed" if ended.empty else "crashed /\nended by\nscheduler"
    ax.set_ylabel(label, rotation=0, ha="right", va="center", color="red", fontsize=8)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    shown = part[part["status"].isin((*CRASHED, *ENDED))]
    for i, (_, row) in enumerate(shown.iterrows()):
        x = row[axis.x] if pd.notna(row[axis.x]) else 1
        crash = row["status"] in CRASHED  # a scheduler's end is grey: the server did not fail
        colour = "red" if crash else "grey"
        ax.plot([x], [0.5], marker="x" if crash else "o", color=colour, markersize=10,
                mew=2.5, fillstyle="full" if crash else "none", clip_on=False)
        ax.annotate(f"{row['kind']} ({axis.group_short}={_fmt(row[axis.group])})", (x, 0.5),
                    xytext=(6, -3 + 8 * (i % 2)),
                    textcoords="offset points", color=colour, fontsize=7)


def _budget_ticks(ax, grid: pd.DataFrame, axis: PlotAxis = DDTREE_AXIS) -> None:
    budgets = sorted(set(grid[axis.x].dropna()))
    if budgets:
        ax.set_xticks(budgets)
        ax.set_xticklabels([f"{b:g}" for b in budgets])


def heatmap(frame: pd.DataFrame, metric: str = "output_tok_s") -> Figure:
    """Budget x top-k cap heatmap of ``metric``, graphs on | off; crashed cells say their kind."""
    _need(frame, metric, "budget", "topk_cap", "cuda_graph", "status", "role")
    axis = axis_of(frame)
    grid = frame[(frame["role"] == "grid") & frame[axis.x].notna()]
    modes = _graph_modes(grid if not grid.empty else frame)
    budgets = sorted(set(grid[axis.x]))
    caps = sorted(set(grid[axis.group].dropna()))
    fig = SweepFigure(figsize=(1.2 * max(len(budgets), 1) * len(modes) + 3, 3.5),
                      layout="constrained")  # room for the suptitle and the colorbar
    axes = fig.subplots(1, len(modes), squeeze=False)
    values = grid[grid["status"] == "measured"][metric].astype(float)
    vmin, vmax = (values.min(), values.max()) if not values.empty else (0, 1)
    for ax, mode in zip(axes[0], modes):
        part = grid[grid["cuda_graph"] == mode]
        data = np.full((len(caps), len(budgets)), np.nan)
        for _, row in part.iterrows():
            if pd.isna(row[axis.group]):
                continue
            i, j = caps.index(row[axis.group]), budgets.index(row[axis.x])
            if row["status"] == "measured":
                data[i, j] = row[metric]
            value = row[metric] if row["status"] == "measured" else None
            dark = pd.notna(value) and value - vmin < 0.5 * (vmax - vmin)  # white text on it
            ax.text(j, i, _cell_text(row, metric), ha="center", va="center", fontsize=8,
                    color="red" if row["status"] in (*CRASHED, "wrong_output")
                    else "grey" if row["status"] in ENDED else "white" if dark else "black")
        image = ax.imshow(data, cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto", alpha=0.85)
        ax.set_xticks(range(len(budgets)), [f"{b:g}" for b in budgets])
        ax.set_yticks(range(len(caps)), [_fmt(c) for c in caps])
        ax.set_xlabel("DDTree budget" if axis is DDTREE_AXIS else axis.x)
        ax.set_ylabel(axis.group_label)
        ax.set_title(_title(mode))
    fig.colorbar(image, ax=axes[0].tolist(), label=_label(frame, metric))
    fig.suptitle(f"{_label(frame, metric)}: " + ("budget x top-k cap" if axis is DDTREE_AXIS
                                                 else f"{axis.x} x {axis.group}"))
    return fig


def _cell_text(row, metric: str) -> str:
    if row["status"] == "measured":
        return _number(row[metric]) if pd.notna(row[metric]) else "n/a"
    if row["status"] in CRASHED:
        return f"x {row['kind']}"
    if row["status"] in ENDED:  # e.g. slurm_timeout: the job's time limit, not the server
        return f"ended\n{row['kind']}"
    if row["status"] == "wrong_output":  # its speed is no result: the tokens are wrong
        return "WRONG\noutput"
    return row["status"]


def _number(value: float) -> str:
    """Three significant digits, never in e-notation (1234.5 -> 1234, 3.456 -> 3.46)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _hosts(frame: pd.DataFrame) -> list[str]:
    return sorted(frame["host"].dropna().unique()) if "host" in frame else []


def by_host(frame: pd.DataFrame, metric: str = "speedup") -> Figure:
    """A pool sweep's ``metric`` against budget, one panel per host: each host's cells
    (o graphs on, s graphs off, one colour per top-k cap) and its own baseline."""
    _need(frame, metric, "budget", "topk_cap", "cuda_graph", "status", "role", "host")
    hosts = _hosts(frame) or ["(no host)"]
    fig = SweepFigure(figsize=(4.2 * len(hosts), 4))
    axes = fig.subplots(1, len(hosts), sharey=True, squeeze=False)[0]
    caps = sorted(set(frame["topk_cap"].dropna()))
    colours = {cap: f"C{i}" for i, cap in enumerate(caps)}
    for ax, host in zip(axes, hosts):
        mine = frame[frame["host"] == host]
        cells = mine[(mine["role"] == "grid") & (mine["status"] == "measured")]
        for (cap, graphs), rows in cells.groupby(["topk_cap", "cuda_graph"], dropna=False):
            rows = rows.sort_values("budget")
            ax.errorbar(rows["budget"], rows[metric], yerr=_yerr(rows, metric),
                        marker="o" if graphs else "s", linestyle="-" if graphs else ":",
                        color=colours.get(cap, "C9"), capsize=3,
                        label=f"cap {_fmt(cap)}, graphs {'on' if graphs else 'off'}")
        if metric != "speedup":
            _baseline(ax, mine, True, metric)
        _wrong(ax, mine[mine["role"] != "baseline"], metric)
        crashed = mine[mine["status"].isin(CRASHED)]
        title = f"{host}: {len(mine)} cells" + (f", {len(crashed)} crashed" if len(crashed) else "")
        ax.set_title(title, fontsize=10)
        ax.set_xscale("log", base=2)
        _budget_ticks(ax, mine[mine["role"] == "grid"])
        ax.set_xlabel("DDTree budget (nodes)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel(METRICS.get(metric, metric))
    fig.suptitle(f"{METRICS.get(metric, metric)} by host")
    fig.tight_layout()
    return fig


def overview(frame: pd.DataFrame) -> list[Figure]:
    """The report's figures: accept length, throughput, speedup, a heatmap; and for a
    pool sweep the speedup over each host's own baseline, a panel per host."""
    figures = [accept_length_vs_budget(frame), throughput_vs_budget(frame)]
    if frame["speedup"].notna().any():
        figures.append(speedup_vs_budget(frame))
    figures.append(heatmap(frame, "output_tok_s"))
    if len(_hosts(frame)) > 1:
        figures.append(by_host(frame, "speedup" if frame["speedup"].notna().any()
                               else "output_tok_s"))
    return figures


VIEWS = ("metric by budget", "Pareto (per user vs total)", "speedup by concurrency")


class Explorer:
    """ipywidgets controls over a sweep's frame: pick the metric, the graph
    modes and the top-k caps (and for a workload sweep the view: its Pareto or its
    speedup by concurrency); the figure (an Image widget) redraws. Live in
    JupyterLab; a headless run (papermill, HTML) keeps a one-line note, since
    the static figures above already hold the data. No Output widget: its
    display capture intermittently stalled headless kernels."""

    NOTE = "(interactive controls: open this notebook in JupyterLab to filter and switch metrics)"

    def __init__(self, frame: pd.DataFrame, metric: str = "output_tok_s",
                 levels: pd.DataFrame | None = None):
        import ipywidgets as w

        _need(frame, metric, "budget", "topk_cap", "cuda_graph", "status", "role")
        self.frame = frame
        self.levels = levels if levels is not None else pd.DataFrame()
        caps = sorted(set(frame["topk_cap"].dropna()))
        self.metric = w.Dropdown(options=[m for m in METRICS if m in frame.columns],
                                 value=metric, description="metric")
        # a workload sweep: its two figures too, filtered by the same controls
        self.view = w.Dropdown(options=list(VIEWS) if not self.levels.empty else VIEWS[:1],
                               value=VIEWS[0], description="view")
        self.graphs = w.SelectMultiple(options=[("on", True), ("off", False)], value=(True, False),
                                       description="cuda graph")
        self.caps = w.SelectMultiple(options=[(f"{c:g}", c) for c in caps], value=tuple(caps),
                                     description="top-k cap")
        self.image = w.Image(format="png")
        for control in (self.metric, self.view, self.graphs, self.caps):
            control.observe(lambda change: self.redraw(), names="value")
        controls = [self.metric, self.graphs, self.caps]
        controls += [self.view] if not self.levels.empty else []
        self.box = w.VBox([w.HBox(controls), self.image])
        self.redraw()

    def _keep(self, f: pd.DataFrame) -> pd.DataFrame:
        keep = f["cuda_graph"].isin(self.graphs.value) & (
            f["topk_cap"].isin(self.caps.value) | (f["role"] == "baseline"))
        return f[keep]

    def filtered(self) -> pd.DataFrame:
        return self._keep(self.frame)

    def figure(self):
        """The figure the controls choose (None: nothing to draw)."""
        if self.view.value != VIEWS[0]:
            from ddlab.report import workload_plots

            part = self._keep(self.levels)
            draw = (workload_plots.pareto if self.view.value == VIEWS[1]
                    else workload_plots.speedup_vs_concurrency)
            return None if part.empty else draw(part)
        part = self.filtered()
        return None if part.empty else metric_vs_budget(part, self.metric.value)

    def redraw(self) -> None:
        figure = self.figure()
        self.image.value = b"" if figure is None else figure._repr_png_()

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.NOTE
        return bundle


def explorer(frame: pd.DataFrame, metric: str = "output_tok_s",
             levels: pd.DataFrame | None = None) -> Explorer:
    """Live controls over a sweep's frame in JupyterLab (:class:`Explorer`); given a
    workload sweep's ``levels`` (``report.levels``), its Pareto and speedup by
    concurrency too (the ``view`` control)."""
    return Explorer(frame, metric, levels)
