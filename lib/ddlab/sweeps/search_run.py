"""Run a bisect or an envelope search: every trial a cell of a sweep in the store.

A search is a sweep whose cells are planned as the search goes, one per config
tried: deployed, watched until ready (the probes drive the verify path, then the
lossless check), diagnosed, committed to the store by config hash
(:func:`ddlab.sweeps.run.run_cell`, without a benchmark: ready + probes +
lossless is the outcome). The search's id comes from what it searches (kind,
host, base, the configs' hashes, the ranges, the fallbacks, the watch options),
so running the same search again reuses its finished trials and an interrupted
one resumes where it stopped; the budgets are not part of the id (a larger
budget continues a search that ran out). The host is held only once a trial
must really run: the baseline is stopped once, before the first, and put back at
the end, on an error and on Ctrl-C (:func:`ddlab.sweeps.run.holding_host`); a
search whose trials are all stored never touches the host.

When the trials decode speculatively and the store has no lossless reference
for their model, a ``reference`` cell (the start config without speculation,
graphs off) runs first, as a sweep's baseline cell does, so that a trial serving
wrong tokens is caught. It is not a trial of the search.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from ddlab.config.families import DEFAULT_FAMILY
from ddlab.config.overrides import _target
from ddlab.config.variants import Variant, make_variant
from ddlab.core.errors import HostError, Preempted
from ddlab.core.interrupts import as_interrupt
from ddlab.core.log import get_logger
from ddlab.lab import lossless as ll
from ddlab.lab.plans import as_host_runs
from ddlab.sweeps import search as sx
from ddlab.sweeps import bisect as sb
from ddlab.sweeps import envelope as se
from ddlab.sweeps.store import DONE_STATES, Store
from ddlab.sweeps.plan import BASELINE_OVERRIDES, Cell
from ddlab.sweeps.search_plan import SearchPlan
from ddlab.sweeps.run import Sweep, holding_host, run_cell

__all__ = ["SearchRun", "run_search", "outcome_of"]

log = get_logger(__name__)


@dataclass
class SearchRun:
    """How a search ended: its id, status (done | budget | interrupted | failed), the
    search's answer and trials (None / [] when it stopped before it had them)."""

    plan: SearchPlan
    search_id: str
    status: str
    result: object = None        # envelope.Envelope | bisect.Bisection
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
        with as_interrupt(), runner:
            reference = runner.reference()
            if plan.kind == "bisect":
                result = sb.bisect_search(plan.changes, trials)
            else:
                result = se.envelope_search(plan.keys, plan.fallbacks, trials, plan.start_values,
                                            plan.family)
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
        family = self.plan.family
        if row is not None and row["status"] in DONE_STATES:
            return outcome_of(row, reused=True, asked=asked, family=family)
        cell = Cell(self._position(row), role, dict(point), variant)
        self.store.plan_cell(self.sweep.sweep_id, config_hash=cell.hash, name=variant.name,
                             position=cell.position, point=cell.point, role=role,
                             config=variant.to_dict())
        lab = self._host(variant)
        what = sx.describe_point(point, family) if role == "trial" else role
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
        outcome = outcome_of(row, asked=asked, family=family)
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
        config, family = self.plan.start.config, self.plan.family
        if family.name == DEFAULT_FAMILY:
            if not ll.speculative(config.flags):
                return ""
            model = ll.model_identity({k.replace("-", "_"): config.flags.get(k) for k in
                                       ("model-path", "dtype", "quantization", "kv-cache-dtype")})
            own = {**BASELINE_OVERRIDES, "cuda_graph": False}
        else:
            if not ll.speculative(config.flags, family=family):
                return ""
            model = ll.model_identity({}, _served_model(
                as_host_runs(self.plan.start, self.plan.profile).config))
            own = {**family.baseline, "cuda_graph": False}
        if ll.load_reference(model) is not None:
            return ""
        # the reference's own keys win over a fixed one for the same flag, whatever each is
        # called (--set budget=32 and speculative_ddtree_budget: None are one flag), as a
        # sweep's cells do (a key inside a JSON flag the reference removes goes with it); a
        # searched key is left at the base's value
        target = family.override_target
        dropped = {target(k.key) for k in self.plan.keys} | {target(k) for k in own}

        def kept(key) -> bool:
            kind, name = target(key)
            return not any(kind == k and (name == n or name.startswith(f"{n}."))
                           for k, n in dropped)

        fixed = {k: v for k, v in self.plan.fixed.items() if kept(k)}
        variant = make_variant(self.plan.base, {**fixed, **own})
        outcome = self.run(variant, {"cuda_graph": False}, "baseline")
        return f"reference for {model}: {variant.name} {outcome.words}"


def _served_model(config) -> str:
    """The name the server lists at ``/v1/models``, which a watch keys the lossless
    reference by where there is no ``/server_info`` (vLLM): ``--served-model-name``'s
    first, else the model (vllm/entrypoints/launchers/api_server/app_state.py:49-61,
    vllm/entrypoints/openai/models/serving.py:64-70 (0.34.0))."""
    names = config.flags.get("served_model_name")
    if isinstance(names, (list, tuple)):
        names = names[0] if names else None
    return str(names or config.flags.get(config.family.model_flag))


def outcome_of(row: dict, *, reused: bool = False, asked: dict | None = None,
               family=None) -> sx.Outcome:
    """A finished cell (a store row) as a search outcome. ``asked``: the envelope's point;
    its keys the server ran otherwise (cut max_running_requests to fit) are the outcome's
    ``cut_keys``: the envelope never counts such a value as serving. ``family``: the
    base's, whose override keys ``asked`` holds (None: SGLang's)."""
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
        keys, cut = _cut_keys(asked or {}, verdict.get("ran_otherwise") or {}, family)
        return sx.Outcome("serves", note=note, cut_keys=keys, cut=cut,
                          **{**where, "phase": "", "cause": ""})
    if status == "wrong_output":
        return sx.Outcome("wrong_output", "lossless_violation", **where)
    if status == "timeout":
        return sx.Outcome("timeout", "timeout", **where)
    return sx.Outcome("crashed", verdict.get("kind") or "unknown", **where)


def _cut_keys(point: dict, ran_otherwise: dict, family=None) -> tuple[tuple, str]:
    """The point's keys the server ran otherwise than asked, and in words (``the server
    ran max_running_requests=3, not 256``)."""
    keys, words = [], []
    for key, value in point.items():
        kind, flag = family.override_target(key) if family is not None else _target(key)
        cut = ran_otherwise.get(flag) if kind == "flags" else None
        if cut and str(cut.get("asked")) == str(value):
            keys.append(key)
            words.append(f"the server ran {key}={cut['ran']}, not {value}")
    return tuple(keys), "; ".join(words)
