"""Versioned SGLang flag tables, generated from the real release wheels.

Contract::

    python tools/sglang_flags.py VERSION [VERSION...] [--out DIR] [--cache DIR] [--check]
    python tools/sglang_flags.py --committed --registry-from 0.5.10   # every table, in one

``--committed`` adds every version with a table in DIR; ``--registry-from V``
adds every release of sglang on the package index at or above V (``pip index
versions sglang``: post releases included, pre-releases not), so one command
refreshes every table and generates the missing ones. For each version: fetch ``sglang==VERSION`` with ``pip download --no-deps``
into ``CACHE/wheels`` (a wheel already there is reused), build the argparse
parser that the release's ``ServerArgs.add_cli_args(parser)`` builds, describe
every action and write ``DIR/sglang-VERSION.json``; then rebuild
``DIR/index.json`` from all the tables in DIR. ``--check`` writes nothing: it
regenerates in memory and exits 1 when a committed file differs (the tests
run the same comparison). Exit 2 is a usage error.

Why: ddlab validates server flags before anything touches a host, and the
authority on what a release accepts is that release's own parser, not a
hand-written list. SGLang renames and retires flags often: ``--cuda-graph-max-bs``
is a deprecated alias in 0.5.14-0.5.18 and gone in 0.5.20, where argparse's
prefix matching turns it into "ambiguous option: --cuda-graph-max-bs could
match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill".

How the parser is obtained: ``tools/sglang_slice.py`` runs the wheel's own
``add_cli_args`` in a child ``python -I -S``, importing from the wheel only the
top-level statements the parser needs (a *sliced import*; its docstring says
why and how). A real ``import sglang.srt.server_args`` needs torch,
transformers and some 70 packages in all; checked against one, the sliced parser
agreed on every option of every committed version (docs/sglang.md). The
speculative-algorithm registry is read from source with ``ast``, not run.

A table: ``options`` (one action per line: every option string, dest, action,
type function and where it is defined, exact choices, nargs, default, const,
metavar, deprecation with replacement and what using it does, help's first
line, and the ``file:line`` of its ``add_argument`` call or record field; code
outside the sglang package, such as ``argparse`` adding ``-h`` or a ``json.loads``
type, by its dotted name with no path or line: sglang_slice.py says why),
``speculative_algorithms`` (builtins, aliases such as NEXTN -> EAGLE, whether
names are upper-cased, with ``file:line``), and the wheel's name and sha256.
The index: per option string, first version seen, versions present,
deprecated-in with replacement, removed-in (the first committed version
without it) and what the newest version's argparse makes of it now.
Reading an argv with a table the way argparse would (exact, ``--opt=value``,
unique-prefix and ambiguous matching, nargs, choices, typed values) is the
library's: :class:`ddlab.config.sglang.FlagTable`.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

__all__ = ["build_index", "build_table", "fetch_wheel", "load_tables", "match_option", "render"]

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))  # this checkout's ddlab, installed or not
sys.path.insert(0, str(HERE))  # and the wheel fetcher beside this file
from ddlab.config.sglang import FlagTable  # noqa: E402  (one argparse emulation)
from fetch_wheels import download  # noqa: E402

DEFAULT_OUT = HERE.parent / "lib" / "ddlab" / "config" / "sglang_flags"
DEFAULT_CACHE = Path.home() / ".cache" / "ddlab" / "sglang"
MSGSPEC = "msgspec==0.23.0"  # real in the child: 0.5.20+ declares arguments as msgspec records


# --- fetching the wheels ----------------------------------------------------------


def fetch_wheel(spec: str, cache: Path) -> Path:
    """The wheel of ``spec`` (``sglang==0.5.23``) in ``cache/wheels``, downloaded if absent
    (tools/fetch_wheels.py's ``download``); FileNotFoundError where pip got none."""
    name, version = spec.split("==")
    return download(name, version, cache / "wheels")


def _msgspec_dir(cache: Path) -> Path:
    """A folder holding the real msgspec package, unpacked from its wheel once."""
    target = cache / "deps" / MSGSPEC.replace("==", "-")
    if not (target / "msgspec").is_dir():
        with zipfile.ZipFile(fetch_wheel(MSGSPEC, cache)) as wheel:
            wheel.extractall(target)
    return target


# --- the speculative-algorithm registry (read from source, not run) ---------------


def spec_registry(wheel: zipfile.ZipFile) -> dict:
    """Builtin algorithm names, aliases and how ``--speculative-algorithm`` resolves."""
    path = "sglang/srt/speculative/spec_info.py"
    cls = next(n for n in ast.walk(ast.parse(wheel.read(path)))
               if isinstance(n, ast.ClassDef) and n.name == "SpeculativeAlgorithm")
    members = [s for s in cls.body if isinstance(s, ast.Assign)
               and isinstance(s.targets[0], ast.Name)]
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
    resolve, register = methods["from_string"], methods.get("register")
    return {
        "builtins": {s.targets[0].id: f"{path}:{s.lineno}" for s in members},
        "aliases": _aliases(wheel),
        "case_insensitive": any(isinstance(n, ast.Attribute) and n.attr == "upper"
                                for n in ast.walk(resolve)),
        "resolved_at": f"{path}:{resolve.lineno}",
        "plugin_register": f"{path}:{register.lineno}" if register else None,
    }


def _aliases(wheel: zipfile.ZipFile) -> dict:
    """``if speculative_algorithm == "NEXTN" ...: ... "EAGLE"`` in server args code."""
    files = [f for f in ("sglang/srt/server_args.py", "sglang/srt/arg_groups/speculative_hook.py")
             if f in wheel.namelist()]
    found = {}
    for path in files:
        for node in ast.walk(ast.parse(wheel.read(path))):
            target = _constant_result(node.body) if isinstance(node, ast.If) else None
            for name in _compared_names(node.test) - {target} if target else ():
                found[name] = {"to": target, "where": f"{path}:{node.lineno}"}
    return dict(sorted(found.items()))


def _compared_names(test: ast.expr) -> set[str]:
    out = set()
    for node in ast.walk(test):
        if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq)
                and "speculative_algorithm" in ast.unparse(node.left)
                and isinstance(node.comparators[0], ast.Constant)):
            out.add(node.comparators[0].value)
    return out


def _constant_result(body: list[ast.stmt]) -> str | None:
    """The string a branch returns or assigns to speculative_algorithm, if it is one."""
    for stmt in reversed(body):
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Constant):
            return stmt.value.value
        if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
                and "speculative_algorithm" in ast.unparse(stmt.targets[0])):
            return stmt.value.value
    return None


# --- tables -------------------------------------------------------------------------


def build_table(version: str, cache: Path = DEFAULT_CACHE) -> dict:
    """The flag table of one release, from its wheel (fetched into ``cache`` if needed)."""
    wheel = fetch_wheel(f"sglang=={version}", cache)
    child = subprocess.run([sys.executable, "-I", "-S", str(HERE / "sglang_slice.py"),
                            str(wheel), str(_msgspec_dir(cache))],
                           check=False, capture_output=True, text=True)
    if child.returncode != 0:
        raise RuntimeError(f"sglang {version}: building its parser failed "
                           f"(exit {child.returncode}):\n{child.stderr[-3000:]}")
    inspected = json.loads(child.stdout)
    with zipfile.ZipFile(wheel) as zipped:
        algorithms = spec_registry(zipped)
    return {"sglang": version, "wheel": wheel.name,
            "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
            "generated_by": "tools/sglang_flags.py (sliced import of the wheel)",
            "parser": {"built_by": "ServerArgs.add_cli_args", "allow_abbrev": True},
            "stand_ins": inspected["stand_ins"],
            "speculative_algorithms": algorithms, "options": inspected["options"]}


def load_tables(out: Path = DEFAULT_OUT) -> dict[str, dict]:
    """The committed tables by version, oldest first."""
    tables = [json.loads(p.read_text()) for p in out.glob("sglang-*.json")]
    return {t["sglang"]: t for t in sorted(tables, key=lambda t: _version_key(t["sglang"]))}


def render(document: dict) -> str:
    """Stable JSON text: sorted keys, and one row per line for "options" and "flags"."""
    parts = []
    for key, value in document.items():
        if key == "options":
            rows = ",\n".join(" " + _dumps(row) for row in value)
            parts.append(f'"options": [\n{rows}\n]')
        elif key == "flags":
            rows = ",\n".join(f" {_dumps(name)}: {_dumps(row)}" for name, row in value.items())
            parts.append(f'"flags": {{\n{rows}\n}}')
        else:
            parts.append(f"{_dumps(key)}: {_dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _dumps(value) -> str:
    return json.dumps(value, sort_keys=True)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))  # 0.4.10.post2 > 0.4.10


def build_index(tables: list[dict]) -> dict:
    """Across versions: each option string's history, and the speculative algorithm names."""
    tables = sorted(tables, key=lambda t: _version_key(t["sglang"]))
    versions = [t["sglang"] for t in tables]
    by_option = [{o: a for a in t["options"] for o in a["options"]} for t in tables]
    flags = {option: _history(option, versions, by_option, tables[-1])
             for option in sorted(set().union(*by_option))}
    return {"versions": versions, "speculative_algorithms": _algorithm_history(tables),
            "flags": flags}


def _history(option: str, versions: list[str], by_option: list[dict], newest: dict) -> dict:
    rows = [(v, opts[option]) for v, opts in zip(versions, by_option) if option in opts]
    present = [v for v, _ in rows]
    deprecated = [(v, a["deprecated"]) for v, a in rows if a["deprecated"]]
    after = versions.index(present[-1]) + 1
    entry = {"first_seen": present[0], "present_in": present,
             "deprecated_in": deprecated[0][0] if deprecated else None,
             "replacement": deprecated[-1][1]["replacement"] if deprecated else None,
             "removed_in": versions[after] if after < len(versions) else None}
    if option not in by_option[-1]:
        entry["in_newest"] = {newest["sglang"]: match_option(newest, option)}
    return entry


def _algorithm_history(tables: list[dict]) -> dict:
    """Per name: versions where it is a builtin or an alias; per version: argparse choices."""
    names: dict[str, dict] = {}
    for table in tables:
        version, registry = table["sglang"], table["speculative_algorithms"]
        for name in registry["builtins"]:
            names.setdefault(name, {}).setdefault("builtin_in", []).append(version)
        for name, alias in registry["aliases"].items():
            names.setdefault(name, {}).setdefault("alias_in", []).append(version)
            names[name]["alias_of"] = alias["to"]
    choices = {t["sglang"]: next(a["choices"] for a in t["options"]
                                 if "--speculative-algorithm" in a["options"]) for t in tables}
    return {"names": dict(sorted(names.items())), "argparse_choices": choices}


# --- checking an argv list as argparse would ----------------------------------------


def match_option(table: dict, word: str) -> str:
    """What the release's argparse (allow_abbrev on) makes of ``word``: the option it
    means, or its error text (ddlab's one emulation: :meth:`FlagTable.match`)."""
    option, how = FlagTable(version=table["sglang"], asked="", actions=table["options"]).match(word)
    if option is not None:
        return option
    name = word.split("=", 1)[0]
    if how.startswith("ambiguous"):
        return f"error: ambiguous option: {name} could match {how.split(': ', 1)[1]}"
    return f"error: unrecognized arguments: {word}"


# --- command line -------------------------------------------------------------------


def registry_releases(since: str) -> list[str]:
    """Every final release of sglang the package index lists, ``since`` or newer, oldest
    first (``pip index versions``: the index pip is configured with)."""
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "sglang"],
                          check=False, capture_output=True, text=True)
    listed = re.search(r"^Available versions: (.+)$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or not listed:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"pip index versions sglang (exit {done.returncode}): {said}")
    found = [v.strip() for v in listed.group(1).split(",")]
    return sorted((v for v in found if re.fullmatch(r"\d+(\.\d+)*(\.post\d+)?", v)
                   and _version_key(v) >= _version_key(since)), key=_version_key)


def generate(versions: list[str], out: Path, cache: Path, check: bool) -> int:
    """Write (or, with ``check``, compare) the tables of ``versions``, then the index."""
    texts = {out / f"sglang-{v}.json": render(build_table(v, cache)) for v in versions}
    tables = load_tables(out) if out.is_dir() else {}
    tables.update({json.loads(t)["sglang"]: json.loads(t) for t in texts.values()})
    texts[out / "index.json"] = render(build_index(list(tables.values())))
    if check:
        return _report_differences(texts, versions)
    out.mkdir(parents=True, exist_ok=True)
    for path, text in texts.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


def _report_differences(texts: dict[Path, str], versions: list[str]) -> int:
    """Print what differs (the first lines of each diff); 1 when anything does."""
    stale = [path for path, text in texts.items()
             if not path.exists() or path.read_text() != text]
    for path in stale:
        if not path.exists():
            print(f"{path}: missing")
            continue
        diff = difflib.unified_diff(path.read_text().splitlines(), texts[path].splitlines(),
                                    str(path), "regenerated", lineterm="", n=0)
        print("\n".join(line[:240] for line in list(diff)[:20]))
    if stale:
        print(f"{len(stale)} file(s) differ from what the wheels give; to rewrite them, "
              f"run: python tools/sglang_flags.py {' '.join(versions)}")
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", metavar="VERSION", help="e.g. 0.5.23")
    parser.add_argument("--committed", action="store_true",
                        help="also every version with a table in --out")
    parser.add_argument("--registry-from", metavar="VERSION",
                        help="also every release on the package index at or above VERSION")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the tables live")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="wheels are kept here")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed tables; exit 1 when they differ")
    args = parser.parse_args(argv)
    versions = list(args.versions)
    if args.committed:
        versions += list(load_tables(args.out)) if args.out.is_dir() else []
    if args.registry_from:
        versions += registry_releases(args.registry_from)
    if not versions:
        parser.error("no version: name one, or give --committed or --registry-from")
    versions = sorted(set(versions), key=_version_key)
    return generate(versions, args.out, args.cache, args.check)


if __name__ == "__main__":
    sys.exit(main())
