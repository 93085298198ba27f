"""Sweeps from the front door: run or resume one, report a stored one, plot, compare, list.

:func:`sweep` plans, runs (or resumes) and reports a grid of variants;
:func:`load_report` reports a stored one; :func:`plot` saves its figures;
:func:`compare_sweeps` draws the same configs across sweeps; :func:`runs` lists every
run in ``outputs/``. In a notebook the verdict is displayed first, in a place that
fills when the job ends, with the live heartbeat below it. Given ``run_dir``
(papermill injects it under ``ddlab run``), a sweep leaves its verdict
(``verdict.json``) and ``cells.csv`` there: the report's headline and the index's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlab.api.common import check_wait
from ddlab.core.errors import ConfigError, DdlabError
from ddlab.core.log import get_logger
from ddlab.core.paths import outputs_dir
from ddlab.core.progress import VerdictPlace
from ddlab.core.run_folders import new_run_dir, record_verdict
from ddlab.hosts.pools import load_pool, pool_base
from ddlab.hosts.profiles import HostProfile
from ddlab.report.kernel_runs import open_kernel_run
from ddlab.report.parameters import parameter_extras, parameter_grid, parameter_value
from ddlab.report.provenance import sweep_provenance
from ddlab.sweeps.plan import DEFAULT_GRID, DEFAULT_OPTIONS, MAX_CELLS, SweepOptions, plan_sweep
from ddlab.sweeps.run import Sweep, execute_sweep, open_sweep
from ddlab.sweeps.store import Store

if TYPE_CHECKING:  # pandas and matplotlib load when a sweep is reported, not on import
    from ddlab.report.verdicts import SweepReport

__all__ = ["sweep", "load_report", "plot", "compare_sweeps", "runs", "MAX_CELLS"]


log = get_logger(__name__)

_D = DEFAULT_OPTIONS  # the sweep's options and defaults, defined once (ddlab.sweeps.plan)


def sweep(*, host: str | list = "", base: str = "", budget=DEFAULT_GRID["budget"],
          topk_cap=DEFAULT_GRID["topk_cap"], cuda_graph=DEFAULT_GRID["cuda_graph"],
          grid: dict | None = None, fixed=(), extra=(),
          baseline: bool = True, requests: int = _D.requests, concurrency: int | list = _D.concurrency,
          max_new_tokens: int = _D.max_new_tokens, warmup: int = _D.warmup,
          repeats: int = _D.repeats, ci_target: float | None = _D.ci_target,
          min_time_s: float = _D.min_time_s, max_time_s: float = _D.max_time_s,
          max_rounds: int = _D.max_rounds, bracket: bool = _D.bracket,
          timeout_s: float = _D.timeout_s, probe: bool = _D.probe,
          lossless_tolerance: float = _D.lossless_tolerance,
          lossless_prompts=_D.lossless_prompts, prompts: list | tuple = _D.prompts, resume: str = "",
          dry_run: bool = False, max_cells: int = MAX_CELLS, store: Store | None = None,
          run_dir: str | Path | None = None, wait_s: float | None = None) -> SweepReport:
    """Plan, run (or resume) and report one sweep.

    Every parameter and every cell is validated before anything touches the host.
    ``budget``, ``topk_cap``, ``cuda_graph``: a value or a list each (None leaves
    the dimension out); ``grid``: more dimensions (any override key); ``fixed``:
    overrides for every cell; ``extra``: extra cells (a list of override lists or
    mappings); ``resume``: a sweep id or ``latest`` to finish one (the store keeps
    no secrets: pass a sweep's secret-named overrides again in ``fixed``; the rest
    of the plan comes from the store, and ``host`` may only repeat its host);
    ``dry_run``: the plan only; ``max_cells``: a grid larger than this is refused
    until it is raised (each cell is a server start). ``host``: "" is ``local`` for a
    new sweep, the sweep's own host for a resumed one; a list of hosts (or a pool
    profile) spreads the cells over them, each host with its own baselines
    (:mod:`ddlab.sweeps.pool`). Each ready cell is measured in
    rounds of ``requests`` requests after ``warmup``: at least ``repeats`` rounds (3
    with ``ci_target``), then until the tok/s 95% interval is within +-``ci_target``
    of the median, at most ``max_rounds`` rounds or ``max_time_s``, at least
    ``min_time_s`` (:func:`ddlab.lab.measure.measure`); ``bracket``: each measured
    baseline is measured again after the grid and its rounds pooled (docs/measurement.md).
    ``probe``: each ready cell's verify path is driven, then its greedy tokens are held
    against the model's own (``lossless_prompts``, empty for the shipped ones;
    ``lossless_tolerance``, the token match rate that passes). ``wait_s``: queue behind
    another ddlab run holding the host, up to that many seconds. A sweep whose host
    another run takes stops ``preempted`` (its cell too, never crashed; exit code 9),
    and its resume runs that cell again.

    ``concurrency``: one level, or several (``[1, 4, 16]``): a workload sweep, each cell's
    server started once and measured at every level, each level to its own interval, the
    no-speculation baseline at the same levels; its verdict says up to which level each
    config pays (:mod:`ddlab.sweeps.workload`, :mod:`ddlab.sweeps.levels`). ``prompts``:
    prompt sets, shipped (``chat``, ``code``, ``math``) or JSONL files; a workload sweep
    measures each set's accept length from the server's counters (it turns on
    ``enable_metrics``) and uses every shipped set when none is given.
    """
    check_wait(wait_s)
    profiles = load_pool(host or "local")  # one host, a pool profile, or a list of hosts
    profile = profiles[0]
    options = SweepOptions(requests=requests,
                           concurrency=parameter_value("concurrency", concurrency),
                           max_new_tokens=max_new_tokens, warmup=warmup, repeats=repeats,
                           ci_target=ci_target or None,  # 0: exactly `repeats` rounds
                           min_time_s=min_time_s, max_time_s=max_time_s,
                           max_rounds=max_rounds, bracket=bracket, timeout_s=timeout_s,
                           probe=probe, lossless_tolerance=lossless_tolerance,
                           lossless_prompts=parameter_value("lossless_prompts", lossless_prompts),
                           prompts=parameter_value("prompts", prompts))
    base = base or ("" if resume else pool_base(profiles))
    plan = None if resume else plan_sweep(base, family_grid(base, budget, topk_cap, cuda_graph,
                                                            grid),
                                          fixed=_with_metrics(parameter_value("fixed", fixed),
                                                              options, base),
                                          extra=parameter_extras(extra), baseline=baseline,
                                          max_cells=max_cells, hosts=[p.name for p in profiles])
    store = store or Store()
    own = None if run_dir or dry_run else open_kernel_run("sweep")  # plain papermill, JupyterLab
    run_dir = own.run_dir if own is not None else run_dir
    place = VerdictPlace("sweep running: progress below; the verdict replaces this line when it ends")
    opened = None
    try:
        opened = open_sweep(plan, host=(host or None) if resume else (host or profile),
                            options=options,
                            resume=resume, store=store,
                            register=not dry_run,
                            secrets=parameter_value("fixed", fixed) if resume else ())
        if dry_run:
            opened.status = "dry-run"
        else:
            opened.wait_s = wait_s
            execute_sweep(opened, store)
    except BaseException as err:
        failed = _report_failure(store, place, opened, err, run_dir)
        _keep_records(own, failed, opened, profile, run_dir, err)
        if isinstance(err, DdlabError) and failed is not None and err.result is None:
            err.result = failed.verdict  # the CLI prints it, then its JSON line, last
        raise
    from ddlab.sweeps.results import plan_frame

    planned = plan_frame(opened) if opened.status == "dry-run" and not resume else None
    report = _report(store, opened.sweep_id, opened.status, opened.resume_command(), run_dir,
                     frame=planned, error=opened.error, not_back=opened.not_back)
    place.update(report.verdict)
    report.provenance = _keep_records(own, report, opened, profile, run_dir)
    return report

def family_grid(base, budget, topk_cap, cuda_graph, more) -> dict:
    """The grid from the sweep's parameters for ``base``'s family. Their defaults are
    DDTree's (``budget`` 4,16,32 x ``topk_cap`` 1,4, SGLang's default grid): on a base of
    another family, a DDTree dimension left at its default is left out and the family's
    own default grid stands in (vLLM: ``num_speculative_tokens`` 2,4), under ``more``
    and a ``cuda_graph`` given; one set otherwise is kept (and refused by the plan:
    it is not that family's knob)."""
    from ddlab.config.bases import load_base
    from ddlab.config.families import DEFAULT_FAMILY

    family = load_base(base).family
    if family.name == DEFAULT_FAMILY:
        return parameter_grid(budget, topk_cap, cuda_graph, more)
    own = {k: v for k, v in (("budget", budget), ("topk_cap", topk_cap))
           if not _is_default(k, v)}
    given = parameter_grid(own.get("budget"), own.get("topk_cap"), cuda_graph, more)
    defaults = {k: list(v) for k, v in family.default_grid.items()}
    grid = {**defaults, **given}
    kept = [k for k in defaults if k not in given]
    whence = (f"the family's default for {', '.join(kept)}" if kept else "as given")
    log.info(f"base {base} is of the {family.name} family: DDTree's budget and topk_cap do "
             f"not apply; its grid: {grid} ({whence})")
    return grid


def _is_default(key: str, value) -> bool:
    """Whether a DDTree dimension's parameter is its default (as a list, or YAML text)."""
    read = parameter_grid(value, None, None, None).get("budget")
    return isinstance(read, (list, tuple)) and list(read) == list(DEFAULT_GRID[key])


def _with_metrics(fixed, options: SweepOptions, base=None):
    """A workload sweep's acceptance comes from the server's counters: the base family's
    ``metrics_overrides`` (SGLang's ``enable_metrics``; vLLM's none: it serves /metrics
    always) join ``fixed`` (given as a mapping or KEY=VALUE items) unless the user set it."""
    from ddlab.config.bases import load_base
    from ddlab.config.families import family_named

    if not options.workload:
        return fixed
    metrics = (load_base(base).family if base else family_named(None)).metrics_overrides
    if not metrics:
        return fixed
    fixed = [fixed] if isinstance(fixed, str) else fixed
    items = fixed.items() if isinstance(fixed, dict) else [str(i).partition("=")[::2]
                                                           for i in fixed or ()]
    if any(k.replace("-", "_").removeprefix("flags.") == "enable_metrics" for k, _ in items):
        return fixed
    return {**fixed, **metrics} if isinstance(fixed, dict) else [
        *(fixed or ()), *(f"{k}=true" for k in metrics)]


def _keep_records(own, report, opened: Sweep | None, profile: HostProfile, run_dir,
                  err: BaseException | None = None) -> dict:
    """The sweep's provenance (returned) kept with it and in ``run_dir``; the kernel's own
    run folder (``own``), if any, closed with its report (:mod:`ddlab.report.kernel_runs`)."""
    from ddlab.report.kernel_runs import keep_sweep_records

    stopped = isinstance(err, KeyboardInterrupt)
    return keep_sweep_records(own, report, host=(opened and opened.profile) or profile,
                       base=opened.base if opened is not None else None,
                       sweep_folder=opened.folder if opened is not None else None,
                       run_dir=run_dir, status="ok" if err is None else
                       "interrupted" if stopped else "failed",
                       error="" if err is None or stopped else f"{type(err).__name__}: {err}",
                       pool=[p.label for p in opened.profiles] if opened is not None else ())

def _report(store: Store, sweep_id: str, status: str, resume: str, run_dir, *,
            frame=None, error: str = "", what: str = "", cautions=(),
            not_back=()) -> SweepReport:
    """The report of a sweep; in ``run_dir`` its verdict and ``cells.csv`` too;
    ``not_back``: pool members whose production could not be put back."""
    from ddlab.sweeps.results import load_cells, sweep_words
    from ddlab.report.verdicts import SweepReport, sweep_verdict

    frame = load_cells(sweep_id, store=store) if frame is None else frame
    levels, answer = _workload(store, sweep_id)
    verdict = sweep_verdict(frame, sweep_id=sweep_id, status=status, resume=resume, error=error,
                            what=what or sweep_words(store.sweep(sweep_id)), cautions=cautions,
                            not_back=not_back, workload=answer)
    record_verdict(verdict.to_dict(), run_dir)
    if run_dir and Path(run_dir).is_dir() and not frame.empty:
        frame.to_csv(Path(run_dir) / "cells.csv", index=False)
    if run_dir and Path(run_dir).is_dir() and not levels.empty:
        levels.drop(columns=["samples"], errors="ignore").to_csv(Path(run_dir) / "levels.csv",
                                                                 index=False)
    return SweepReport(sweep_id=sweep_id, frame=frame, verdict=verdict, levels=levels)


def _workload(store: Store, sweep_id: str):
    """A stored sweep's levels frame and its workload answer (empty ones for a sweep at one
    level, or a dry run's, which the store does not hold)."""
    import pandas as pd

    record = store.sweep(sweep_id)
    if not record or not isinstance((record.get("options") or {}).get("concurrency"), list):
        return pd.DataFrame(), {}
    from ddlab.report.workload_words import workload_answer
    from ddlab.sweeps.levels import load_levels, prompt_sets

    levels = load_levels(sweep_id, store=store)
    answer = workload_answer(levels, prompt_sets(sweep_id, store))
    return levels, answer or {"levels": list(record["options"]["concurrency"])}

def _report_failure(store: Store, place: VerdictPlace, opened: Sweep | None, err: BaseException,
                    run_dir) -> SweepReport | None:
    """The place and the run folder say how it ended, and how to resume, before it raises;
    the report, when the sweep got far enough to have one."""
    record = store.sweep(opened.sweep_id) if opened is not None else None
    error = "" if isinstance(err, KeyboardInterrupt) else f"{type(err).__name__}: {err}"
    if record:
        report = _report(store, opened.sweep_id, record["status"], record["resume_command"],
                         run_dir, error=error, not_back=opened.not_back)
        place.update(report.verdict)
    elif opened is not None and opened.status == "failed":  # failed to start: not stored
        from ddlab.sweeps.results import plan_frame

        report = _report(store, opened.sweep_id, "failed", "", run_dir,
                         frame=plan_frame(opened), error=error, not_back=opened.not_back)
        place.update(report.verdict)
    else:
        report = None
        place.update(f"NO VERDICT: {type(err).__name__}: {err}")
        record_verdict({"state": "failed", "headline": f"{type(err).__name__}: {err}"}, run_dir)
    return report

def load_report(sweep: str | list = "latest", *, metric: str = "output_tok_s",
                store: Store | None = None, run_dir: str | Path | None = None) -> SweepReport:
    """A finished (or stopped) sweep's report, for the plot notebook (given several
    sweeps to compare, the first one's); a failed sweep's says what stopped it."""
    from ddlab.sweeps.results import METRICS, resolve_sweep
    from ddlab.report.compare import sweep_list

    if metric not in METRICS:
        raise ConfigError(f"metric={metric!r}: not a known figure",
                          fix=f"choose one of: {', '.join(METRICS)}", value=metric)
    from ddlab.report.compare import workload_caution

    store = store or Store()
    ids = [resolve_sweep(store, s) for s in sweep_list(sweep)]
    sweep_id = ids[0]
    record = store.sweep(sweep_id)
    caution = workload_caution(store, ids)
    report = _report(store, sweep_id, record["status"], record["resume_command"], run_dir,
                     error=record.get("error") or "", cautions=[caution] if caution else ())
    report.provenance = sweep_provenance(sweep_id, run_dir)  # kept when it ran; also in run_dir
    return report

def plot(sweep: str | list = "latest", *, metric: str = "output_tok_s",
         out_dir: str | Path | None = None, store: Store | None = None) -> list[Path]:
    """Save a sweep's figures as PNG files (``out_dir``, default a new run folder
    ``outputs/<time>-plot-<sweep>/``); returns their paths. Given several sweeps
    (a list), the first one's figures and ``compare-<metric>.png``: the same configs
    across the sweeps side by side (:func:`compare_sweeps`)."""
    from ddlab.report import plots
    from ddlab.report.compare import sweep_list

    sweeps = sweep_list(sweep)
    report = load_report(sweeps[0], metric=metric, store=store)
    folder = Path(out_dir) if out_dir else new_run_dir(f"plot-{report.sweep_id}",
                                                       parent=outputs_dir())
    folder.mkdir(parents=True, exist_ok=True)
    figures = {"accept_length": plots.accept_length_vs_budget(report.frame),
               "throughput": plots.throughput_vs_budget(report.frame),
               "speedup": plots.speedup_vs_budget(report.frame),
               f"heatmap-{metric}": plots.heatmap(report.frame, metric)}
    if not report.levels.empty:  # a workload sweep: its Pareto and speedup by concurrency
        from ddlab.report.workload_plots import pareto, speedup_vs_concurrency

        figures.update({"pareto": pareto(report.levels),
                        "speedup-by-concurrency": speedup_vs_concurrency(report.levels)})
    if report.frame.get("host") is not None and report.frame["host"].nunique() > 1:
        figures["by-host"] = plots.by_host(report.frame, "speedup")  # a pool: a panel per host
    if len(sweeps) > 1:
        figures[f"compare-{metric}"] = compare_sweeps(sweeps, metric, store=store)
    paths = []
    for name, figure in figures.items():
        path = folder / f"{name}.png"
        figure.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
    record_verdict(report.verdict.to_dict(), folder)
    return paths

def compare_sweeps(sweeps: str | list = "latest", metric: str = "output_tok_s", *,
                   store: Store | None = None):
    """Figure: the same configs across sweeps side by side (``sweeps``: ids or ``latest``,
    a list, or YAML text such as ``'[ID1, ID2]'``): per config one bar per sweep, the
    median of ``metric`` (and of the speedup) with its 95% interval as a whisker;
    configs are matched by budget, cap, graphs and other swept values, not by hash
    (:mod:`ddlab.report.compare`). One sweep: its configs with their intervals."""
    from ddlab.sweeps.results import METRICS, load_cells, resolve_sweep
    from ddlab.report.compare import (
        compare_figure,
        comparison_frame,
        sweep_list,
        sweep_title,
        workload,
        workload_caution,
    )

    if metric not in METRICS:
        raise ConfigError(f"metric={metric!r}: not a known figure",
                          fix=f"choose one of: {', '.join(METRICS)}", value=metric)
    store = store or Store()
    ids = [resolve_sweep(store, s) for s in sweep_list(sweeps)]
    frame = comparison_frame({i: load_cells(i, store=store) for i in ids})
    caution = workload_caution(store, ids)
    labels = {i: sweep_title(store, i) + (f"\n{workload(store.sweep(i)['options'])}" if caution
                                          else "") for i in ids}
    return compare_figure(frame, (metric, "speedup"), labels=labels, caution=caution)

def runs(*, kind: str = "", last: int | None = None):
    """Every run in ``outputs/``, newest first, as a DataFrame: id, kind (sweep, deploy,
    plot, or the notebook: poll, ...), what (the grid, the variant, the parameters),
    host, state, headline, best cell, when, via (ddlab run, papermill, jupyter) and
    folder. Sweeps come from the store, the rest from their run folders; ``kind``
    keeps one kind, ``last`` the newest so many. ``render()`` gives the text."""
    from ddlab.report.runs import list_runs

    return list_runs(kind=kind or None, last=last)
