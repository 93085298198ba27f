"""Versioned ``vllm serve`` flag tables, generated from the real release wheels.

Contract::

    python tools/vllm_flags.py VERSION [VERSION...] [--setup] [--check]
                               [--venvs DIR] [--wheels DIR] [--out DIR]
    python tools/vllm_flags.py --committed --check     # every committed table, compared
    python tools/vllm_flags.py --committed --real-parse  # one-off: bases through the real CLI

For each version: run ``tools/vllm_parser_dump.py`` with the Python of the
throwaway venv ``VENVS/vllm-VERSION`` (``--setup`` makes it when absent:
``torch==2.13.0``, the local CPU build; ``vllm==VERSION`` with ``--no-deps``,
from ``WHEELS`` when its wheel lies there, else from the package index; and
the pure-Python packages in :data:`DEPS`, the ones the argument module's
import needs, found by importing it until nothing was missing), which builds
the parser that ``vllm serve`` builds, ``make_arg_parser`` of the release's
own ``cli_args`` module, and describes every action of ``parser._actions``
and the fields of ``SpeculativeConfig`` and ``CompilationConfig``; then write
``OUT/vllm-VERSION.json`` and rebuild ``OUT/index.json`` from every table in
OUT. ``--check`` writes nothing: it regenerates in memory and exits 1 when a
committed file differs. Exit 2 is a usage error (a venv missing without
``--setup`` included).

Why an import and not ``ast``: vLLM builds most options from its config
dataclasses at run time (``get_kwargs``, vllm/engine/arg_utils.py:442
(0.34.0)): names, types, choices and defaults come from type hints and
pydantic fields, which source text does not show. The import runs on a
CPU-only machine with ``VLLM_TARGET_DEVICE=cpu`` (defaults that vLLM resolves
from the platform are the CPU platform's: ddlab checks names, types and
choices, not defaults).

A table: the header (release, wheel and its sha256, how it was made, what it
cannot know); ``options`` (one action per line: option strings including the
``--no-``/``--disable-`` negatives vLLM registers, dest, action, type by name
and whether ``""``/``None`` read as None, the config class a JSON value is
validated into at parse time, choices, nargs, default, const, metavar,
deprecation as the source says it, help's first sentence, the ``file:line`` of
the ``add_argument`` call); ``speculative_config`` and ``compilation_config``
(each field's annotation as written, its JSON kinds, default, bounds,
``init``, ``file:line``; the speculative methods, a ``Literal``; the CUDA graph
modes, an enum). The index: per option string, first seen, versions present,
deprecated in, removed in; per release, the speculative methods and the
fields of both configs that were added or dropped.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["DEPS", "build_index", "build_table", "load_tables", "render", "setup_venv"]

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "lib" / "ddlab" / "config" / "vllm_flags"
DEFAULT_VENVS = Path("/work/venvs")
DEFAULT_WHEELS = Path("/work/wheels/vllm")
TORCH = "torch==2.13.0"  # the local CPU build; vLLM 0.33+ asks for 2.14.0, the parser does not care
# What `import vllm.entrypoints.*.cli_args` and make_arg_parser need, installed with
# --no-deps (found by importing until nothing was missing; the same set serves 0.30-0.34).
DEPS = ("aiohappyeyeballs==2.7.1 aiohttp==3.14.5 aiosignal==1.4.0 annotated-doc==0.0.7 "
        "annotated-types==0.8.0 anyio==4.16.0 apache-tvm-ffi==0.1.11 attrs==26.1.0 "
        "cachetools==8.0.2 cbor2==6.3.0 certifi==2026.10.19.post1 cloudpickle==3.1.3 "
        "fastapi==0.136.3 frozenlist==1.8.0 h11==0.16.0 httpcore2==2.16.2 httpx2==2.16.2 "
        "huggingface_hub==2.4.0 idna==3.20 llguidance==1.7.6 msgspec==0.23.0 multidict==7.2.1 "
        "numpy==2.4.6 openai==3.57.0 oss-harmony==0.0.11 packaging==26.4 "
        "partial-json-parser==0.2.1.1.post7 pillow==13.0.0 prometheus_client==0.26.0 "
        "propcache==0.5.4 psutil==7.2.2 py-cpuinfo==9.0.0 pybase64==1.5.1 pydantic==2.14.4 "
        "pydantic_core==2.50.5 PyYAML==6.0.4 pyzmq==27.3.0 regex==2026.11.19 requests==2.34.2 "
        "safetensors==0.8.0 sentencepiece==0.2.3 sniffio==1.3.1 starlette==1.10.0 "
        "tokenizers==0.23.3 tqdm==4.70.1 transformers==5.22.2 truststore==0.10.5 "
        "typing-inspection==0.4.5 urllib3==2.8.0 uvloop==0.23.0 xgrammar==0.2.8 "
        "yarl==1.25.1").split()
# And what the whole `vllm` CLI imports (--real-parse runs its real main()).
CLI_DEPS = ("click==8.5.1 einops==0.8.2 jmespath==1.1.0 model-hosting-container-standards==0.1.16 "
            "orjson==3.13.0 uvicorn==0.55.0 watchfiles==1.3.0").split()
CANNOT_KNOW = [
    "defaults vLLM resolves from the platform or the model later (most are None here and "
    "filled in create_engine_config); this table's defaults are the parser's, on a CPU platform",
    "cross-field rules checked when the engine config is made, e.g. SpeculativeConfig's "
    "_verify_args (tensor_parallel_size refused, num_speculative_tokens required) and which "
    "options each speculative method supports",
    "custom speculative methods a plugin registers at run time (0.34.0: "
    "register_speculative_method)",
    "what the draft or target checkpoint allows (a method is checked against the checkpoint "
    "only when the engine starts)",
]


# --- the throwaway venv -------------------------------------------------------------


def venv_python(version: str, venvs: Path) -> Path:
    return venvs / f"vllm-{version}" / "bin" / "python"


def setup_venv(version: str, venvs: Path, wheels: Path) -> Path:
    """Make ``venvs/vllm-VERSION`` (see the module docstring) unless it is there."""
    python = venv_python(version, venvs)
    if python.exists():
        return python
    run = lambda *args: subprocess.run(["nice", "-n", "19", *map(str, args)], check=True)  # noqa: E731
    run(sys.executable, "-m", "venv", python.parent.parent)
    pip = [python, "-m", "pip", "install", "-q"]
    run(*pip, TORCH)
    wheel = _wheel(version, wheels)
    run(*pip, "--no-deps", wheel or f"vllm=={version}")
    run(*pip, "--no-deps", *DEPS, *CLI_DEPS)
    return python


def _wheel(version: str, wheels: Path) -> Path | None:
    found = sorted(wheels.glob(f"vllm-{version}-*.whl")) if wheels.is_dir() else []
    return found[0] if found else None


# --- tables -------------------------------------------------------------------------


def build_table(version: str, venvs: Path, wheels: Path) -> dict:
    """The table of one release, from its venv's real parser."""
    python = venv_python(version, venvs)
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "PYTHONWARNINGS": "ignore"}
    child = subprocess.run(["nice", "-n", "19", str(python), str(HERE / "vllm_parser_dump.py")],
                           check=False, capture_output=True, text=True, env=env)
    lines = child.stdout.strip().splitlines()  # vLLM logs INFO lines to stdout first
    if child.returncode != 0 or not lines:
        raise RuntimeError(f"vllm {version}: building its parser failed "
                           f"(exit {child.returncode}):\n{child.stderr[-3000:]}")
    dumped = json.loads(lines[-1])
    if dumped["vllm"] != version:
        raise RuntimeError(f"{python} holds vllm {dumped['vllm']}, not {version}")
    wheel = _wheel(version, wheels)
    return {"vllm": version, "wheel": wheel.name if wheel else None,
            "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest() if wheel else None,
            "generated_by": "tools/vllm_flags.py: real import of the release's "
                            f"{dumped['parser']['built_by']} in a throwaway venv "
                            f"(torch {dumped['torch']}, Python {dumped['python']}, "
                            "VLLM_TARGET_DEVICE=cpu), parser._actions described",
            "parser": dumped["parser"], "cannot_know": CANNOT_KNOW,
            "options": [_row(a) for a in dumped["options"]],
            "speculative_config": dumped["speculative_config"],
            "compilation_config": dumped["compilation_config"]}


def _row(action: dict) -> dict:
    """One action as the table keeps it: the help's first sentence kept, empty keys dropped."""
    return {k: v for k, v in action.items() if v not in (None, False, "") or k in
            ("options", "nargs", "type", "choices", "default", "deprecated")}


def load_tables(out: Path = DEFAULT_OUT) -> dict[str, dict]:
    """The committed tables by version, oldest first."""
    tables = [json.loads(p.read_text()) for p in out.glob("vllm-*.json")]
    return {t["vllm"]: t for t in sorted(tables, key=lambda t: _version_key(t["vllm"]))}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def render(document: dict) -> str:
    """Stable JSON text: sorted keys; one row per line for options, flags and fields."""
    def block(key, value, indent=""):
        if key == "options":
            rows = ",\n".join(f"{indent} " + _dumps(row) for row in value)
            return f'{indent}"options": [\n{rows}\n{indent}]'
        if key in ("flags", "fields"):
            rows = ",\n".join(f"{indent} {_dumps(k)}: {_dumps(v)}" for k, v in value.items())
            return f"{indent}{_dumps(key)}: {{\n{rows}\n{indent}}}"
        if key in ("speculative_config", "compilation_config", "history"):
            inner = ",\n".join(block(k, v, indent + " ") for k, v in sorted(value.items()))
            return f"{indent}{_dumps(key)}: {{\n{inner}\n{indent}}}"
        return f"{indent}{_dumps(key)}: {_dumps(value)}"

    return "{\n" + ",\n".join(block(k, v) for k, v in document.items()) + "\n}\n"


def _dumps(value) -> str:
    return json.dumps(value, sort_keys=True)


# --- the index ----------------------------------------------------------------------


def build_index(tables: list[dict]) -> dict:
    """Across versions: each option string's history; methods and config fields per release."""
    tables = sorted(tables, key=lambda t: _version_key(t["vllm"]))
    versions = [t["vllm"] for t in tables]
    by_option = [{o: a for a in t["options"] for o in a["options"]} for t in tables]
    flags = {o: _history(o, versions, by_option) for o in sorted(set().union(*by_option))}
    history = {}
    for section in ("speculative_config", "compilation_config"):
        names = [set(t[section]["fields"]) for t in tables]
        history[section] = _changes(versions, names)
    history["speculative_methods"] = _changes(versions, [
        set(t["speculative_config"]["methods"]["SpeculativeMethod"]["values"]) for t in tables])
    history["cudagraph_modes"] = _changes(versions, [
        set(t["compilation_config"]["cudagraph_modes"]["members"]) for t in tables])
    return {"versions": versions, "history": history, "flags": flags}


def _history(option: str, versions: list[str], by_option: list[dict]) -> dict:
    rows = [(v, opts[option]) for v, opts in zip(versions, by_option) if option in opts]
    present = [v for v, _ in rows]
    deprecated = [(v, a["deprecated"]) for v, a in rows if a.get("deprecated")]
    after = versions.index(present[-1]) + 1
    return {"first_seen": present[0], "present_in": present,
            "deprecated_in": deprecated[0][0] if deprecated else None,
            "deprecation": deprecated[-1][1]["says"] if deprecated else None,
            "removed_in": versions[after] if after < len(versions) else None}


def _changes(versions: list[str], names: list[set]) -> dict:
    """Per version after the first: the names it added and dropped; the first in full."""
    out = {versions[0]: {"all": sorted(names[0])}}
    for i in range(1, len(versions)):
        out[versions[i]] = {"added": sorted(names[i] - names[i - 1]),
                            "dropped": sorted(names[i - 1] - names[i])}
    return out


# --- the one-off: rendered commands through the real CLI --------------------------------

# Words after `vllm serve Qwen/Qwen3-8B`: near misses, typed values, JSON keys and methods.
PROBES = [
    ("--max-num-seq 3 (a prefix)", ["--max-num-seq", "3"]),
    ("--max-num-sequences 3", ["--max-num-sequences", "3"]),
    ("--max-num-seqs 010", ["--max-num-seqs", "010"]),
    ("--max_num_seqs 8", ["--max_num_seqs", "8"]),
    ("--max-model-len 32k", ["--max-model-len", "32k"]),
    ("--max-model-len 32Ki", ["--max-model-len", "32Ki"]),
    ("--no-enable-prefix-caching", ["--no-enable-prefix-caching"]),
    ("spec key metod", ["--speculative-config", '{"metod":"eagle3","num_speculative_tokens":3}']),
    ("spec method eagle4", ["--speculative-config", '{"method":"eagle4","num_speculative_tokens":3}']),
    ("spec method medusa", ["--speculative-config", '{"method":"medusa","num_speculative_tokens":2}']),
    ("spec num_speculative_tokens 0",
     ["--speculative-config", '{"method":"ngram","num_speculative_tokens":0}']),
    ("spec kebab keys", ["--speculative-config",
                         '{"method":"ngram","num-speculative-tokens":3,"prompt-lookup-max":4}']),
    ("cc cudagraph_mode ful", ["--compilation-config", '{"cudagraph_mode":"ful"}']),
    ("cc cudagraph_mode piecewise", ["--compilation-config", '{"cudagraph_mode":"piecewise"}']),
    ("cc key cudagraph_sizes", ["--compilation-config", '{"cudagraph_sizes":[1,2]}']),
]


def real_parse(versions: list[str], venvs: Path) -> int:
    """Each vLLM base rendered by ddlab, and each probe, through each release's real CLI
    (tools/vllm_real_parse.py); prints one Markdown row per case: ddlab's word, the
    release's, and what the real SpeculativeConfig(**json) made of the JSON."""
    sys.path.insert(0, str(HERE.parent / "lib"))
    from ddlab.config.vllm import load_vllm_base, render_serve, vllm_base_names, vllm_table

    print("| release | case | ddlab | real parser | real SpeculativeConfig |\n|---|---|---|---|---|")
    for version in versions:
        cases = []
        for name in vllm_base_names():
            rendered = render_serve(load_vllm_base(name)["flags"], version)
            cases.append((f"base {name}", rendered.argv, "accepted" + (
                f" ({len(rendered.warnings)} warning)" if rendered.warnings else "")))
        for name, words in PROBES:
            found = vllm_table(version).check(["Qwen/Qwen3-8B", *words])
            errors = [f for f in found if f.level == "error"]
            said = "refused" if errors else "accepted" + (" (warning)" if found else "")
            cases.append((name, ["vllm", "serve", "Qwen/Qwen3-8B", *words], said))
        env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "PYTHONWARNINGS": "ignore"}
        child = subprocess.run(["nice", "-n", "19", str(venv_python(version, venvs)),
                                str(HERE / "vllm_real_parse.py")], check=False, env=env,
                               input=json.dumps([argv for _, argv, _ in cases]),
                               capture_output=True, text=True)
        real = [json.loads(line) for line in child.stdout.splitlines()
                if line.startswith('{"argv"')]
        if len(real) != len(cases):
            print(f"vllm {version}: the real CLI run failed:\n{child.stderr[-2000:]}")
            return 1
        for (name, _, ours), theirs in zip(cases, real):
            error = (theirs.get("error") or "")[:110].replace("|", "/")
            spec = (theirs.get("speculative_config") or "")[:110].replace("|", "/")
            print(f"| {version} | {name} | {ours} | {theirs['parsed']} {error} | {spec} |")
    return 0


# --- command line -------------------------------------------------------------------


def generate(versions: list[str], args) -> int:
    """Write (or, with ``--check``, compare) the tables of ``versions``, then the index."""
    missing = [v for v in versions if not venv_python(v, args.venvs).exists()]
    if missing and not args.setup:
        print(f"no venv for vllm {', '.join(missing)} under {args.venvs}; make it with: "
              f"python tools/vllm_flags.py {' '.join(missing)} --setup", file=sys.stderr)
        return 2
    for version in missing:
        setup_venv(version, args.venvs, args.wheels)
    texts = {args.out / f"vllm-{v}.json": render(build_table(v, args.venvs, args.wheels))
             for v in versions}
    tables = load_tables(args.out) if args.out.is_dir() else {}
    tables.update({json.loads(t)["vllm"]: json.loads(t) for t in texts.values()})
    texts[args.out / "index.json"] = render(build_index(list(tables.values())))
    if args.check:
        return _report_differences(texts, versions)
    args.out.mkdir(parents=True, exist_ok=True)
    for path, text in texts.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


def _report_differences(texts: dict[Path, str], versions: list[str]) -> int:
    stale = [p for p, text in texts.items() if not p.exists() or p.read_text() != text]
    for path in stale:
        if not path.exists():
            print(f"{path}: missing")
            continue
        diff = difflib.unified_diff(path.read_text().splitlines(), texts[path].splitlines(),
                                    str(path), "regenerated", lineterm="", n=0)
        print("\n".join(line[:240] for line in list(diff)[:20]))
    if stale:
        print(f"{len(stale)} file(s) differ from what the wheels give; to rewrite them, "
              f"run: python tools/vllm_flags.py {' '.join(versions)}")
    else:
        print(f"{len(texts)} file(s) agree with the wheels' parsers")
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", metavar="VERSION", help="e.g. 0.34.0")
    parser.add_argument("--committed", action="store_true",
                        help="also every version with a table in --out")
    parser.add_argument("--setup", action="store_true", help="make a missing venv")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed tables; exit 1 when they differ")
    parser.add_argument("--real-parse", action="store_true",
                        help="one-off: the vLLM bases and probes through each real CLI")
    parser.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="vllm-VERSION venvs")
    parser.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS, help="vllm wheels")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the tables live")
    args = parser.parse_args(argv)
    versions = list(args.versions)
    if args.committed:
        versions += list(load_tables(args.out)) if args.out.is_dir() else []
    if not versions:
        parser.error("no version: name one, or give --committed")
    versions = sorted(set(versions), key=_version_key)
    if args.real_parse:
        return real_parse(versions, args.venvs)
    return generate(versions, args)


if __name__ == "__main__":
    sys.exit(main())
