"""Sweep results as pandas DataFrames, for notebooks and plots.

One row per cell of a sweep, in plan order, with the swept values as plain
columns (``budget``, ``topk_cap``, ``cuda_graph``, ``algorithm``, read from the
cell's full config, so a cell is described the same way whatever the grid
was), its status (measured | crashed | timeout | error | pending), the crash
kind and phase, the benchmark figures, and ``speedup``: output tok/s over the
no-speculation baseline with the same CUDA-graph setting (any baseline when
there is none with the same setting).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddlab.config.flags import graphs_on
from ddlab.core.errors import ConfigError
from ddlab.lab.store import Store

__all__ = ["load_cells", "plan_frame", "resolve_sweep", "summarize", "METRICS"]

# Benchmark figures a plot may ask for, with their axis labels.
METRICS = {
    "accept_length": "accept length (tokens per verify)",
    "output_tok_s": "output throughput (tok/s)",
    "speedup": "speedup over no speculation (x)",
    "requests_s": "requests/s",
    "ttft_ms_p50": "TTFT p50 (ms)",
    "itl_ms_p50": "ITL p50 (ms)",
    "tpot_ms_p50": "TPOT p50 (ms)",
    "e2e_ms_p50": "e2e latency p50 (ms)",
}


def resolve_sweep(store: Store, sweep: str = "latest") -> str:
    """A sweep id from ``latest`` or an id; ConfigError listing the known ones."""
    sweep_id = store.latest_sweep_id() if sweep in ("", "latest") else sweep
    if not sweep_id or store.sweep(sweep_id) is None:
        known = ", ".join(store.sweep_ids()[-5:]) or "none yet: run notebooks/sweep.ipynb"
        raise ConfigError(f"sweep={sweep!r}: no such sweep in {store.path}",
                          fix=f"use 'latest' or one of: {known}", value=sweep)
    return sweep_id


def load_cells(sweep: str = "latest", *, store: Store | str | Path | None = None) -> pd.DataFrame:
    """The sweep's cells, one row each (see the module docstring for the columns)."""
    store = store if isinstance(store, Store) else Store(store)
    sweep_id = resolve_sweep(store, sweep)
    rows = [_row(sweep_id, cell) for cell in store.cells(sweep_id)]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["speedup"] = _speedups(frame)
    return frame


def plan_frame(sweep) -> pd.DataFrame:
    """A planned :class:`ddlab.lab.sweep_run.Sweep` (a dry run: nothing stored) as
    :func:`load_cells` would give it, every cell ``pending``."""
    rows = [_row(sweep.sweep_id, {"position": c.position, "name": c.variant.name, "role": c.role,
                                  "status": "pending", "config_hash": c.hash, "point": c.point,
                                  "config": c.variant.to_dict()}) for c in sweep.cells]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["speedup"] = _speedups(frame)
    return frame


def _row(sweep_id: str, cell: dict) -> dict:
    flags = ((cell.get("config") or {}).get("config") or {}).get("flags", {})
    verdict = cell.get("verdict") or {}
    metrics = cell.get("metrics") or {}
    algorithm = flags.get("speculative-algorithm") or "NONE"
    row = {
        "sweep_id": sweep_id, "position": cell["position"], "name": cell["name"],
        "role": cell["role"], "status": cell["status"], "config_hash": cell["config_hash"],
        "algorithm": str(algorithm).upper(),
        "budget": flags.get("speculative-ddtree-budget"),
        "topk_cap": flags.get("speculative-ddtree-topk-cap"),
        "cuda_graph": graphs_on(flags),
        # what the decode lines said (False: asked for graphs, decoded eagerly)
        "graphs_ran": verdict["decode"].get("cuda_graph")
        if isinstance(verdict.get("decode"), dict) else None,
        "kind": verdict.get("kind") if cell["status"] in ("crashed", "timeout") else None,
        "phase": verdict.get("phase"),
        "cause": verdict.get("cause"),
        "suggestion": verdict.get("suggestion"),
        "run_dir": cell.get("run_dir"),
    }
    if cell["status"] == "timeout":
        row["kind"] = "timeout"
    for key in METRICS:
        if key != "speedup":
            row[key] = metrics.get(key)
    row.update({f"point.{k}": v for k, v in (cell.get("point") or {}).items()})
    return row


def _speedups(frame: pd.DataFrame) -> pd.Series:
    base = frame[(frame["role"] == "baseline") & frame["output_tok_s"].notna()]
    out = []
    for _, row in frame.iterrows():
        same = base[base["cuda_graph"] == row["cuda_graph"]]
        ref = (same if not same.empty else base)["output_tok_s"]
        value = row["output_tok_s"]
        out.append(value / ref.iloc[0] if not ref.empty and pd.notna(value) else None)
    return pd.Series(out, index=frame.index, dtype="float64")


def summarize(frame: pd.DataFrame) -> dict:
    """Counts and the best measured cell, for a verdict line."""
    if frame.empty:
        return {"cells": 0}
    measured = frame[frame["status"] == "measured"]
    crashed = frame[frame["status"].isin(["crashed", "timeout"])]
    out = {"cells": len(frame), "measured": len(measured), "crashed": len(crashed),
           "pending": int((frame["status"] == "pending").sum()),
           "errors": int((frame["status"] == "error").sum()),
           "crash_kinds": sorted(set(crashed["kind"].dropna()))}
    eager = measured[(measured["cuda_graph"] == True) & (measured.get("graphs_ran") == False)]  # noqa: E712
    if not eager.empty:  # its figures are eager ones under a graphs-on label: never best
        out["graphs_not_run"] = list(eager["name"])
        measured = measured.drop(eager.index)
    wrong = frame[frame["status"] == "wrong_output"]
    if not wrong.empty:  # fast and wrong: never the best cell, and said first
        out["wrong_output"] = len(wrong)
        out["wrong_cells"] = list(wrong["name"])
    spec = measured[measured["role"] != "baseline"]
    if not spec.empty and spec["output_tok_s"].notna().any():
        best = spec.loc[spec["output_tok_s"].idxmax()]
        out["best"] = {k: best[k] for k in ("name", "budget", "topk_cap", "cuda_graph",
                                            "output_tok_s", "accept_length", "speedup")}
    return out
