"""Run a bisect or an envelope search: every trial a cell of a sweep in the store.

A search is a sweep whose cells are planned as the search goes, one per config
tried: deployed, watched until ready (the probes drive the verify path, then the
lossless check), diagnosed, committed to the store by config hash
(:func:`ddlab.lab.sweep_run.run_cell`, without a benchmark: ready + probes +
lossless is the outcome). The search's id comes from what it searches (kind,
host, base, the configs' hashes, the ranges, the fallbacks, the watch options),
so running the same search again reuses its finished trials and an interrupted
one resumes where it stopped; the budgets are not part of the id (a larger
budget continues a search that ran out). The host is held only once a trial
must really run: the baseline is stopped once, before the first, and put back at
the end, on an error and on Ctrl-C (:func:`ddlab.lab.sweep_run.holding_host`); a
search whose trials are all stored never touches the host.

When the trials decode speculatively and the store has no lossless reference
for their model, a ``reference`` cell (the start config without speculation,
graphs off) runs first, as a sweep's baseline cell does, so that a trial serving
wrong tokens is caught. It is not a trial of the search.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.config.overrides import _target, parse_overrides
from ddlab.config.units import render_unit
from ddlab.config.variants import Variant, make_variant
from ddlab.core.errors import ConfigError, HostError, Preempted
from ddlab.core.log import get_logger
from ddlab.core.run_folders import safe_name
from ddlab.hosts.profiles import HostProfile
from ddlab.lab import lossless as ll
from ddlab.lab import search as sx
from ddlab.lab import search_bisect as sb
from ddlab.lab import search_envelope as se
from ddlab.lab.store import DONE_STATES, Store
from ddlab.lab.sweep_plan import BASELINE_OVERRIDES, Cell, SweepOptions
from ddlab.lab.sweep_run import Sweep, holding_host, run_cell

__all__ = ["SearchPlan", "SearchRun", "plan_bisect", "plan_envelope", "run_search",
           "outcome_of", "MAX_TRIALS", "MAX_TIME_S", "TRIAL_GRACE_S"]

log = get_logger(__name__)

MAX_TRIALS = 12        # the default budget of trials (each a server start: minutes on a GPU)
MAX_TIME_S = 7200.0    # the default time budget (0: none)
TRIAL_GRACE_S = 2.0    # a trial is not benchmarked: it must stay up this long after its probes


@dataclass
class SearchPlan:
    """A validated search: what it starts from, what it varies; nothing touched a host."""

    kind: str                    # bisect | envelope
    profile: HostProfile
    base: str
    fixed: dict                  # bisect: the good config's overrides; envelope: --set
    start: Variant               # bisect: the good config; envelope: base + --set, as asked
    options: SweepOptions
    max_trials: int = MAX_TRIALS
    max_time_s: float = MAX_TIME_S
    bad: Variant | None = None
    changes: list = field(default_factory=list)      # bisect: search_bisect.Change
    keys: list = field(default_factory=list)         # envelope: search_envelope.KeySpec
    fallbacks: list = field(default_factory=list)    # envelope: override mappings
    start_values: dict = field(default_factory=dict)
    representatives: list = field(default_factory=list)  # variants checked before the host

    @property
    def search_id(self) -> str:
        what = {"kind": self.kind, "host": self.profile.name, "base": self.base,
                "start": self.start.hash, "bad": self.bad.hash if self.bad else None,
                "keys": [[k.key, k.values[0], k.values[-1], k.pow2] for k in self.keys],
                "fallbacks": self.fallbacks, "options": self.options.__dict__}
        digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode())
        return safe_name(f"{self.kind}-{self.profile.name}-{Path(self.base).stem}-"
                         f"{digest.hexdigest()[:10]}")

    def inputs(self) -> dict:
        """What the store keeps of it (``search`` tells it from a grid sweep)."""
        return {"search": self.kind, "base": self.base, "fixed": self.fixed, "grid": {},
                "extra": [], "baseline": False,
                "bad": self.bad.to_dict()["config"] if self.bad else None,
                "changes": [[c.key, c.value] for c in self.changes],
                "keys": [[k.key, k.values[0], k.values[-1], k.pow2] for k in self.keys],
                "fallbacks": self.fallbacks, "max_trials": self.max_trials,
                "max_time_s": self.max_time_s}

    def variant(self, point: dict) -> Variant:
        """The config a point of the search stands for: the base, the fixed overrides
        (those the point does not set itself), the point."""
        return make_variant(self.base, _merge(self.fixed, point))

    def render(self) -> str:
        """The plan in words (a dry run's output)."""
        rows = [f"{self.kind} {self.search_id} on {self.profile.name} from base {self.base}: "
                f"at most {self.max_trials} trials"
                + (f" and {self.max_time_s:g} s" if self.max_time_s else "")]
        if self.kind == "bisect":
            rows.append(f"  good: {self.start.name} ({self.start.hash})")
            rows.append(f"  bad:  {self.bad.name} ({self.bad.hash})")
            rows += [f"  change {n}: {c.label}" for n, c in enumerate(self.changes, 1)]
        else:
            rows.append(f"  as asked: {self.start.name} ({self.start.hash})")
            rows += [f"  search {spec.describe()}" for spec in self.keys]
            rows += [f"  fallback {n}: {sx.describe_point(f)}"
                     for n, f in enumerate(self.fallbacks, 1)]
        return "\n".join(rows)


def _merge(fixed: dict, point: dict) -> dict:
    """``fixed`` without what ``point`` sets (whatever each calls it), then ``point``."""
    def where(key):
        try:
            return _target(key)
        except ConfigError:  # refused with its own message when the variant is made
            return key

    taken = {where(k) for k in point}
    return {**{k: v for k, v in fixed.items() if where(k) not in taken}, **point}


def _check_budget(max_trials, max_time_s) -> None:
    """The budget, before anything touches a host: trials an integer >= 1, time >= 0."""
    if isinstance(max_trials, bool) or not isinstance(max_trials, int) or max_trials < 1:
        raise ConfigError(f"max_trials={max_trials!r}: must be an integer >= 1 (each trial is a "
                          "server start)", fix=f"e.g. --max-trials {MAX_TRIALS}",
                          key="max_trials", value=max_trials)
    if isinstance(max_time_s, bool) or not isinstance(max_time_s, (int, float)) \
            or not max_time_s >= 0 or max_time_s == float("inf"):
        raise ConfigError(f"max_time_s={max_time_s!r}: must be a finite number of seconds >= 0 "
                          "(0: no limit)", fix="e.g. --max-time 3600", key="max_time_s",
                          value=max_time_s)


def _validate(plan: SearchPlan, points: list[dict]) -> SearchPlan:
    """The configs that stand for all the plan may try (every flag and value of its
    trials is one of theirs), each rendered as a unit for the host: before the host.
    The host's SGLang checks the same ones before its baseline is stopped."""
    plan.representatives = [plan.variant(point) for point in points]
    for variant in plan.representatives:
        render_unit(variant, python=plan.profile.python)
    return plan


def plan_bisect(profile: HostProfile, base: str, good=(), bad=(), *,
                options: SweepOptions | None = None, max_trials: int = MAX_TRIALS,
                max_time_s: float = MAX_TIME_S) -> SearchPlan:
    """A bisect from base + ``good`` (it serves) to base + ``bad`` (it fails)."""
    _check_budget(max_trials, max_time_s)
    good, bad = parse_overrides(good), parse_overrides(bad)
    good_v, bad_v = make_variant(base, good), make_variant(base, bad)
    changes = sb.changes_between(good_v.config, bad_v.config)
    if not changes:
        raise ConfigError("bisect: the good and the bad config are the same config",
                          fix="give the bad config's overrides with --bad K=V (those that "
                              "make it fail)", value=bad)
    plan = SearchPlan(kind="bisect", profile=profile, base=str(base), fixed=good, start=good_v,
                      options=options or SweepOptions(grace_s=TRIAL_GRACE_S), max_trials=max_trials,
                      max_time_s=max_time_s, bad=bad_v, changes=changes)
    every = {c.key: c.value for c in changes}
    if plan.variant(every).hash != bad_v.hash:  # the changes must rebuild the bad config
        raise ConfigError(f"bisect: the changes {', '.join(c.label for c in changes)} do not "
                          "turn the good config into the bad one",
                          fix="give both configs as overrides of one base")
    return _validate(plan, [{}, every])


MAX_SEARCH_KEYS = 8  # each key costs a few trials of a 12-trial budget; more is a typo or a script
MAX_FALLBACKS = 8


def _check_count(option: str, items: list, limit: int, what: str) -> None:
    if len(items) > limit:
        raise ConfigError(f"{option}: {len(items)} {what}; at most {limit}", value=len(items),
                          fix=f"search the few {what} that matter, in order; run another "
                              "envelope for the rest")


def plan_envelope(profile: HostProfile, base: str, fixed=(), search=(), fallback=(), *,
                  options: SweepOptions | None = None, max_trials: int = MAX_TRIALS,
                  max_time_s: float = MAX_TIME_S) -> SearchPlan:
    """An envelope search over ``search`` (``KEY=LO..HI`` each) from base + ``fixed``."""
    _check_budget(max_trials, max_time_s)
    if isinstance(search, dict):  # {key: "LO..HI", ...}, in order (a notebook's)
        items = [{key: value} for key, value in search.items()]
    else:
        items = [search] if isinstance(search, str) else list(search or ())
    _check_count("--search", items, MAX_SEARCH_KEYS, "keys")
    _check_count("--fallback", [fallback] if isinstance(fallback, (str, dict)) else
                 list(fallback or ()), MAX_FALLBACKS, "fallbacks")
    keys = [se.parse_search(item) for item in items]
    if not keys:
        raise ConfigError("envelope: nothing to search", value=search,
                          fix="e.g. --search context_length=4096..131072")
    names = [_target(k.key) for k in keys]
    if len(set(names)) != len(names):
        raise ConfigError("envelope: a key is searched twice", value=[k.key for k in keys],
                          fix="give each key one --search")
    fixed = parse_overrides(fixed)
    start = make_variant(base, fixed)
    plan = SearchPlan(kind="envelope", profile=profile, base=str(base), fixed=fixed, start=start,
                      options=options or SweepOptions(grace_s=TRIAL_GRACE_S), max_trials=max_trials,
                      max_time_s=max_time_s, keys=keys, fallbacks=se.parse_fallbacks(fallback),
                      start_values={k.key: se.start_value(k, start.config) for k in keys})
    ends = [{k.key: v} for k in keys for v in (k.values[0], k.values[-1])]
    levels = [{}] + [dict(pair for f in plan.fallbacks[:n + 1] for pair in f.items())
                     for n in range(len(plan.fallbacks))]
    return _validate(plan, [{**level, **end} for level in levels for end in ends])


# --- running ------------------------------------------------------------------------------


@dataclass
class SearchRun:
    """How a search ended: its id, status (done | budget | interrupted | failed), the
    search's answer and trials (None / [] when it stopped before it had them)."""

    plan: SearchPlan
    search_id: str
    status: str
    result: object = None        # search_envelope.Envelope | search_bisect.Bisection
    trials: list = field(default_factory=list)
    reference: str = ""          # what the reference cell did ('' when none was needed)


def run_search(plan: SearchPlan, *, store: Store | None = None,
               wait_s: float | None = None) -> SearchRun:
    """Run (or resume) the search; the store says how it ended, also when this raises.
    ``wait_s``: queue behind another ddlab run holding the host (a trial whose host is
    taken ends ``preempted``: the search stops, and running it again redoes that trial)."""
    store = store or Store()
    sweep = _open(plan, store)
    sweep.wait_s = wait_s
    runner = _Runner(plan, sweep, store)
    trials = sx.Trials(runner, max_trials=plan.max_trials, max_time_s=plan.max_time_s or None)
    status = "failed"
    try:
        with runner:
            reference = runner.reference()
            if plan.kind == "bisect":
                result = sb.bisect_search(plan.changes, trials)
            else:
                result = se.envelope_search(plan.keys, plan.fallbacks, trials, plan.start_values)
        status = "budget" if result.spent else "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except Preempted:
        status = "preempted"
        raise
    finally:
        store.set_sweep_status(sweep.sweep_id, status)
        log.info(f"[{plan.kind}] {sweep.sweep_id}: {status} after {len(trials.done)} trials; "
                 f"{runner.ran} server start(s) now, the rest read from {store.path}")
        if status != "done":
            log.info(f"[{plan.kind}] resume: run the same search again; its finished trials "
                     "are reused")
    return SearchRun(plan=plan, search_id=sweep.sweep_id, status=status, result=result,
                     trials=trials.log, reference=reference)


def _open(plan: SearchPlan, store: Store) -> Sweep:
    """The search's sweep in the store: registered, or found again (a rerun)."""
    sweep_id = plan.search_id
    if store.sweep(sweep_id) is None:
        store.add_sweep(sweep_id, host=plan.profile.name, base=plan.base, grid=plan.inputs(),
                        options=plan.options.__dict__,
                        resume_command=f"run the same {plan.kind} again")
        log.info(plan.render())
    else:
        store.set_sweep_status(sweep_id, "running")
        log.info(f"[{plan.kind}] {sweep_id}: found in {store.path}; its finished trials are "
                 "reused")
    return Sweep(sweep_id=sweep_id, host=plan.profile.name, base=plan.base, cells=[],
                 store_path=store.path, profile=plan.profile, options=plan.options,
                 status="running")


class _Runner:
    """``test(point)`` for the search: the point's config as a cell of the search's sweep,
    from the store when it is finished there, else run now on the held host."""

    def __init__(self, plan: SearchPlan, sweep: Sweep, store: Store):
        self.plan, self.sweep, self.store = plan, sweep, store
        self.stack = contextlib.ExitStack()
        self.lab = None
        self.ran = 0
        self.rows = {row["config_hash"]: row for row in store.cells(sweep.sweep_id)}

    def __enter__(self) -> "_Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.stack.close()  # the baseline back, if it was stopped

    def __call__(self, point: dict) -> sx.Outcome:
        return self.run(self.plan.variant(point), point, "trial")

    def run(self, variant: Variant, point: dict, role: str) -> sx.Outcome:
        row = self.rows.get(variant.hash)
        asked = point if self.plan.kind == "envelope" else None
        if row is not None and row["status"] in DONE_STATES:
            return outcome_of(row, reused=True, asked=asked)
        cell = Cell(self._position(row), role, dict(point), variant)
        self.store.plan_cell(self.sweep.sweep_id, config_hash=cell.hash, name=variant.name,
                             position=cell.position, point=cell.point, role=role,
                             config=variant.to_dict())
        lab = self._host(variant)
        what = sx.describe_point(point) if role == "trial" else role
        log.info(f"[{self.plan.kind}] {role} {what}: {variant.name}")
        started = time.monotonic()
        run_cell(lab, self.store, self.sweep, cell, bench=False)
        self.ran += 1
        row = self._reload(variant.hash)
        if row["status"] not in DONE_STATES:  # connection_lost: no outcome to go on with
            raise HostError(f"{self.plan.kind} {self.sweep.sweep_id}: {variant.name} ended "
                            f"{row['status']}, which says nothing of the config",
                            fix="check the host, then run the same search again: it resumes "
                                "with this trial", host=self.plan.profile.name)
        outcome = outcome_of(row, asked=asked)
        log.info(f"[{self.plan.kind}] {role} {what}: {outcome.words} "
                 f"({time.monotonic() - started:.1f} s)")
        return outcome

    def _position(self, row) -> int:
        if row is not None:
            return row["position"]
        return max((r["position"] for r in self.rows.values()), default=-1) + 1

    def _reload(self, config_hash: str) -> dict:
        self.rows = {row["config_hash"]: row for row in self.store.cells(self.sweep.sweep_id)}
        return self.rows[config_hash]

    def _host(self, first: Variant):
        """The held host: opened (lock, baseline stopped) for the first trial that runs."""
        if self.lab is None:
            self.lab = self.stack.enter_context(holding_host(
                self.sweep, self.store, [first, *self.plan.representatives],
                what=f"{self.plan.kind} {self.sweep.sweep_id}"))
        return self.lab

    def reference(self) -> str:
        """The lossless reference for the trials' model, run first when there is none."""
        config = self.plan.start.config
        if not ll.speculative(config.flags):
            return ""
        model = ll.model_identity({k.replace("-", "_"): config.flags.get(k) for k in
                                   ("model-path", "dtype", "quantization", "kv-cache-dtype")})
        if ll.load_reference(model) is not None:
            return ""
        own = {**BASELINE_OVERRIDES, "cuda_graph": False}
        # the reference's own keys win over a fixed one for the same flag, whatever each is
        # called (--set budget=32 and speculative_ddtree_budget: None are one flag), as a
        # sweep's cells do; a searched key is left at the base's value
        dropped = {_target(k.key) for k in self.plan.keys} | {_target(k) for k in own}
        fixed = {k: v for k, v in self.plan.fixed.items() if _target(k) not in dropped}
        variant = make_variant(self.plan.base, {**fixed, **own})
        outcome = self.run(variant, {"cuda_graph": False}, "baseline")
        return f"reference for {model}: {variant.name} {outcome.words}"


def outcome_of(row: dict, *, reused: bool = False, asked: dict | None = None) -> sx.Outcome:
    """A finished cell (a store row) as a search outcome. ``asked``: the envelope's point;
    its keys the server ran otherwise (cut max_running_requests to fit) are the outcome's
    ``cut_keys``: the envelope never counts such a value as serving."""
    verdict, status = row.get("verdict") or {}, row["status"]
    where = {"phase": verdict.get("phase") or "", "cause": verdict.get("cause") or "",
             "run_dir": row.get("run_dir") or verdict.get("run_dir") or "", "reused": reused}
    if status in ("ready", "measured"):
        failed = [p for p in verdict.get("probes") or [] if not p.get("ok")]
        if failed:
            return sx.Outcome("probe_failed", "probe_failed", **{
                **where, "cause": failed[0].get("error") or "a probe request failed"})
        lossless = verdict.get("lossless") or {}
        note = "" if lossless.get("checked") else str(lossless.get("why") or "")
        keys, cut = _cut_keys(asked or {}, verdict.get("ran_otherwise") or {})
        return sx.Outcome("serves", note=note, cut_keys=keys, cut=cut,
                          **{**where, "phase": "", "cause": ""})
    if status == "wrong_output":
        return sx.Outcome("wrong_output", "lossless_violation", **where)
    if status == "timeout":
        return sx.Outcome("timeout", "timeout", **where)
    return sx.Outcome("crashed", verdict.get("kind") or "unknown", **where)


def _cut_keys(point: dict, ran_otherwise: dict) -> tuple[tuple, str]:
    """The point's keys the server ran otherwise than asked, and in words (``the server
    ran max_running_requests=3, not 256``)."""
    keys, words = [], []
    for key, value in point.items():
        kind, flag = _target(key)
        cut = ran_otherwise.get(flag) if kind == "flags" else None
        if cut and str(cut.get("asked")) == str(value):
            keys.append(key)
            words.append(f"the server ran {key}={cut['ran']}, not {value}")
    return tuple(keys), "; ".join(words)
