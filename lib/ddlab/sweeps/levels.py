"""A workload sweep's results: one row per cell and concurrency level, and the crossover.

:func:`load_levels` reads what :mod:`ddlab.sweeps.workload` stored (each cell's
``levels``) into a frame: the cell's columns (name, role, budget, cap, graphs, host),
``concurrency``, total tok/s (``output_tok_s``) and per-user tok/s (``user_tok_s``)
with their 95 % intervals, TTFT/TPOT p50, accept length, rounds, and ``speedup``: over
the no-speculation baseline of the same host and graphs setting *at the same level*
(:func:`ddlab.sweeps.results` rules, level by level; a baseline measured again after
the grid pools its rounds per level). A single-level sweep has no such rows (empty).

:func:`crossover` says per speculative config where it stops paying: the highest level
up to which every level's speedup interval lies above 1 ("pays up to"), the first level
after that whose interval holds 1 ("ties at") and the first whose interval lies below 1
("loses at"); or "pays at every level tried"; a level past those that pays again is
said too ("pays again at"). :func:`best_per_level` names the fastest
config at each level (by speedup), with the configs that tie with it.
:func:`prompt_sets` gives each cell's accept length per prompt set.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddlab.lab.stats import missing, overlaps
from ddlab.sweeps.results import _add_speedups, _pooled, _row, resolve_sweep
from ddlab.sweeps.store import Store

__all__ = ["load_levels", "levels_of", "crossover", "best_per_level", "prompt_sets",
           "LEVEL_COLUMNS", "verdict_of_level", "speedup_words"]

LEVEL_COLUMNS = ["name", "role", "status", "budget", "topk_cap", "cuda_graph", "host",
                 "concurrency", "output_tok_s", "output_tok_s_ci_low", "output_tok_s_ci_high",
                 "user_tok_s", "user_tok_s_ci_low", "user_tok_s_ci_high", "speedup",
                 "speedup_ci_low", "speedup_ci_high", "within_noise", "accept_length",
                 "accept_length_server", "ttft_ms_p50", "tpot_ms_p50", "rounds", "stopped",
                 "n_failed"]


def load_levels(sweep: str = "latest", *, store: Store | str | Path | None = None) -> pd.DataFrame:
    """The sweep's cells at every level (see the module docstring); empty for a sweep
    measured at one level."""
    store = store if isinstance(store, Store) else Store(store)
    sweep_id = resolve_sweep(store, sweep)
    brackets = store.bracket_metrics(sweep_id)
    rows = []
    for cell in store.cells(sweep_id):
        levels = (cell.get("metrics") or {}).get("levels") or []
        later = brackets.get(cell["config_hash"], [])
        for level in levels:
            rows.append(_level_row(sweep_id, cell, level, later))
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    parts = []
    for _, part in frame.groupby("concurrency", sort=True):
        part = part.copy()
        _add_speedups(part)
        parts.append(part)
    return pd.concat(parts).sort_values(["position", "concurrency"]).reset_index(drop=True)


def _level_row(sweep_id: str, cell: dict, level: dict, brackets: list[dict]) -> dict:
    row = _row(sweep_id, {**cell, "metrics": level})
    again = [b for m in brackets for b in (m.get("levels") or [])
             if b.get("concurrency") == level.get("concurrency")]
    row = _pooled(row, again)
    row.update({key: level.get(key) for key in ("concurrency", "user_tok_s", "user_tok_s_ci_low",
                                                 "user_tok_s_ci_high", "accept_length_server",
                                                 "server_requests_after")})
    row["n_failed"], row["n_requests_total"] = level.get("n_failed_total"), level.get(
        "n_requests_total")
    return row


def levels_of(frame: pd.DataFrame) -> list[int]:
    """The levels a frame holds, lowest first."""
    return [] if frame.empty else sorted(int(c) for c in frame["concurrency"].dropna().unique())


def verdict_of_level(row) -> str:
    """``pays`` (interval above 1), ``loses`` (below 1), ``ties`` (holds 1), or ``n/a``."""
    if missing(row.get("speedup")):
        return "n/a"
    low, high = row.get("speedup_ci_low"), row.get("speedup_ci_high")
    if missing(low) or missing(high):  # one round each: no interval, no claim
        return "ties"
    return "pays" if low > 1 else "loses" if high < 1 else "ties"


def crossover(frame: pd.DataFrame) -> list[dict]:
    """Per speculative config (plan order): its verdict at each level and where it stops
    paying: ``pays_up_to`` (a level, or None), ``ties_at``, ``loses_at`` (the first level
    past the paying run that ties / loses), ``every_level`` (pays at all), and ``words``."""
    out = []
    if frame.empty:
        return out
    spec = frame[(frame["role"] != "baseline") & (frame["status"] == "measured")]
    for name, rows in spec.groupby("name", sort=False):
        rows = rows.sort_values("concurrency")
        said = [(int(r["concurrency"]), verdict_of_level(r), r) for _, r in rows.iterrows()]
        paying = 0
        while paying < len(said) and said[paying][1] == "pays":
            paying += 1
        rest = said[paying:]
        found = {"name": name, "levels": {c: v for c, v, _ in said},
                 "pays_up_to": said[paying - 1][0] if paying else None,
                 "ties_at": next((c for c, v, _ in rest if v == "ties"), None),
                 "loses_at": next((c for c, v, _ in rest if v == "loses"), None),
                 # past a tie or a loss, a level that pays again (noise, or a batch shape)
                 "pays_again_at": next((c for c, v, _ in rest if v == "pays"), None),
                 "every_level": paying == len(said) and bool(said)}
        found["speedups"] = {c: _speedup(r) for c, _, r in said}
        found["words"] = _crossover_words(found)
        out.append(found)
    return out


def _speedup(row) -> dict:
    return {k: (None if missing(row.get(k)) else float(row.get(k)))
            for k in ("speedup", "speedup_ci_low", "speedup_ci_high")}


def speedup_words(speedup: dict) -> str:
    """``1.90x [1.70-2.10]``."""
    if speedup.get("speedup") is None:
        return "n/a"
    ci = ("" if speedup.get("speedup_ci_low") is None else
          f" [{speedup['speedup_ci_low']:.2f}-{speedup['speedup_ci_high']:.2f}]")
    return f"{speedup['speedup']:.2f}x{ci}"


def _crossover_words(found: dict) -> str:
    """``local-b16 pays up to concurrency 8 (1.90x [1.70-2.10]); ties at 16; loses at 32
    (0.80x [0.70-0.90])``, or ``... pays at every level tried (1-32; 1.40x [...] at 32)``."""
    name, speedups = found["name"], found["speedups"]
    levels = sorted(speedups)
    if found["every_level"]:
        top = levels[-1]
        return (f"{name} pays at every level tried ({levels[0]}-{top}; {speedup_words(speedups[top])} "
                f"at {top})")
    ties, loses = found["ties_at"], found["loses_at"]
    if found["pays_up_to"] is not None:
        parts = [f"{name} pays up to concurrency {found['pays_up_to']} "
                 f"({speedup_words(speedups[found['pays_up_to']])})"]
    elif ties == levels[0]:
        parts, ties = [f"{name} never pays: ties at concurrency {ties} "
                       f"({speedup_words(speedups[ties])})"], None
    else:
        parts, loses = [f"{name} never pays: loses at concurrency {levels[0]} "
                        f"({speedup_words(speedups[levels[0]])})"], None
    if ties is not None:
        parts.append(f"ties at {ties}")
    if loses is not None:
        parts.append(f"loses at {loses} ({speedup_words(speedups[loses])})")
    again = found.get("pays_again_at")
    if again is not None:
        parts.append(f"pays again at {again} ({speedup_words(speedups[again])})")
    return "; ".join(parts)


def best_per_level(frame: pd.DataFrame) -> list[dict]:
    """At each level: the config with the highest speedup (``name``, its speedup and
    interval, ``level_verdict``) and ``ties`` (configs whose speedup interval overlaps)."""
    out = []
    if frame.empty:
        return out
    spec = frame[(frame["role"] != "baseline") & (frame["status"] == "measured")
                 & frame["speedup"].notna()]
    for level, rows in spec.groupby("concurrency", sort=True):
        best = rows.loc[rows["speedup"].idxmax()]
        ties = [r["name"] for _, r in rows.iterrows() if r["name"] != best["name"]
                and overlaps(_ci(r), _ci(best))]
        out.append({"concurrency": int(level), "name": best["name"], **_speedup(best),
                    "level_verdict": verdict_of_level(best), "ties": ties})
    return out


def _ci(row) -> tuple:
    return (row.get("speedup_ci_low"), row.get("speedup_ci_high"))


def prompt_sets(sweep_id: str, store: Store) -> list[dict]:
    """Per measured cell, its accept length per prompt set (and per position where the
    server reported it): ``{"name", "role", "sets": [{"set", "accept_length", ...}]}``."""
    out = []
    for cell in store.cells(sweep_id):
        sets = (cell.get("metrics") or {}).get("prompt_sets")
        if sets and cell["status"] in ("measured", "wrong_output"):
            out.append({"name": cell["name"], "role": cell["role"], "sets": sets})
    return out
