"""Sweep results as pandas DataFrames, for notebooks and plots.

One row per cell of a sweep, in plan order, with the swept values as plain
columns (``budget``, ``topk_cap``, ``cuda_graph``, ``algorithm``, read from the
cell's full config, so a cell is described the same way whatever the grid
was), its status (measured | crashed | timeout | error | preempted | pending), the crash
kind and phase, the benchmark figures, the ``host`` it ran on, and ``speedup``:
output tok/s over the no-speculation baseline of the same host with the same
CUDA-graph setting, and only that one: graphs change both sides of the ratio, so a
cell whose own baseline was not measured has no speedup (n/a), and
``speedup_note`` says why (``n/a: the graphs-on baseline crashed (cuda_oom)``). In
a pool sweep the best cell is the fastest *speedup*, since tok/s of different hosts
do not compare.

Figures are medians over measurement rounds; tok/s, TTFT, TPOT, e2e and the
speedup carry 95% intervals (``<figure>_ci_low`` / ``_ci_high``; the speedup's
from the cell's and its baseline's round samples, :func:`ddlab.lab.stats.ratio_ci`),
``within_noise`` says a speedup's interval holds 1x; a baseline measured again
after the grid (``bracket_rounds``) pools both measurements' rounds and shows
the host's ``drift`` over the sweep (a re-measurement that failed leaves
``bracket_note``: ``drift not measured: ...``); and the load columns
(``load_before``, ``load_after``, ``cpu_other``, ``load_warning``) say how busy
the host was while the cell was measured (:mod:`ddlab.lab.hostload`).

A cell of another family than SGLang says so (``family``) and has its own knobs'
columns instead of DDTree's (vLLM: ``num_speculative_tokens``, ``method``; ``budget`` and
``topk_cap`` empty); ``cuda_graph`` is read by its family (vLLM: not ``enforce_eager``),
``algorithm`` is its method, and ``accept_length`` its own acceptance figure (vLLM's
mean acceptance length, :mod:`ddlab.lab.family_api`). An SGLang sweep's columns are
as they always were.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddlab.config.families import DEFAULT_FAMILY, family_named
from ddlab.config.flags import graphs_on, typed_value
from ddlab.lab.family_api import graphs_on_flags
from ddlab.lab.measure import CI_FIGURES
from ddlab.lab.stats import includes, median_ci, missing, overlaps, ratio_ci
from ddlab.sweeps.store import Store, find_sweep
from ddlab.sweeps.plan import grid_word_list

__all__ = ["load_cells", "plan_frame", "resolve_sweep", "summarize", "sweep_words", "METRICS",
           "CI_COLUMNS", "LOAD_COLUMNS"]

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


CI_COLUMNS = [f"{key}_ci_{end}" for key in (*CI_FIGURES, "speedup") for end in ("low", "high")]
LOAD_COLUMNS = ["load_before", "load_after", "cpu_other", "load_warning"]
_MEASURE_COLUMNS = ["rounds", "measure_s", "stopped", *LOAD_COLUMNS]


def resolve_sweep(store: Store, sweep: str = "latest") -> str:
    """A sweep id from an id, ``latest`` or a run folder's name (:func:`find_sweep`)."""
    return find_sweep(store, sweep)


def sweep_words(record: dict | None) -> str:
    """``local b4.16.32 x cap1.4 x graphs``: a stored sweep (its :meth:`Store.sweep`
    record) in a few words, for the titles of its reports; "" for none."""
    if not record:
        return ""
    inputs = record.get("grid") or {}
    words = grid_word_list(inputs.get("grid") or {}, inputs.get("extra") or ())
    return " ".join([str(record.get("host") or "?"), " x ".join(words)]).strip()


def _lossless_said(check) -> str | None:
    """The lossless check in one line: its summary (what was compared, the match rate
    against the tolerance), or why it did not compare; None when it never ran."""
    if not isinstance(check, dict) or not check:
        return None
    return check.get("summary") or check.get("why") or None


def load_cells(sweep: str = "latest", *, store: Store | str | Path | None = None) -> pd.DataFrame:
    """The sweep's cells, one row each (see the module docstring for the columns)."""
    store = store if isinstance(store, Store) else Store(store)
    sweep_id = resolve_sweep(store, sweep)
    brackets, failed = store.bracket_metrics(sweep_id), store.failed_brackets(sweep_id)
    rows = [_pooled(_row(sweep_id, cell), brackets.get(cell["config_hash"], []),
                    failed.get(cell["config_hash"], []))
            for cell in store.cells(sweep_id)]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    _add_speedups(frame)
    return frame


def _pooled(row: dict, brackets: list[dict], failed: list[dict] = ()) -> dict:
    """A baseline measured again after the grid: its rounds pooled with the first ones
    (tok/s and its interval from all of them), and ``drift``, the later median over the
    first; a drift beyond both intervals is a load warning. A re-measurement that
    measured nothing (``failed``) leaves ``bracket_note``, saying how it ended."""
    later = [x for m in brackets for x in (m.get("output_tok_s_samples") or [])]
    row["bracket_rounds"] = len(later)
    row["drift"] = None
    row["bracket_note"] = (f"drift not measured: its re-measurement after the grid "
                           f"{_ended(failed[-1])}" if failed and not later else None)
    if not later or not row["samples"]:
        return row
    first = row["samples"]
    row["drift"] = ratio_ci(later, first)[0]
    before, after = median_ci(first), median_ci(later)
    row["samples"] = first + later
    row["output_tok_s"], row["output_tok_s_ci_low"], row["output_tok_s_ci_high"] = \
        median_ci(row["samples"])
    if not overlaps(before[1:], after[1:]):
        moved = (f"the baseline moved from {before[0]:.1f} to {after[0]:.1f} tok/s between "
                 "the sweep's start and end")
        row["load_warning"] = "; ".join(w for w in (row.get("load_warning"), moved) if w)
    return row


def _ended(run: dict) -> str:
    """How a run that measured nothing ended, in a few words: ``crashed (kv_pool_oom)``."""
    state, verdict = run.get("state"), run.get("verdict") or {}
    if state == "crashed":
        return f"crashed ({verdict.get('kind') or 'unknown'})"
    if state == "error":
        cause = " ".join(str(verdict.get("cause") or "").split())
        return f"failed: {cause[:117] + '...' if len(cause) > 120 else cause}" if cause else "failed"
    return {"timeout": "timed out", "interrupted": "was interrupted",
            "lost": "was lost (its process was killed)", "running": "did not finish",
            "wrong_output": "served wrong output"}.get(state, str(state))


def plan_frame(sweep) -> pd.DataFrame:
    """A planned :class:`ddlab.sweeps.run.Sweep` (a dry run: nothing stored) as
    :func:`load_cells` would give it, every cell ``pending``."""
    rows = [_row(sweep.sweep_id, {"position": c.position, "name": c.variant.name, "role": c.role,
                                  "status": "pending", "config_hash": c.hash, "point": c.point,
                                  "host": c.host or None,
                                  "config": c.variant.to_dict()}) for c in sweep.cells]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        _add_speedups(frame)
    return frame


def _family_columns(config: dict) -> dict:
    """A non-SGLang cell's own columns: its family, its knobs' values, graphs, algorithm."""
    family = family_named(config.get("family"))
    flat = family.flat_flags(config.get("flags") or {})
    method = flat.get(family.algorithm_key)
    return {"family": family.name, "algorithm": str(method).upper() if method else "NONE",
            "cuda_graph": graphs_on_flags(config.get("flags") or {}, family),
            **{name: flat.get(knob.sets) for name, knob in family.knobs.items()
               if name != "cuda_graph"}}


def _row(sweep_id: str, cell: dict) -> dict:
    config = (cell.get("config") or {}).get("config") or {}
    flags = config.get("flags", {})
    verdict = cell.get("verdict") or {}
    metrics = cell.get("metrics") or {}
    algorithm = flags.get("speculative-algorithm") or "NONE"
    row = {
        "sweep_id": sweep_id, "position": cell["position"], "name": cell["name"],
        "role": cell["role"], "status": cell["status"], "config_hash": cell["config_hash"],
        "algorithm": str(algorithm).upper(),
        "budget": typed_value("speculative-ddtree-budget", flags.get("speculative-ddtree-budget")),
        "topk_cap": typed_value("speculative-ddtree-topk-cap",
                                flags.get("speculative-ddtree-topk-cap")),
        "cuda_graph": graphs_on(flags),
        # what the decode lines said (False: asked for graphs, decoded eagerly)
        "graphs_ran": verdict["decode"].get("cuda_graph")
        if isinstance(verdict.get("decode"), dict) else None,
        "kind": verdict.get("kind") if cell["status"] in ("crashed", "timeout", "scheduler_ended",
                                                           "preempted") else None,
        "phase": verdict.get("phase"),
        "cause": verdict.get("cause"),
        "suggestion": verdict.get("suggestion"),
        # what the lossless check compared and found (or why it did not run)
        "lossless": _lossless_said(verdict.get("lossless")),
        "run_dir": cell.get("run_dir"),
        "host": cell.get("host"),
        # a Slurm job's node (None elsewhere): where the cell really ran
        "node": (verdict.get("service_state") or {}).get("node") or None,
    }
    if (config.get("family") or DEFAULT_FAMILY) != DEFAULT_FAMILY:
        row.update(_family_columns(config))
    if cell["status"] == "timeout":
        row["kind"] = "timeout"
    for key in METRICS:
        if key != "speedup":
            row[key] = metrics.get(key)
    for key in (*CI_COLUMNS, *_MEASURE_COLUMNS):
        if not key.startswith("speedup"):
            row[key] = metrics.get(key)
    row["samples"] = metrics.get("output_tok_s_samples") or []
    row.update({f"point.{k}": v for k, v in (cell.get("point") or {}).items()})
    return row


def _add_speedups(frame: pd.DataFrame) -> None:
    """``speedup`` with its interval and ``within_noise``, against the baseline of the same
    host (in a pool) with the same CUDA-graph setting, and no other; ``speedup_note``
    says why a measured cell has none."""
    base = frame[frame["role"] == "baseline"]
    pool = frame["host"].dropna().nunique() > 1
    rows, notes = [], []
    for _, row in frame.iterrows():
        own = base[base["host"] == row["host"]] if pool else base
        same = own[own["cuda_graph"] == row["cuda_graph"]]
        ref = same[same["output_tok_s"].notna()]
        if pd.isna(row["output_tok_s"]) or ref.empty:
            rows.append((None, None, None))
            notes.append(None if pd.isna(row["output_tok_s"]) else
                         _no_baseline(row, same, row["host"] if pool else None))
            continue
        ref = ref.iloc[0]
        mine, theirs = row["samples"], ref["samples"]
        notes.append(None)
        if ref["config_hash"] == row["config_hash"]:  # the baseline itself: 1x, by definition
            rows.append((1.0, None, None))
        elif mine and theirs:
            rows.append(ratio_ci(mine, theirs))
        else:  # stored before rounds had samples: the ratio of the medians, no interval
            rows.append((row["output_tok_s"] / ref["output_tok_s"], None, None))
    values = pd.DataFrame(rows, index=frame.index, columns=["speedup", "speedup_ci_low",
                                                            "speedup_ci_high"], dtype="float64")
    for column in values:
        frame[column] = values[column]
    frame["within_noise"] = [includes((lo, hi), 1.0) if pd.notna(lo) else None
                             for lo, hi in zip(values["speedup_ci_low"], values["speedup_ci_high"])]
    frame["speedup_note"] = notes


def _no_baseline(row, same: pd.DataFrame, host) -> str:
    """``n/a: the graphs-on baseline crashed (cuda_oom)``: why a measured cell has no speedup."""
    graphs = "graphs-on" if row["cuda_graph"] else "graphs-off"
    where = f" on {host}" if host else ""
    if same.empty:
        return f"n/a: the sweep has no {graphs} baseline{where} to compare with"
    ref = same.iloc[0]
    status = ref["status"]
    why = (f"crashed ({ref.get('kind') or 'unknown'})" if status == "crashed" else
           "timed out" if status == "timeout" else "is not measured yet" if status == "pending"
           else f"was not measured ({status})")
    return f"n/a: the {graphs} baseline{where} {why}"


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
    if "node" in frame and frame["node"].notna().any():
        out["nodes"] = sorted(frame["node"].dropna().unique())  # Slurm: jobs, no baseline
    ended = frame[frame["status"] == "scheduler_ended"]
    if not ended.empty:  # a job the scheduler ended: its own outcome, never a crash
        out["scheduler_ended"] = len(ended)
        out["ended_kinds"] = sorted(set(ended["kind"].dropna()))
        out["ended_cells"] = list(ended["name"])
    preempted = frame[frame["status"] == "preempted"]
    if not preempted.empty:  # another ddlab run took the host: not a crash; resume reruns them
        out["preempted"] = len(preempted)
        out["preempted_cells"] = list(preempted["name"])
        out["preempted_by"] = next(iter(preempted["cause"].dropna()), None)
    eager = measured[(measured["cuda_graph"] == True) & (measured.get("graphs_ran") == False)]  # noqa: E712
    if not eager.empty:  # its figures are eager ones under a graphs-on label: never best
        out["graphs_not_run"] = list(eager["name"])
        measured = measured.drop(eager.index)
    wrong = frame[frame["status"] == "wrong_output"]
    if not wrong.empty:  # fast and wrong: never the best cell, and said first
        out["wrong_output"] = len(wrong)
        out["wrong_cells"] = list(wrong["name"])
    if "load_warning" in frame and frame["load_warning"].notna().any():
        out["load_warnings"] = list(frame[frame["load_warning"].notna()]["name"])
    out.update(_not_compared(frame))
    spec = measured[measured["role"] != "baseline"]
    hosts = sorted(frame["host"].dropna().unique()) if "host" in frame else []
    if len(hosts) > 1:
        out["hosts"] = hosts
    # one host: the fastest tok/s; a pool: the fastest speedup over its own host's baseline
    key = "speedup" if len(hosts) > 1 else "output_tok_s"
    if not spec.empty and spec[key].notna().any():
        best = spec.loc[spec[key].idxmax()]
        out["best"] = _described(best)
        out["ties"] = [_described(row) for _, row in spec.sort_values(
            key, ascending=False).iterrows()
            if row["name"] != best["name"] and overlaps(_ci(row, key), _ci(best, key))]
    return out


def _not_compared(frame: pd.DataFrame) -> dict:
    """What a reader must not read a speedup or a drift into: measured cells without a
    speedup (``no_speedup``: note -> names) and baselines whose re-measurement failed
    (``drift_not_measured``: name -> note)."""
    out = {}
    asked = (frame["role"] == "baseline").any()  # a sweep without baselines chose none
    if asked and "speedup_note" in frame and frame["speedup_note"].notna().any():
        grouped: dict[str, list[str]] = {}
        for _, row in frame[frame["speedup_note"].notna()].iterrows():
            grouped.setdefault(row["speedup_note"], []).append(row["name"])
        out["no_speedup"] = grouped
    if "bracket_note" in frame and frame["bracket_note"].notna().any():
        out["drift_not_measured"] = {row["name"]: row["bracket_note"] for _, row in
                                     frame[frame["bracket_note"].notna()].iterrows()}
    return out


_BEST_KEYS = ("name", "budget", "topk_cap", "cuda_graph", "output_tok_s", "output_tok_s_ci_low",
              "output_tok_s_ci_high", "accept_length", "speedup", "speedup_ci_low",
              "speedup_ci_high", "within_noise", "speedup_note", "host")


_FAMILY_KEYS = ("family", "num_speculative_tokens", "method")  # a non-SGLang cell's own


def _described(row) -> dict:
    out = {k: (None if missing(row.get(k)) else row.get(k)) for k in _BEST_KEYS}
    out.update({k: row.get(k) for k in _FAMILY_KEYS if not missing(row.get(k))})
    return out


def _ci(row, key: str = "output_tok_s") -> tuple:
    return (row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high"))

