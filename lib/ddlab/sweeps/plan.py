"""A sweep's plan: a grid of config variants, every cell validated, nothing touched.

A grid maps override keys (anything ``--set`` takes: flags, ``env.X``,
``unit.X``, or the aliases ``budget``, ``topk_cap``, ``cuda_graph``,
``algorithm``) to lists of values; the cells are their product, plus a
no-speculation baseline cell per CUDA-graph setting (for speedup; one per host
in a pool) and any extra variants (e.g. one carrying a known fault). A cell is
named by what it changes and keyed in the store by its config's hash, so a
resume (:func:`plan_from_store`) finds the cells already finished. What a sweep
varies reads in words (:func:`describe_grid`) and in its id (:func:`sweep_id_for`);
:class:`SweepOptions` says how each ready cell is watched and measured.
:mod:`ddlab.sweeps.run` runs the plan.
"""

from __future__ import annotations

import itertools
import math
import shlex
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.config.bases import load_base
from ddlab.config.families import SGLANG
from ddlab.config.variants import Variant, make_variant
from ddlab.core.checks import check_number
from ddlab.core.errors import ConfigError
from ddlab.core.redact import MASK, looks_secret
from ddlab.core.run_folders import plain_text, safe_name, utc_stamp
from ddlab.lab.lossless import TOLERANCE
from ddlab.sweeps.grid_words import (  # noqa: F401 - what a sweep varies, in words
    _as_list,
    _flag_of,
    _word,
    describe_grid,
    grid_word_list,
    grid_words,
)
from ddlab.sweeps.store import Store

__all__ = ["DEFAULT_GRID", "DEFAULT_OPTIONS", "BASELINE_OVERRIDES", "Cell", "SweepOptions", "SweepPlan",
           "plan_sweep", "plan_from_store", "describe_grid", "grid_words", "grid_word_list", "sweep_id_for"]

MAX_CELLS = 500  # above this a grid must be confirmed (max_cells)
# An SGLang base's grid and baseline; each family has its own (config.families): a vLLM
# base's grid is num_speculative_tokens x cuda_graph, its baseline no speculative_config.
DEFAULT_GRID = SGLANG.default_grid
# The no-speculation baseline: every speculative flag removed.
BASELINE_OVERRIDES = SGLANG.baseline
GRAPH_KEYS = ("cuda_graph",)  # every family's knob for CUDA graphs on / off


@dataclass(frozen=True)
class Cell:
    """One grid point: its position in the plan, its role and its variant."""

    position: int
    role: str            # baseline | grid | extra
    point: dict          # the grid values (or extra overrides) that define it
    variant: Variant
    host: str = ""       # in a pool: the one host this cell must run on (its baselines)

    @property
    def hash(self) -> str:
        """The cell's key in the store: its config's hash, ``@host`` for a pinned cell
        (a pool measures the same baseline once on each host)."""
        return self.variant.hash + (f"@{self.host}" if self.host else "")

    @property
    def label(self) -> str:
        """Folder-safe words for the change: ``budget=32-topk_cap=8-cuda_graph=off``;
        a secret-named key's value is ``masked`` (folder names are printed and stored)."""
        words = [f"{k}={'masked' if looks_secret(k) else _word(v)}" for k, v in self.point.items()]
        text = "-".join(words) if self.role == "grid" else "-".join([self.role, *words])
        text += f"-on-{self.host}" if self.host else ""
        text = plain_text(text).lstrip("-_.=")[:100]  # a folder name starts plain
        return safe_name(text or self.role)


@dataclass(frozen=True)
class SweepOptions:
    """How each ready cell is measured (see :func:`ddlab.lab.measure.measure`) and watched."""

    requests: int = 8
    concurrency: int | tuple = 1  # several levels: a workload sweep (ddlab.sweeps.workload)
    max_new_tokens: int = 128
    warmup: int = 1
    repeats: int = 1
    timeout_s: float = 600.0
    probe: bool = True
    # alive this long after the probes before the benchmark: short, since the benchmark
    # drives the cell next and a cell that dies under it is a crashed cell with its log
    # (a search trial has no benchmark: it waits search_plan.TRIAL_GRACE_S)
    grace_s: float = 0.5
    lossless_tolerance: float = TOLERANCE  # token match rate against the model's own (lossless.py)
    lossless_prompts: tuple = ()      # the lossless check's prompts; empty: the shipped ones
    # measure rounds until the tok/s 95% CI is within +-ci_target of the median (None:
    # exactly `repeats` rounds), at most max_rounds / max_time_s, at least min_time_s
    ci_target: float | None = 0.05
    min_time_s: float = 0.0
    max_time_s: float = 60.0
    max_rounds: int = 10
    # measure each measured baseline again after the grid, so drift falls on both sides
    bracket: bool = True
    prompts: tuple = ()  # prompt sets (ddlab.sweeps.prompt_sets); () the built-in prompts

    @property
    def levels(self) -> tuple:
        """The concurrency levels, lowest first (one for a single-level sweep)."""
        return self.concurrency if isinstance(self.concurrency, tuple) else (self.concurrency,)

    @property
    def workload(self) -> bool:
        """More than one concurrency level: each cell measured at every level."""
        return len(self.levels) > 1

    def __post_init__(self):
        from ddlab.lab.lossless import PROMPTS, check_prompts, check_tolerance
        from ddlab.lab.measure import check_stopping

        check_tolerance(self.lossless_tolerance)
        prompts = check_prompts(self.lossless_prompts)  # a stored list comes back a tuple
        object.__setattr__(self, "lossless_prompts", () if prompts == PROMPTS else prompts)
        check_stopping(ci_target=self.ci_target, min_time_s=self.min_time_s,
                       max_time_s=self.max_time_s)
        from ddlab.sweeps.workload import check_levels, prompt_names

        object.__setattr__(self, "concurrency", check_levels(self.concurrency))
        object.__setattr__(self, "prompts", prompt_names(self.prompts))
        for name in ("requests", "max_new_tokens", "repeats", "max_rounds"):
            check_number(name, getattr(self, name), minimum=1, integer=True)
        check_number("warmup", self.warmup, integer=True, example=1)
        for name in ("timeout_s", "grace_s"):
            check_number(name, getattr(self, name), seconds=True)


# The sweep's options and their defaults are defined once: SweepOptions' fields (less
# grace_s, a search's business), DEFAULT_GRID and MAX_CELLS. ddlab.sweep's signature and
# `ddlab sweep`'s options read them here; the sweep notebook's parameters cell must hold
# literals, and tests/sweeps/test_options.py holds it (and the other two) to them.
DEFAULT_OPTIONS = SweepOptions()


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: its inputs (kept in the store, for resume) and its cells."""

    base: str
    grid: dict
    fixed: dict
    extra: list
    baseline: bool
    cells: list[Cell]
    hosts: list = field(default_factory=list)

    def inputs(self) -> dict:
        inputs = {"base": self.base, "grid": self.grid, "fixed": self.fixed, "extra": self.extra,
                  "baseline": self.baseline}
        return {**inputs, "hosts": self.hosts} if self.hosts else inputs


def plan_sweep(base: str = "local", grid: dict | None = None, *, fixed=(),
               baseline: bool = True, extra=(), max_cells: int = MAX_CELLS,
               hosts=()) -> SweepPlan:
    """Every cell of the sweep, validated; nothing touches a host.

    ``fixed``: overrides applied to every cell; ``extra``: a list of override
    mappings (or KEY=VALUE lists), one extra cell each, on top of ``fixed``.
    ``hosts``: a pool's host names (more than one): each gets its own baseline
    cells, pinned to it, since a speedup compares a cell with its own host's baseline.
    A grid of more than ``max_cells`` points is refused before any is planned:
    each cell is a server start (minutes on a GPU host); pass a larger
    ``max_cells`` to mean it. Planning takes time linear in the cells.
    """
    base_config = load_base(base)
    family = base_config.family  # one sweep, one family: its knobs, grid and baseline
    grid = dict(family.default_grid if grid is None else grid)
    dims = {key: _as_list(key, values) for key, values in grid.items()}
    fixed_overrides = _mapping(fixed)
    extras = [_mapping(overrides) for overrides in extra]
    hosts = list(hosts) if len(hosts) > 1 else []
    _check_size(dims, extras, baseline, max_cells, len(hosts) or 1)
    fixed_config = make_variant(base_config, fixed_overrides).config if fixed_overrides \
        else base_config
    family.check_grid(dims, base=base, flags=fixed_config.flags)  # its knobs, or refused
    cells: list[Cell] = []
    seen: set[str] = set()
    shared: dict[tuple, object] = {}  # fixed keys kept -> the base with them applied

    def add(role: str, point: dict, overrides: dict, host: str = "") -> None:
        # a cell's own value wins over a fixed one for the same flag, whatever each is called
        targets = {_flag_of(k, family) for k in overrides}
        fixed = {k: v for k, v in fixed_overrides.items() if _flag_of(k, family) not in targets}
        # a cell is named by what it changes: the fixed overrides are every cell's, so the
        # name is taken against the base with them applied (b32-nograph, not
        # device-cuda-env-pythonpath-b32-nograph); its config is the same either way
        variant = make_variant(base_config, {**fixed, **overrides})
        if fixed:
            key = tuple(fixed)  # the fixed overrides a cell keeps: the same for most cells
            if key not in shared:
                shared[key] = make_variant(base_config, fixed).config
            named = make_variant(shared[key], overrides)
            variant = dataclasses.replace(variant, name=named.name)
        cell = Cell(len(cells), role, point, variant, host)
        if cell.hash in seen:
            return  # two points that configure the same server are one cell
        seen.add(cell.hash)
        cells.append(cell)

    if baseline:
        graph_values = next((dims[k] for k in GRAPH_KEYS if k in dims), [None])
        # graphs off first: eager decoding's tokens become the lossless reference, and a
        # graph that replays stale buffers without speculation is then caught as well
        for value in sorted(graph_values, key=lambda v: v is not False):
            point = {} if value is None else {"cuda_graph": value}
            for host in hosts or [""]:
                add("baseline", point, {**family.baseline, **point}, host)
    for values in itertools.product(*dims.values()):
        point = dict(zip(dims, values))
        add("grid", point, point)
    for overrides in extras:
        add("extra", overrides, overrides)
    return SweepPlan(base=str(base), grid=dims, fixed=fixed_overrides, extra=extras,
                     baseline=baseline, cells=cells, hosts=hosts)


def sweep_id_for(plan: SweepPlan, host: str, host_base: str = "") -> str:
    """``20261201T014500Z-local-b4.16.32-cap1.4-graphs-1extra``: when, where, and what
    it sweeps; the base is named when it is not the host's own."""
    base = Path(plan.base).stem
    words = [utc_stamp(), host, *([base] if base != Path(host_base or host).stem else []),
             grid_words(plan.grid, plan.extra)]
    return safe_name("-".join(words)[:120].rstrip("-."))


def _check_size(dims: dict, extras: list, baseline: bool, max_cells: int, hosts: int = 1) -> None:
    check_number("max_cells", max_cells, minimum=1, integer=True, example=MAX_CELLS)
    points = math.prod(len(values) for values in dims.values()) + len(extras)
    points += hosts * len(next((dims[k] for k in GRAPH_KEYS if k in dims), [None])) \
        if baseline else 0
    if points > max_cells:
        raise ConfigError(f"the grid has {points} cells: more than max_cells={max_cells}; each "
                          "cell is a server start (minutes each on a GPU host)",
                          fix=f"narrow the grid, or confirm it with -p max_cells {points}",
                          key="max_cells", value=points)  # said as --max-cells to the CLI


def plan_from_store(store: Store, sweep_id: str, secrets=()) -> SweepPlan:
    """The stored sweep's plan, rebuilt and checked against the cells it registered.

    The store keeps secret-named values masked (:mod:`ddlab.core.redact`); ``secrets``
    (overrides, as ``fixed`` takes them) gives them back. A masked value without
    one is a ConfigError naming the keys, before anything touches the host."""
    record = store.sweep(sweep_id)
    if record["grid"].get("search"):  # a bisect's or an envelope's trials (sweeps/search_plan.py)
        kind = record["grid"]["search"]
        raise ConfigError(f"resume={sweep_id!r}: is {'an' if kind[0] in 'aeiou' else 'a'} "
                          f"{kind} search, not a sweep",
                          fix=f"run the same `ddlab {kind} ...` again: it resumes the search",
                          value=sweep_id)
    inputs = _unmask(record["grid"], _mapping(secrets), sweep_id)
    plan = plan_sweep(inputs["base"], inputs["grid"], fixed=inputs["fixed"],
                      baseline=inputs["baseline"], extra=inputs["extra"],
                      hosts=inputs.get("hosts", ()), max_cells=10**9)  # its size was confirmed when it began
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
                          + resume_command_for(sweep_id, keys), value=sweep_id)
    return {**inputs, "grid": grid, "fixed": fixed, "extra": extra}


def resume_command_for(sweep_id: str, secret_keys=()) -> str:
    command = f"ddlab run sweep -p resume {shlex.quote(sweep_id)}"
    if secret_keys:  # never the values: the user has them, the store does not
        pairs = ", ".join(f'"{key}": "***"' for key in secret_keys)
        command += f" -p fixed '{{{pairs}}}' (*** = each secret's real value)"
    return command


def secret_keys_of(plan: SweepPlan) -> list[str]:
    """The secret-named override keys of ``plan`` (their values are not stored)."""
    keys = {k for k in plan.grid if looks_secret(k)} | {k for k in plan.fixed if looks_secret(k)}
    keys |= {k for cell in plan.extra for k in cell if looks_secret(k)}
    return sorted(keys)


def _mapping(overrides) -> dict:
    from ddlab.config.overrides import parse_overrides

    return parse_overrides(overrides or {})
