"""Sweeps: a grid of config variants, each deployed, watched, probed and benchmarked.

A grid maps override keys (anything ``--set`` takes: flags, ``env.X``,
``unit.X``, or the aliases ``budget``, ``topk_cap``, ``cuda_graph``,
``algorithm``) to lists of values; the cells are their product, plus a
no-speculation baseline cell per CUDA-graph setting (for speedup) and any
extra variants (e.g. one carrying a known fault). Every cell is validated
before anything touches the host; ``dry_run`` prints the plan and stops,
writing nothing (not even the store, whose ``latest`` sweep it must not become).

Per cell, on a fresh server: deploy -> watch (+ probe) -> bench, or a crash
record with its diagnosis; a server that dies during the bench is a crash
too; requests lost with a dropped SSH connection are benched again. The
host's baseline service is stopped once for the sweep and put back
at its end, on an error, and on Ctrl-C. Each cell is committed to the store
(:mod:`ddlab.store`) the moment it ends, with its evidence in
``outputs/sweeps/<sweep id>/<time>-<cell>/``; resume skips the cells already
finished (matched by config hash) and redoes an interrupted one.
"""

from __future__ import annotations

import contextlib
import itertools
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.bench import run_bench
from ddlab.deploy import Lab
from ddlab.errors import ConfigError, DdlabError, HostError
from ddlab.hosts import HostProfile, load_host
from ddlab.params import Variant, load_base, make_variant
from ddlab.paths import outputs_dir
from ddlab.redact import MASK, looks_secret
from ddlab.runs import new_run_dir, plain_text, safe_name, utc_stamp, write_json
from ddlab.store import DONE_STATES, Store
from ddlab.units import render_unit
from ddlab.watch import watch

__all__ = ["DEFAULT_GRID", "BASELINE_OVERRIDES", "Cell", "SweepOptions", "SweepPlan", "Sweep",
           "plan_sweep", "plan_from_store", "run_sweep"]

DEFAULT_GRID = {"budget": [4, 16, 32], "topk_cap": [1, 4], "cuda_graph": [True, False]}
# The no-speculation baseline: every speculative flag removed.
BASELINE_OVERRIDES = {"speculative_algorithm": None, "speculative_draft_model_path": None,
                      "speculative_ddtree_budget": None, "speculative_ddtree_topk_cap": None,
                      "speculative_dflash_block_size": None, "speculative_num_draft_tokens": None}
GRAPH_KEYS = ("cuda_graph",)


@dataclass(frozen=True)
class Cell:
    """One grid point: its position in the plan, its role and its variant."""

    position: int
    role: str            # baseline | grid | extra
    point: dict          # the grid values (or extra overrides) that define it
    variant: Variant

    @property
    def hash(self) -> str:
        return self.variant.hash

    @property
    def label(self) -> str:
        """Folder-safe words for the change: ``budget=32-topk_cap=8-cuda_graph=off``;
        a secret-named key's value is ``masked`` (folder names are printed and stored)."""
        words = [f"{k}={'masked' if looks_secret(k) else _word(v)}" for k, v in self.point.items()]
        text = "-".join(words) if self.role == "grid" else "-".join([self.role, *words])
        text = plain_text(text).lstrip("-_.=")[:100]  # a folder name starts plain
        return safe_name(text or self.role)


def _word(value) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return "none" if value is None else str(value)


@dataclass(frozen=True)
class SweepOptions:
    """How each ready cell is measured (see :func:`ddlab.bench.run_bench`) and watched."""

    requests: int = 8
    concurrency: int = 1
    max_new_tokens: int = 128
    warmup: int = 1
    repeats: int = 1
    timeout_s: float = 600.0
    probe: bool = True
    grace_s: float = 2.0

    def __post_init__(self):
        for name in ("requests", "concurrency", "max_new_tokens", "repeats"):
            _check_int(name, getattr(self, name), minimum=1)
        _check_int("warmup", self.warmup, minimum=0)
        for name in ("timeout_s", "grace_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"{name}={value!r}: must be a number >= 0",
                                  fix=f"e.g. -p {name} 600", key=name, value=value)


def _check_int(name: str, value, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name}={value!r}: must be an integer >= {minimum}",
                          fix=f"e.g. -p {name} {max(minimum, 4)}", key=name, value=value)


def _as_list(key: str, values) -> list:
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if not values:
        raise ConfigError(f"{key}=[]: a grid dimension needs at least one value",
                          fix=f"e.g. -p {key} 16, or a list such as [4, 16, 32]", key=key)
    return values


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: its inputs (kept in the store, for resume) and its cells."""

    base: str
    grid: dict
    fixed: dict
    extra: list
    baseline: bool
    cells: list[Cell]

    def inputs(self) -> dict:
        return {"base": self.base, "grid": self.grid, "fixed": self.fixed, "extra": self.extra,
                "baseline": self.baseline}


def plan_sweep(base: str = "local", grid: dict | None = None, *, fixed=(),
               baseline: bool = True, extra=()) -> SweepPlan:
    """Every cell of the sweep, validated; nothing touches a host.

    ``fixed``: overrides applied to every cell; ``extra``: a list of override
    mappings (or KEY=VALUE lists), one extra cell each, on top of ``fixed``.
    """
    base_config = load_base(base)
    grid = dict(DEFAULT_GRID if grid is None else grid)
    dims = {key: _as_list(key, values) for key, values in grid.items()}
    fixed_overrides = _mapping(fixed)
    extras = [_mapping(overrides) for overrides in extra]
    cells: list[Cell] = []

    def add(role: str, point: dict, overrides: dict) -> None:
        variant = make_variant(base_config, {**fixed_overrides, **overrides})
        if any(c.hash == variant.hash for c in cells):
            return  # two points that configure the same server are one cell
        cells.append(Cell(len(cells), role, point, variant))

    if baseline:
        graph_values = next((dims[k] for k in GRAPH_KEYS if k in dims), [None])
        for value in graph_values:
            point = {} if value is None else {"cuda_graph": value}
            add("baseline", point, {**BASELINE_OVERRIDES, **point})
    for values in itertools.product(*dims.values()):
        point = dict(zip(dims, values))
        add("grid", point, point)
    for overrides in extras:
        add("extra", overrides, overrides)
    return SweepPlan(base=str(base), grid=dims, fixed=fixed_overrides, extra=extras,
                     baseline=baseline, cells=cells)


def plan_from_store(store: Store, sweep_id: str, secrets=()) -> SweepPlan:
    """The stored sweep's plan, rebuilt and checked against the cells it registered.

    The store keeps secret-named values masked (:mod:`ddlab.redact`); ``secrets``
    (overrides, as ``fixed`` takes them) gives them back. A masked value without
    one is a ConfigError naming the keys, before anything touches the host."""
    record = store.sweep(sweep_id)
    inputs = _unmask(record["grid"], _mapping(secrets), sweep_id)
    plan = plan_sweep(inputs["base"], inputs["grid"], fixed=inputs["fixed"],
                      baseline=inputs["baseline"], extra=inputs["extra"])
    stored = set(store.cell_status(sweep_id))
    if {c.hash for c in plan.cells} != stored:
        raise ConfigError(f"resume={sweep_id!r}: the base config {inputs['base']!r} changed since "
                          "the sweep began, so its cells no longer match",
                          fix="start a new sweep (resume='') or put the base back as it was",
                          value=sweep_id)
    return plan


def _unmask(inputs: dict, secrets: dict, sweep_id: str) -> dict:
    """``inputs`` with each masked secret value replaced by ``secrets[key]``."""
    missing: list[str] = []

    def fill(key: str, value):
        if not (looks_secret(key) and value == MASK):
            return value
        if secrets.get(key, MASK) == MASK:  # not given, or the mask pasted back
            missing.append(key)
            return value
        return secrets[key]

    grid = {k: ([fill(k, MASK)] if v == MASK else v) for k, v in inputs["grid"].items()}
    fixed = {k: fill(k, v) for k, v in inputs["fixed"].items()}
    extra = [{k: fill(k, v) for k, v in cell.items()} for cell in inputs["extra"]]
    if missing:
        keys = sorted(set(missing))
        raise ConfigError(f"resume={sweep_id!r}: the store keeps no secrets, and this sweep had "
                          f"{', '.join(keys)}", fix="pass their real values again: "
                          + _resume_command(sweep_id, keys), value=sweep_id)
    return {**inputs, "grid": grid, "fixed": fixed, "extra": extra}


def _resume_command(sweep_id: str, secret_keys=()) -> str:
    command = f"ddlab run sweep -p resume {shlex.quote(sweep_id)}"
    if secret_keys:  # never the values: the user has them, the store does not
        pairs = ", ".join(f'"{key}": "***"' for key in secret_keys)
        command += f" -p fixed '{{{pairs}}}' (*** = each secret's real value)"
    return command


def _secret_keys(plan: SweepPlan) -> list[str]:
    """The secret-named override keys of ``plan`` (their values are not stored)."""
    keys = {k for k in plan.grid if looks_secret(k)} | {k for k in plan.fixed if looks_secret(k)}
    keys |= {k for cell in plan.extra for k in cell if looks_secret(k)}
    return sorted(keys)


def _mapping(overrides) -> dict:
    from ddlab.params import parse_overrides

    return parse_overrides(overrides or {})


@dataclass
class Sweep:
    """A sweep's identity and outcome; the cells themselves live in the store."""

    sweep_id: str
    host: str
    base: str
    cells: list[Cell]
    store_path: Path
    profile: HostProfile | None = None
    options: SweepOptions = field(default_factory=lambda: SweepOptions())
    status: str = "planned"
    skipped: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    secret_keys: list[str] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return outputs_dir() / "sweeps" / self.sweep_id

    def resume_command(self) -> str:
        return _resume_command(self.sweep_id, self.secret_keys)

    def render_plan(self) -> str:
        rows = [f"sweep {self.sweep_id} on {self.host}: {len(self.cells)} cells from base {self.base}"]
        for cell in self.cells:
            mark = "done, skipped" if cell.hash in self.skipped else "to run"
            rows.append(f"  {cell.position:3d}  {cell.role:8s}  {cell.variant.name:40s} "
                        f"{cell.hash}  {cell.label}  [{mark}]")
        return "\n".join(rows)


def run_sweep(plan: SweepPlan | None = None, *, host: str | HostProfile = "local",
              options: SweepOptions | None = None, resume: str = "", dry_run: bool = False,
              store: Store | None = None, say=None, secrets=()) -> Sweep:
    """Run a planned sweep, or resume a stored one (``resume``: its id or ``latest``;
    the stored plan, host and options are used; ``secrets``: the secret-named
    overrides it had, which the store does not keep), or with ``dry_run`` only print it."""
    say = say or (lambda text: print(text, file=sys.stderr))
    store = store or Store()
    sweep = _open_sweep(store, plan, host, options or SweepOptions(), resume,
                        register=not dry_run, secrets=secrets)
    print(sweep.render_plan())
    if dry_run:  # nothing written: a dry run must not become the `latest` sweep
        sweep.status = "dry-run"
        return sweep
    todo = [c for c in sweep.cells if c.hash not in sweep.skipped]
    store.set_sweep_status(sweep.sweep_id, "running")
    try:
        with Lab(sweep.profile, what=f"sweep {sweep.sweep_id}", say=say) as lab:
            lost = store.abandon_runs(sweep.sweep_id)  # a killed run's; we hold the lock now
            if lost:
                say(f"[sweep] {sweep.sweep_id}: {lost} run(s) left unfinished by a killed "
                    "process marked lost; their cells run again")
            try:
                lab.stop_baseline()
                _run_cells(lab, store, sweep, todo, say)
            finally:
                lab.restore()
    except BaseException as err:
        _stop(store, sweep, "interrupted" if isinstance(err, KeyboardInterrupt) else "failed", say)
        err.sweep_id = sweep.sweep_id  # callers report the sweep that stopped
        raise
    _stop(store, sweep, "done", say)
    return sweep


def _stop(store: Store, sweep: Sweep, status: str, say) -> None:
    sweep.status = status
    store.set_sweep_status(sweep.sweep_id, status)
    done = len(sweep.skipped) + len(sweep.finished)
    say(f"[sweep] {sweep.sweep_id}: {status}; {done} of {len(sweep.cells)} cells finished "
        f"and stored in {store.path}")
    if status != "done":
        say(f"[sweep] resume with: {sweep.resume_command()}")


def _open_sweep(store: Store, plan: SweepPlan | None, host, options: SweepOptions,
                resume: str, *, register: bool = True, secrets=()) -> Sweep:
    """The sweep to run: a new one or a stored one; ``register`` writes it to the store."""
    if resume:
        sweep_id = store.latest_sweep_id() if resume == "latest" else resume
        if not sweep_id or store.sweep(sweep_id) is None:
            known = ", ".join(store.sweep_ids()[-5:]) or "none yet"
            raise ConfigError(f"resume={resume!r}: no such sweep in {store.path}",
                              fix=f"use 'latest' or one of: {known}", value=resume)
        record = store.sweep(sweep_id)
        plan = plan_from_store(store, sweep_id, secrets)
        profile = load_host(record["host"])
        options = SweepOptions(**record["options"])
    else:
        if plan is None:
            raise ConfigError("run_sweep: neither a plan nor resume given",
                              fix="plan it with plan_sweep(...) or pass resume='latest'")
        profile = host if isinstance(host, HostProfile) else load_host(host)
        sweep_id = safe_name(f"{utc_stamp()}-{profile.name}-{Path(plan.base).stem}")
    for cell in plan.cells:  # values a unit cannot hold, the host's python: before the host
        render_unit(cell.variant, python=profile.python)
    sweep = Sweep(sweep_id=sweep_id, host=profile.name, base=plan.base, cells=plan.cells,
                  store_path=store.path, profile=profile, options=options,
                  secret_keys=_secret_keys(plan))
    if register and not resume:
        store.add_sweep(sweep_id, host=profile.name, base=plan.base, grid=plan.inputs(),
                        options=options.__dict__, resume_command=sweep.resume_command())
    for cell in plan.cells if register else ():
        store.plan_cell(sweep_id, config_hash=cell.hash, name=cell.variant.name,
                        position=cell.position, point=cell.point, role=cell.role,
                        config=cell.variant.to_dict())
    status = store.cell_status(sweep_id)
    sweep.skipped = [c.hash for c in plan.cells if status.get(c.hash) in DONE_STATES]
    return sweep


MAX_ERRORS_IN_A_ROW = 3


def _run_cells(lab: Lab, store: Store, sweep: Sweep, todo: list[Cell], say) -> None:
    """Run cells in order; a cell that errors is recorded and skipped (redone on
    resume), but errors in a row mean the host itself is in trouble: stop."""
    errors = 0
    for n, cell in enumerate(todo, 1):
        say(f"[sweep] cell {n}/{len(todo)}: {cell.variant.name} ({cell.label})")
        try:
            status = _run_cell(lab, store, sweep, cell, sweep.options, say)
        except DdlabError as err:
            errors += 1
            say(f"[sweep] cell {n}/{len(todo)}: error: {err}")
            if errors >= MAX_ERRORS_IN_A_ROW:
                raise
            continue
        errors = 0
        sweep.finished.append(cell.hash)
        say(f"[sweep] cell {n}/{len(todo)}: {status}")


def _run_cell(lab: Lab, store: Store, sweep: Sweep, cell: Cell, options: SweepOptions,
              say) -> str:
    """Deploy, watch, bench one cell; commit it to the store; return its status."""
    run_dir = new_run_dir(cell.label, parent=sweep.folder)
    run_id = store.add_run(variant=cell.variant.name, config_hash=cell.hash, host=lab.name,
                           config=cell.variant.to_dict(), sweep_id=sweep.sweep_id,
                           run_dir=str(run_dir))
    try:
        deployed = lab.start_variant(cell.variant, run_dir=run_dir)
        verdict = watch(lab, timeout_s=options.timeout_s, probe=options.probe,
                        grace_s=options.grace_s)
        metrics = None
        if verdict.state == "ready":
            metrics, verdict = _bench_cell(lab, deployed, run_dir, options, say)
        status = "measured" if verdict.state == "ready" else verdict.state
        lab.stop_variant()
    except KeyboardInterrupt:
        store.finish_run(run_id, state="interrupted")
        raise
    except DdlabError as err:
        store.finish_run(run_id, state="error", verdict={"state": "error", "cause": str(err)})
        store.finish_cell(sweep.sweep_id, cell.hash, status="error", run_id=run_id)
        with contextlib.suppress(DdlabError):  # the next cell, or the restore, tries again
            lab.stop_variant()
        raise
    store.finish_run(run_id, state=status, verdict=verdict.to_dict(), metrics=metrics)
    store.finish_cell(sweep.sweep_id, cell.hash, status=status, run_id=run_id)
    return f"{status}" + (f" ({verdict.diagnosis.kind})" if status == "crashed" else "")


def _bench_cell(lab: Lab, deployed, run_dir: Path, options: SweepOptions, say):
    """Benchmark a ready cell; a server that died meanwhile makes it a crash.

    Requests lost with a dropped SSH connection (it dropped meanwhile and the server
    is still ready) measured the connection, not the server: bench again, once;
    lost twice is an error (the cell is redone on resume)."""
    for attempt in (1, 2):
        link = lab.transport.link
        result = run_bench(lab.transport.http_base(deployed.port), requests=options.requests,
                           concurrency=options.concurrency, max_new_tokens=options.max_new_tokens,
                           warmup=options.warmup, repeats=options.repeats,
                           label=f"bench {deployed.name}", record=run_dir / "heartbeat.log")
        write_json(run_dir / "bench.json", result.to_dict())
        after = watch(lab, timeout_s=30.0, probe=False, heartbeat_s=30.0)
        metrics = result.summary()
        if after.state != "ready" or not (metrics["n_failed"] and lab.transport.link != link):
            return (metrics if after.state == "ready" else None), after
        lost = (f"{metrics['n_failed']} of {metrics['n_requests']} requests lost with the "
                "SSH connection")
        if attempt == 2:
            raise HostError(f"bench {deployed.name} on {lab.name}: {lost}, twice",
                            fix="check the connection to the host; resume redoes this cell",
                            host=lab.name)
        say(f"[sweep] {deployed.name}: {lost}; benchmarking again")
