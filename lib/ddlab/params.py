"""Base configs and the variants made from them by overrides.

A base config is YAML in ``params/base/NAME.yaml`` (see docs/DESIGN.md):
the command (python + module), server flags, environment, unit fields.
A variant is a base plus overrides (``KEY=VALUE`` strings from ``--set`` or
papermill, or a mapping): ``make_variant("ddtree", ["budget=32"])``.

- Everything is validated when a :class:`Config` is made, before anything
  touches a host: flags (``ddlab.flags``), env names, unit fields, the module.
- Override keys: a flag (snake or kebab; ``flags.X`` passes X verbatim even
  when it looks like a typo), ``env.NAME``, ``unit.FIELD``, ``python``,
  ``module``, and the notebook aliases in ``ALIASES`` (``budget``,
  ``topk_cap``, ``algorithm``, ``cuda_graph``). Values are parsed as YAML
  scalars (``32``, ``0.85``, ``true``, ``null``; ``[1,2,4]`` for a list); text
  that is no YAML scalar is taken as is. ``null``/``false`` remove a flag.
- A variant's ``name`` derives from what changed, in canonical order (flag
  registry order, then unknown flags, env, unit, python, module, each sorted),
  so the same overrides in any order give the same name and hash. Names are
  ``[a-z0-9-]``, at most 64 characters, safe as a unit and a folder name.
  When a token cannot say its value exactly (free text, unknown flags, env,
  unit fields) or the name is too long, it ends in ``-`` + 8 hex of the hash,
  so two different configs never share a name.
- ``Config.hash``: 12 hex of sha256 over the canonical JSON of what runs
  (python, module, flags, env, unit); the base name and description are not
  part of it, and neither is flag order (argparse does not care).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import yaml

from ddlab import flags as flagreg
from ddlab.errors import ConfigError
from ddlab.paths import params_dir
from ddlab.redact import looks_secret
from ddlab.units import UNIT_FIELDS, check_unit_fields, describe_changes, unit_field_name

__all__ = ["Config", "Variant", "ALIASES", "load_base", "list_bases", "parse_overrides",
           "make_variant"]

ALIASES = {"budget": "speculative-ddtree-budget", "topk_cap": "speculative-ddtree-topk-cap",
           "algorithm": "speculative-algorithm", "cuda_graph": "disable-cuda-graph"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_TOP_KEYS = ("base", "description", "command", "flags", "env", "unit")
_MAX_NAME = 64


@dataclass(frozen=True)
class Config:
    """One server configuration; validated and normalised on construction."""

    base: str
    description: str
    python: str | None
    module: str
    flags: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    unit: dict = field(default_factory=dict)

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        put("description", " ".join(str(self.description or "").split()))
        if self.python is not None and (not isinstance(self.python, str) or not self.python):
            raise ConfigError(f"python={self.python!r}: must be a path or null (the host's)",
                              fix="try --set python=/opt/sglang/.venv/bin/python", key="python")
        if not isinstance(self.module, str) or not _MODULE.fullmatch(self.module):
            raise ConfigError(f"module={self.module!r}: must be a dotted module name",
                              fix="try --set module=sglang.launch_server", key="module")
        put("flags", _checked_flags(self.flags))
        put("env", _checked_env(self.env))
        put("unit", check_unit_fields(_mapping(self.unit, "unit")))

    @classmethod
    def from_dict(cls, d: Mapping, *, base: str | None = None) -> "Config":
        """A config from the base-file shape; flag names get the near-miss check."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"config {type(d).__name__}: must be a mapping",
                              fix="see docs/DESIGN.md for the shape")
        _refuse_unknown_keys(d, _TOP_KEYS, "config")
        command = d.get("command") or {}
        if not isinstance(command, Mapping):
            raise ConfigError(f"command={command!r}: must be a mapping with python and module",
                              fix="write command: {python: null, module: sglang.launch_server}")
        _refuse_unknown_keys(command, ("python", "module"), "command")
        flags = _mapping(d.get("flags"), "flags")
        for raw in flags:
            if raw in ALIASES:  # a notebook alias here would pass through as --budget
                raise ConfigError(f"flags key {raw!r}: is a notebook alias, not a flag",
                                  fix=f"write {ALIASES[raw]}: (or \"--{raw}\": for a "
                                      "flag of that very name)", key=raw)
            flagreg.resolve_name(raw)
        return cls(base=str(base or d.get("base") or "config"),
                   description=d.get("description") or "",
                   python=command.get("python"), module=command.get("module"), flags=flags,
                   env=_mapping(d.get("env"), "env"), unit=_mapping(d.get("unit"), "unit"))

    def to_dict(self) -> dict:
        """The base-file shape; unknown flags written ``--name`` (verbatim on reload)."""
        return {"base": self.base, "description": self.description,
                "command": {"python": self.python, "module": self.module},
                "flags": {(n if n in flagreg.FLAGS else f"--{n}"): _copy(v)
                          for n, v in self.flags.items()},
                "env": dict(self.env), "unit": {k: _copy(v) for k, v in self.unit.items()}}

    @property
    def hash(self) -> str:
        """12 hex digits of the config's content. Secret-named values (a token, an API
        key) count as present, not by value: they do not change what the server does,
        the store never keeps them, and a resumed sweep must find its cells again."""
        def blind(mapping: dict) -> dict:
            return {k: ("<secret>" if looks_secret(k) and isinstance(v, (str, int, float))
                        and not isinstance(v, bool) else v) for k, v in mapping.items()}

        payload = {"python": self.python, "module": self.module, "flags": blind(self.flags),
                   "env": blind(self.env), "unit": self.unit}
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def argv(self, python: str | None = None) -> list[str]:
        """``[python, "-m", module, "--flag", "value", ...]``; ``python`` is used when
        the config leaves it null (the host profile's interpreter)."""
        exe = self.python or python
        if not exe:
            raise ConfigError(f"python: not set by base {self.base!r} and none given",
                              fix="pass the host's interpreter (python=...) or "
                                  "--set python=/path/to/python", key="python")
        words = chain.from_iterable(flagreg.render_flag(n, v) for n, v in self.flags.items())
        return [exe, "-m", self.module, *words]


def _copy(value):
    return list(value) if isinstance(value, list) else value


def _mapping(value, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what}={value!r}: must be a mapping",
                          fix=f"write {what}: as KEY: VALUE lines")
    return dict(value)


def _refuse_unknown_keys(d: Mapping, known: tuple, where: str) -> None:
    for key in d:
        if key not in known:
            guess = flagreg.closest(str(key), known)
            hint = f"did you mean {guess}? " if guess else ""
            raise ConfigError(f"{where} key {key!r}: must be one of {', '.join(known)}",
                              fix=f"{hint}flags go under flags:", key=key)


def _checked_flags(given) -> dict:
    out = {}
    for raw, value in _mapping(given, "flags").items():
        name, _ = flagreg.normalize_name(raw)
        if name in out:
            raise ConfigError(f"flag {name}: given twice (as snake and kebab case?)",
                              fix="keep one spelling", key=name)
        checked = flagreg.check_value(name, value)
        if checked is not None:
            out[name] = checked
    return out


def _checked_env(given) -> dict:
    out = {}
    for name, value in _mapping(given, "env").items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ConfigError(f"env name {name!r}: must match [A-Za-z_][A-Za-z0-9_]*",
                              fix="rename it, e.g. SGLANG_DDTREE_MAX_TOPK", key=f"env.{name}")
        if value is None:
            continue
        if not isinstance(value, (str, int, float, bool)):
            raise ConfigError(f"env.{name}={value!r}: must be a string or number",
                              fix=f"try --set env.{name}=VALUE", key=f"env.{name}", value=value)
        out[name] = flagreg.render_value(value)
    return out


# --- bases --------------------------------------------------------------------------


def list_bases() -> list[str]:
    """Names of the shipped base configs (``params/base/*.yaml``)."""
    return sorted(p.stem for p in (params_dir() / "base").glob("*.yaml"))


def load_base(name_or_path: str | Path) -> Config:
    """A base config by name (``params/base/NAME.yaml``) or by path to a YAML file."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or text.endswith((".yaml", ".yml")):
        path = Path(text).expanduser()
        if not path.is_file():
            raise ConfigError(f"base file {text}: does not exist",
                              fix="give a path to a YAML file or a base name", value=text)
    else:
        path = params_dir() / "base" / f"{text}.yaml"
        if not path.is_file():
            names = list_bases()
            guess = flagreg.closest(text, names)
            raise ConfigError(f"base {text!r}: not found; available: {', '.join(names) or 'none'}",
                              fix=f"did you mean {guess}?" if guess else
                              "pass a name above or a path to a YAML file", value=text)
    try:
        data = yaml.safe_load(path.read_text())
        return Config.from_dict(data or {}, base=path.stem)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err})".replace("\n", " "),
                          fix="fix the YAML syntax", path=str(path)) from None
    except ConfigError as err:
        raise ConfigError(f"{path}: {err.message}",
                          fix=f"edit the file ({err.fix})" if err.fix else "edit the file",
                          **{**err.facts, "path": str(path)}) from None


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
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text.strip()
    plain = (str, int, float, bool, type(None))
    if isinstance(value, plain) or (isinstance(value, list) and all(
            isinstance(v, plain) and v is not None for v in value)):
        return value
    return text.strip()


def _target(key: str) -> tuple[str, str]:
    """Where an override key goes: ``("flags"|"env"|"unit"|"python"|"module", name)``."""
    if key in ("python", "module"):
        return key, key
    if key in ALIASES:
        return "flags", ALIASES[key]
    if "." in key:
        space, _, rest = key.partition(".")
        if space == "env":  # the name is checked with the rest of the config
            return "env", rest
        if space == "unit":
            return "unit", unit_field_name(rest)
        if space == "flags":
            return "flags", flagreg.resolve_name(rest, explicit=True)[0]
        guess = flagreg.closest(space, ("env", "unit", "flags")) or "flags"
        raise ConfigError(f"{key}: {space!r} is not a namespace; use env., unit. or flags.",
                          fix=f"did you mean {guess}.{rest}?", key=key)
    name, _ = flagreg.resolve_name(key, extra=(*ALIASES, "python", "module"))
    return "flags", name


def _order(kind: str, name: str) -> tuple:
    """Canonical position of a change: registry order first, then sorted names."""
    if kind == "flags":
        known = list(flagreg.FLAGS)
        return (0, known.index(name), "") if name in known else (1, 0, name)
    if kind == "unit":
        return (3, list(UNIT_FIELDS).index(name), "")
    return ({"env": 2, "python": 4, "module": 5}[kind], 0, name)


def _resolve(overrides: dict) -> dict:
    """``{(kind, name): value}`` in canonical order, aliases translated."""
    targets: dict = {}
    for key, value in overrides.items():
        target = _target(key)
        if key == "cuda_graph":
            if not isinstance(value, bool):
                raise ConfigError(f"cuda_graph={value!r}: must be true or false",
                                  fix="try --set cuda_graph=false", key=key, value=value)
            value = None if value else True
        if target in targets and targets[target][1] != value:
            raise ConfigError(f"override {key}: sets the same thing as {targets[target][0]} "
                              "with another value", fix="keep one of them", key=key)
        targets[target] = (key, value)
    return {t: targets[t][1] for t in sorted(targets, key=lambda t: _order(*t))}


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
                "changes": {k: [_copy(o), _copy(n)] for k, (o, n) in self.changes.items()},
                "config": self.config.to_dict()}


def make_variant(base: Config | str | Path, overrides=None) -> Variant:
    """Apply overrides to a base (a Config, a base name or a YAML path); validated."""
    if not isinstance(base, Config):
        base = load_base(base)
    parts = {"flags": dict(base.flags), "env": dict(base.env), "unit": dict(base.unit)}
    scalars = {"python": base.python, "module": base.module}
    for (kind, name), value in _resolve(parse_overrides(overrides)).items():
        if kind in scalars:
            scalars[kind] = value
        elif value is None or (kind == "flags" and value is False):
            parts[kind].pop(name, None)
        else:
            parts[kind][name] = value
    config = dataclasses.replace(base, **parts, **scalars)
    changes = _changes(base, config)
    return Variant(base=base, config=config, changes=changes,
                   name=_variant_name(base.base, changes, config.hash))


def _changes(old: Config, new: Config) -> dict:
    keys = [("flags", n) for n in {**old.flags, **new.flags}]
    keys += [("env", n) for n in {**old.env, **new.env}]
    keys += [("unit", n) for n in {**old.unit, **new.unit}]
    keys += [("python", "python"), ("module", "module")]
    out = {}
    for kind, name in sorted(keys, key=lambda t: _order(*t)):
        if kind in ("python", "module"):
            before, after = getattr(old, kind), getattr(new, kind)
            label = kind
        else:
            before, after = getattr(old, kind).get(name), getattr(new, kind).get(name)
            plain = kind == "flags" and name not in ("python", "module")
            label = name if plain else f"{kind}.{name}"
        if before != after:
            out[label] = (before, after)
    return out


# --- names and descriptions ---------------------------------------------------------


def _variant_name(base_name: str, changes: dict, digest: str) -> str:
    """``ddtree-b32-k8-nograph``; ends in ``-`` + 8 hex of the hash when inexact or long."""
    tokens = [_token(key, new) for key, (_, new) in changes.items()]
    name = "-".join([_slug(base_name), *(text for text, _ in tokens)])
    if len(name) > _MAX_NAME or not all(exact for _, exact in tokens):
        name = name[:_MAX_NAME - 9].rstrip("-") + "-" + digest[:8]
    return name


def _token(key: str, new) -> tuple[str, bool]:
    """A change's part of the name, and whether it says the new value exactly."""
    flag = flagreg.FLAGS.get(key)
    if flag is None:  # an unknown flag, env.X, unit.X, python, module
        head = _slug(key)
        if key == "python":
            return "py", False
        if new is None:
            return f"no-{head}", False
        if new is True or looks_secret(key.rpartition(".")[2]):
            return head, False
        return f"{head}-{_slug(flagreg.render_value(new))}", False
    if new is None:
        return flag.off_token, True
    if flag.kind == "switch":
        return flag.short, True
    if flag.kind in ("int", "float"):
        return flag.short + _number(new), True
    if flag.kind == "int_list":
        return flag.short + "-".join(map(_number, new)), True
    if flag.kind == "choice":  # choices differ by more than case and punctuation
        return "-".join(filter(None, (flag.short, _slug(new)))), True
    return f"{flag.short}-{_slug(new)}", False  # free text: `x-draft-y` could be two tokens


def _slug(text) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def _number(x) -> str:
    """``32`` -> ``32``, ``0.85`` -> ``0p85``, ``-1`` -> ``m1``, ``1e-05`` -> ``1em05``."""
    return repr(x).replace("-", "m").replace(".", "p").replace("+", "")
