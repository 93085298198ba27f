"""Variants: a base config plus overrides, named by what they change.

``make_variant("ddtree", ["budget=32"])`` applies the overrides
(:mod:`ddlab.config.overrides`; ``null``/``false`` remove a flag) to the base
(:mod:`ddlab.config.bases`) and validates the result. A variant's ``name``
derives from what changed, in canonical order, so the same overrides in any
order give the same name and hash. Names are ``[a-z0-9-]``, at most 64
characters, safe as a unit and a folder name. When a token cannot say its value
exactly (free text, unknown flags, env, unit fields), the base's own name does not
survive as ``[a-z0-9-]`` (``modèle`` and ``modéle`` both read ``mod-le``), or the name is
too long, it ends in ``-`` + 8 hex of the hash. Speculation removed whole is ``nospec`` (not
one token per removed flag), and an incidental flag (``port``) is named only
when nothing else changed: two configs that differ only in their port share a
name (never a hash); any other two configs never do.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ddlab.config import flags as flagreg
from ddlab.config.bases import Config, copy_value, load_base
from ddlab.config.overrides import in_words_given, parse_overrides
from ddlab.core.errors import ConfigError
from ddlab.core.redact import MASK, holds_secret, looks_secret

__all__ = ["Variant", "make_variant", "on_host", "describe_changes", "INCIDENTAL"]

_MAX_NAME = 64
# Where the server listens, not what it computes: left out of a name when something
# else changed (a sweep's free port would otherwise be in every cell's name).
INCIDENTAL = ("port",)


# --- bases --------------------------------------------------------------------------


# --- overrides ----------------------------------------------------------------------


# --- variants -----------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """A base config plus overrides: what changed, the name, the hash."""

    base: Config
    config: Config
    changes: dict          # key -> (old, new); None means absent
    name: str

    @property
    def hash(self) -> str:
        return self.config.hash

    @property
    def unit_name(self) -> str:
        return f"ddlab-{self.name}.service"

    def describe_changes(self) -> str:
        """``speculative-ddtree-budget 16 -> 32, disable-cuda-graph -> on`` (secrets masked)."""
        return describe_changes(self.changes)

    def to_dict(self) -> dict:
        return {"name": self.name, "hash": self.hash, "unit_name": self.unit_name,
                "base": self.base.base,
                "changes": {k: [copy_value(o), copy_value(n)] for k, (o, n) in self.changes.items()},
                "config": self.config.to_dict()}


def make_variant(base: Config | str | Path, overrides=None, *, unnamed=()) -> Variant:
    """Apply overrides to a base (a Config, a base name or a YAML path); validated.
    ``unnamed``: incidental flags (:data:`INCIDENTAL`) left out of the name even when
    nothing else changed (a sweep's fixed port: the same in every cell)."""
    if not isinstance(base, Config):
        base = load_base(base)
    family = base.family
    parts = {"flags": dict(base.flags), "env": dict(base.env), "unit": dict(base.unit),
             "sglang": dict(base.sglang), "vllm": dict(base.vllm)}
    scalars = {"python": base.python, "module": base.module, "probes": base.probes}
    given = parse_overrides(overrides)
    for (kind, name), value in family.resolve_overrides(given).items():
        if kind in scalars:
            scalars[kind] = value
        elif kind == "flags" and "." in name:  # a key inside a JSON flag (vLLM)
            _set_inside(parts["flags"], name, value)
        elif kind == "flags" and value is None and family.null_is_a_value(name):
            parts[kind][name] = "null"  # --disaggregation-mode null: a value of its own
        elif value is None or (kind == "flags" and value is False and family.false_removes):
            parts[kind].pop(name, None)
        else:
            parts[kind][name] = value
    try:
        config = dataclasses.replace(base, **parts, **scalars)
    except ConfigError as err:  # said with the key as given: topk-cap=0, not the flag's name
        raise in_words_given(err, given)
    changes = _changes(base, config)
    return Variant(base=base, config=config, changes=changes,
                   name=_variant_name(base.base, changes, config, unnamed=unnamed))


def _set_inside(flags: dict, dotted: str, value) -> None:
    """``speculative_config.num_speculative_tokens = 4``: the JSON flag copied, its key set
    (null removes the key, and the flag when no key is left)."""
    name, _, key = dotted.partition(".")
    inner = dict(flags.get(name) or {})
    if value is None:
        inner.pop(key, None)
    else:
        inner[key] = value
    if inner:
        flags[name] = inner
    else:
        flags.pop(name, None)


def on_host(variant: Variant, overrides: dict | None) -> Variant:
    """The variant as one host runs it: its host profile's ``overrides`` (a port, the
    GPU of a shared machine) applied on top. Name and unit stay the variant's: what a
    host needs to run it is not what the variant changes (its ``changes`` do show it)."""
    if not overrides:
        return variant
    config = make_variant(variant.config, overrides).config
    return Variant(base=variant.base, config=config, changes=_changes(variant.base, config),
                   name=variant.name)


def _changes(old: Config, new: Config) -> dict:
    flat_old, flat_new = old.family.flat_flags(old.flags), new.family.flat_flags(new.flags)
    keys = [("flags", n) for n in {**flat_old, **flat_new}]
    keys += [("env", n) for n in {**old.env, **new.env}]
    keys += [("unit", n) for n in {**old.unit, **new.unit}]
    keys += [("python", "python"), ("module", "module"), ("probes", "probes")]
    out = {}
    for kind, name in sorted(keys, key=lambda t: new.family.change_order(*t)):
        if kind in ("python", "module", "probes"):
            before, after = getattr(old, kind), getattr(new, kind)
            label = kind
        elif kind == "flags":
            before, after = flat_old.get(name), flat_new.get(name)
            label = name if name not in ("python", "module") else f"flags.{name}"
        else:
            before, after = getattr(old, kind).get(name), getattr(new, kind).get(name)
            label = f"{kind}.{name}"
        if before != after:
            out[label] = (before, after)
    return out


# --- names and descriptions ---------------------------------------------------------


def _variant_name(base_name: str, changes: dict, config: Config, *, unnamed=()) -> str:
    """``ddtree-b32-k8-nograph``; ends in ``-`` + 8 hex of the hash when inexact or long."""
    family = config.family
    named, exact = _named_changes(changes, family.flat_flags(config.flags), family)
    named = {k: v for k, v in named.items() if k not in INCIDENTAL or k not in unnamed}
    tokens = [family.flag_token(key, new) or _token(key, new, family.registry)
              for key, (_, new) in named.items()]
    name = "-".join([_slug(base_name), *(text for text, _ in tokens)])
    exact = exact and _slug(base_name) == str(base_name).lower()
    if len(name) > _MAX_NAME or not exact or not all(ok for _, ok in tokens):
        name = name[:_MAX_NAME - 9].rstrip("-") + "-" + config.hash[:8]
    return name


def _named_changes(changes: dict, flags: dict, family) -> tuple[dict, bool]:
    """The changes a name spells, and whether together they still say the config.

    Speculation removed whole (no ``speculative-*`` flag left) is one token,
    ``nospec``, not ``nospec-nob-nok-nodraft``; the algorithm removed while other
    speculative flags stay is inexact (the hash tells the two apart). An
    incidental flag (``port``) is named only when nothing else changed."""
    named, exact = dict(changes), True
    algorithm, spec = family.algorithm_key, family.spec_prefix
    if named.get(algorithm, (None, True))[1] is None:
        if any(flag.startswith(spec) for flag in flags):
            exact = False
        else:
            named = {k: v for k, v in named.items() if k == algorithm
                     or not (k.startswith(spec) and v[1] is None)}
    quiet = {k: v for k, v in named.items() if k not in INCIDENTAL}
    return (quiet or named), exact


def _token(key: str, new, registry=flagreg.FLAGS) -> tuple[str, bool]:
    """A change's part of the name, and whether it says the new value exactly; a flag of
    the family's ``registry`` (SGLang's FLAGS; vLLM has none) by its short name."""
    if key == "probes":  # probe-replay for ...CudaGraphRunner.replay; the hash says which
        last = [p.split(":")[0].rsplit(".", 1)[-1] for p in new or ()]
        return ("probe-" + "-".join(_slug(n) for n in last[:2])) if last else "no-probes", False
    flag = registry.get(key)
    if flag is not None and new not in (None, True) and holds_secret(new):
        return flag.short, False  # a secret inside a value never becomes part of a name
    if flag is None:  # an unknown flag, env.X, unit.X, python, module
        head = _slug(key)
        if key == "python":
            return "py", False
        if new is None:
            return f"no-{head}", False
        if new is True or looks_secret(key.rpartition(".")[2]) or holds_secret(new):
            return head, False
        return f"{head}-{_slug(flagreg.render_value(new))}", False
    if new is None:
        return flag.off_token, True
    if flag.kind == "switch":
        return flag.short, True
    if flag.kind in ("int", "float"):
        return flag.short + _number(new), _exact_number(new)
    if flag.kind == "int_list":
        return flag.short + "-".join(map(_number, new)), all(map(_exact_number, new))
    if flag.kind == "choice":  # choices differ by more than case and punctuation
        return "-".join(filter(None, (flag.short, _slug(new)))), True
    if flag.kind in ("word", "human_int"):  # exact only in its canonical spelling
        slug = _slug(new)
        canonical = slug.upper() if flag.upper else slug
        return "-".join(filter(None, (flag.short, slug))), str(new) == canonical
    return f"{flag.short}-{_slug(new)}", False  # free text: `x-draft-y` could be two tokens


def _slug(text) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def _number(x) -> str:
    """``32`` -> ``32``, ``0.85`` -> ``0p85``, ``-1`` -> ``m1``, ``1e-05`` -> ``1em05``;
    a number kept as typed by its text: ``010`` -> ``010``, ``3.10`` -> ``3p10``."""
    text = x if isinstance(x, str) else repr(x)
    return _slug(text.replace("-", "m").replace(".", "p").replace("+", ""))


def _exact_number(x) -> bool:
    """Whether the token says the text exactly (``+5`` and ``p5`` would not)."""
    return not isinstance(x, str) or bool(re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", x))


# --- describing changes ---------------------------------------------------------------


def describe_changes(changes: dict) -> str:
    """``speculative-ddtree-budget 16 -> 32, disable-cuda-graph -> on``; secrets masked,
    odd text JSON-quoted (so it never ends in a backslash)."""
    return ", ".join(_describe_change(k, old, new) for k, (old, new) in changes.items())


def _describe_change(key: str, old, new) -> str:
    before = "" if old in (None, ()) else f"{_shown(key, old)} "
    after = _shown(key, new) if new is not None else ("off" if old is True else "unset")
    return f"{key} {before}-> {after}"


def _shown(key: str, value) -> str:
    if value is not None and (looks_secret(key.rpartition(".")[2]) or holds_secret(value)):
        return MASK
    if value is True:
        return "on"
    if isinstance(value, (list, tuple)):
        return ",".join(_shown(key, v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    if isinstance(value, str) and re.fullmatch(r"[\w.,:/+@=-]+", value):
        return value
    return json.dumps(value, ensure_ascii=False)
