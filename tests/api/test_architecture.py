"""The folder tree is the architecture, and the front door is the API.

- Layers import downward only, and no module imports itself back through others
  (an import graph built with ``ast``, every import counted, even one inside a
  function);
- ``ddlab.__all__`` is the API table in docs/DESIGN.md, and every name in it resolves;
- notebooks import ``ddlab`` and nothing deeper, and call only its API;
- the CLI's verbs hold no logic, and call the same functions as the notebooks;
- the library prints nothing itself: it logs (``ddlab.*``) or beats the heartbeat.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

import pytest

import ddlab

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"

# Layer of each top-level part of the package: a module may import its own part, or a
# part of a lower layer. Parts of one layer are siblings and import each other never.
# The package itself (ddlab/__init__.py) belongs to the front door: it re-exports ddlab.api.
# lab is one variant on one host; sweeps, many cells (grids, pools, searches) built of it.
LAYERS = {"core": 0, "probes": 1, "config": 2, "target": 2, "crashes": 2, "device_crashes": 3, "vllm_crashes": 4,
          "diagnosis": 5, "hosts": 5, "lab": 6, "sweeps": 7, "report": 8, "api": 9, "cli": 10, "start": 11}


def _modules() -> dict[str, Path]:
    out = {}
    for path in (LIB / "ddlab").rglob("*.py"):
        name = ".".join(path.relative_to(LIB).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _part(module: str) -> str:
    """``ddlab.lab.watch`` -> ``lab``; ``ddlab`` (the package itself) -> ``api``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "api"


def _resolve(name: str) -> str | None:
    """The ddlab module an imported name lives in (``ddlab.hosts.connect`` -> ``ddlab.hosts``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package upwards
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name) if name.startswith("ddlab") else None
            if target and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


@functools.cache
def _package_graph() -> dict[str, set[str]]:
    return {module: _imports(module, path) for module, path in MODULES.items()}


# Read at first use, not at import: every pytest process collects this module, and parsing
# the package's ~180 modules took about a second of each one's collection.
GRAPH: dict[str, set[str]] | None = None  # a test's own graph; None: the package's


def graph() -> dict[str, set[str]]:
    return GRAPH if GRAPH is not None else _package_graph()


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(m) for m in MODULES}
    assert parts <= set(LAYERS), f"give these a layer in LAYERS: {sorted(parts - set(LAYERS))}"


def test_imports_point_down_the_layers():
    upward = sorted(f"{a} imports {b} ({_part(a)} -> {_part(b)})"
                    for a, targets in graph().items() for b in targets
                    if _part(a) != _part(b) and LAYERS[_part(b)] >= LAYERS[_part(a)])
    assert not upward, "imports that do not point down:\n" + "\n".join(upward)


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph()[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph():
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles() == []


def test_the_checker_sees_a_cycle_and_an_upward_import(monkeypatch):
    """The two tests above can fail: a made-up graph with both faults is caught."""
    fake = {**graph(), "ddlab.core.paths": {"ddlab.sweeps.store"},
            "ddlab.sweeps.store": graph()["ddlab.sweeps.store"] | {"ddlab.core.paths"}}
    monkeypatch.setitem(globals(), "GRAPH", fake)
    assert ["ddlab.core.paths", "ddlab.sweeps.store"] in _cycles()
    with pytest.raises(AssertionError, match="ddlab.core.paths imports ddlab.sweeps.store"):
        test_imports_point_down_the_layers()


# --- sizes: no crowded room, no module of two concepts -----------------------------------

# A folder, its subfolders included, holds at most this share of the library's lines: a
# crowded one holds two concepts, as lab/ did before sweeps/ took its many cells (and
# diagnosis/ with its signature tables, 15.4 %, before crashes/ took them, crashes/ with both
# families' signatures, 15.2 %, before vllm_crashes/ took vLLM's, and crashes/ again at 15.0 %
# before device_crashes/ took the device's own texts).
MAX_FOLDER_SHARE = 0.15
MAX_MODULE_LINES = 400
# The modules past MAX_MODULE_LINES, each with its one concept: a module that passes it
# and is not here holds two (split it), or has earned its line here.
ONE_CONCEPT = {
    "ddlab.cli": "the ddlab command: each verb's arguments and its one API call",
    "ddlab.config.flags": "the flag table: every SGLang flag ddlab knows, and its type",
    "ddlab.config.sglang": "SGLang's own parser, read from a release, against ours",
    "ddlab.diagnosis.diagnosis": "a server log to a diagnosis: crashed, kind, phase, cause",
    "ddlab.hosts.ssh": "the SSH transport: one verified, persistent connection",
    "ddlab.lab.deploy": "Lab: a host held for a variant, its baseline always put back",
    "ddlab.lab.watch": "a deployed variant followed to its verdict",
    "ddlab.probes.hook": "the import hook inside the server (runs there, alone)",
    "ddlab.sweeps.run": "a sweep run on a held host: cells in order, committed one by one",
}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def _folder_lines() -> dict[str, int]:
    """Lines per folder below ddlab/, each module counted in every folder above it."""
    lines: dict[str, int] = {}
    for path in MODULES.values():
        for folder in path.relative_to(LIB / "ddlab").parents:
            if folder.parts:
                lines[str(folder)] = lines.get(str(folder), 0) + _lines(path)
    return lines


def test_no_folder_holds_more_than_its_share_of_the_lines():
    lines = _folder_lines()
    total = sum(_lines(path) for path in MODULES.values())
    crowded = {f: f"{n / total:.1%}" for f, n in lines.items() if n > MAX_FOLDER_SHARE * total}
    assert not crowded, f"folders past {MAX_FOLDER_SHARE:.0%} of {total} lines: {crowded}"


def test_every_long_module_holds_one_concept():
    long = {m: _lines(p) for m, p in MODULES.items() if _lines(p) > MAX_MODULE_LINES}
    unnamed = {m: n for m, n in long.items() if m not in ONE_CONCEPT}
    assert not unnamed, (f"modules past {MAX_MODULE_LINES} lines: {unnamed}; split each, or name "
                         "its one concept in ONE_CONCEPT")
    assert not [m for m in ONE_CONCEPT if m not in MODULES], "ONE_CONCEPT names a module gone"


# --- the front door ------------------------------------------------------------------


def _documented_api() -> list[str]:
    """The names in docs/DESIGN.md's API table (first column, in backquotes)."""
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    section = re.search(r"## The front door.*?\n(\|.*?)\n\n", design, re.S)
    assert section, "docs/DESIGN.md lacks the front door's table"
    rows = [line for line in section.group(1).splitlines()[2:] if line.startswith("|")]
    return [re.search(r"`([\w.]+)", row.split("|")[1]).group(1) for row in rows]


def test_all_is_the_documented_api():
    assert sorted(ddlab.__all__) == sorted(_documented_api())


def test_every_error_a_caller_catches_is_in_all():
    """A notebook imports only ddlab: ``except ddlab.LockError`` must work, without
    loading the front door's jobs."""
    import subprocess
    import sys

    from ddlab.core import errors

    assert set(errors.__all__) <= set(ddlab.__all__)
    code = ("import sys, ddlab; print(ddlab.LockError.__module__, ddlab.ConfigError.__module__, "
            "'ddlab.api' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split() == ["ddlab.core.errors", "ddlab.core.errors", "False"]


def test_a_lock_held_elsewhere_is_no_host_fault():
    """A LockError is not a HostError: ``except HostError`` (a lost connection, a
    refused login) never swallows "another run holds the host"; a Preempted is a LockError."""
    from ddlab.core.errors import HostError, LockError, Preempted

    assert not issubclass(LockError, HostError) and issubclass(Preempted, LockError)


@pytest.mark.parametrize("name", ddlab.__all__)
def test_every_api_name_resolves(name):
    assert getattr(ddlab, name) is not None


def test_importing_ddlab_loads_no_heavy_library():
    """The embedded server imports the ddlab package: it must stay light."""
    import subprocess
    import sys

    code = ("import sys, ddlab, ddlab.target.args; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'paramiko', 'ddlab.api') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


# --- notebooks -----------------------------------------------------------------------


def _notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def _notebook_tree(path: Path) -> ast.Module:
    nb = json.loads(path.read_text())
    source = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return ast.parse(source)


def _api_calls(tree: ast.AST, owner: str) -> set[str]:
    """Names ``F`` in calls ``owner.F(...)``."""
    return {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
            and n.func.value.id == owner}


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.name)
def test_notebooks_import_only_ddlab_and_call_its_api(path):
    tree = _notebook_tree(path)
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["import ddlab"], f"{path.name}: import ddlab, nothing deeper: {imports}"
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "ddlab"}
    assert used and used <= set(ddlab.__all__), f"{path.name}: not in the API: {used - set(ddlab.__all__)}"


# --- the CLI -------------------------------------------------------------------------

CLI = ast.parse((LIB / "ddlab" / "cli.py").read_text())
RUNS = {n.name.removeprefix("_run_"): n for n in CLI.body
        if isinstance(n, ast.FunctionDef) and n.name.startswith("_run_")}
LOGIC = (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.IfExp, ast.BoolOp, ast.ListComp,
         ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Lambda, ast.Match, ast.Compare)
SHOWING = {"print", "_show"}


@pytest.mark.parametrize("verb", sorted(RUNS))
def test_each_cli_verb_is_one_call_of_the_api(verb):
    body = RUNS[verb]
    logic = [type(n).__name__ for n in ast.walk(body) if isinstance(n, LOGIC)]
    assert not logic, f"_run_{verb} holds logic ({', '.join(logic)}): move it into ddlab.api"
    called = set()
    for node in ast.walk(body):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                assert func.id in SHOWING, f"_run_{verb} calls {func.id}(): only the API, and showing"
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id == "api":
                called.add(func.attr)
    assert called and called <= set(ddlab.__all__), f"_run_{verb}: {called - set(ddlab.__all__)}"


def test_the_logic_check_can_fail():
    bad = ast.parse("def _run_x(args):\n    return api.sweep() if args.y else 0\n").body[0]
    assert any(isinstance(n, LOGIC) for n in ast.walk(bad))


def _api_closure(names: set[str]) -> set[str]:
    """``names`` and every function of the front door (ddlab/api/) they call, transitively."""
    functions = {n.name: n for path in (LIB / "ddlab" / "api").glob("*.py")
                 for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.walk(functions.get(name, ast.Module(body=[], type_ignores=[]))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                todo.append(node.func.id)
    return seen


NOTEBOOK_VERBS = {"deploy.ipynb": "deploy", "poll.ipynb": "watch", "sweep.ipynb": "sweep",
                  "plot.ipynb": "plot", "bisect.ipynb": "bisect", "envelope.ipynb": "envelope"}


@pytest.mark.parametrize("notebook, verb", sorted(NOTEBOOK_VERBS.items()))
def test_the_cli_verb_and_its_notebook_call_the_same_functions(notebook, verb):
    from ddlab.api import PLOTS  # figures: a notebook shows them, `ddlab plot` saves them

    # check_parameters guards what papermill injects; a verb's argparse refuses unknown
    # options itself, so it has no use for it
    in_notebook = (_api_calls(_notebook_tree(ROOT / "notebooks" / notebook), "ddlab")
                   - set(PLOTS) - {"check_parameters"})
    by_verb = _api_calls(RUNS[verb], "api")
    assert in_notebook and in_notebook <= _api_closure(by_verb), (notebook, in_notebook, by_verb)


def test_every_notebook_has_its_verb():
    assert {p.name for p in _notebooks()} == set(NOTEBOOK_VERBS)


# --- one way to speak ------------------------------------------------------------------


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _part(m) not in ("cli", "start", "target")))
def test_the_library_prints_nothing(module):
    """Messages go to the ``ddlab.*`` loggers, waits to the heartbeat (docs/DESIGN.md)."""
    tree = ast.parse(MODULES[module].read_text())
    prints = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name) and n.func.id == "print"]
    assert not prints, f"{module}: print() at lines {prints}; log it (ddlab.core.log)"
