"""The checks every layer words alike: a number, a name near a known one, an env name.

- :func:`check_number`: a count or a duration given by a person, refused in one
  grammar (``timeout_s=0: must be a finite number of seconds > 0; try -p timeout_s
  600``), before anything touches a host. Integers for counts, finite numbers for
  the rest (nan would never time out, inf never stops); a bool is neither.
- :func:`closest`: the "did you mean ...?" of every refusal of a name (a flag, a
  parameter, a profile key, a probe mode): one edit-distance rule, so a typo is
  caught alike everywhere and two real names (``tp-size``/``dp-size``) never are.
- :func:`check_env_name`: the one rule for an environment variable's name, which
  a systemd unit, a process manager and a base config all write.
"""

from __future__ import annotations

import math
import re

from ddlab.core.errors import ConfigError

__all__ = ["check_number", "closest", "check_env_name", "ENV_NAME"]


def check_number(name: str, value, *, minimum: float = 0, above: bool = False,
                 integer: bool = False, seconds: bool = False, note: str = "",
                 example=None) -> None:
    """``value`` is an integer (``integer``) or a finite number, ``>= minimum`` (``>``
    with ``above``); else a ConfigError: ``NAME=VALUE: must be an integer >= 1``.
    ``seconds`` says the unit, ``note`` what a boundary value means (``0: no limit``);
    the fix is ``try -p NAME EXAMPLE`` (in the caller's words: ``--name``, ``name=``)."""
    number = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    if number and (integer or math.isfinite(value)) and \
            (value > minimum if above else value >= minimum):
        return
    kind = "an integer" if integer else "a finite number of seconds" if seconds \
        else "a finite number"
    bound = f"{'>' if above else '>='} {minimum:g}"
    if example is None:
        example = max(int(minimum) + above, 4) if integer else 600 if seconds else 5
    raise ConfigError(f"{name}={value!r}: must be {kind} {bound}" + (f" ({note})" if note else ""),
                      fix=f"try -p {name} {example}", key=name, value=value)


def closest(word: str, candidates, *, bound: int | None = None) -> str | None:
    """The candidate within a small edit distance of ``word`` (None when none is close).

    Damerau-Levenshtein (a swap of neighbours counts one), case-insensitive,
    ``-`` and ``_`` the same. The default bound is 1 for names of up to 8
    characters and 2 above: close enough for typos, far enough that different
    real flags (``tp-size``/``dp-size`` are both registered) are not caught.
    """
    def key(s: str) -> str:
        return str(s).lower().replace("_", "-")

    w = key(word)
    limit = bound if bound is not None else (1 if len(w) <= 8 else 2)
    best, best_d = None, limit + 1
    for cand in candidates:
        d = _distance(w, key(cand), best_d)
        if d < best_d and cand != word:
            best, best_d = cand, d
    return best


def _distance(a: str, b: str, cap: int) -> int:
    """Optimal-string-alignment distance, giving up (returns cap) past ``cap``."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    prev2, prev = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) >= cap:
            return cap
        prev2, prev = prev, cur
    return min(prev[-1], cap)


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env_name(name, *, error: type[ConfigError] = ConfigError,
                   fix: str = "rename it, e.g. SGLANG_DDTREE_MAX_TOPK", **facts) -> None:
    """``name`` is an environment variable's name (letters, digits, ``_``; not a digit
    first); else ``error`` (a :class:`UnitError` where a unit is written)."""
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise error(f"env name {name!r}: must match {ENV_NAME.pattern}", fix=fix,
                    **({"key": name} | facts))
