"""ddlab's front door: every job a person runs, for notebooks and the CLI alike.

``import ddlab`` gives these functions (``ddlab/__init__.py`` re-exports
``__all__``); each notebook calls them and nothing deeper, and each ``ddlab``
CLI verb is one call of the same function (docs/DESIGN.md has the table).

- :func:`plan_deploy` validates a variant for a host (nothing touches it);
  :func:`deploy` stops the baseline and starts the variant, leaving it running
  under a persistent host lock; :func:`watch` follows it until ready, crashed or
  timed out, drives the verify path, and puts the baseline back unless the
  variant works and the caller keeps it; :func:`restore` puts the host back.
- :func:`sweep` plans, runs (or resumes) and reports a grid of variants;
  :func:`load_report` reports a stored one; :func:`plot` saves its figures.
- :func:`diagnose` reads a server log; :func:`render_unit` shows a variant's
  unit; :func:`run_notebook` is ``ddlab run``; :func:`demo` is ``make demo``.
- The plot functions take a sweep's frame and return a Figure.

In a notebook the verdict is displayed first, in a slot that fills when the job
ends, with the live heartbeat below it. Given ``run_dir`` (papermill injects it
under ``ddlab run``), a job leaves its verdict (``verdict.json``) and, for a
sweep, ``cells.csv`` there: the report's headline and the index's.
"""

from __future__ import annotations

import math
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from ddlab.config.overrides import parse_overrides
from ddlab.config.units import render_unit as _render_unit
from ddlab.config.variants import make_variant
from ddlab.core.errors import (
    ConfigError,
    DdlabError,
    HostError,
    HostKeyError,
    Interrupted,
    LockError,
    ServiceError,
)
from ddlab.core.checks import check_number
from ddlab.core.log import get_logger
from ddlab.core.paths import outputs_dir
from ddlab.core.progress import Slot
from ddlab.core.redact import redact_text
from ddlab.core.run_folders import new_run_dir, record_verdict
from ddlab.diagnosis.diagnosis import Diagnosis, read_log
from ddlab.diagnosis.diagnosis import diagnose as _diagnose
from ddlab.hosts.pools import load_pool, pool_base
from ddlab.hosts.profiles import HostProfile, load_host
from ddlab.lab.commands import ask_sglang_version, check_command
from ddlab.lab.deploy import Deployed, Lab, add_restore_hint
from ddlab.lab.plans import DeployPlan, DryRun, make_plan
from ddlab.sweeps.store import Store
from ddlab.sweeps.plan import (
    MAX_CELLS,
    SweepOptions,
    plan_sweep,
)
from ddlab.sweeps.run import Sweep, execute_sweep, open_sweep
from ddlab.lab.lossless import check_prompts, check_tolerance
from ddlab.lab.watch import Verdict
from ddlab.lab.watch import watch as _watch
from ddlab.report.notebooks import NotebookRun, NotebookRuns
from ddlab.report.parameters import check_namespace as _check_namespace
from ddlab.report.parameters import (
    parameter_extras,
    parameter_grid,
    parameter_value,
    parse_parameters,
)
from ddlab.report.notebooks import run_notebook as _run_notebook
from ddlab.report.kernel_runs import open_kernel_run
from ddlab.report.provenance import sweep_provenance

if TYPE_CHECKING:  # pandas and matplotlib load when a sweep is reported, not on import
    from ddlab.report.search_report import SearchReport
    from ddlab.report.verdicts import SweepReport

__all__ = ["plan_deploy", "deploy", "watch", "restore", "sweep", "load_report", "plot",
           "compare_sweeps", "runs", "bisect", "envelope",
           "diagnose", "render_unit", "run_notebook", "notebook_parameters", "check_parameters", "demo", "serve_target",
           "accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget", "heatmap",
           "explorer", "RESTORE_CHOICES", "DEMO_PARAMETERS", "MAX_CELLS"]

log = get_logger(__name__)

# Figures of a sweep's frame (ddlab.report.plots): loaded on first use, with matplotlib.
PLOTS = ("accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget", "heatmap",
         "explorer")
RESTORE_CHOICES = ("auto", "always", "never")


def _profile(host: str | HostProfile) -> HostProfile:
    return host if isinstance(host, HostProfile) else load_host(host)


# --- deploy, watch, restore ---------------------------------------------------------


def plan_deploy(host: str | HostProfile = "local", base: str | None = None, overrides=(),
                *, read_baseline: bool = False, probes=()) -> DeployPlan:
    """Validate a variant for a host (base + overrides); nothing changes on the host.
    The command is checked against the SGLang release the host runs (asked with one
    command, as ``deploy`` asks, when neither config nor profile names it);
    ``read_baseline`` also reads the baseline's unit for a diff. ``probes``
    (``DOTTED.PATH[:MODE]`` texts, :mod:`ddlab.probes`) wrap server functions in the
    variant only; the same as an override ``probes=[...]``."""
    if probes:
        overrides = {**parse_overrides(overrides), "probes": [probes] if isinstance(probes, str)
                     else list(probes)}
    return make_plan(_profile(host), base, overrides, read_baseline=read_baseline)


def deploy(plan: DeployPlan, *, force: bool = False, dry_run: bool = False,
           wait_s: float | None = None) -> Deployed | DryRun:
    """Stop the baseline and start the planned variant; it runs until :func:`restore`
    (or a :func:`watch` that restores). With ``dry_run`` nothing changes on the host
    (it is only asked for its SGLang version, as the deploy asks): the answer says so,
    with the unit that would run. ``force``: take the host from
    another ddlab run (that run ends ``preempted``); ``wait_s``: queue behind one for up
    to that many seconds instead."""
    _check_wait(wait_s)
    if dry_run:  # the plan has asked the host for its SGLang version, as the deploy does
        return DryRun(plan)
    with Lab(plan.host, what=f"deploy {plan.variant.name}", persistent=True, force=force,
             wait_s=wait_s) as lab:
        lab.check_variants([plan.variant])  # with the host's own SGLang, before anything changes
        _say_baseline_diff(lab, plan)  # what replaces production, before it is stopped
        try:
            lab.stop_baseline()
            return lab.start_variant(plan.variant)
        except BaseException:
            lab.restore()  # nothing half-deployed stays behind
            raise


def _say_baseline_diff(lab: Lab, plan: DeployPlan) -> None:
    """The running baseline's unit against the variant's, as a compact unified diff (secrets
    masked), on the log before the baseline is stopped: what is about to replace
    production. systemd hosts only (a process manager keeps no unit text)."""
    service = lab.profile.baseline_service
    if not service or lab.profile.service_manager != "systemd" or lab.lock.baseline:
        return  # none, or a deploy that follows one: production is stopped already
    running = lab.manager.definition(service)
    if running is None:
        return
    plan.baseline_unit = redact_text(running)
    log.info(f"{lab.name}: {plan.variant.unit_name} against the running baseline {service} "
             f"(--- baseline, +++ variant):\n{plan.diff_to_baseline()}")


def watch(host: str | HostProfile = "local", *, timeout_s: float = 600.0, probe: bool = True,
          grace_s: float = 5.0, restore: str = "auto", heartbeat_s: float = 5.0, patterns=(),
          force: bool = False, run_dir: str | Path | None = None, lossless: bool = True,
          lossless_tolerance: float = 1.0, lossless_prompts=(),
          wait_s: float | None = None) -> Verdict:
    """Watch the deployed variant until ready, crashed or timed out (probing the verify
    path once ready, then the lossless check: greedy tokens against the model's own,
    ``lossless_tolerance`` the token match rate that passes, ``lossless_prompts`` the
    prompts compared, empty for the shipped ones); then put the baseline back
    per ``restore``: ``auto`` unless ready with every probe passed, ``always``, or
    ``never``. A variant that serves other tokens is ``wrong_output``, never ready; one
    whose host another ddlab run took is ``preempted`` (left to that run), never crashed.
    ``wait_s``: queue behind another run holding the host, up to that many seconds."""
    if restore not in RESTORE_CHOICES:
        raise ConfigError(f"restore={restore!r}: must be one of {', '.join(RESTORE_CHOICES)}",
                          fix="auto puts the baseline back unless the variant is ready and its "
                              "probes passed", value=restore)
    _check_positive(timeout_s=timeout_s, grace_s=grace_s, heartbeat_s=heartbeat_s)
    _check_wait(wait_s)
    check_tolerance(lossless_tolerance)
    prompts = check_prompts(lossless_prompts)
    profile = _profile(host)
    slot = Slot(f"watching the variant on {profile.name}: live status below")
    try:
        verdict = _watch_and_restore(profile, timeout_s=timeout_s, probe=probe, grace_s=grace_s,
                                     restore=restore, heartbeat_s=heartbeat_s,
                                     patterns=patterns, force=force, wait_s=wait_s,
                                     lossless=lossless,
                                     lossless_tolerance=lossless_tolerance, prompts=prompts)
    except BaseException as err:
        if isinstance(err, (HostError, ServiceError)) and not isinstance(err, (HostKeyError,
                                                                               LockError)):
            # wherever it failed (the lock, the watch, the restore), the variant may still
            # run and the baseline be down: the lock keeps what restore needs
            add_restore_hint(err, profile.name)
        verdict = err.verdict if isinstance(err, Interrupted) else None
        slot.update(verdict if verdict is not None else f"NO VERDICT: {type(err).__name__}: {err}")
        record_verdict(verdict.to_dict() if verdict is not None else
                       {"state": "failed", "headline": f"{type(err).__name__}: {err}"}, run_dir)
        raise
    slot.update(verdict)
    record_verdict(verdict.to_dict(), run_dir)
    return verdict


def _watch_and_restore(profile: HostProfile, *, restore: str, force: bool, wait_s, **how) -> Verdict:
    with Lab(profile, what="watch", persistent=True, force=force, wait_s=wait_s) as lab:
        try:
            verdict = _watch(lab, **how)
        except BaseException as err:
            _restore_after(lab, err.verdict if isinstance(err, Interrupted) else None, restore,
                           interrupted=isinstance(err, KeyboardInterrupt))
            raise
        works = verdict.state == "ready" and not verdict.probe_failed
        if verdict.state == "connection_lost":
            log.warning(f"{lab.name}: the host does not answer, so the baseline cannot be put "
                        f"back now: {verdict.next_step}")
        elif restore == "always" or (restore == "auto" and not works):
            try:
                _restore_after(lab, verdict, restore, interrupted=False)
            except DdlabError as failed:  # the verdict stands, and says the host is not back
                add_restore_hint(failed, profile.name)
                log.error(f"{lab.name}: putting the baseline back failed: {failed}")
                verdict.restore_error = redact_text(failed.message)
            verdict.notes = [n for n in verdict.notes if "is stopped while" not in n]
        return verdict


def _restore_after(lab: Lab, verdict: Verdict | None, restore: str, *, interrupted: bool) -> None:
    """Restore (unless ``never``) after a watch; an interrupt, before or during the
    restore (which holds it until done), says what was left and keeps the verdict."""
    try:
        if restore != "never":
            lab.restore()
    except KeyboardInterrupt as again:
        log.warning(_interrupted_hint(lab, verdict, restore))
        raise Interrupted(verdict=verdict) from again  # the watch had ended: its verdict stands
    if interrupted:
        log.warning(_interrupted_hint(lab, verdict, restore))


def _interrupted_hint(lab: Lab, verdict: Verdict | None, restore: str) -> str:
    """What an interrupted watch left, and how to go on."""
    record = f"the record is in {verdict.run_dir}; " if verdict is not None else ""
    if restore == "never":
        return (f"{lab.name}: watch interrupted; {record}the variant still runs: resume with "
                f"`ddlab watch --host {lab.name}`, or `ddlab restore --host {lab.name}`")
    return (f"{lab.name}: watch interrupted; {record}variant removed, baseline back; "
            f"to try again, deploy it again (`ddlab deploy --host {lab.name} ...`)")


def restore(host: str | HostProfile = "local", *, force: bool = False,
            wait_s: float | None = None) -> str:
    """Put the host back as ddlab found it (variant gone, baseline back, lock released);
    returns what it did, in one line. ``force``: take the host from a ddlab run that is
    gone (or from a live one, which then ends preempted); ``wait_s``: queue behind it."""
    _check_wait(wait_s)
    profile = _profile(host)
    with Lab(profile, what="restore", persistent=True, force=force, wait_s=wait_s,
             adopt=True) as lab:  # what this user's deploy left, from whichever checkout
        current, baseline = lab.current, dict(lab.lock.baseline)
        lab.restore()
    done = [f"removed {current.service}" if current else "no variant was deployed"]
    if lab.restored_baseline:  # the profile's, whatever the host's lock named
        done.append(f"baseline {lab.restored_baseline} active again")
    elif baseline.get("service") == profile.baseline_service:
        done.append(f"baseline {baseline['service']} left as found ({baseline.get('state_found')})")
    return f"{profile.name}: " + "; ".join(done) + "; lock released"


def _check_wait(wait_s) -> None:
    """``wait_s``: None or 0 (do not wait), else a finite number of seconds."""
    if wait_s is not None:
        check_number("wait_s", wait_s, seconds=True, note="0: do not wait")


def _check_positive(**values) -> None:
    for name, value in values.items():  # nan would never time out
        check_number(name, value, above=True, seconds=True,
                     example=600 if name == "timeout_s" else 5)


# --- sweeps ----------------------------------------------------------------------------


def sweep(*, host: str | list = "", base: str = "", budget=(4, 16, 32), topk_cap=(1, 4),
          cuda_graph=(True, False), grid: dict | None = None, fixed=(), extra=(),
          baseline: bool = True, requests: int = 8, concurrency: int = 1,
          max_new_tokens: int = 128, warmup: int = 1, repeats: int = 1,
          ci_target: float | None = 0.05, min_time_s: float = 0.0, max_time_s: float = 60.0,
          max_rounds: int = 10, bracket: bool = True,
          timeout_s: float = 600.0, probe: bool = True, lossless_tolerance: float = 1.0,
          lossless_prompts=(), resume: str = "",
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
    """
    _check_wait(wait_s)
    profiles = load_pool(host or "local")  # one host, a pool profile, or a list of hosts
    profile = profiles[0]
    options = SweepOptions(requests=requests, concurrency=concurrency,
                           max_new_tokens=max_new_tokens, warmup=warmup, repeats=repeats,
                           ci_target=ci_target or None,  # 0: exactly `repeats` rounds
                           min_time_s=min_time_s, max_time_s=max_time_s,
                           max_rounds=max_rounds, bracket=bracket, timeout_s=timeout_s,
                           probe=probe, lossless_tolerance=lossless_tolerance,
                           lossless_prompts=lossless_prompts)
    plan = None if resume else plan_sweep(base or pool_base(profiles),
                                          parameter_grid(budget, topk_cap, cuda_graph, grid),
                                          fixed=parameter_value("fixed", fixed),
                                          extra=parameter_extras(extra), baseline=baseline,
                                          max_cells=max_cells, hosts=[p.name for p in profiles])
    store = store or Store()
    own = None if run_dir or dry_run else open_kernel_run("sweep")  # plain papermill, JupyterLab
    run_dir = own.run_dir if own is not None else run_dir
    slot = Slot("sweep running: progress below; the verdict replaces this line when it ends")
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
        failed = _report_failure(store, slot, opened, err, run_dir)
        _keep_records(own, failed, opened, profile, run_dir, err)
        if isinstance(err, DdlabError) and failed is not None and err.result is None:
            err.result = failed.verdict  # the CLI prints it, then its JSON line, last
        raise
    from ddlab.sweeps.results import plan_frame

    planned = plan_frame(opened) if opened.status == "dry-run" and not resume else None
    report = _report(store, opened.sweep_id, opened.status, opened.resume_command(), run_dir,
                     frame=planned, error=opened.error, not_back=opened.not_back)
    slot.update(report.verdict)
    report.provenance = _keep_records(own, report, opened, profile, run_dir)
    return report


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
    verdict = sweep_verdict(frame, sweep_id=sweep_id, status=status, resume=resume, error=error,
                            what=what or sweep_words(store.sweep(sweep_id)), cautions=cautions,
                            not_back=not_back)
    record_verdict(verdict.to_dict(), run_dir)
    if run_dir and Path(run_dir).is_dir() and not frame.empty:
        frame.to_csv(Path(run_dir) / "cells.csv", index=False)
    return SweepReport(sweep_id=sweep_id, frame=frame, verdict=verdict)


def _report_failure(store: Store, slot: Slot, opened: Sweep | None, err: BaseException,
                    run_dir) -> SweepReport | None:
    """The slot and the run folder say how it ended, and how to resume, before it raises;
    the report, when the sweep got far enough to have one."""
    record = store.sweep(opened.sweep_id) if opened is not None else None
    error = "" if isinstance(err, KeyboardInterrupt) else f"{type(err).__name__}: {err}"
    if record:
        report = _report(store, opened.sweep_id, record["status"], record["resume_command"],
                         run_dir, error=error, not_back=opened.not_back)
        slot.update(report.verdict)
    elif opened is not None and opened.status == "failed":  # failed to start: not stored
        from ddlab.sweeps.results import plan_frame

        report = _report(store, opened.sweep_id, "failed", "", run_dir,
                         frame=plan_frame(opened), error=error, not_back=opened.not_back)
        slot.update(report.verdict)
    else:
        report = None
        slot.update(f"NO VERDICT: {type(err).__name__}: {err}")
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


# --- searches: bisect a failing variant, find the envelope that serves ------------------


def bisect(*, host: str = "", base: str = "", good=(), bad=(), max_trials: int = 12,
           max_time_s: float = 7200.0, timeout_s: float = 600.0, probe: bool = True,
           dry_run: bool = False, store: Store | None = None,
           run_dir: str | Path | None = None, wait_s: float | None = None) -> SearchReport:
    """Find the change that breaks it: base + ``good`` overrides serves, base + ``bad``
    fails; delta debugging over the override keys finds the smallest set of changes from
    the good config that still fails the same way (a trial that fails another way is
    reported as such, never merged), then tries the bad config without it.

    Every trial is a cell of a sweep in the store (deployed, watched, probed, checked
    for lossless tokens, diagnosed); the same bisect run again reuses its finished
    trials, so an interrupted one resumes. The baseline is stopped once and put back at
    the end, on an error and on Ctrl-C. ``max_trials`` / ``max_time_s``: the budget;
    when it runs out the report says what is known and what is not. ``timeout_s``: per
    trial, until ready. ``dry_run``: the plan only. ``host``: "" is ``local``.
    ``wait_s``: queue behind another ddlab run holding the host, up to that many seconds.
    """
    from ddlab.sweeps.search_plan import plan_bisect

    _check_wait(wait_s)
    profile = load_host(host or "local")
    plan = plan_bisect(profile, base or profile.base, parameter_value("good", good),
                       parameter_value("bad", bad), options=_search_options(timeout_s, probe),
                       max_trials=max_trials, max_time_s=max_time_s)
    return _search(plan, dry_run=dry_run, store=store, run_dir=run_dir, wait_s=wait_s)


def envelope(*, host: str = "", base: str = "", fixed=(), search=(), fallback=(),
             max_trials: int = 12, max_time_s: float = 7200.0, timeout_s: float = 600.0,
             probe: bool = True, dry_run: bool = False, store: Store | None = None,
             run_dir: str | Path | None = None, wait_s: float | None = None) -> SearchReport:
    """Find the largest values that serve: base + ``fixed`` as asked, then for each
    ``search`` key (``KEY=LO..HI``, in order; powers of two where the flag wants them;
    an end left out comes from the flag table) a binary search for the largest value
    that is ready, probes fine and is lossless. When even the lowest value fails, the
    next ``fallback`` (``cuda_graph=false``; applied in order, and kept) is tried and the
    key searched again. The answer names each boundary and the failure above it.

    Trials, budget, resume, baseline, ``dry_run`` and ``wait_s`` as in :func:`bisect`.
    """
    from ddlab.sweeps.search_plan import plan_envelope

    _check_wait(wait_s)
    profile = load_host(host or "local")
    plan = plan_envelope(profile, base or profile.base, parameter_value("fixed", fixed),
                         parameter_value("search", search), parameter_value("fallback", fallback),
                         options=_search_options(timeout_s, probe), max_trials=max_trials,
                         max_time_s=max_time_s)
    return _search(plan, dry_run=dry_run, store=store, run_dir=run_dir, wait_s=wait_s)


def _search_options(timeout_s: float, probe: bool) -> SweepOptions:
    """A trial's watch: until ready within ``timeout_s``, probes (and the lossless check)."""
    from ddlab.sweeps.search_plan import TRIAL_GRACE_S

    _check_positive(timeout_s=timeout_s)
    return SweepOptions(timeout_s=timeout_s, probe=probe, grace_s=TRIAL_GRACE_S)


def _search(plan, *, dry_run: bool, store: Store | None, run_dir,
            wait_s: float | None = None) -> SearchReport:
    """Run (or only show) a planned search; its report in the slot and in ``run_dir``,
    also when it stops on an error or Ctrl-C."""
    from ddlab.sweeps.search_run import run_search
    from ddlab.report.search_report import search_report

    store = store or Store()
    slot = Slot(f"{plan.kind} running: trials below; the answer replaces this line when it ends")
    if dry_run:
        report = search_report(None, store=store, search_id=plan.search_id, kind=plan.kind,
                               status="dry-run", plan=plan.render())
        _keep_search(slot, report, run_dir)
        return report
    try:
        run = run_search(plan, store=store, wait_s=wait_s)
    except BaseException as err:
        stopped = isinstance(err, KeyboardInterrupt)
        report = search_report(None, store=store, search_id=plan.search_id, kind=plan.kind,
                               status="interrupted" if stopped else "failed",
                               error="" if stopped else f"{type(err).__name__}: {err}")
        _keep_search(slot, report, run_dir)
        if stopped:  # the report goes with the interrupt: the CLI's last line is its JSON
            raise Interrupted(verdict=report) from err
        if isinstance(err, DdlabError):  # and with an error, for the same reason
            err.result = report
        raise
    report = search_report(run, store=store, search_id=run.search_id, kind=plan.kind,
                           status=run.status)
    _keep_search(slot, report, run_dir)
    return report


def _keep_search(slot: Slot, report, run_dir) -> None:
    """The answer in the slot; in ``run_dir`` the verdict, ``trials.csv`` and the figure."""
    slot.update(report)
    record_verdict(report.to_dict(), run_dir)
    if run_dir and Path(run_dir).is_dir() and not report.trials.empty:
        report.trials.to_csv(Path(run_dir) / "trials.csv", index=False)
        report.figure().savefig(Path(run_dir) / "outcome-by-value.png", dpi=110,
                                bbox_inches="tight")


# --- logs, units, notebooks ------------------------------------------------------------


def diagnose(log_text: str | os.PathLike, *, patterns=(), sglang_version: str | None = None,
             algorithm: str | None = None) -> Diagnosis:
    """Crashed or not, the kind, the phase, the cause and the next step, from a server
    log: its text, or a path to a saved log (``Path("-")`` reads stdin). The advice is
    written for ``sglang_version`` and ``algorithm`` (None: what the log says, else
    neutral)."""
    text = read_log(os.fspath(log_text)) if isinstance(log_text, os.PathLike) else log_text
    return _diagnose(text, patterns=patterns, version=sglang_version or None,
                     algorithm=algorithm or None)


def render_unit(base: str = "local", overrides=(), *, host: str | HostProfile = "local") -> str:
    """The systemd unit ``deploy`` would install for base + overrides on ``host``
    (validated; nothing changes on a host). The command is checked against the SGLang
    release ``deploy`` would check it with: for an SGLang module whose config and profile
    name none, ``host`` is asked (one command; the first comment lines say which release,
    or why the host could not say). Secret values are masked, and then a comment line
    says so."""
    profile = _profile(host)
    variant = make_variant(base, overrides)
    text = _render_unit(variant, python=profile.python)  # a value no unit can hold, first
    version, source = ask_sglang_version(variant.config, profile)  # as deploy asks the host
    check = check_command(variant.config, version=version, version_source=source)
    check.raise_errors(variant.name)
    shown = redact_text(text)
    notes = check.notes()
    if shown != text:
        notes.append("secret values are masked (***): ddlab deploy installs the real ones")
    return "".join(f"# {note}\n" for note in notes) + shown


def run_notebook(notebook: str | Path, parameters: dict | None = None, *,
                 name: str | None = None) -> NotebookRun:
    """Execute a notebook headless into ``outputs/<time>-<notebook>-<name>/`` with its
    HTML report (``ddlab run``); unknown parameters are refused first."""
    return _run_notebook(notebook, parameters, name=name)


def notebook_parameters(pairs=(), files=()) -> dict:
    """``-p NAME VALUE`` pairs (values read as YAML) over ``-f`` YAML files: ddlab run's."""
    return parse_parameters(pairs, files)


def check_parameters(notebook: str, namespace: dict) -> None:
    """In a notebook run by plain papermill (``papermill notebooks/sweep.ipynb out.ipynb
    -p budgett 32``), a parameter the notebook does not declare becomes a variable no
    cell reads; called with ``globals()`` right after the parameters, this refuses it
    with the closest declared name, before anything touches a host."""
    _check_namespace(notebook, namespace)


def serve_target(argv: list[str], *, prog: str = "python -m ddlab.target") -> int:
    """Run ddlab's own tree-speculative server (SGLang's flags) in this process."""
    from ddlab import target  # torch, only when serving

    return target.main(argv, prog=prog)


# --- the demo --------------------------------------------------------------------------

DEMO_PARAMETERS = {
    "host": "local",
    "budget": [4, 16, 32],
    "topk_cap": [1, 4],
    "cuda_graph": [True, False],
    "extra": [{"debug_drop_verify_field": "num_token_non_padded"}],
    "requests": 4,
    "max_new_tokens": 64,
    "min_time_s": 3,  # every measured cell at least 3 s: a figure with an interval
    "timeout_s": 180,
}


def demo() -> NotebookRuns:
    """``make demo``: the main job on the embedded default. A sweep of the local target
    over budget {4, 16, 32} x top-k cap {1, 4} x CUDA graphs {on, off}, the
    no-speculation baseline and one variant carrying the field's replay fault, then
    the plot notebook over it; both through ``ddlab run``. Returns the runs (the
    plot's is missing when the sweep failed)."""
    params = {**DEMO_PARAMETERS, "fixed": {"port": _free_port()}}
    swept = run_notebook("sweep", params, name="demo")
    if swept.status != "ok":
        return NotebookRuns([swept])
    sweep_id = swept.verdict.get("sweep_id") or "latest"
    return NotebookRuns([swept, run_notebook("plot", {"sweep": sweep_id}, name="demo")])


def _free_port() -> int:
    """A TCP port free on loopback now (the demo must not collide with a real server)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def __getattr__(name: str):
    if name in PLOTS:
        from ddlab.report import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'ddlab.api' has no attribute {name!r}")
