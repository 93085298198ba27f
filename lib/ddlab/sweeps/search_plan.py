"""Plan a bisect or an envelope search: what it starts from, what it may try.

A plan is validated before anything touches a host: the budget (trials, time),
the overrides, the keys and their ranges, the fallbacks; the configs that stand for
all it may try are rendered as units for the host (:func:`_validate`). Its id
comes from what it searches (kind, host, base, the configs' hashes, the ranges,
the fallbacks, the watch options) and not from the budgets, so the same search
run again reuses its finished trials (:mod:`ddlab.sweeps.search_run` runs it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.config.bases import Config, load_base
from ddlab.config.overrides import _target, parse_overrides
from ddlab.config.units import render_unit
from ddlab.config.variants import Variant, make_variant
from ddlab.core.checks import check_number
from ddlab.core.errors import ConfigError
from ddlab.core.run_folders import safe_name
from ddlab.hosts.profiles import HostProfile
from ddlab.sweeps import bisect as sb
from ddlab.sweeps import envelope as se
from ddlab.sweeps import search as sx
from ddlab.sweeps.plan import SweepOptions

__all__ = ["SearchPlan", "plan_bisect", "plan_envelope", "MAX_TRIALS", "MAX_TIME_S",
           "TRIAL_GRACE_S"]

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
    changes: list = field(default_factory=list)      # bisect: bisect.Change
    keys: list = field(default_factory=list)         # envelope: envelope.KeySpec
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

    @property
    def family(self):
        """The base's server family (:mod:`ddlab.config.families`): its keys and words."""
        return self.start.config.family

    def variant(self, point: dict) -> Variant:
        """The config a point of the search stands for: the base, the fixed overrides
        (those the point does not set itself), the point."""
        return make_variant(self.base, _merge(self.fixed, point, self.family))

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
            rows += [f"  fallback {n}: {sx.describe_point(f, self.family)}"
                     for n, f in enumerate(self.fallbacks, 1)]
        return "\n".join(rows)


def _merge(fixed: dict, point: dict, family=None) -> dict:
    """``fixed`` without what ``point`` sets (whatever each calls it, in ``family``'s
    words; None: SGLang's), then ``point``."""
    def where(key):
        try:
            return family.override_target(key) if family is not None else _target(key)
        except ConfigError:  # refused with its own message when the variant is made
            return key

    taken = {where(k) for k in point}
    return {**{k: v for k, v in fixed.items() if where(k) not in taken}, **point}


def _check_budget(max_trials, max_time_s) -> None:
    """The budget, before anything touches a host: trials an integer >= 1, time >= 0."""
    check_number("max_trials", max_trials, minimum=1, integer=True,
                 note="each trial is a server start", example=MAX_TRIALS)
    check_number("max_time_s", max_time_s, seconds=True, note="0: no limit", example=3600)


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
    family = (base if isinstance(base, Config) else load_base(base)).family
    keys = [se.parse_search(item, family) for item in items]
    if not keys:
        example = ", ".join(f"{k}={v}" for k, v in list(family.default_search.items())[:1])
        raise ConfigError("envelope: nothing to search", value=search,
                          fix=f"e.g. --search {example or 'context_length=4096..131072'}")
    names = [family.override_target(k.key) for k in keys]
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
