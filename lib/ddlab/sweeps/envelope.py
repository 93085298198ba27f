"""The envelope: the largest value of each key that serves (see :mod:`ddlab.sweeps.search`).

For keys whose cost grows with the value, key after key in the order given (a key
found stays at its value for the later ones). The top candidate is tried first,
then the lowest; when even the lowest fails the search has bottomed out: the next
fallback is applied (and stays for the later keys) and the key is searched again
from its lowest candidate, the top untried at that level. A key that serves at no
value at any level goes back to its value as asked for the later keys when the config
as asked served (at a value known to fail they would only meet that failure again),
else it stays at its lowest candidate. Candidates are integers,
powers of two where the flag table says the flag wants them (``Flag.pow2``), the
ends from the flag table when left out. A value the server did not run as asked (it cut
``max_running_requests`` to fit: the trial's ``Outcome.cut_keys``) is not serving for the
key searched: the answer is a value that ran as asked. Trials per key: at most
⌈log2 N⌉ + 2 + (fallbacks applied), N its number of candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ddlab.config import flags as flagreg
from ddlab.config.bases import Config
from ddlab.config.families import family_named
from ddlab.config.overrides import _target, parse_overrides
from ddlab.config.sglang import human_readable_int
from ddlab.core.errors import ConfigError
from ddlab.sweeps.search import CUT, OutOfBudget, Trials, describe_point, serves_as_asked

__all__ = ["KeySpec", "parse_search", "parse_fallbacks", "start_value", "KeyResult",
           "Envelope", "envelope_search"]


MAX_VALUE = 2 ** 62  # a range's length must stay a machine integer (len, indexing)


@dataclass(frozen=True)
class KeySpec:
    """One searched key and its candidates, ascending."""

    key: str
    values: Sequence[int]  # a range for integers (lazy: 1..10**13 costs nothing), a tuple for pow2
    pow2: bool = False

    def describe(self) -> str:
        steps = "powers of two" if self.pow2 else "integers"
        return (f"{self.key} in {self.values[0]}..{self.values[-1]} "
                f"({len(self.values)} candidates, {steps})")


def parse_search(item, family=None) -> KeySpec:
    """``context_length=4096..131072`` (``..HI`` or ``LO..``: the other end from the flag
    table), a ``(key, lo, hi)`` tuple, or a one-key mapping ``{key: "LO..HI"}``.
    ``family``: the base's (None: SGLang), whose keys and flag table are read."""
    key, lo, hi = _search_parts(item)
    kind, name = family.override_target(key) if family is not None else _target(key)
    table = family.search_flag if family is not None else flagreg.FLAGS.get
    flag = table(name) if kind == "flags" else None
    if flag is not None and flag.kind not in ("int", "human_int"):
        sizes = ", ".join((family or family_named(None)).search_sizes)
        raise ConfigError(f"--search {key}: {flag.name} is not an integer flag ({flag.kind}); "
                          "the envelope searches integer values", key=key,
                          fix=f"search a size such as {sizes}; sweep other flags instead")
    lo = _bound(key, lo, flag, "min")
    hi = _bound(key, hi, flag, "max")
    if max(abs(lo), abs(hi)) > MAX_VALUE:
        raise ConfigError(f"--search {key}={lo}..{hi}: an end beyond {MAX_VALUE} (2**62), which "
                          "no server size reaches", key=key, value=[lo, hi],
                          fix=f"give a range a server can hold, e.g. {key}=8..4096")
    if lo >= hi:
        raise ConfigError(f"--search {key}={lo}..{hi}: the range is empty", key=key,
                          fix=f"give the lowest value first, e.g. {key}={min(lo, hi)}..{max(lo, hi)}")
    pow2 = bool(flag and flag.pow2)
    if pow2:
        inner = [1 << k for k in range(lo.bit_length(), hi.bit_length()) if lo < (1 << k) < hi]
        values = (lo, *inner, hi)
    else:
        values = range(lo, hi + 1)
    return KeySpec(key=key, values=values, pow2=pow2)


def _search_parts(item) -> tuple[str, str, str]:
    if isinstance(item, dict) and len(item) == 1:
        (key, value), = item.items()
        item = f"{key}={'..'.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"
    if isinstance(item, (list, tuple)) and len(item) == 3:
        return str(item[0]).strip(), str(item[1]), str(item[2])
    key, sep, text = item.partition("=") if isinstance(item, str) else ("", "", "")
    lo, dots, hi = text.partition("..")
    if not (sep and dots and key.strip()):
        raise ConfigError(f"--search {item!r}: must be KEY=LO..HI", value=item,
                          fix="e.g. --search context_length=4096..131072 (either end may be "
                              "left out when the flag table bounds it)")
    return key.strip(), lo.strip(), hi.strip()


def _bound(key: str, text: str, flag, end: str) -> int:
    if not text:
        limit = getattr(flag, end, None) if flag is not None else None
        if limit is None:
            raise ConfigError(f"--search {key}: no {'lowest' if end == 'min' else 'highest'} "
                              "value given, and the flag table has none", key=key,
                              fix=f"give both ends, e.g. {key}=8..256")
        return int(limit) + (1 if end == "min" and flag.min_open else 0)
    try:
        value = human_readable_int(text) if not text.lstrip("-").isdigit() else int(text)
    except (ValueError, ArithmeticError):
        raise ConfigError(f"--search {key}: {text!r} is not an integer", key=key, value=text,
                          fix=f"e.g. {key}=4096..131072 (32k, 32Ki read too)") from None
    if flag is not None and ((flag.min is not None and value < flag.min)
                             or (flag.max is not None and value > flag.max)):
        raise ConfigError(f"--search {key}: {value} is outside the flag's range: "
                          f"{flag.allowed()}", key=key, value=value,
                          fix="keep both ends inside what the flag allows")
    return value


def parse_fallbacks(items) -> list[dict]:
    """Each item one fallback (``cuda_graph=false``; ``"a=1,b=2"``, a list of ``K=V`` or a
    mapping for several overrides at once); applied in order, each on top of the last."""
    out = []
    for item in [items] if isinstance(items, (str, dict)) else items or ():
        if isinstance(item, str) and "," in item:
            item = [part for part in item.split(",") if part.strip()]
        out.append(parse_overrides(item))
    return out


def start_value(spec: KeySpec, config: Config):
    """The key's value in ``config`` (None when it does not set it); a key inside a JSON
    flag (vLLM's ``num_speculative_tokens``) read there."""
    family = config.family
    kind, name = family.override_target(spec.key)
    value = family.flat_flags(config.flags).get(name) if kind == "flags" \
        else getattr(config, kind, {}).get(name)
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value) if not isinstance(value, str) else human_readable_int(value)
    except (ValueError, ArithmeticError):
        return None


@dataclass
class KeyResult:
    """What the search found for one key: candidate indexes known to serve / fail."""

    spec: KeySpec
    level: int = 0
    good: int | None = None      # largest index known to serve at ``level``
    bad: int | None = None       # smallest index above it known to fail at ``level``
    failure: str = ""            # how ``bad`` failed
    bottoms: list = field(default_factory=list)  # (level, value, failure): the lowest failed
    done: bool = False

    def value(self, index):
        return None if index is None else self.spec.values[index]


@dataclass
class Envelope:
    """An envelope search's state and answer (see the module docstring)."""

    keys: list[KeySpec]
    fallbacks: list[dict]
    current: dict                # key -> the value it has now (given, then found)
    family: object = None        # the base's: the words of its fallbacks (None: SGLang's)
    level: int = 0
    results: list[KeyResult] = field(default_factory=list)
    spent: str = ""              # why the budget stopped it ('' when it finished)
    asked_serves: bool = False   # the first trial, the config as asked, served

    def overrides(self, level: int | None = None) -> dict:
        merged: dict = {}
        for fallback in self.fallbacks[:self.level if level is None else level]:
            merged.update(fallback)
        return merged

    def point(self, key: str | None = None, value=None) -> dict:
        values = {k: v for k, v in self.current.items() if v is not None}
        if key is not None:
            values[key] = value
        return {**self.overrides(), **values}

    def level_words(self, level: int) -> str:
        return "as given" if level == 0 else \
            f"with {describe_point(self.overrides(level), self.family)}"

    @property
    def answer(self) -> str:
        parts = [self._key_answer(r) for r in self.results if r.done]
        if not self.results or not parts:
            return "no key searched yet"
        return "; ".join(parts)

    def _key_answer(self, r: KeyResult) -> str:
        key, where = r.spec.key, "" if r.level == 0 else f" {self.level_words(r.level)}"
        if r.good is None:
            level, value, failure = r.bottoms[-1]
            text = f"{key}: even {value} {_fails(failure)} at every fallback"
        elif r.bad is None:
            text = f"{key} {r.value(r.good)} (the top of the range) serves{where}"
        else:
            text = f"{key} {r.value(r.good)} serves{where}; {r.value(r.bad)} {_fails(r.failure)}"
        before = [f"{self.level_words(level)}, even {value} {_fails(failure)}"
                  for level, value, failure in r.bottoms if r.good is not None or level < r.level]
        return text + (f" ({'; '.join(before)})" if before else "")

    @property
    def found(self) -> bool:
        return bool(self.results) and all(r.done and r.good is not None for r in self.results) \
            and len(self.results) == len(self.keys)

    def uncertain(self) -> list[str]:
        """What the trials did not settle (budget spent)."""
        out = []
        for r in self.results:
            if r.done:
                continue
            lo = f"{r.value(r.good)} serves" if r.good is not None else "nothing known to serve"
            hi = (f"{r.value(r.bad)} {_fails(r.failure)}" if r.bad is not None
                  else "nothing above tried")
            out.append(f"{r.spec.key} {self.level_words(r.level)}: {lo}, {hi}; the values "
                       "between are untried")
        searched = {r.spec.key for r in self.results}
        out += [f"{s.key}: not searched" for s in self.keys if s.key not in searched]
        return out


def _fails(failure: str) -> str:
    """``fails with kv_pool_oom``; a value the server cut ``is cut by the server``."""
    return f"is {CUT}" if failure == CUT else f"fails with {failure}"


def envelope_search(keys: list[KeySpec], fallbacks: list[dict], trials: Trials,
                    start: dict, family=None) -> Envelope:
    """The largest value of each key that serves (module docstring); ``start``: each
    key's value in the start config (None: not set). The first trial is the start
    config as given (with every key at its given value). ``family``: its words."""
    env = Envelope(keys=list(keys), fallbacks=list(fallbacks), current=dict(start),
                   family=family)
    try:
        env.asked_serves = trials(env.point(), role="ask").ok
        for spec in keys:
            _search_key(env, spec, trials)
    except OutOfBudget as spent:
        env.spent = str(spent)
    return env


def _search_key(env: Envelope, spec: KeySpec, trials: Trials) -> None:
    r = KeyResult(spec, level=env.level)
    env.results.append(r)
    values, top_known = spec.values, True  # the top is tried at the key's first level only
    while True:
        r.level, r.good, r.bad, r.failure = env.level, None, None, ""
        if top_known:
            ok, failure = serves_as_asked(trials(env.point(spec.key, values[-1]),
                                                 level=env.level, key=spec.key), spec.key)
            if ok:
                r.good = len(values) - 1
                return _settle(env, r)
            r.bad, r.failure = len(values) - 1, failure
        ok, failure = serves_as_asked(trials(env.point(spec.key, values[0]), level=env.level,
                                             key=spec.key), spec.key)
        if not ok:
            r.bottoms.append((env.level, values[0], failure))
            if env.level < len(env.fallbacks):
                env.level, top_known = env.level + 1, False
                continue
            if not env.asked_serves:  # else it keeps its value as asked (module docstring)
                env.current[spec.key] = values[0]  # the least demanding, for the keys after it
            r.done = True
            return
        r.good = 0
        _bisect_up(env, r, trials)
        return _settle(env, r)


def _bisect_up(env: Envelope, r: KeyResult, trials: Trials) -> None:
    """Between a serving index and a failing one (or past the top, untried)."""
    values = r.spec.values
    above = r.bad if r.bad is not None else len(values)
    while above - r.good > 1:
        mid = (r.good + above) // 2
        ok, failure = serves_as_asked(trials(env.point(r.spec.key, values[mid]),
                                             level=env.level, key=r.spec.key), r.spec.key)
        if ok:
            r.good = mid
        else:
            above, r.bad, r.failure = mid, mid, failure


def _settle(env: Envelope, r: KeyResult) -> None:
    env.current[r.spec.key] = r.value(r.good)
    r.done = True
