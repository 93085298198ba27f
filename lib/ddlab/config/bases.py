"""Base configs: what a server runs, validated and hashed.

A base config is YAML in ``params/base/NAME.yaml`` (see docs/DESIGN.md): its
server family (``family: sglang | vllm``, none is sglang), the command (python +
module), server flags, environment, unit fields, and the release it is written for
under the family's own key (``sglang:`` or ``vllm:``). :class:`Config` validates
everything when it is made, before anything touches a host: the family
(:mod:`ddlab.config.families`), its flags (SGLang: :mod:`ddlab.config.flags`;
vLLM: the release's parser table), env names, unit fields
(:mod:`ddlab.config.unit_fields`), the module.

``Config.hash``: 12 hex of sha256 over the canonical JSON of what runs
(python, module, flags, env, unit; the family when it is not sglang); the base
name and description are not part of it, and neither is flag order (argparse
does not care).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from ddlab.config import flags as flagreg
from ddlab.config.families import DEFAULT_FAMILY, Family, family_named
from ddlab.config.sglang import OVERLAYS
from ddlab.config.unit_fields import check_unit_fields
from ddlab.core import yamlio
from ddlab.core.checks import check_env_name, closest
from ddlab.core.errors import ConfigError
from ddlab.core.paths import params_dir
from ddlab.core.redact import looks_secret, remember_secret
from ddlab.probes.spec import parse_probes

__all__ = ["Config", "load_base", "list_bases"]

_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_TOP_KEYS = ("base", "family", "description", "command", "sglang", "vllm", "flags", "env",
             "unit", "probes")
# What the base says of the SGLang it runs on (not what runs: outside the hash).
SGLANG_KEYS = {"version": "the SGLang release on the host, e.g. 0.5.23 (else deploy asks the host)",
               "since": "the oldest SGLang release the base is written for",
               "fork": f"a fork whose flags the release lacks: {', '.join(OVERLAYS)}",
               "extra_flags": "flags of a private build, as a list (taken as they are)"}
VLLM_KEYS = {"version": "the vLLM release on the host, e.g. 0.34.0 (else deploy asks the host)",
             "since": "the oldest vLLM release the base is written for"}
# The release section of each family: its key in a base, and the keys it takes.
RELEASE_KEYS = {"sglang": SGLANG_KEYS, "vllm": VLLM_KEYS}


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
    sglang: dict = field(default_factory=dict)
    probes: tuple = ()   # DOTTED.PATH[:MODE] texts (ddlab.probes), canonical, in order
    family: Family | str = DEFAULT_FAMILY   # a name is read as its Family (config.families)
    vllm: dict = field(default_factory=dict)

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        put("family", self.family if isinstance(self.family, Family)
            else family_named(self.family))
        put("description", " ".join(str(self.description or "").split()))
        if self.python is not None and (not isinstance(self.python, str) or not self.python):
            raise ConfigError(f"python={self.python!r}: must be a path or null (the host's)",
                              fix="try --set python=/opt/sglang/.venv/bin/python", key="python")
        if not isinstance(self.module, str) or not _MODULE.fullmatch(self.module):
            raise ConfigError(f"module={self.module!r}: must be a dotted module name",
                              fix="try --set module=sglang.launch_server", key="module")
        for name in RELEASE_KEYS:
            put(name, _checked_release(getattr(self, name), name, self.family.name))
        put("flags", self.family.check_flags(_mapping(self.flags, "flags"), release=self.release))
        put("env", _checked_env(self.env))
        for name, value in [*self.flags.items(), *self.env.items()]:  # masked from now on
            if looks_secret(name):
                remember_secret(name, value)
        put("unit", check_unit_fields(_mapping(self.unit, "unit")))
        put("probes", tuple(spec.to_text() for spec in parse_probes(self.probes or ())))

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
        family = family_named(d.get("family"))
        flags = _mapping(d.get("flags"), "flags")
        family.check_base_flag_names(flags)
        return cls(base=str(base or d.get("base") or "config"),
                   description=d.get("description") or "",
                   python=command.get("python"), module=command.get("module"), flags=flags,
                   env=_mapping(d.get("env"), "env"), unit=_mapping(d.get("unit"), "unit"),
                   sglang=_mapping(d.get("sglang"), "sglang"), probes=d.get("probes") or (),
                   family=family, vllm=_mapping(d.get("vllm"), "vllm"))

    @property
    def release(self) -> dict:
        """The family's release section (``sglang:`` or ``vllm:``): version, since, ..."""
        return getattr(self, self.family.name)

    def to_dict(self) -> dict:
        """The base-file shape; unknown SGLang flags written ``--name`` (verbatim on
        reload); ``family`` and its release section only for a family other than sglang."""
        out = {"base": self.base, "description": self.description,
               "command": {"python": self.python, "module": self.module},
               "flags": {(n if n in flagreg.FLAGS else f"--{n}"): copy_value(v)
                         for n, v in self.flags.items()},
               "env": dict(self.env), "unit": {k: copy_value(v) for k, v in self.unit.items()},
               "sglang": {k: copy_value(v) for k, v in self.sglang.items()},
               "probes": list(self.probes)}
        if self.family.name == DEFAULT_FAMILY:
            return out
        del out["sglang"]
        return {**out, "family": self.family.name, "flags": copy.deepcopy(self.flags),
                self.family.name: copy.deepcopy(self.release)}

    @functools.cached_property
    def hash(self) -> str:
        """12 hex digits of the config's content (computed once: the config is frozen). Secret-named values (a token, an API
        key) count as present, not by value: they do not change what the server does,
        the store never keeps them, and a resumed sweep must find its cells again."""
        def blind(mapping: dict) -> dict:
            return {k: ("<secret>" if looks_secret(k) and isinstance(v, (str, int, float))
                        and not isinstance(v, bool) else v) for k, v in mapping.items()}

        payload = {"python": self.python, "module": self.module, "flags": blind(self.flags),
                   "env": blind(self.env), "unit": self.unit}
        if self.family.name != DEFAULT_FAMILY:  # every SGLang hash stays what it was
            payload["family"] = self.family.name
        if self.probes:  # a probed server is another variant (the baseline never has any)
            payload["probes"] = list(self.probes)
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
        words = chain.from_iterable(self.family.command_groups(self))
        return [exe, "-m", self.module, *words]


def copy_value(value):
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
            guess = closest(str(key), known)
            hint = f"did you mean {guess}? " if guess else ""
            raise ConfigError(f"{where} key {key!r}: must be one of {', '.join(known)}",
                              fix=f"{hint}flags go under flags:", key=key)


def _checked_release(given, section: str, family: str) -> dict:
    """A release section (``sglang:``, ``vllm:``): only the config's own family's."""
    keys, given = RELEASE_KEYS[section], _mapping(given, section)
    if given and section != family:
        raise ConfigError(f"{section}: {', '.join(map(str, given))}: a {family} base names its "
                          f"release under {family}:, not {section}:",
                          fix=f"write {family}: {{{', '.join(RELEASE_KEYS[family])}}}",
                          key=section)
    out = {}
    for key, value in given.items():
        if key not in keys:
            raise ConfigError(f"{section}.{key}: not a key ddlab knows; known: "
                              + ", ".join(keys), fix="; ".join(
                                  f"{k}: {v}" for k, v in keys.items()), key=f"{section}.{key}")
        if value is None:
            continue
        if key in ("version", "since") and not re.fullmatch(r"\d+(\.\d+){1,3}([.-]?(post|dev|rc)\d*)?",
                                                 str(value)):
            example = "0.5.23" if section == "sglang" else "0.34.0"
            raise ConfigError(f"{section}.{key}={value!r}: must be a release number",
                              fix=f"e.g. --set {section}.{key}={example}", key=f"{section}.{key}",
                              value=value)
        if key == "fork" and value not in OVERLAYS:
            raise ConfigError(f"sglang.fork={value!r}: ddlab has no table of that fork",
                              fix=f"one of {', '.join(OVERLAYS)}; for a private build's flags "
                                  "use sglang.extra_flags", key="sglang.fork", value=value)
        if key == "extra_flags":
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(
                    isinstance(v, str) and flagreg.NAME.fullmatch(v.lstrip("-")) for v in value):
                raise ConfigError(f"sglang.extra_flags={value!r}: must be a list of flag names",
                                  fix="e.g. [speculative-ddtree-shadow-linear]",
                                  key="sglang.extra_flags", value=value)
            value = [v.lstrip("-") for v in value]
        out[key] = str(value) if key in ("version", "since") else value
    return out


def _checked_env(given) -> dict:
    out = {}
    for name, value in _mapping(given, "env").items():
        check_env_name(name, key=f"env.{name}")
        if value is None:
            continue
        if not isinstance(value, (str, int, float, bool)):
            raise ConfigError(f"env.{name}={value!r}: must be a string or number",
                              fix=f"try --set env.{name}=VALUE", key=f"env.{name}", value=value)
        out[name] = flagreg.render_value(value)
    return out


# --- bases --------------------------------------------------------------------------


def list_bases(family: str | None = None) -> list[str]:
    """Names of the shipped base configs (``params/base/*.yaml``): every family's, or
    those of ``family`` (``sglang``: the bases that name none too)."""
    paths = sorted((params_dir() / "base").glob("*.yaml"))
    if family is None:
        return [p.stem for p in paths]
    wanted = family_named(family).name
    return [p.stem for p in paths
            if ((yamlio.load(p.read_text()) or {}).get("family") or DEFAULT_FAMILY) == wanted]


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
            guess = closest(text, names)
            raise ConfigError(f"base {text!r}: not found; available: {', '.join(names) or 'none'}",
                              fix=f"did you mean {guess}?" if guess else
                              "pass a name above or a path to a YAML file", value=text)
    try:
        data = yamlio.load(path.read_text(), keep_text=True)  # 010 stays 010, 3.10 3.10
        return Config.from_dict(data or {}, base=path.stem)
    except ValueError as err:
        raise ConfigError(f"{path}: not valid YAML ({err})",
                          fix="fix the YAML syntax", path=str(path)) from None
    except ConfigError as err:
        raise ConfigError(f"{path}: {err.message}",
                          fix=f"edit the file ({err.fix})" if err.fix else "edit the file",
                          **{**err.facts, "path": str(path)}) from None


# --- overrides ----------------------------------------------------------------------


# --- variants -----------------------------------------------------------------------


# --- names and descriptions ---------------------------------------------------------


