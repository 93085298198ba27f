"""Overrides: the ``KEY=VALUE`` grammar of ``--set``, papermill and notebooks.

``parse_overrides(["k=v", ...])`` (or a mapping) gives ``{key: value}``; values
are read as YAML scalars (``32``, ``0.85``, ``true``, ``null``; ``[1,2,4]`` for a
list); text that is no YAML scalar is taken as is. A number keeps its text unless
written in its own spelling (``010``, ``0123456``, ``3.10``, ``1e-3`` stay text:
:func:`ddlab.core.yamlio.load` with ``keep_text``), so what reaches argv is what
was typed; the flag's own type checks it (:func:`ddlab.config.flags.check_value`). Keys: a flag (snake or
kebab; ``flags.X`` passes X verbatim even when it looks like a typo; a bare
unknown name that is part of a known one, ``topk`` of ``topk_cap``, is refused
as a near miss),
``env.NAME``, ``unit.FIELD``, ``python``, ``module``, and the notebook aliases
in ``ALIASES`` (``budget``, ``topk_cap``, ``algorithm``, ``cuda_graph``; ``topk-cap``
and ``cuda-graph`` too: a key is taken in either spelling, as flags are).
:func:`resolve_overrides` says where each key goes, in canonical order (flag
registry order, then unknown flags, env, unit, python, module, each sorted).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ddlab.config import flags as flagreg
from ddlab.config.sglang import known_option_names
from ddlab.config.unit_fields import UNIT_FIELDS, unit_field_name
from ddlab.core import yamlio
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError

__all__ = ["ALIASES", "alias_of", "parse_overrides", "in_words_given"]

ALIASES = {"budget": "speculative-ddtree-budget", "topk_cap": "speculative-ddtree-topk-cap",
           "algorithm": "speculative-algorithm", "cuda_graph": "disable-cuda-graph"}


def alias_of(key: str) -> str | None:
    """The alias ``key`` names in either spelling (``topk-cap`` is ``topk_cap``), else None."""
    alias = key.replace("-", "_") if isinstance(key, str) else key
    return alias if alias in ALIASES else None


# --- overrides ----------------------------------------------------------------------


def parse_overrides(items) -> dict:
    """``["k=v", ...]``, one ``"k=v"``, a mapping or None -> ``{key: value}``.

    String values are parsed as YAML scalars (or a flow list); a mapping's values
    are kept as given (papermill passes typed values).
    """
    if items is None:
        return {}
    if isinstance(items, Mapping):
        out = {}
        for key, value in items.items():
            if not isinstance(key, str) or not key.strip():
                raise ConfigError(f"override key {key!r}: must be a non-empty string",
                                  fix="e.g. {'budget': 32}", key=key)
            out[key.strip()] = value
        return out
    out = {}
    for item in [items] if isinstance(items, str) else items:
        key, sep, text = item.partition("=") if isinstance(item, str) else ("", "", "")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r}: must be KEY=VALUE",
                              fix="e.g. --set speculative_ddtree_budget=32", value=item)
        key, value = key.strip(), _scalar(text)
        if key in out and out[key] != value:
            raise ConfigError(f"override {key}: given twice ({out[key]!r} and {value!r})",
                              fix=f"keep one --set {key}=...", key=key)
        out[key] = value
    return out


def _scalar(text: str):
    try:
        value = yamlio.load(text, keep_text=True)
    except ValueError:
        return text.strip()
    plain = (str, int, float, bool, type(None))
    if isinstance(value, plain) or (isinstance(value, list) and all(
            isinstance(v, plain) and v is not None for v in value)):
        return value
    return text.strip()


def _target(key: str) -> tuple[str, str]:
    """Where an override key goes: ``("flags"|"env"|"unit"|"python"|"module", name)``."""
    if key in ("python", "module", "probes"):
        return key, key
    if alias_of(key):
        return "flags", ALIASES[alias_of(key)]
    if "." in key:
        space, _, rest = key.partition(".")
        if space == "env":  # the name is checked with the rest of the config
            return "env", rest
        if space == "unit":
            return "unit", unit_field_name(rest)
        if space == "flags":
            return "flags", flagreg.resolve_name(rest, explicit=True)[0]
        if space == "sglang":  # checked with the rest of the config
            return "sglang", rest
        guess = closest(space, ("env", "unit", "flags", "sglang")) or "flags"
        raise ConfigError(f"{key}: {space!r} is not a namespace; use env., unit., flags. "
                          "or sglang.",
                          fix=f"did you mean {guess}.{rest}?", key=key)
    name, flag = flagreg.resolve_name(key, extra=(*ALIASES, "python", "module", "probes"))
    if flag is None and not key.startswith("--") and name not in known_option_names():
        _refuse_a_part(key, name)
    return "flags", name


def _refuse_a_part(key: str, name: str) -> None:
    """A bare unknown name whose words are part of a known key's (``topk`` of
    ``topk_cap``, ``ddtree-budget`` of ``speculative-ddtree-budget``) is a near miss
    that no edit distance catches: refused like a typo, since passing ``--topk 8``
    through would start the server with the default cap. Real SGLang flags and
    ``flags.NAME`` pass (the caller checks)."""
    parts = _containing(name)
    if not parts:
        return
    guess, *others = [flagreg.spelled_like(key, part) for part in parts]
    also = f" (also close: {', '.join(others[:2])})" if others else ""
    raise ConfigError(f"{key}: not a known flag, but part of {guess}",
                      fix=f"did you mean {guess}?{also} try --set {guess}=VALUE, or "
                          f"--set flags.{name}=VALUE to pass --{name} verbatim",
                      key=key, suggestion=guess)


def _containing(name: str) -> list[str]:
    """Known keys (aliases first, then registered flags, snake case) whose words hold
    ``name``'s words in a row: those that start with them first, then end, then the rest."""
    words = name.split("-")
    found = []
    for rank, known in enumerate((*ALIASES, *flagreg.FLAGS)):
        theirs = known.replace("_", "-").split("-")
        spots = [i for i in range(len(theirs) - len(words) + 1)
                 if theirs[i:i + len(words)] == words]
        if spots and len(theirs) > len(words):
            end = 0 if spots[0] == 0 else 1 if spots[-1] == len(theirs) - len(words) else 2
            found.append((rank >= len(ALIASES), end, len(theirs), known.replace("-", "_")))
    return [snake for *_, snake in sorted(found)]


def change_order(kind: str, name: str) -> tuple:
    """Canonical position of a change: registry order first, then sorted names."""
    if kind == "flags":
        known = list(flagreg.FLAGS)
        return (0, known.index(name), "") if name in known else (1, 0, name)
    if kind == "unit":
        return (3, list(UNIT_FIELDS).index(name), "")
    return ({"env": 2, "python": 4, "module": 5, "sglang": 6, "vllm": 6, "probes": 7}[kind], 0,
            name)


def resolve_overrides(overrides: dict) -> dict:
    """``{(kind, name): value}`` in canonical order, aliases translated."""
    targets: dict = {}
    for key, value in overrides.items():
        target = _target(key)
        if alias_of(key) == "cuda_graph":
            if not isinstance(value, bool):
                raise ConfigError(f"{key}={value!r}: must be true or false",
                                  fix=f"try --set {key}=false", key=key, value=value)
            value = None if value else True
        if key == "probes":  # one text or a list of them; checked by the config
            value = tuple([value] if isinstance(value, str) else value or ())
        if target in targets and targets[target][1] != value:
            raise ConfigError(f"override {key}: sets the same thing as {targets[target][0]} "
                              "with another value", fix="keep one of them", key=key)
        targets[target] = (key, value)
    return {t: targets[t][1] for t in sorted(targets, key=lambda t: change_order(*t))}


def in_words_given(err: ConfigError, overrides: dict) -> ConfigError:
    """``err`` (a flag's value refused) in the words its override was given in: for
    ``--set topk-cap=0`` or ``-p budget 0``, ``topk-cap=0: ...; try --set topk-cap=4``
    rather than the flag's own name (``speculative-ddtree-topk-cap=0``). ``cuda_graph``
    is left as it is: it sets the flag's opposite. Returns ``err``, changed in place."""
    flag = getattr(err, "key", None)
    for key in overrides:
        if alias_of(key) == "cuda_graph" or not isinstance(key, str) or "." in key:
            continue
        target = ALIASES.get(alias_of(key) or "", key.removeprefix("--").replace("_", "-"))
        if target == flag:
            err.message = re.sub(rf"^{re.escape(flag)}(?==)", key, err.message)
            snake = flag.replace("-", "_")
            err.fix = err.fix and re.sub(rf"--set ({re.escape(flag)}|{re.escape(snake)})=",
                                         f"--set {key}=", err.fix)
            err.facts["given"] = err.given = key
            break
    return err


