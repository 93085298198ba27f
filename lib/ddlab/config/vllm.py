"""``vllm serve MODEL ...`` from a mapping, checked against the real release's parser tables.

The tables in ``vllm_flags/`` are generated from the release wheels by
``tools/vllm_flags.py`` (docs/vllm.md says how): ``vllm-<VERSION>.json``
describes every argparse action of that release's ``vllm serve`` (option
strings, hidden negatives included, type, choices, nargs, deprecation,
``file:line``) and the fields of ``SpeculativeConfig`` and
``CompilationConfig``; ``index.json`` follows each option across releases.

:func:`render_serve` turns ``{"model": ..., "speculative_config": {...},
"enforce_eager": True, "max_num_seqs": "010", ...}`` into argv words: a key is
its ``--kebab-name``; ``True`` a switch; ``False`` the switch's ``--no-``
form where the release has one (absent otherwise); ``None`` absent; a dict
one compact JSON argument; a list the flag's values; anything else its text
as given (``010`` stays ``010``: :mod:`ddlab.core.yamlio` keeps the text, the
flag's own type checks it, as argparse would read it). Then the argv is read
as the release's argparse would (:meth:`VllmTable.check`, with
:mod:`ddlab.config.vllm_json` for the JSON inside), and any error stops it
with a :class:`~ddlab.core.errors.ConfigError` naming the flag and the nearest
known one, the allowed values, or the release's config fields and methods.

The vLLM bases are bases like the others (``params/base/vllm-*.yaml``, ``family:
vllm``; :mod:`ddlab.config.families.vllm` makes them a command);
:func:`load_vllm_base` reads one's mapping as typed.

A release without its own table is read with the nearest older one (the
oldest, when it is older than all), and the findings say so first: a warning
naming the table used and the command that generates the missing one.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from ddlab.config.argv import arity, free_words
from ddlab.config.sglang import Finding, parse_version, stand_in
from ddlab.config.vllm_json import check_json_config, human_readable_int
from ddlab.core import yamlio
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError
from ddlab.core.paths import params_dir

__all__ = ["VllmTable", "Rendered", "vllm_table", "releases", "nearest_release", "all_options",
           "render_serve", "option_of", "option_words", "load_vllm_base", "vllm_base_names", "GENERATE"]

_TABLES = "vllm_flags"
GENERATE = "python tools/vllm_flags.py"  # + VERSION --setup: its venv, table and the index
JSON_CONFIGS = {"--speculative-config": "speculative_config",
                "--compilation-config": "compilation_config"}


@functools.cache
def _read(name: str) -> dict:
    return json.loads(resources.files(__package__).joinpath(_TABLES, name).read_text())


@functools.cache
def all_options() -> frozenset:
    """Every long option of every tabled release (``--max-num-seqs``), removed ones too."""
    return frozenset(o for o in _read("index.json")["flags"] if o.startswith("--"))


def releases() -> list[str]:
    """The vLLM releases with a committed table, oldest first."""
    return list(_read("index.json")["versions"])


def nearest_release(version: str | None) -> str:
    """The newest committed release at or below ``version`` (the oldest when it is older
    than all); the newest when ``version`` is None."""
    return stand_in(version, releases())


@dataclass
class VllmTable:
    """One release's ``vllm serve`` parser as data; see the module docstring."""

    version: str            # the release the table is of
    asked: str              # the version it stands for ("" when none was asked)
    table: dict

    @functools.cached_property
    def by_option(self) -> dict[str, dict]:
        return {o: a for a in self.table["options"] for o in a["options"]}

    product = "vLLM"

    @property
    def label(self) -> str:
        name = f"vLLM {self.version}"
        if self.asked and parse_version(self.asked) != parse_version(self.version):
            name += f" (for {self.asked}: no table of its own)"
        return name

    def stand_in_warning(self) -> list[Finding]:
        """A warning when this table stands for another release, naming both."""
        if not self.asked or parse_version(self.asked) == parse_version(self.version):
            return []
        how = ("the nearest older release with a table" if parse_version(self.asked) >
               parse_version(self.version) else "the oldest table, newer than it")
        return [Finding("warning", "vllm.version", f"vLLM {self.asked}: no table of its own; "
                        f"checked against vLLM {self.version}, {how}: flags, fields and "
                        "methods added or removed since are not known",
                        f"generate its table: {GENERATE} {self.asked} --setup")]

    def match(self, word: str) -> tuple[str | None, str]:
        """``(option, how)`` as the release's parser reads ``word``: underscores in the
        name read as dashes (FlexibleArgumentParser.parse_args), then argparse's exact,
        unique-prefix (``allow_abbrev``) or ambiguous match; how is ``exact``,
        ``prefix``, ``ambiguous: A, B`` or ``unrecognized``."""
        name = _dashed(word.split("=", 1)[0])
        if name in self.by_option:
            return name, "exact"
        matches = sorted(o for o in self.by_option if o.startswith(name)) \
            if name.startswith("--") and len(name) > 2 else []
        if len(matches) > 1:
            return None, "ambiguous: " + ", ".join(matches)
        return (matches[0], "prefix") if matches else (None, "unrecognized")

    def nearest(self, name: str) -> str | None:
        """The known long option close to ``name`` (core.checks.closest), None when none is."""
        return closest(name, [o for o in self.by_option if o.startswith("--")])

    def check(self, argv: list[str], *, custom_methods=()) -> list[Finding]:
        """What this release's parser makes of ``argv``, the words after ``vllm serve``."""
        findings = self.stand_in_warning()
        i = 1 if argv and not argv[0].startswith("-") else 0  # the model_tag positional
        while i < len(argv):
            word, i = argv[i], i + 1
            if not word.startswith("-"):
                findings.append(Finding("error", word, f"{word!r}: not an option, and no option "
                                        f"before it takes it ({self.label})",
                                        "drop it, or give it to the flag it belongs to"))
                continue
            option, how = self.match(word)
            if option is None:
                findings.append(self._unknown(_dashed(word.split("=", 1)[0]), how))
                i += free_words(argv[i:])
                continue
            action = self.by_option[option]
            inline = word.split("=", 1)[1:] if "=" in word else []
            try:
                count = 0 if inline else arity(option, action["nargs"], argv[i:])
            except ValueError as err:
                findings.append(Finding("error", option, f"{err} ({self.label})",
                                        "give the flag its value"))
                continue
            values, i = inline or argv[i:i + count], i + count
            findings += self._values(option, action, values, custom_methods)
            findings += self._notes(word, option, action, how)
        return findings

    def _unknown(self, name: str, how: str) -> Finding:
        if how.startswith("ambiguous"):
            return Finding("error", name, f"{name}: ambiguous option for {self.label} (could "
                           f"match {how.split(': ', 1)[1]})", "write the full option name")
        past = _read("index.json")["flags"].get(name)
        when = (f" (removed in vLLM {past['removed_in']})" if past and past.get("removed_in")
                and parse_version(past["removed_in"]) <= parse_version(self.version) else
                f" (first in vLLM {past['first_seen']})" if past else "")
        near = self.nearest(name)
        return Finding("error", name, f"{name}: not an option of {self.label}{when}",
                       f"did you mean {near}?" if near else "vllm serve --help lists the options")

    def _values(self, option: str, action: dict, values: list[str], custom) -> list[Finding]:
        findings = []
        for value in values:
            problem = _type_problem(action, value)
            if problem:
                findings.append(Finding("error", option, f"{option} {value!r}: {problem} "
                                        f"({self.label})", _value_fix(option, action)))
            elif option in JSON_CONFIGS and value not in ("", "None"):
                section = JSON_CONFIGS[option]
                findings += check_json_config(self.table[section], json.loads(value), option,
                                              self.label, custom_methods=custom,
                                              deprecated=self._deprecated_fields(section))
        return findings

    def _deprecated_fields(self, section: str) -> dict[str, str]:
        """A config's fields whose shortcut flag (same dest, the class's group) is deprecated."""
        cls = self.table[section]["class"]
        return {a["dest"]: a["deprecated"].get("says") or "its help says so"
                for a in self.table["options"] if a.get("group") == cls and a.get("deprecated")}

    def _notes(self, word: str, option: str, action: dict, how: str) -> list[Finding]:
        out = []
        if action.get("deprecated"):
            out.append(Finding("warning", option, f"{option}: deprecated in {self.label} "
                               f"({action['deprecated'].get('says') or 'its help says so'})",
                               "see its help for what replaces it"))
        if how == "prefix":
            out.append(Finding("warning", option, f"{word.split('=')[0]}: taken by "
                               f"{self.label}'s argparse as an abbreviation of {option}",
                               f"write {option} in full"))
        return out


def vllm_table(version: str | None = None) -> VllmTable:
    """The table standing for ``version`` (see :func:`nearest_release`)."""
    release = nearest_release(version)
    return VllmTable(version=release, asked=version or "", table=_read(f"vllm-{release}.json"))


# --- rendering ------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """A checked ``vllm serve`` command: its argv, the table read, what it warned of."""

    argv: list[str]
    table: str
    warnings: tuple[Finding, ...] = ()


def render_serve(config: Mapping, version: str | None = None, *, program=("vllm", "serve"),
                 custom_methods=()) -> Rendered:
    """``[*program, MODEL, --flag, value, ...]`` from ``config`` (see the module
    docstring), checked against the table for ``version``; ConfigError on any error.
    ``custom_methods``: speculative methods a vLLM plugin registers (0.34.0+)."""
    table = vllm_table(version)
    if not isinstance(config, Mapping) or not config.get("model"):
        raise ConfigError(f"vllm serve config {config!r}: needs a model",
                          fix="e.g. model: Qwen/Qwen3-8B", key="model")
    words, unknown = [str(config["model"])], []
    for key, value in config.items():
        option = option_of(str(key))
        if key == "model":
            continue
        if option not in table.by_option:  # a key is a full name: no abbreviation, no typo
            unknown.append(table._unknown(option, table.match(option)[1]))
        words += option_words(table, option, value)
    findings = unknown + [f for f in table.check(words, custom_methods=custom_methods)
                          if f not in unknown]  # an unknown key is said once
    errors = [f for f in findings if f.level == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more: " + "; ".join(map(str, errors[1:])) + ")" \
            if len(errors) > 1 else ""
        raise ConfigError(errors[0].message + more, fix=errors[0].fix, key=errors[0].option,
                          table=table.label, findings=findings)
    return Rendered([*program, *words], table.label,
                    tuple(f for f in findings if f.level == "warning"))


def option_of(key: str) -> str:
    """A mapping key as its option: ``max_num_seqs`` -> ``--max-num-seqs``."""
    return key if key.startswith("-") else "--" + key.replace("_", "-")


def option_words(table: VllmTable, option: str, value) -> list[str]:
    """The argv words of one option and its value."""
    action = table.by_option.get(option, {})
    if value is None:
        return []
    if isinstance(value, bool):
        if value:
            return [option]
        negative = _negative(option, action)
        return [negative] if negative else []
    if isinstance(value, Mapping):
        return [option, json.dumps(value, separators=(",", ":"))]
    if isinstance(value, list):
        return [option, *map(_text, value)]
    return [option, _text(value)]


def _negative(option: str, action: dict) -> str | None:
    """The form that sets a switch off (``--no-enforce-eager``), when the release has one."""
    candidates = [c for c in (re.sub(r"^--enable-", "--disable-", option), f"--no-{option[2:]}")
                  if c != option and c in action.get("options", ())]
    visible = [c for c in candidates if c not in action.get("hidden", ())]  # help shows these
    return (visible or candidates or [None])[0]


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# --- the vLLM bases ---------------------------------------------------------------------


def vllm_base_names() -> list[str]:
    """Names of the shipped bases that say ``family: vllm`` (``params/base/*.yaml``)."""
    return sorted(p.stem for p in (params_dir() / "base").glob("*.yaml")
                  if (yamlio.load(p.read_text()) or {}).get("family") == "vllm")


def load_vllm_base(name: str) -> dict:
    """A vLLM base's mapping, its values as typed (:func:`ddlab.core.yamlio.load`); the
    validated :class:`~ddlab.config.bases.Config` is ``load_base(name)``."""
    path = params_dir() / "base" / f"{name}.yaml"
    data = yamlio.load(path.read_text(), keep_text=True) or {} if path.is_file() else None
    if data is None or data.get("family") != "vllm":
        raise ConfigError(f"vLLM base {name!r}: not found; available: "
                          f"{', '.join(vllm_base_names()) or 'none'}", value=name,
                          fix="pass one of the names above")
    return data


# --- argparse's rules, as the tables need them ----------------------------------------


def _dashed(name: str) -> str:
    """FlexibleArgumentParser reads ``--max_num_seqs`` as ``--max-num-seqs`` (the name up
    to the first dot: vllm/utils/argparse_utils.py:379 (0.34.0))."""
    if not name.startswith("--"):
        return name
    head, dot, rest = name[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + rest


def _human_or_auto(text: str) -> int:
    return -1 if text.strip() in ("-1",) or text.strip().lower() == "auto" \
        else human_readable_int(text)


_TYPES = {"int": int, "float": float, "human_readable_int": human_readable_int,
          "human_readable_int_or_auto": _human_or_auto, "json": json.loads}
_WORDS = {"int": "an integer", "float": "a number", "json": "JSON",
          "human_readable_int": "an integer (25k = 25000, 1K = 1024)",
          "human_readable_int_or_auto": "an integer (25k, 1K), -1 or auto"}


def _type_problem(action: dict, value: str) -> str | None:
    if action.get("optional") and value in ("", "None"):
        return None
    convert = _TYPES.get(action.get("type"))
    try:
        typed = convert(value) if convert else value
    except (ValueError, ArithmeticError):
        return f"not {_WORDS[action['type']]}"
    choices = action.get("choices")
    if choices is not None and typed not in choices and value not in map(str, choices):
        return "not one of " + ", ".join(str(c) for c in choices if c is not None)
    return None


def _value_fix(option: str, action: dict) -> str:
    if action.get("choices") is not None:
        return "choose one of " + ", ".join(str(c) for c in action["choices"] if c is not None)
    return f"give {option} {_WORDS.get(action.get('type'), 'a valid value')}"
