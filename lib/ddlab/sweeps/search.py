"""Find what breaks a config: bisect a failing variant, search the envelope that serves.

The search logic only, apart from running anything: a search asks ``test(point)``
for an :class:`Outcome` and never touches a host. A *point* is an override mapping
on top of the search's start config (the good config for a bisect, base + ``--set``
for an envelope); :mod:`ddlab.sweeps.search_run` runs each point as a sweep cell
(deployed, watched with probe and lossless check, diagnosed, stored by config
hash), and a unit test can hand in any plain function. This module holds what
both searches share; the searches themselves are :mod:`ddlab.sweeps.bisect`
and :mod:`ddlab.sweeps.envelope`:

- :func:`ddlab.sweeps.bisect.bisect_search`: from a config that serves to one
  that fails, the smallest set of changes that still fails the same way (a
  different failure is recorded, never merged), then proof trials.
- :func:`ddlab.sweeps.envelope.envelope_search`: the largest value of each key
  that serves, key after key, with a fallback when even the lowest fails.
- :class:`Trials` (here): each point tried once, within ``max_trials`` and
  ``max_time_s``; when either runs out the result says what is known and what is not.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

from ddlab.config import flags as flagreg

__all__ = ["Outcome", "Trial", "Trials", "OutOfBudget", "describe_point", "CUT",
           "serves_as_asked"]

# the failure of a trial the server ran otherwise than asked (it cut the searched value)
CUT = "cut by the server"


# --- outcomes and trials ----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one trial showed: it serves (ready, every probe served, the lossless check
    passed or could not run: ``note`` says), or it failed, told apart by ``failure``."""

    status: str                  # serves | crashed | wrong_output | probe_failed | timeout
    kind: str = ""               # crashed: the diagnosis' kind; else lossless_violation, ...
    phase: str = ""
    cause: str = ""
    run_dir: str = field(default="", compare=False)
    note: str = field(default="", compare=False)
    reused: bool = field(default=False, compare=False)  # read from the store, not run now
    # keys of the point the server ran otherwise (it cut them to fit), and in words: an
    # envelope never counts a value the server cut as serving (:func:`serves_as_asked`)
    cut_keys: tuple = field(default=(), compare=False)
    cut: str = field(default="", compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "serves"

    @property
    def failure(self) -> str:
        """The name failures are compared by ('' when it serves)."""
        return "" if self.ok else (self.kind or self.status)

    @property
    def words(self) -> str:
        return "serves" if self.ok else f"fails with {self.failure}"


def serves_as_asked(outcome: Outcome, key: str) -> tuple[bool, str]:
    """(it serves with ``key`` as asked, the failure when not): a value of ``key`` the
    server cut is :data:`CUT`, never "serves"."""
    if outcome.ok and key in outcome.cut_keys:
        return False, CUT
    return outcome.ok, outcome.failure


@dataclass(frozen=True)
class Trial:
    """One point tried, in the order of the search (``number`` from 1)."""

    number: int
    point: dict
    outcome: Outcome
    role: str = "trial"          # ask | good | bad | confirm | trial
    level: int = 0               # envelope: the fallbacks applied
    key: str = ""                # envelope: the key this trial searched


class OutOfBudget(Exception):
    """The search's trials or time ran out (the message says which)."""


def _canonical(point: dict) -> str:
    return json.dumps(point, sort_keys=True, default=str)


class Trials:
    """``test`` behind a memo and a budget: each point tried once, in order."""

    def __init__(self, test: Callable[[dict], Outcome], *, max_trials: int = 12,
                 max_time_s: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.test, self.max_trials, self.clock = test, max_trials, clock
        self.deadline = clock() + max_time_s if max_time_s else None
        self.max_time_s = max_time_s
        self.done: dict[str, Trial] = {}

    def __call__(self, point: dict, *, role: str = "trial", level: int = 0,
                 key: str = "") -> Outcome:
        searched, key = key, _canonical(point)
        if key in self.done:
            return self.done[key].outcome
        if len(self.done) >= self.max_trials:
            raise OutOfBudget(f"the budget of {self.max_trials} trials is spent")
        if self.deadline is not None and self.clock() >= self.deadline:
            raise OutOfBudget(f"the time budget of {self.max_time_s:g} s is spent")
        outcome = self.test(dict(point))
        self.done[key] = Trial(len(self.done) + 1, dict(point), outcome, role, level, searched)
        return outcome

    @property
    def log(self) -> list[Trial]:
        return list(self.done.values())


def describe_point(point: dict, family=None) -> str:
    """``context_length=16384, graphs off``: a point (or fallback) in words; ``family``
    (a :class:`ddlab.config.families.Family`, None: SGLang's words) may say an item in its
    own (vLLM: ``graphs off (--enforce-eager)``)."""
    words = []
    for key, value in point.items():
        own = family.point_words(key, value) if family is not None else None
        if own is not None:
            words.append(own)
        elif key == "cuda_graph" and isinstance(value, bool):
            words.append("graphs on" if value else "graphs off")
        else:
            shown = "(removed)" if value is None else flagreg.render_value(value)
            words.append(f"{key}={shown}")
    return ", ".join(words) or "as given"
