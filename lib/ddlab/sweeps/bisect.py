"""Bisect: the smallest set of changes that still fails (see :mod:`ddlab.sweeps.search`).

Delta debugging over the override keys that tell the bad config from the good
one: a 1-minimal set of changes that still fails, found by divide and conquer
(QuickXplain's order, Junker 2004: about 2k*log2(n/k) trials for k needed
changes among n; ddmin's worst case for k = 2 is quadratic). The good config must
serve and the bad one fail; a set of changes *reproduces* the failure only when
it fails the same way (same kind: ``kv_pool_oom``, ``cuda_graph_replay``,
``lossless_violation``, ``timeout``...). A different failure is recorded as such
and counts as not reproducing it: never merged with the bad config's. Proof
trials follow: the set alone, the set less each of its changes (for two or
more), and the bad config without the set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlab.config.bases import Config
from ddlab.config.families import DEFAULT_FAMILY
from ddlab.sweeps.search import Outcome, OutOfBudget, Trials, describe_point

__all__ = ["Change", "changes_between", "Bisection", "bisect_search"]


@dataclass(frozen=True)
class Change:
    """One override that tells the bad config from the good one (value None: removed);
    ``family``: the configs' (its words in the label)."""

    key: str
    value: object
    family: object = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return describe_point({self.key: self.value}, self.family)


def changes_between(good: Config, bad: Config) -> list[Change]:
    """The overrides that turn ``good`` into ``bad``, one per key, in canonical order:
    the flags as the family names them (:meth:`Family.flag_changes`: vLLM's knobs and the
    keys inside ``--speculative-config`` one by one), then env, unit, the command."""
    family = good.family
    out = [Change(key, value, family) for key, value in family.flag_changes(good.flags, bad.flags)]
    for kind in ("env", "unit"):
        old, new = getattr(good, kind), getattr(bad, kind)
        out += [Change(f"{kind}.{n}", new.get(n), family) for n in sorted({**old, **new})
                if old.get(n) != new.get(n)]
    if family.name != DEFAULT_FAMILY:  # its release section (vllm.version), as --set names it
        old, new = good.release, bad.release
        out += [Change(f"{family.name}.{n}", new.get(n), family) for n in sorted({**old, **new})
                if old.get(n) != new.get(n)]
    for kind in ("python", "module", "probes"):
        if getattr(good, kind) != getattr(bad, kind):
            value = getattr(bad, kind)
            out.append(Change(kind, list(value) if kind == "probes" else value, family))
    return out


@dataclass
class Bisection:
    """A bisect's state and answer (see the module docstring)."""

    changes: list[Change]
    failure: str = ""            # the bad config's
    candidate: list[int] = field(default_factory=list)  # the smallest set known to fail so
    minimal: list[int] | None = None                    # far; the answer
    found_after: int = 0         # trials when the divide and conquer ended
    proof: dict = field(default_factory=dict)  # "minimal" / "without <i>" -> Outcome
    confirm: Outcome | None = None
    stop: str = ""               # why it could not bisect (the good fails, the bad serves)
    spent: str = ""

    def point(self, indexes) -> dict:
        return {self.changes[i].key: self.changes[i].value for i in sorted(indexes)}

    def labels(self, indexes) -> str:
        return ", ".join(self.changes[i].label for i in sorted(indexes))

    @property
    def found(self) -> bool:
        return self.minimal is not None and not self.doubts()

    def doubts(self) -> list[str]:
        """Proof trials that contradict the answer (a failure that is not monotone)."""
        out = []
        alone = self.proof.get("minimal")
        if alone is not None and alone.failure != self.failure:
            out.append(f"the set alone {alone.words}, not with {self.failure}")
        for name, outcome in self.proof.items():
            if name != "minimal" and outcome.failure == self.failure:
                out.append(f"{name} it still fails with {self.failure}")
        return out

    @property
    def answer(self) -> str:
        if self.stop:
            return self.stop
        if self.minimal is None:
            if not self.failure:
                return "the good and the bad config are not both tried yet"
            return (f"not settled: the {self.failure} comes from some of these "
                    f"{len(self.candidate)} changes: {self.labels(self.candidate)}")
        m = self.minimal
        if self.doubts():
            return (f"inconclusive: the search narrowed the {self.failure} down to "
                    f"{self.labels(m)}, but {'; '.join(self.doubts())}")
        if len(m) == 1:
            text = (f"culprit: {self.labels(m)}: the good config with only this change fails "
                    f"with {self.failure}")
        else:
            text = (f"culprits, together: {self.labels(m)}: the good config with these "
                    f"{len(m)} changes fails with {self.failure}; without any one of them "
                    "it does not")
        return text + self._confirmed()

    def _confirmed(self) -> str:
        c, what = self.confirm, "it" if len(self.minimal or ()) == 1 else "them"
        if c is None:
            rest = len(self.changes) - len(self.minimal or ())
            return "" if rest == 0 else f"; the bad config without {what} is untried"
        if c.ok:
            return f"; removing {what} makes the bad config serve"
        if c.failure == self.failure:
            return (f"; but the bad config without {what} still fails with {c.failure}: "
                    "another change causes it too")
        return f"; the bad config without {what} fails differently: {c.failure}"

    def uncertain(self) -> list[str]:
        """What the trials did not settle (budget spent)."""
        if self.stop:
            return []
        if not self.failure:
            return ["whether the good config serves, and how the bad one fails"]
        if self.minimal is None:
            return [f"which of {self.labels(self.candidate)} cause the {self.failure}"]
        if self.confirm is None and len(self.minimal) < len(self.changes):
            return [f"whether the bad config without {self.labels(self.minimal)} serves"]
        return []


def bisect_search(changes: list[Change], trials: Trials) -> Bisection:
    """The smallest set of changes from the good config that still fails as the bad
    one does (module docstring). Point ``{}`` is the good config; all changes, the bad.

    After the divide and conquer, proof trials: the set alone (when not tried yet),
    the set without each one of its changes (two or more), then the bad config
    without the set (``confirm``)."""
    b = Bisection(changes=list(changes))
    try:
        good = trials({}, role="good")
        if not good.ok:
            b.stop = f"the good config does not serve: it {good.words}; nothing to bisect from"
            return b
        every = list(range(len(changes)))
        bad = trials(b.point(every), role="bad")
        if bad.ok:
            b.stop = "the bad config serves: nothing to bisect"
            return b
        b.failure, b.candidate = bad.failure, every
        b.minimal = _divide(b, trials, [], False, every)
        b.found_after = len(trials.done)
        _prove(b, trials)
    except OutOfBudget as spent:
        b.spent = str(spent)
    return b


def _fails(b: Bisection, trials: Trials, indexes: list[int], role: str = "trial") -> bool:
    """True when the good config plus these changes fails the way the bad one does; a
    different failure is recorded (in the trials) and counts as not reproducing it."""
    same = trials(b.point(indexes), role=role).failure == b.failure
    if same and len(indexes) < len(b.candidate):
        b.candidate = sorted(indexes)
    return same


def _divide(b: Bisection, trials: Trials, background: list[int], added: bool,
            changes: list[int]) -> list[int]:
    """Delta debugging by divide and conquer (QuickXplain's order, Junker 2004): the
    changes of ``changes`` needed, on top of ``background``, to reproduce the failure.
    About 2k*log2(n/k) trials for k needed changes among n (ddmin needs up to n^2 for
    k > 1); the same 1-minimal answer when failures are monotone."""
    if added and _fails(b, trials, background):
        return []
    if len(changes) == 1:
        return changes
    half = len(changes) // 2
    first, second = changes[:half], changes[half:]
    need_second = _divide(b, trials, background + first, True, second)
    need_first = _divide(b, trials, background + need_second, bool(need_second), first)
    return need_first + need_second


def _prove(b: Bisection, trials: Trials) -> None:
    m = b.minimal
    b.proof["minimal"] = trials(b.point(m), role="proof")
    if len(m) > 1:
        for i in m:
            b.proof[f"without {b.changes[i].label}"] = trials(
                b.point([j for j in m if j != i]), role="proof")
    rest = [i for i in range(len(b.changes)) if i not in m]
    if rest:
        b.confirm = trials(b.point(rest), role="confirm")
