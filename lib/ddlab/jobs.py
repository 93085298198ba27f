"""The sweep and plot jobs, as the notebooks (and ``make demo``) call them.

:func:`sweep_job` validates every parameter and every cell before anything
touches the host, shows the verdict slot first, runs (or resumes) the sweep
with progress, then fills the slot with the sweep's verdict and returns a
:class:`SweepReport` (the cells as a DataFrame, the verdict). Inside a
``ddlab run`` it also leaves ``verdict.json`` and ``cells.csv`` in the run
folder. :func:`load_report` does the same for a finished sweep (the plot
notebook).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import yaml

from ddlab.errors import ConfigError
from ddlab.progress import Slot
from ddlab.report import SweepVerdict, record_verdict, run_dir_from_env, sweep_verdict
from ddlab.results import METRICS, load_cells, plan_frame, resolve_sweep
from ddlab.store import Store
from ddlab.sweep import SweepOptions, plan_sweep, run_sweep

__all__ = ["SweepReport", "sweep_job", "load_report", "TABLE_COLUMNS"]

TABLE_COLUMNS = ["name", "role", "status", "kind", "budget", "topk_cap", "cuda_graph",
                 "accept_length", "output_tok_s", "speedup", "ttft_ms_p50", "tpot_ms_p50"]


@dataclass
class SweepReport:
    """A sweep's cells and verdict, for display."""

    sweep_id: str
    frame: pd.DataFrame
    verdict: SweepVerdict

    def table(self) -> pd.DataFrame:
        """The cells with the columns a reader wants first."""
        if self.frame.empty:
            return self.frame
        cols = [c for c in TABLE_COLUMNS if c in self.frame.columns]
        return self.frame[cols].round(3)

    def _repr_html_(self) -> str:
        return self.verdict._repr_html_()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.verdict.render())


def _grid(budget, topk_cap, cuda_graph, more: dict | None) -> dict:
    grid = {"budget": budget, "topk_cap": topk_cap, "cuda_graph": cuda_graph}
    more = _yaml("grid", more) or {}
    if not isinstance(more, dict):
        raise ConfigError(f"grid={more!r}: must map override keys to values",
                          fix="e.g. {'speculative_num_draft_tokens': [8, 16]}", value=more)
    grid.update(more)
    grid = {k: _yaml(k, v) for k, v in grid.items()}
    return {k: v for k, v in grid.items() if v is not None and v != []}


def _yaml(name: str, value):
    """A string read as YAML, the way ``ddlab run -p`` reads values: plain
    ``papermill -p cuda_graph true`` passes the string 'true', and ``-p budget
    [4,16]`` the string '[4,16]'."""
    if not isinstance(value, str):
        return value
    try:
        return yaml.safe_load(value) if value.strip() else value
    except yaml.YAMLError as err:
        raise ConfigError(f"{name}={value!r}: not a value or a list ({err.problem})",
                          fix=f"e.g. -p {name} 16, or -p {name} '[4, 16]'", key=name,
                          value=value) from None


def sweep_job(*, host: str = "local", base: str = "", budget=(4, 16, 32), topk_cap=(1, 4),
              cuda_graph=(True, False), grid: dict | None = None, fixed=(), extra=(),
              baseline: bool = True, requests: int = 8, concurrency: int = 1,
              max_new_tokens: int = 128, warmup: int = 1, repeats: int = 1,
              timeout_s: float = 600.0, probe: bool = True, resume: str = "",
              dry_run: bool = False, store: Store | None = None) -> SweepReport:
    """Plan, run (or resume) and report one sweep; see the module docstring.

    ``budget``, ``topk_cap``, ``cuda_graph``: a value or a list each (None
    leaves the dimension out); ``grid``: more dimensions (any override key);
    ``fixed``: overrides for every cell; ``extra``: extra cells (a list of
    override lists); ``resume``: a sweep id or ``latest`` to finish one (the
    store keeps no secrets: pass a sweep's secret-named overrides again in
    ``fixed``; the rest of the plan comes from the store).
    """
    from ddlab.hosts import load_host

    profile = load_host(host)
    options = SweepOptions(requests=requests, concurrency=concurrency,
                           max_new_tokens=max_new_tokens, warmup=warmup, repeats=repeats,
                           timeout_s=timeout_s, probe=probe)
    plan = None if resume else plan_sweep(base or profile.base,
                                          _grid(budget, topk_cap, cuda_graph, grid),
                                          fixed=_collection("fixed", fixed),
                                          extra=_extras(_collection("extra", extra)),
                                          baseline=baseline)
    store = store or Store()
    slot = Slot("sweep running: progress below; the verdict replaces this line when it ends")
    try:
        sweep = run_sweep(plan, host=profile, options=options, resume=resume, dry_run=dry_run,
                          store=store, secrets=_collection("fixed", fixed) if resume else ())
    except BaseException as err:
        _report_failure(store, slot, err)
        raise
    planned = plan_frame(sweep) if sweep.status == "dry-run" and not resume else None
    report = _report(store, sweep.sweep_id, sweep.status, sweep.resume_command(), frame=planned)
    slot.update(report.verdict)
    return report


def _collection(name: str, value):
    """``fixed`` / ``extra`` given as YAML text (``-p extra '[{budget: 8}]'``);
    a plain ``KEY=VALUE`` string stays one override."""
    if isinstance(value, str) and value.lstrip().startswith(("[", "{")):
        return _yaml(name, value)
    return value


def _extras(extra) -> list:
    if isinstance(extra, (str, dict)):
        extra = [extra]
    out = []
    for item in extra or ():
        out.append([item] if isinstance(item, str) else item)
    return out


def _report(store: Store, sweep_id: str, status: str, resume: str,
            frame: pd.DataFrame | None = None, error: str = "") -> SweepReport:
    frame = load_cells(sweep_id, store=store) if frame is None else frame
    verdict = sweep_verdict(frame, sweep_id=sweep_id, status=status, resume=resume, error=error)
    record_verdict(verdict.to_dict())
    run_dir = run_dir_from_env()
    if run_dir and not frame.empty:
        frame.to_csv(run_dir / "cells.csv", index=False)
    return SweepReport(sweep_id=sweep_id, frame=frame, verdict=verdict)


def _report_failure(store: Store, slot: Slot, err: BaseException) -> None:
    """The slot and the run folder say how it ended, and how to resume, before it raises."""
    sweep_id = getattr(err, "sweep_id", None)
    record = store.sweep(sweep_id) if sweep_id else None
    if record:
        error = "" if isinstance(err, KeyboardInterrupt) else f"{type(err).__name__}: {err}"
        report = _report(store, sweep_id, record["status"], record["resume_command"], error=error)
        slot.update(report.verdict)
    else:
        slot.update(f"NO VERDICT: {type(err).__name__}: {err}")
        record_verdict({"state": "failed", "headline": f"{type(err).__name__}: {err}"})


def load_report(sweep: str = "latest", *, metric: str = "output_tok_s",
                store: Store | None = None) -> SweepReport:
    """A finished (or stopped) sweep's report, for the plot notebook."""
    if metric not in METRICS:
        raise ConfigError(f"metric={metric!r}: not a known figure",
                          fix=f"choose one of: {', '.join(METRICS)}", value=metric)
    store = store or Store()
    sweep_id = resolve_sweep(store, sweep)
    record = store.sweep(sweep_id)
    return _report(store, sweep_id, record["status"], record["resume_command"])
