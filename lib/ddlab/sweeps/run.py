"""Run a sweep: each cell of its plan deployed, watched, probed and benchmarked.

The plan (:mod:`ddlab.sweeps.plan`) is validated before anything touches the
host; ``dry_run`` prints it and stops, writing nothing (not even the store,
whose ``latest`` sweep it must not become).

Per cell, on a fresh server: deploy -> watch (+ probe) -> bench, or a crash
record with its diagnosis; a server that dies during the bench is a crash
too; requests lost with a dropped SSH connection are benched again. The
host's baseline service is stopped once for the sweep and put back
at its end, on an error, and on Ctrl-C. A sweep over a pool of hosts runs its
cells on all of them at once (:mod:`ddlab.sweeps.pool`), each host with its own
lock, baseline and no-speculation cells. Each cell is committed to the store
(:mod:`ddlab.sweeps.store`) the moment it ends, with its evidence in
``outputs/sweeps/<sweep id>/<time>-<cell>/``; resume skips the cells already
finished (matched by config hash) and redoes an interrupted one.

A sweep whose host another ddlab run takes (``--force``) stops: the cell it was
running is ``preempted`` (the taker named: user, machine, pid, command, when),
never ``crashed``, and neither the variant nor the baseline is touched again (the
host is the taker's now); the sweep's status is ``preempted`` and its resume runs
that cell again. ``wait_s`` (``--wait``) queues for the host when another run holds it,
and after such a take-over too: the sweep waits behind the taker (bounded) and runs
the cells left once the host is free; ``preempted`` only when the bound passes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ddlab.config.units import render_unit
from ddlab.core.errors import ConfigError, DdlabError, HostError, LockError, Preempted
from ddlab.core.interrupts import as_interrupt, held_interrupts
from ddlab.core.log import get_logger
from ddlab.core.progress import Pace, duration_words
from ddlab.core.paths import outputs_dir
from ddlab.core.run_folders import new_run_dir, write_json
from ddlab.hosts.pools import load_pool, pool_label, slots
from ddlab.hosts.profiles import HostProfile
from ddlab.lab import hostload
from ddlab.lab.deploy import Lab
from ddlab.lab.family_api import family_of_run
from ddlab.lab.measure import measure
from ddlab.lab.stats import median_ci, ratio_ci
from ddlab.lab.verdict import Verdict
from ddlab.sweeps.pool import CellSteps, run_pool
from ddlab.sweeps.prompt_sets import load_sets, mixed
from ddlab.sweeps.workload import duration_bound, measure_workload
from ddlab.sweeps.store import DONE_STATES, Store, find_sweep
from ddlab.sweeps.plan import (
    Cell,
    SweepOptions,
    SweepPlan,
    plan_from_store,
    resume_command_for,
    secret_keys_of,
    sweep_id_for,
)
from ddlab.lab.watch import watch

__all__ = ["Sweep", "open_sweep", "execute_sweep", "run_sweep", "holding_host", "run_cell"]

log = get_logger(__name__)


@dataclass
class Sweep:
    """A sweep's identity and outcome; the cells themselves live in the store."""

    sweep_id: str
    host: str
    base: str
    cells: list[Cell]
    store_path: Path
    profile: HostProfile | None = None
    profiles: list = field(default_factory=list)   # a pool's hosts; [profile] for one
    options: SweepOptions = field(default_factory=lambda: SweepOptions())
    status: str = "planned"
    skipped: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    secret_keys: list[str] = field(default_factory=list)
    wait_s: float | None = None  # queue this long for a host another run holds
    error: str = ""              # what stopped it (a preempted sweep: who took the host)
    # pool members whose production could not be put back (ddlab.sweeps.pool._left_down)
    not_back: list[dict] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return outputs_dir() / "sweeps" / self.sweep_id

    def resume_command(self) -> str:
        return resume_command_for(self.sweep_id, self.secret_keys)

    def render_plan(self) -> str:
        where = (f"a pool of {len(self.profiles)} hosts ({', '.join(p.name for p in self.profiles)})"
                 if len(self.profiles) > 1 else self.host)
        rows = [f"sweep {self.sweep_id} on {where}: {len(self.cells)} cells from base {self.base}"]
        for cell in self.cells:
            mark = "done, skipped" if cell.hash in self.skipped else "to run"
            rows.append(f"  {cell.position:3d}  {cell.role:8s}  {cell.variant.name:40s} "
                        f"{cell.hash}  {cell.label}  [{mark}]")
        if self.options.workload:  # how long it may take, said before it starts
            todo = [c for c in self.cells if c.hash not in self.skipped]
            again = sum(c.role == "baseline" for c in todo) if self.options.bracket and any(
                c.role != "baseline" for c in todo) else 0
            rows.append(duration_bound(len(todo), self.options, bracketed=again))
        return "\n".join(rows)


def run_sweep(plan: SweepPlan | None = None, *, host: str | HostProfile | None = None,
              options: SweepOptions | None = None, resume: str = "", dry_run: bool = False,
              store: Store | None = None, secrets=()) -> Sweep:
    """Run a planned sweep, or resume a stored one (``resume``: its id or ``latest``;
    the stored plan, host and options are used; ``secrets``: the secret-named
    overrides it had, which the store does not keep), or with ``dry_run`` only
    log its plan. :func:`open_sweep` then :func:`execute_sweep`."""
    store = store or Store()
    sweep = open_sweep(plan, host=host, options=options, resume=resume, store=store,
                       register=not dry_run, secrets=secrets)
    if dry_run:  # nothing written: a dry run must not become the `latest` sweep
        sweep.status = "dry-run"
        return sweep
    return execute_sweep(sweep, store)


def execute_sweep(sweep: Sweep, store: Store) -> Sweep:
    """Run the cells of an open sweep that are not finished yet (see the module
    docstring); the store says how it ended, also when this raises."""
    todo = [c for c in sweep.cells if c.hash not in sweep.skipped]
    pace = Pace(len(todo))
    if not todo:  # a finished sweep resumed: the host is not touched, production not stopped
        log.info(f"[sweep] {sweep.sweep_id}: nothing left to run; all {len(sweep.cells)} cells "
                 "are finished")
        _stop(store, sweep, "done")
        return sweep
    store.set_sweep_status(sweep.sweep_id, "running")
    try:
        with as_interrupt():
            if len(slots(sweep.profiles or [sweep.profile])) > 1:
                run_pool(sweep, store, todo, CellSteps(hold=holding_host, run=run_cell,
                                                       bracket=bracket_baselines))
            else:
                _hold_and_run(sweep, store, todo)
    except Preempted as taken:  # an outcome, not a failure: the resume runs the cell again
        _stop(store, sweep, "preempted", error=taken.message, pace=pace)
        return sweep
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt):
            _stop(store, sweep, "interrupted", pace=pace)
        elif store.forget_unstarted_sweep(sweep.sweep_id):  # nothing ran: nothing to resume
            sweep.status = "failed"
            log.info(f"[sweep] {sweep.sweep_id}: failed before its first cell; not kept in "
                     f"the store ({type(err).__name__})")
        else:
            _stop(store, sweep, "failed", error=f"{type(err).__name__}: {err}", pace=pace)
        raise
    _stop(store, sweep, "done", pace=pace)
    return sweep


@contextlib.contextmanager
def holding_host(sweep: Sweep, store: Store, variants, *, what: str = "",
                 profile: HostProfile | None = None, abandon: bool = True) -> Iterator[Lab]:
    """The host held for a sweep's cells (``profile``, default the sweep's): locked, runs
    a killed process left marked lost (``abandon``; a pool does it once for all hosts),
    ``variants`` checked against its SGLang, then the baseline stopped once; on leaving
    (also on an error and on Ctrl-C) the variant goes and the baseline is back."""
    with Lab(profile or sweep.profile, what=what or f"sweep {sweep.sweep_id}",
             wait_s=sweep.wait_s) as lab:
        lost = store.abandon_runs(sweep.sweep_id) if abandon else 0  # we hold the lock now
        if lost:
            log.info(f"[sweep] {sweep.sweep_id}: {lost} run(s) left unfinished by a killed "
                     "process marked lost; their cells run again")
        lab.check_variants(variants)  # before the baseline is stopped
        try:
            lab.stop_baseline()
            yield lab
        finally:
            lab.restore()


def _hold_and_run(sweep: Sweep, store: Store, todo: list[Cell]) -> None:
    """Hold the host and run ``todo``. A host another run takes: Preempted; with
    ``wait_s``, the sweep queues behind that run instead and runs the cells left once
    the host is free (Preempted, naming both, when the wait's bound passes)."""
    taken = None
    while todo:
        try:
            with holding_host(sweep, store, [c.variant for c in todo]) as lab:
                _run_cells(lab, store, sweep, todo)
            return
        except Preempted as err:
            if not sweep.wait_s:
                raise
            taken, status = err, store.cell_status(sweep.sweep_id)
            todo = [c for c in todo if status.get(c.hash) not in DONE_STATES]
            log.info(f"[sweep] {taken.message}; waiting for the host (up to "
                     f"{sweep.wait_s:.0f} s) to run the {len(todo)} cell(s) left")
        except LockError as busy:  # the wait's bound passed
            if taken is None:
                raise
            raise Preempted(f"{taken.message}; then {busy.message}", fix=taken.fix,
                            **taken.facts) from None


def _stop(store: Store, sweep: Sweep, status: str, error: str = "",
          pace: Pace | None = None) -> None:
    """The sweep's end in the store and in one line, with how long it took (``pace``)."""
    sweep.status, sweep.error = status, error
    store.set_sweep_status(sweep.sweep_id, status, error=error)
    done = len(sweep.skipped) + len(sweep.finished)
    took = f" in {duration_words(pace.elapsed_s)}" if pace is not None else ""
    log.info(f"[sweep] {sweep.sweep_id}: {status}{took}; {done} of {len(sweep.cells)} cells "
             f"finished and stored in {store.path}")
    if status == "preempted":
        log.info(f"[sweep] {error}")
    if status != "done":
        log.info(f"[sweep] resume with: {sweep.resume_command()}")


def open_sweep(plan: SweepPlan | None = None, *, host: str | HostProfile | None = None,
               options: SweepOptions | None = None, resume: str = "",
               store: Store | None = None, register: bool = True, secrets=()) -> Sweep:
    """The sweep to run, a new one (``plan``; ``host`` default ``local``) or a stored one
    (``resume``: on its own host; naming another is an error, never silently ignored),
    every cell checked against the host profile; ``register`` writes it to the store.
    Its plan is logged. Nothing touches the host."""
    store = store or Store()
    options = options or SweepOptions()
    if resume:
        sweep_id = find_sweep(store, resume, name="resume")  # an id, latest, a run folder
        record = store.sweep(sweep_id)
        asked = pool_label(load_pool(host), host) if host else ""
        if asked and asked != record["host"]:
            raise ConfigError(f"resume={sweep_id!r} with host={asked!r}: the sweep ran on "
                              f"{record['host']!r}, and its cells are that host's",
                              fix=f"resume it without a host (it goes to {record['host']}), or "
                                  "start a new sweep on the other host", value=asked)
        plan = plan_from_store(store, sweep_id, secrets)
        profiles = load_pool(record["host"])
        options = SweepOptions(**record["options"])
    else:
        if plan is None:
            raise ConfigError("run_sweep: neither a plan nor resume given",
                              fix="plan it with plan_sweep(...) or pass resume='latest'")
        profiles = load_pool(host or "local")
        if len(profiles) > 1 and sorted(plan.hosts) != sorted(p.name for p in profiles):
            raise ConfigError(f"the plan's hosts {plan.hosts} are not the pool's "
                              f"{[p.name for p in profiles]}: each host needs its own baselines",
                              fix="plan it with plan_sweep(..., hosts=[the pool's host names])")
        sweep_id = sweep_id_for(plan, pool_label(profiles, host).replace(",", "_"),
                                profiles[0].base)
    label = pool_label(profiles, host if not resume else record["host"])
    for cell in plan.cells:  # values a unit cannot hold, each host's python: before a host
        for profile in profiles:
            render_unit(cell.variant, python=profile.python)
    sweep = Sweep(sweep_id=sweep_id, host=label, base=plan.base, cells=plan.cells,
                  store_path=store.path, profile=profiles[0], profiles=profiles,
                  options=options, secret_keys=secret_keys_of(plan))
    if register and not resume:
        store.add_sweep(sweep_id, host=label, base=plan.base, grid=plan.inputs(),
                        options=options.__dict__, resume_command=sweep.resume_command())
    for cell in plan.cells if register else ():
        store.plan_cell(sweep_id, config_hash=cell.hash, name=cell.variant.name,
                        position=cell.position, point=cell.point, role=cell.role,
                        config=cell.variant.to_dict())
    status = store.cell_status(sweep_id)
    sweep.skipped = [c.hash for c in plan.cells if status.get(c.hash) in DONE_STATES]
    log.info(sweep.render_plan())
    return sweep


MAX_ERRORS_IN_A_ROW = 3


def _run_cells(lab: Lab, store: Store, sweep: Sweep, todo: list[Cell]) -> None:
    """Run cells in order; a cell that errors is recorded and skipped (redone on
    resume), but errors in a row mean the host itself is in trouble: stop."""
    errors, pace = 0, Pace(len(todo))
    for n, cell in enumerate(todo, 1):
        log.info(f"[sweep] cell {n}/{len(todo)}: {cell.variant.name} ({cell.label})")
        try:
            status = _run_cell(lab, store, sweep, cell, sweep.options)
        except Preempted:
            log.info(f"[sweep] cell {n}/{len(todo)}: preempted")
            raise
        except DdlabError as err:
            errors += 1
            log.info(f"[sweep] cell {n}/{len(todo)}: error: {err}; {pace.said(n, count=False)}")
            if errors >= MAX_ERRORS_IN_A_ROW:
                raise
            continue
        errors = 0
        sweep.finished.append(cell.hash)
        log.info(f"[sweep] cell {n}/{len(todo)}: {status}; {pace.said(n, count=False)}")
    if sweep.options.bracket and any(c.role != "baseline" for c in todo):
        bracket_baselines(lab, store, sweep)


@contextlib.contextmanager
def _recorded_run(lab: Lab, store: Store, sweep: Sweep, cell: Cell, run_dir: Path,
                  *, commit_cell: bool = True) -> Iterator[int]:
    """A run of ``cell`` in the store for the block (its id yielded): Ctrl-C marks it
    interrupted; a DdlabError marks it (and, with ``commit_cell``, the cell) an error,
    removes the variant (the next cell or the restore tries again if that fails too)
    and goes on up. The block itself finishes the run when it ends well."""
    run_id = None
    try:
        # held: a Ctrl-C (or a pool's interrupt) between the row and the handlers below
        # would leave the run "running" for ever (seen once in a pool's Ctrl-C test)
        with held_interrupts("recording the cell's run"):
            run_id = store.add_run(variant=cell.variant.name, config_hash=cell.hash,
                                   host=lab.name, config=lab.on_host(cell.variant).to_dict(),
                                   sweep_id=sweep.sweep_id, run_dir=str(run_dir))
        with as_interrupt():
            yield run_id
    except KeyboardInterrupt:
        if run_id is not None:
            store.finish_run(run_id, state="interrupted")
        raise
    except Preempted as taken:  # the host is another run's: nothing of it is touched
        if run_id is not None:
            store.finish_run(run_id, state="preempted", verdict=_preempted_verdict(taken),
                             cell=commit_cell)
        raise
    except DdlabError as err:
        if run_id is None:
            raise
        store.finish_run(run_id, state="error", verdict={"state": "error", "cause": str(err)},
                         cell=commit_cell)
        with contextlib.suppress(DdlabError):
            lab.stop_variant()
        raise


def _preempted_verdict(taken: Preempted) -> dict:
    """The stored verdict of a run whose host was taken: its watch's, else one line."""
    verdict = dict(getattr(taken, "verdict", None) or {})
    return verdict or {"state": "preempted", "kind": "preempted", "headline":
                       f"PREEMPTED (not a crash): {taken.message}", "cause": taken.message,
                       "preempted_by": getattr(taken, "by", {}), "at": getattr(taken, "at", "")}


def bracket_baselines(lab: Lab, store: Store, sweep: Sweep, *, host: str = "") -> None:
    """Each measured baseline (of ``host`` in a pool) measured again after the grid's
    cells, stored as a ``bracket`` run of its cell: its rounds join the first ones, so a
    drift of the host over the sweep falls on both sides of every speedup
    (:mod:`ddlab.sweeps.results`). A bracket that fails is logged and left out; it never
    changes the cell's outcome."""
    status = store.cell_status(sweep.sweep_id)
    for cell in sweep.cells:
        if cell.role != "baseline" or status.get(cell.hash) != "measured" \
                or cell.host not in ("", host):
            continue
        log.info(f"[sweep] bracket: {cell.variant.name} measured again after the grid"
                 + (f" on {host}" if host else ""))
        run_dir = new_run_dir(f"bracket-{cell.label}", parent=sweep.folder)
        try:
            with _recorded_run(lab, store, sweep, cell, run_dir, commit_cell=False) as run_id:
                deployed = lab.start_variant(cell.variant, run_dir=run_dir)
                verdict = watch(lab, timeout_s=sweep.options.timeout_s, probe=False,
                                grace_s=sweep.options.grace_s,
                                lossless_tolerance=sweep.options.lossless_tolerance)
                metrics = None
                if verdict.state == "ready":
                    metrics, verdict = _measure_cell(lab, deployed, run_dir, sweep.options)
                lab.stop_variant()
        except Preempted:
            raise
        except DdlabError as err:
            log.info(f"[sweep] bracket {cell.variant.name}: error: {err}; left out")
            continue
        state = "bracket" if metrics else verdict.state
        store.finish_run(run_id, state=state, verdict=verdict.to_dict(), metrics=metrics)
        first = next((c.get("metrics") for c in store.cells(sweep.sweep_id) if c["config_hash"] == cell.hash), None)
        log.info(f"[sweep] bracket {cell.variant.name}: {_bracket_words(first, metrics, verdict)}")


def _bracket_words(first: dict | None, later: dict | None, verdict: Verdict) -> str:
    """What a baseline measured again after the grid found, in the terminal's words: its
    median against the first measurement's and the drift (later over first) with its 95%
    interval, as the report pools them (:mod:`ddlab.sweeps.results`); or how it ended."""
    if not later:
        kind = verdict.diagnosis.kind if verdict.state == "crashed" else None
        return f"{verdict.state}{f' ({kind})' if kind else ''}: drift not measured"
    after = later.get("output_tok_s_samples") or []
    before = (first or {}).get("output_tok_s_samples") or []
    drift, low, high = ratio_ci(after, before)
    now = f"measured again: {median_ci(after)[0]:.1f} tok/s"
    if drift is None:
        return now
    spread = f" [{low:.2f}-{high:.2f}]" if low is not None else ""
    return f"{now} against {median_ci(before)[0]:.1f} at the start, drift {drift:.2f}x{spread}"


def run_cell(lab: Lab, store: Store, sweep: Sweep, cell: Cell, *, bench: bool = True) -> str:
    """One cell of an open sweep, on a held host (:func:`holding_host`): deployed, watched
    (probes and the lossless check per the sweep's options), benchmarked unless ``bench``
    is False (a ready cell is then ``ready``, not ``measured``), committed to the store;
    returns its status (with the crash kind)."""
    return _run_cell(lab, store, sweep, cell, sweep.options, bench=bench)


def _run_cell(lab: Lab, store: Store, sweep: Sweep, cell: Cell, options: SweepOptions,
              bench: bool = True) -> str:
    """Deploy, watch, bench one cell; commit it to the store; return its status."""
    run_dir = new_run_dir(cell.label, parent=sweep.folder)
    with _recorded_run(lab, store, sweep, cell, run_dir) as run_id:
        deployed = lab.start_variant(cell.variant, run_dir=run_dir)
        verdict = watch(lab, timeout_s=options.timeout_s, probe=options.probe,
                        grace_s=options.grace_s, lossless_tolerance=options.lossless_tolerance,
                        prompts=options.lossless_prompts)
        _unless_preempted(lab, verdict)
        metrics = None
        if bench and verdict.state in ("ready", "wrong_output"):
            wrong = verdict if verdict.state == "wrong_output" else None
            watched = verdict
            metrics, verdict = _measure_cell(lab, deployed, run_dir, options)
            _unless_preempted(lab, verdict)  # mid-bench: the figures are not this cell's
            if verdict.state == "ready":  # the probes and the lossless check ran before it
                verdict.probes, verdict.lossless = watched.probes, watched.lossless
                verdict.notes = [*watched.notes, *(n for n in verdict.notes
                                                    if n not in watched.notes)]
            if wrong is not None and verdict.state == "ready":
                verdict = wrong  # measured, so a plot shows how fast it is wrong; never best
        status = ("measured" if bench else "ready") if verdict.state == "ready" else verdict.state
        lab.stop_variant()
    store.finish_run(run_id, state=status, verdict=verdict.to_dict(), metrics=metrics, cell=True)
    return f"{status}" + (f" ({verdict.diagnosis.kind})" if status == "crashed" else "")


def _unless_preempted(lab: Lab, verdict) -> None:
    """A watch that ended ``preempted``: the cell stops here, recorded as such."""
    if verdict.state == "preempted":
        raise lab.preempted_error(verdict.to_dict())


def _measure_cell(lab: Lab, deployed, run_dir: Path, options: SweepOptions):
    """Benchmark a ready cell; a server that died meanwhile makes it a crash.

    Requests lost with a dropped SSH connection (it dropped meanwhile and the server
    is still ready) measured the connection, not the server: bench again, once;
    lost twice is an error (the cell is redone on resume)."""
    for attempt in (1, 2):
        link = lab.transport.link
        server = _main_pid(lab, deployed)
        before = hostload.sample(lab.transport)
        summary, evidence = _bench(lab, deployed, run_dir, options)
        load = hostload.window(before, hostload.sample(lab.transport),
                               ours=(server, hostload.local_pid(lab.transport)))
        write_json(run_dir / "bench.json", {**evidence, "load": load})
        if load["load_warning"]:
            log.info(f"[sweep] {deployed.name}: {load['load_warning']}: its figures are suspect")
        after = watch(lab, timeout_s=30.0, probe=False, heartbeat_s=30.0)
        metrics = {**summary, **load}
        if after.state != "ready" or not (metrics["n_failed_total"]
                                          and lab.transport.link != link):
            return (metrics if after.state == "ready" else None), after
        lost = (f"{metrics['n_failed_total']} of {metrics['n_requests_total']} requests lost with the "
                "SSH connection")
        if attempt == 2:
            raise HostError(f"bench {deployed.name} on {lab.name}: {lost}, twice",
                            fix="check the connection to the host; resume redoes this cell",
                            host=lab.name)
        log.info(f"[sweep] {deployed.name}: {lost}; benchmarking again")


def _bench(lab: Lab, deployed, run_dir: Path, options: SweepOptions) -> tuple[dict, dict]:
    """The cell's figures and its evidence (``bench.json``): at its one concurrency, or
    at every level of a workload sweep on this one start (:mod:`ddlab.sweeps.workload`)."""
    label, record, headers = f"bench {deployed.name}", run_dir / "heartbeat.log", \
        lab.server_headers(deployed)
    if options.workload:
        return measure_workload(lab.server_url(deployed), options, label=label, record=record,
                                headers=headers, family=family_of_run(deployed.run_dir))
    result = measure(lab.server_url(deployed), requests=options.requests,
                     concurrency=options.concurrency, max_new_tokens=options.max_new_tokens,
                     warmup=options.warmup, repeats=options.repeats,
                     ci_target=options.ci_target, min_time_s=options.min_time_s,
                     max_time_s=options.max_time_s, max_rounds=options.max_rounds,
                     prompts=mixed(load_sets(options.prompts)) if options.prompts else None,
                     label=label, record=record, headers=headers,
                     family=family_of_run(deployed.run_dir))
    return result.summary(), result.to_dict()


def _main_pid(lab: Lab, deployed) -> int:
    """The server's main pid (its process tree's CPU is the measurement's), 0 unknown."""
    try:
        return lab.manager.state(deployed.service).main_pid
    except DdlabError:
        return 0
