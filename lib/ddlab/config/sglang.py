"""What a real SGLang release accepts on its command line, from tables of its own parser.

The tables in ``sglang_flags/`` are generated from the release wheels by
``tools/sglang_flags.py`` (which also checks them; docs/sglang.md says how):
``sglang-<VERSION>.json`` describes every argparse action of that release
(option strings, type, choices, nargs, deprecation, ``file:line``);
``index.json`` follows each option string across the releases (first seen,
deprecated in, removed in, replacement) and the speculative algorithm names;
``ddtree-fork.json`` is the overlay of the DDTree fork's flags, which no
release has.

:func:`flag_table` gives the table for a version: the newest committed
release at or below it (a version older than all gets the oldest), the
overlays a base declares added. :meth:`FlagTable.check` reads an argv the way
that release's argparse would (``allow_abbrev`` prefix matching included:
``--cuda-graph-max-bs`` on 0.5.20+ is "ambiguous option") and returns
:class:`Finding` s: errors for what would stop the launch (an unrecognized,
ambiguous or removed option, a deprecated one whose action the release makes
refuse it, a value its type or choices refuse; a removed or refused one names
its replacement), warnings for what
starts but is not what the user thinks (a deprecated option, an abbreviation,
a speculative algorithm that is no builtin of that release). A value real
SGLang accepts is never refused. :func:`spelled` is a flag's name in a given
release, for advice that must work on the user's version.

A version with no table of its own is checked with a stand-in, and the
findings say so first (a warning naming the table used and the command that
generates the missing one, :data:`GENERATE`): between two tables, the nearest
older; newer than every table, the newest, and then an option, abbreviation or
value the newest does not know is a warning, never an error (that release may
have it); an option the history says was removed stays an error.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from importlib import resources

from ddlab.config.argv import arity, free_words
from ddlab.core.checks import closest

__all__ = ["FlagTable", "Finding", "flag_table", "table_of_parser", "releases", "nearest_release",
           "spelled", "history", "known_option_names", "human_readable_int", "OVERLAYS",
           "parse_version", "stand_in", "GENERATE"]

OVERLAYS = ("ddtree",)  # overlay name -> sglang_flags/<name>-fork.json
_TABLES = "sglang_flags"
GENERATE = "python tools/sglang_flags.py"  # + VERSION: writes its table and the index


@dataclass(frozen=True)
class Finding:
    """One thing a release's parser would say of a command: ``level`` error | warning."""

    level: str
    option: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}" if self.fix else self.message


def parse_version(text: str) -> tuple:
    """``0.5.10.post1`` -> (0, 5, 10, 1): comparable; non-numeric parts count as 0."""
    parts = re.findall(r"\d+", str(text))
    return tuple(int(p) for p in parts) or (0,)


@functools.cache
def _read(name: str) -> dict:
    return json.loads(resources.files(__package__).joinpath(_TABLES, name).read_text())


def releases() -> list[str]:
    """The releases with a committed table, oldest first."""
    return list(_read("index.json")["versions"])


def nearest_release(version: str | None) -> str:
    """The committed release whose parser stands for ``version``: the newest at or below
    it (the oldest when it is older than all); the newest when ``version`` is None."""
    return stand_in(version, releases())


def stand_in(version: str | None, known: list[str]) -> str:
    """Of ``known`` releases (oldest first), the one whose table stands for ``version``: the
    newest at or below it, the oldest when it is older than all, the newest for None. Both
    families' tables (this module's and :mod:`ddlab.config.vllm`'s) are read so."""
    if not version:
        return known[-1]
    at_or_below = [r for r in known if parse_version(r) <= parse_version(version)]
    return at_or_below[-1] if at_or_below else known[0]


def history(option: str) -> dict | None:
    """An option string's history across the releases (``index.json``), or None."""
    return _read("index.json")["flags"].get(option)


@functools.cache
def known_option_names() -> frozenset[str]:
    """Every option name (no dashes) of any release or overlay: never a typo of another."""
    names = {o.lstrip("-") for o in _read("index.json")["flags"]}
    for overlay in OVERLAYS:
        names |= {o.lstrip("-") for a in _read(f"{overlay}-fork.json")["options"]
                  for o in a["options"]}
    return frozenset(names)


def spelled(option: str, version: str | None) -> str:
    """``option`` as the release standing for ``version`` spells it: a newer name is
    given back as the older name it replaced when the release predates it
    (``--cuda-graph-max-bs-decode`` on 0.5.10 is ``--cuda-graph-max-bs``), and an
    older name as its replacement once it is removed."""
    release = nearest_release(version)
    table = flag_table(release)
    if table.action(option) is not None:
        return option
    past = history(option)
    if past and past.get("removed_in") and past.get("replacement"):
        replacement = past["replacement"].split("=")[0]
        if table.action(replacement) is not None:
            return replacement
    for old, record in _read("index.json")["flags"].items():
        if (record.get("replacement") or "").split("=")[0] == option and table.action(old):
            return old
    return option


@dataclass
class FlagTable:
    """One release's parser as data (plus overlays); see the module docstring."""

    version: str                    # the release the table is of
    asked: str | None               # the version it stands for ("" when none was asked)
    actions: list[dict]
    algorithms: dict = field(default_factory=dict)   # name -> "builtin" | "alias of X"
    overlays: tuple[str, ...] = ()
    product: str = "SGLang"         # another parser's tables say whose they are

    @functools.cached_property
    def by_option(self) -> dict[str, dict]:
        return {o: a for a in self.actions for o in a["options"]}

    @property
    def label(self) -> str:
        """``SGLang 0.5.23`` (``for 0.5.25``, when it stands for another version)."""
        if self.product != "SGLang":
            return self.product
        name = f"SGLang {self.version}" + "".join(f" + {o} fork" for o in self.overlays)
        if self.asked and parse_version(self.asked) != parse_version(self.version):
            name += f" (for {self.asked}: the nearest release with a table)"
        return name

    @property
    def stand_in(self) -> str | None:
        """How the table stands for the version asked: None (its own, or none asked),
        ``newer`` (asked is newer than every table), ``between`` or ``older``."""
        if self.product != "SGLang" or not self.asked or \
                parse_version(self.asked) == parse_version(self.version):
            return None
        if parse_version(self.asked) > parse_version(releases()[-1]):
            return "newer"
        return "between" if parse_version(self.asked) > parse_version(self.version) else "older"

    def _stand_in_warning(self) -> list[Finding]:
        how = {"newer": f"newer than every table ddlab has; checked against SGLang "
                        f"{self.version}, the newest: an option or value that table does not "
                        "know is a warning, not an error",
               "between": f"no table of its own; checked against SGLang {self.version}, the "
                          "nearest older: flags added or removed since are not known",
               "older": f"older than every table ddlab has; checked against SGLang "
                        f"{self.version}, the oldest"}.get(self.stand_in)
        if how is None:
            return []
        return [Finding("warning", "sglang.version", f"SGLang {self.asked}: {how}",
                        f"generate its table: {GENERATE} {self.asked}")]

    def action(self, option: str) -> dict | None:
        return self.by_option.get(option)

    def match(self, word: str) -> tuple[str | None, str]:
        """``(option, how)``: argparse's reading of ``word`` (allow_abbrev on): how is
        ``exact``, ``prefix``, ``ambiguous: A, B`` or ``unrecognized``."""
        name = word.split("=", 1)[0]
        if name in self.by_option:
            return name, "exact"
        matches = sorted(o for o in self.by_option if o.startswith(name)) \
            if name.startswith("--") and len(name) > 2 else []
        if len(matches) > 1:
            return None, "ambiguous: " + ", ".join(matches)
        if matches:
            return matches[0], "prefix"
        return None, "unrecognized"

    def check(self, argv: list[str]) -> list[Finding]:
        """What this release's parser makes of ``argv`` (the words after ``-m MODULE``)."""
        findings: list[Finding] = self._stand_in_warning()
        i = 0
        while i < len(argv):
            word, i = argv[i], i + 1
            if not word.startswith("-"):
                findings.append(Finding("error", word, f"{word!r}: not an option, and no "
                                        f"option before it takes it ({self.label})",
                                        "drop it, or give it to the flag it belongs to"))
                continue
            option, how = self.match(word)
            if option is None:
                findings.append(self._unvouched(self._unknown(word.split("=", 1)[0], how)))
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
            findings += map(self._unvouched, self._values(option, action, values))
            findings += self._deprecated(option, action)
            if how == "prefix":
                findings.append(Finding("warning", option, f"{word.split('=')[0]}: taken by "
                                        f"{self.label}'s argparse as an abbreviation of {option}",
                                        f"write {option} in full"))
        return findings

    def _unvouched(self, finding: Finding) -> Finding:
        """On a release newer than every table, an error the newest table raises only
        because it does not know an option or a value is a warning (see the docstring)."""
        if self.stand_in != "newer" or finding.level != "error" or \
                _removed(finding.option, self.version):
            return finding
        return Finding("warning", finding.option, f"{finding.message}; the host runs SGLang "
                       f"{self.asked}, newer than that table: its own parser decides",
                       f"generate its table: {GENERATE} {self.asked}")

    def _unknown(self, name: str, how: str) -> Finding:
        past = history(name)
        if _removed(name, self.version):
            replacement = past.get("replacement")
            use = f"use {replacement}" if replacement else "drop it (nothing replaced it)"
            return Finding("error", name, f"{name}: removed in SGLang {past['removed_in']} "
                           f"({self.label} refuses it: {_argparse_words(name, how)})",
                           f"{use}; on older releases it was "
                           + ("deprecated from " + past["deprecated_in"]
                              if past.get("deprecated_in") else "accepted"))
        if how.startswith("ambiguous"):
            return Finding("error", name, f"{name}: ambiguous option for {self.label} (could "
                           f"match {how.split(': ', 1)[1]})", "write the full option name")
        guess = closest(name, self.by_option)
        hint = f"did you mean {guess}? " if guess else ""
        return Finding("error", name, f"{name}: not an option of {self.label} (argparse: "
                       f"unrecognized arguments)", f"{hint}a flag of a private build goes "
                       "in the base's sglang.extra_flags; a fork's set in sglang.fork")

    def _values(self, option: str, action: dict, values: list[str]) -> list[Finding]:
        findings = []
        for value in values:
            problem = _type_problem(action, value)
            if problem:
                findings.append(Finding("error", option, f"{option}={value!r}: {problem} "
                                        f"({self.label})", _value_fix(option, action)))
        if option == "--speculative-algorithm" and values and action.get("choices") is None:
            findings += self._algorithm(values[0])
        return findings

    def _algorithm(self, name: str) -> list[Finding]:
        """The name as SGLang resolves it: upper-cased, then a builtin, an alias or a plugin's."""
        upper = name.upper()
        if not self.algorithms or upper in self.algorithms:
            return []
        builtins = ", ".join(sorted(n for n, how in self.algorithms.items() if how == "builtin"))
        return [Finding("warning", "--speculative-algorithm", f"--speculative-algorithm {name}: "
                        f"no builtin of {self.label} ({builtins}); it starts only if a plugin "
                        f"registers {upper}, else SGLang stops with 'Unknown speculative "
                        f"algorithm name: {upper}'",
                        "declare the fork that has it (sglang.fork) or pick a builtin")]

    def _deprecated(self, option: str, action: dict) -> list[Finding]:
        deprecated = action.get("deprecated")
        if not deprecated:
            return []
        replacement = deprecated.get("replacement")
        use = f"use {replacement}" if replacement else "drop it"
        if deprecated.get("on_use") == "errors":  # its action calls parser.error: exit 2
            return [Finding("error", option, f"{option}: no longer supported by {self.label} "
                            f"(deprecated; its argparse action stops the launch with an error)",
                            use)]
        does = {"ignored": "it is ignored", "stores": "it still works"}.get(
            deprecated.get("on_use"), "it still parses")
        return [Finding("warning", option, f"{option}: deprecated in {self.label} ({does})", use)]


def flag_table(version: str | None = None, *, overlays=(), extra_flags=()) -> FlagTable:
    """The table standing for ``version`` (see :func:`nearest_release`), with the
    overlays a base declares (``sglang.fork``) and its private build's ``extra_flags``
    (taken as they are: any number of values, not judged)."""
    release = nearest_release(version)
    base = _read(f"sglang-{release}.json")
    actions = list(base["options"]) + [_free_action(name) for name in extra_flags]
    algorithms = _algorithms(release)
    for overlay in overlays:
        if overlay not in OVERLAYS:
            raise ValueError(f"overlay {overlay!r}: not one of {', '.join(OVERLAYS)}")
        extra = _read(f"{overlay}-fork.json")
        actions += extra["options"]
        algorithms.update({name: "builtin" for name in extra.get("speculative_algorithms", {})})
    return FlagTable(version=release, asked=version or "", actions=actions,
                     algorithms=algorithms, overlays=tuple(overlays))


def table_of_parser(parser, *, name: str, extra_flags=()) -> FlagTable:
    """A table of any argparse parser (the embedded target's own, say)."""
    actions = []
    for action in parser._actions:  # argparse keeps no public list of its actions
        if not action.option_strings or action.dest == "help":
            continue
        kind = getattr(action.type, "__name__", None) if action.type else None
        actions.append({"options": list(action.option_strings), "nargs": action.nargs,
                        "type": kind if kind in _TYPES else None,
                        "choices": list(action.choices) if action.choices else None,
                        "deprecated": None})
    actions += [_free_action(flag) for flag in extra_flags]
    return FlagTable(version="", asked="", actions=actions, product=name)


def _removed(name: str, version: str) -> bool:
    """Whether the history says ``name`` was removed in ``version`` or before."""
    past = history(name)
    return bool(past and past.get("removed_in")
                and parse_version(past["removed_in"]) <= parse_version(version))


def _free_action(name: str) -> dict:
    option = name if name.startswith("-") else f"--{name}"
    return {"options": [option], "nargs": "*", "type": None, "choices": None, "deprecated": None}


def _algorithms(release: str) -> dict:
    names = _read("index.json")["speculative_algorithms"]["names"]
    out = {}
    for name, record in names.items():
        if release in record.get("builtin_in", ()):
            out[name] = "builtin"
        elif release in record.get("alias_in", ()):
            out[name] = f"alias of {record.get('alias_of')}"
    return out


# --- argparse's rules, as the tables need them -----------------------------------------


def human_readable_int(text: str) -> int:
    """SGLang's own reading (0.5.23 ``utils/common.py:3394``): ``32k`` = 32000,
    ``32Ki`` = 32768; suffixes are case-sensitive; IEC suffixes take no decimals."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text.strip())
    if not match:
        return int(text)
    number, suffix = match.groups()
    if suffix.endswith("i"):
        if "." in number:
            raise ValueError(f"{text}: an IEC suffix takes a whole number")
        return int(number) * 2 ** (10 * (1 + "KMGT".index(suffix[0])))
    return int(Decimal(number) * 10 ** (3 * (1 + "kMGT".index(suffix))))


_TYPES = {"int": int, "float": float, "human_readable_int": human_readable_int}
_TYPE_WORDS = {"int": "an integer", "float": "a number",
               "human_readable_int": "an integer (32768, 32k, 32Ki)"}


def _type_problem(action: dict, value: str) -> str | None:
    convert = _TYPES.get(action.get("type"))
    try:
        typed = convert(value) if convert else value
    except (ValueError, InvalidOperation, ArithmeticError):
        return f"not {_TYPE_WORDS[action['type']]}"
    choices = action.get("choices")
    if choices is not None and typed not in choices and value not in map(str, choices):
        return "not one of " + ", ".join(map(str, choices))
    return None


def _value_fix(option: str, action: dict) -> str:
    if action.get("choices") is not None:
        return f"choose one of {', '.join(map(str, action['choices']))}"
    return f"give {option} {_TYPE_WORDS.get(action.get('type'), 'a valid value')}"


def _argparse_words(name: str, how: str) -> str:
    if how.startswith("ambiguous"):
        return f"ambiguous option: {name} could match {how.split(': ', 1)[1]}"
    return f"unrecognized arguments: {name}"


