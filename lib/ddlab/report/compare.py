"""Sweeps compared: the same configs side by side, each sweep's median with its 95% interval.

:func:`comparison_frame` puts the cells of several sweeps (each
:func:`ddlab.sweeps.results.load_cells`'s frame) into one, matching a config across
sweeps by what it is, not by its hash: the hash counts every flag, the port
too, and each demo run picks a free port. A config is its role, budget, top-k
cap, CUDA graphs and any other swept or extra value (:func:`config_label`:
``b16 k4 graphs on``, ``no spec, graphs off``). :func:`compare_figure` draws
one group of bars per config, one bar per sweep, whiskers for the 95% interval
(``<metric>_ci_low`` / ``_ci_high``; a sweep stored before intervals existed
has none, and its bars are drawn without), so "did it get faster?" is answered
by whether the whiskers overlap. A crashed cell is a red x under its group,
with its kind; a cell that served wrong tokens is a red-edged, hatched bar.

Only sweeps of one workload compare: :func:`workload` is what each cell was
measured with (requests x max_new_tokens, concurrency, the prompts), and
:func:`workload_caution` says when the sweeps given differ; the figure then says
so in red above its panels and in each sweep's legend entry, and the report's
verdict (``ddlab.load_report`` of several sweeps) counts it as a warning.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddlab.core import yamlio
from ddlab.core.errors import ConfigError
from ddlab.sweeps.results import METRICS
from ddlab.sweeps.plan import describe_grid
from ddlab.report.plots import CRASHED, SweepFigure, _need, _yerr

__all__ = ["comparison_frame", "compare_figure", "config_label", "sweep_list", "sweep_title",
           "workload", "workload_caution"]

_DIMENSIONS = ("budget", "topk_cap", "cuda_graph")


def sweep_list(sweeps) -> list[str]:
    """Sweep ids from one id, a list, or the YAML text plain papermill passes (``'[a, b]'``)."""
    if isinstance(sweeps, str) and sweeps.lstrip().startswith("["):
        try:
            sweeps = yamlio.load(sweeps)
        except ValueError as err:
            raise ConfigError(f"sweep={sweeps!r}: not a sweep id nor a list of them ({err})",
                              fix="e.g. -p sweep latest, or -p sweep '[ID1, ID2]'",
                              value=sweeps) from None
    ids = [sweeps] if isinstance(sweeps, str) else list(sweeps or ())
    if not ids or not all(isinstance(i, str) and i.strip() for i in ids):
        raise ConfigError(f"sweep={sweeps!r}: must be a sweep id or a list of sweep ids",
                          fix="e.g. latest, or [ID1, ID2] (ddlab runs lists them)", value=sweeps)
    return [i.strip() for i in ids]


def sweep_title(store, sweep_id: str) -> str:
    """``<id>\n(budget 4,16,32 × cap 1,4 × graphs on,off on local)``: a stored sweep in words."""
    inputs = (store.sweep(sweep_id) or {}).get("grid") or {}
    what = describe_grid(inputs.get("grid") or {}, inputs.get("extra") or ())
    host = (store.sweep(sweep_id) or {}).get("host") or "?"
    return f"{sweep_id}\n({what} on {host})"


def workload(options: dict | None) -> str:
    """``8 requests x 128 tokens, concurrency 1``: what each cell of a sweep was measured
    with (its stored options; the defaults for what an old sweep did not store), with
    ``, 3 own prompts`` when it was given prompts of its own."""
    from ddlab.sweeps.plan import SweepOptions

    given = {**SweepOptions().__dict__, **(options or {})}
    words = (f"{given['requests']} requests x {given['max_new_tokens']} tokens, "
             f"concurrency {given['concurrency']}")
    prompts = list(given.get("lossless_prompts") or ())
    return words + (f", {len(prompts)} own prompts" if prompts else "")


def workload_caution(store, sweep_ids) -> str:
    """"" when the sweeps ran one workload; else what each ran, and that their figures
    do not compare."""
    words = {i: workload((store.sweep(i) or {}).get("options")) for i in sweep_ids}
    if len(set(words.values())) <= 1:
        return ""
    return ("the sweeps compared ran different workloads ("
            + "; ".join(f"{i}: {w}" for i, w in words.items())
            + "): their tok/s and speedups do not compare")


def config_label(row) -> str:
    """What a cell is, the same in every sweep: ``b16 k4 graphs on, debug_drop_verify_field=x``."""
    graphs = "graphs on" if row.get("cuda_graph") else "graphs off"
    if row.get("role") == "baseline":
        return f"no spec, {graphs}"
    words = [f"{head}{row[key]:g}" for key, head in (("budget", "b"), ("topk_cap", "k"))
             if _number(row.get(key))]
    words.append(graphs)
    extra = [f"{key[6:]}={_short(value)}" for key, value in row.items()
             if str(key).startswith("point.") and key[6:] not in _DIMENSIONS
             and not _missing(value)]
    text = ", ".join([" ".join(words), *extra])
    return text if len(text) <= 48 else text[:47] + "…"


def comparison_frame(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The sweeps' cells in one frame (``{sweep id: cells frame}``, in the order given),
    with ``sweep_id`` and ``config`` (:func:`config_label`)."""
    parts = []
    for sweep_id, frame in frames.items():
        if frame.empty:
            continue
        part = frame.copy()
        part["sweep_id"] = sweep_id
        part["config"] = [config_label(row) for _, row in part.iterrows()]
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["sweep_id", "config", "status", "role"])


def compare_figure(frame: pd.DataFrame, metrics=("output_tok_s", "speedup"), *,
                   labels: dict | None = None, caution: str = "") -> Figure:
    """One panel per metric: per config, one bar per sweep (median) with its 95% interval.

    ``frame`` is :func:`comparison_frame`'s; configs keep the order of the first sweep
    that has them; a metric no cell has is left out (``speedup`` without a baseline).
    ``labels``: a sweep id's words in the legend (what it varied), default its id;
    ``caution`` (:func:`workload_caution`): the title says, in red, that they do not
    compare (give each sweep's workload in ``labels``)."""
    metrics = list(dict.fromkeys(metrics))
    _need(frame, "sweep_id", "config", "status", *metrics)
    shown = [m for m in metrics if frame[m].notna().any()] or metrics[:1]
    sweeps = list(dict.fromkeys(frame["sweep_id"]))
    configs = list(dict.fromkeys(frame["config"]))
    fig = SweepFigure(figsize=(max(6.0, 0.55 * len(configs) * max(len(sweeps), 2) + 2),
                               2.2 + 3.0 * len(shown)))
    axes = fig.subplots(len(shown), 1, sharex=True, squeeze=False)[:, 0]
    for ax, metric in zip(axes, shown):
        _panel(ax, frame, metric, sweeps, configs, labels or {})
    axes[-1].set_xticks(range(len(configs)), configs, rotation=40, ha="right", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    head = f"{len(sweeps)} sweeps side by side: " if len(sweeps) > 1 else ""
    title = (f"{head}bar = median, whisker = 95% interval (whiskers that overlap: no "
             "difference shown)")
    if caution:  # the legend says each sweep's workload
        title = ("NOT COMPARABLE: these sweeps ran different workloads (see the legend): "
                 f"their tok/s and speedups do not compare\n{title}")
    fig.suptitle(title, fontsize=10, y=0.995, color="#cf222e" if caution else "black")
    fig.tight_layout()
    return fig


def _panel(ax, frame: pd.DataFrame, metric: str, sweeps: list[str], configs: list[str],
           labels: dict) -> None:
    width = 0.8 / max(len(sweeps), 1)
    for i, sweep_id in enumerate(sweeps):
        rows = frame[frame["sweep_id"] == sweep_id]
        x = np.array([configs.index(c) for c in rows["config"]]) - 0.4 + width * (i + 0.5)
        rows = rows.assign(x=x)
        drawn = rows[rows["status"].isin(("measured", "wrong_output")) & rows[metric].notna()]
        colour = f"C{i % 10}"
        ax.bar(drawn["x"], drawn[metric].astype(float), width * 0.9, color=colour,
               label=labels.get(sweep_id, sweep_id), edgecolor=["red" if s == "wrong_output" else colour
                                          for s in drawn["status"]],
               hatch=None if (drawn["status"] != "wrong_output").all() else "//")
        yerr = _yerr(drawn, metric)
        if yerr is not None:
            ax.errorbar(drawn["x"], drawn[metric].astype(float), yerr=yerr, fmt="none",
                        ecolor="black", capsize=3, linewidth=1)
        _crashes(ax, rows[rows["status"].isin(CRASHED)])
    if metric == "speedup":
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel(METRICS.get(metric, metric), fontsize=9)
    ax.grid(axis="y", alpha=0.3)


def _crashes(ax, crashed: pd.DataFrame) -> None:
    """A red x at the bottom of the panel (axes coordinates: never a value) with the kind."""
    transform = ax.get_xaxis_transform()
    for _, row in crashed.iterrows():
        ax.plot([row["x"]], [0.03], marker="x", color="red", markersize=8, mew=2,
                transform=transform, clip_on=False)
        ax.annotate(str(row.get("kind") or "crashed"), (row["x"], 0.03), xycoords=transform,
                    xytext=(0, 6), textcoords="offset points", color="red", fontsize=6,
                    rotation=90, ha="center", va="bottom")


def _short(value) -> str:
    text = "on" if value is True else "off" if value is False else str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def _number(value) -> bool:
    return isinstance(value, (int, float, np.number)) and not _missing(value)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)
