"""The user's docs say what the code does: docs/DESIGN.md names every module and
points at names that exist; docs/api.md is what tools/api_reference.py writes from
``ddlab.__all__``; docs/results.md names every column of cells.csv and every key of a
sweep's verdict.json.

The folder tree is the architecture (tests/api/test_architecture.py); DESIGN.md is its
map, read by people, so a module missing from it or a pointer at a name that moved is
a wrong map.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import ddlab

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lib" / "ddlab"
DESIGN = ROOT / "docs" / "DESIGN.md"


def _module_files() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


def _design_index() -> list[str]:
    """The paths in DESIGN.md's module index (``<!-- modules -->`` then a text block)."""
    text = DESIGN.read_text()
    block = re.search(r"<!-- modules -->\s*```text\n(.*?)```", text, re.S)
    assert block, "docs/DESIGN.md lacks the module index (<!-- modules --> ```text ...```)"
    return [line.split()[0] for line in block.group(1).splitlines() if line.strip()]


def test_design_names_every_module():
    named = _design_index()
    assert len(named) == len(set(named)), "docs/DESIGN.md names a module twice"
    files = _module_files()
    assert not files - set(named), f"modules docs/DESIGN.md does not name: {sorted(files - set(named))}"
    assert not set(named) - files, f"docs/DESIGN.md names modules that are gone: {sorted(set(named) - files)}"


def test_design_index_reads_each_module_in_one_line():
    """Each index line says what its module is for (a path alone is no map)."""
    text = DESIGN.read_text().split("<!-- modules -->", 1)[1].split("```text\n", 1)[1].split("```")[0]
    bare = [line for line in text.splitlines() if line.strip() and len(line.split(None, 1)) < 2]
    assert not bare, f"index lines without a description: {bare}"


# --- pointers: `ddlab.x.y`, `layer.module.NAME`, `module.NAME`, `Class.attr` ------------

MODULES = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
           for p in PACKAGE.rglob("*.py")}
BASENAMES = {}
for _m in sorted(MODULES):
    BASENAMES.setdefault(_m.rsplit(".", 1)[-1], []).append(_m)
FILE_SUFFIXES = {"json", "html", "yaml", "py", "md", "log", "csv", "sqlite", "ipynb", "png", "service"}
# Dotted texts that are grammar, not pointers: `--set flags.X`, a config's `sglang.version` key.
NOT_POINTERS = {"flags.X", "sglang.version"}


def _classes() -> dict[str, list[tuple[str, set[str]]]]:
    """Class name -> (module, names it defines: methods, fields, class attributes)."""
    out: dict[str, list] = {}
    for module in MODULES:
        path = PACKAGE.parent / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                names |= {n.target.id for n in node.body
                          if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
                names |= {t.id for n in node.body if isinstance(n, ast.Assign)
                          for t in n.targets if isinstance(t, ast.Name)}
                out.setdefault(node.name, []).append((module, names))
    return out


def _resolves(module: str, attrs: list[str]) -> bool:
    try:
        obj = importlib.import_module(module)
        for attr in attrs:
            obj = getattr(obj, attr)
    except (ImportError, AttributeError):
        return False
    return True


def _pointer_ok(text: str, classes: dict) -> bool | None:
    """True or False for a pointer into ddlab; None for a dotted text that points elsewhere."""
    parts = text.split(".")
    if parts[0] in classes and len(parts) == 2:
        return any(parts[1] in names for _, names in classes[parts[0]])
    if parts[0] == "ddlab":
        candidates = [parts]
    elif f"ddlab.{parts[0]}" in MODULES:
        candidates = [["ddlab", *parts]]
    elif parts[0] in BASENAMES:
        candidates = [m.split(".") + parts[1:] for m in BASENAMES[parts[0]]]
    else:
        return None
    for candidate in candidates:
        for cut in range(len(candidate), 0, -1):
            if ".".join(candidate[:cut]) in MODULES:
                if _resolves(".".join(candidate[:cut]), candidate[cut:]):
                    return True
                break
    return False


def test_design_pointers_name_what_exists():
    """Issue 26: DESIGN.md pointed a name at the wrong module (``deploy.HELD_THREADS``
    lives in ``core.interrupts``). Every backquoted dotted name that starts with ddlab, a
    layer, a module or a class of ddlab resolves."""
    classes = _classes()
    texts = set(re.findall(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`", DESIGN.read_text()))
    texts = {t for t in texts if t.rsplit(".", 1)[1] not in FILE_SUFFIXES and t not in NOT_POINTERS}
    checked = {t: _pointer_ok(t, classes) for t in sorted(texts)}
    assert sum(ok is not None for ok in checked.values()) >= 20, "the pointer reader reads nothing"
    wrong = [t for t, ok in checked.items() if ok is False]
    assert not wrong, f"docs/DESIGN.md points at names that do not exist there: {wrong}"


def test_the_pointer_check_catches_a_moved_name():
    classes = _classes()
    assert _pointer_ok("deploy.HELD_THREADS", classes) is False
    assert _pointer_ok("core.interrupts.HELD_THREADS", classes) is True
    assert _pointer_ok("Lab.on_host", classes) is True and _pointer_ok("Lab.no_such", classes) is False


# --- docs/api.md: generated, never edited ------------------------------------------------


def _api_tool():
    spec = importlib.util.spec_from_file_location("api_reference", ROOT / "tools" / "api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_is_what_the_tool_writes():
    """docs/api.md is written from the docstrings and signatures: a changed docstring,
    parameter or default without ``python tools/api_reference.py --write`` fails here."""
    committed = (ROOT / "docs" / "api.md").read_text()
    assert committed == _api_tool().reference(), (
        "docs/api.md differs from the code: run python tools/api_reference.py --write")


@pytest.mark.parametrize("name", [n for n in ddlab.__all__ if n != "__version__"])
def test_api_reference_has_an_entry_per_name(name):
    text = (ROOT / "docs" / "api.md").read_text()
    entry = text.split(f"### `{name}`\n", 1)
    assert len(entry) == 2, f"docs/api.md has no entry for ddlab.{name}"
    body = entry[1].split("\n### ", 1)[0]
    assert "```python" in body and len(body.split("```", 2)[2].strip()) > 10, (
        f"ddlab.{name}'s entry lacks its signature or its text")


def test_the_api_tool_refuses_an_undocumented_name():
    tool = _api_tool()

    def undocumented():
        pass

    with pytest.raises(tool.RefError, match="no docstring"):
        tool._doc(undocumented, "ddlab.undocumented")
    assert tool.signature("f", lambda a, *, b="x": None) == "f(a, *, b='x')"


# --- docs/results.md: the CSV's columns, the verdict's keys ---------------------------------


def _table_names(marker: str) -> set[str]:
    """The backquoted names in the first column of the table after ``<!-- marker -->``."""
    text = (ROOT / "docs" / "results.md").read_text()
    assert f"<!-- {marker} -->" in text, f"docs/results.md lacks its <!-- {marker} --> table"
    lines = text.split(f"<!-- {marker} -->", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = lines[start + 2:end]  # past the header and its rule
    return set(re.findall(r"`([^`]+)`", "\n".join(row.split("|")[1] for row in rows)))


def _synthetic_sweep(tmp_path: Path) -> Path:
    import sweepkit

    store = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(store, [("measured", {"output_tok_s": 100.0}),
                                     ("measured", {"output_tok_s": 150.0}),
                                     ("crashed", "cuda_graph_replay")],
                             grid={"budget": [4], "topk_cap": [1], "cuda_graph": [False]},
                             extra=[["debug_drop_verify_field=num_token_non_padded"]])
    return store


def test_results_names_every_csv_column(tmp_path):
    """``cells.csv`` is the sweep's frame: each of its columns has a row in
    docs/results.md's table (``<figure>_ci_low`` and ``point.<key>`` stand for their families)."""
    from ddlab.sweeps.results import load_cells

    names = _table_names("csv-columns")
    patterns = [re.compile(re.sub(r"<[a-z]+>", r"[\\w.]+", re.escape(n).replace(r"\<", "<")
                                  .replace(r"\>", ">")) + "$") for n in names]
    columns = list(load_cells("synthetic", store=_synthetic_sweep(tmp_path)).columns)
    assert len(columns) > 30
    missing = [c for c in columns if not any(p.match(c) for p in patterns)]
    assert not missing, f"cells.csv columns docs/results.md's table leaves out: {missing}"


def test_results_names_every_key_of_a_sweeps_verdict(tmp_path):
    """The verdict.json a sweep leaves in its run folder: each top-level key has a row."""
    import json

    from ddlab.sweeps.store import Store

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ddlab.load_report("synthetic", store=Store(_synthetic_sweep(tmp_path)), run_dir=run_dir)
    keys = set(json.loads((run_dir / "verdict.json").read_text()))
    assert {"state", "headline", "exit_code"} <= keys
    missing = sorted(keys - _table_names("sweep-verdict-keys"))
    assert not missing, f"verdict.json keys docs/results.md's table leaves out: {missing}"


# --- docs/usage.md: every verb and notebook, examples that parse -----------------------------

USAGE = ROOT / "docs" / "usage.md"


def _sections(text: str) -> dict[str, str]:
    """``### heading`` -> its text, up to the next heading of any level."""
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    return {parts[i].lstrip("# ").strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _commands(text: str) -> list[str]:
    """The lines of the ```sh blocks, from the command on (``journalctl ... && ddlab ...``)."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            for part in line.split("&&"):
                if part.strip() and not part.strip().startswith("#"):
                    lines.append(part.strip())
    return lines


def _declared(notebook: str) -> set[str]:
    import json

    nb = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    return set(re.findall(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=", "".join(cell["source"]), re.M))


def _notebooks() -> list[str]:
    return sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("verb", sorted(__import__("ddlab.cli", fromlist=["VERBS"]).VERBS))
def test_usage_shows_every_verb_with_an_example(verb):
    sections = _sections(USAGE.read_text())
    assert f"`ddlab {verb}`" in sections, f"docs/usage.md has no section ### `ddlab {verb}`"
    assert any(c.startswith(f"ddlab {verb}") for c in _commands(sections[f"`ddlab {verb}`"])), (
        f"docs/usage.md's ddlab {verb} section has no example")


def test_every_ddlab_command_in_the_docs_parses_with_the_real_parser():
    """A renamed option or verb breaks the examples people copy: README, usage, results."""
    import shlex

    from ddlab.cli import build_parser
    from ddlab.target.args import build_parser as target_parser

    parser, target = build_parser(), target_parser("ddlab target")
    commands = [c for doc in ("README.md", "docs/usage.md", "docs/results.md")
                for c in _commands((ROOT / doc).read_text()) if c.startswith("ddlab ")]
    assert len(commands) > 30
    for command in commands:
        argv = shlex.split(command, comments=True)[1:]
        try:
            if argv[0] == "target":
                target.parse_args(argv[1:])
            else:
                parser.parse_args(argv)
        except SystemExit as exit:
            if exit.code:
                pytest.fail(f"does not parse: {command}")


@pytest.mark.parametrize("notebook", _notebooks())
def test_usage_shows_every_notebook_both_ways(notebook):
    sections = _sections(USAGE.read_text())
    section = sections.get(f"`notebooks/{notebook}.ipynb`")
    assert section, f"docs/usage.md has no section ### `notebooks/{notebook}.ipynb`"
    commands = _commands(section)
    assert any(c.startswith(f"ddlab run {notebook}") for c in commands)
    assert any(c.startswith(f"papermill notebooks/{notebook}.ipynb") for c in commands)
    listed = set(re.findall(r"`(\w+)`", section.split("Parameters:", 1)[1].split(".\n", 1)[0]))
    assert listed == _declared(notebook) - {"run_dir"}, f"{notebook}: the parameters listed differ"


def test_usage_notebook_examples_set_declared_parameters():
    """Every ``-p NAME`` (and ``-y`` key) in a notebook example is one the notebook declares."""
    import shlex

    import yaml

    seen = 0
    for doc in ("README.md", "docs/usage.md", "docs/results.md"):
        for command in _commands((ROOT / doc).read_text()):
            argv = shlex.split(command, comments=True)
            if argv[:2] == ["ddlab", "run"]:
                notebook = argv[2]
            elif argv[0] == "papermill":
                notebook = Path(argv[1]).stem
            else:
                continue
            names = [argv[i + 1] for i, a in enumerate(argv) if a in ("-p", "--parameter")]
            names += [k for i, a in enumerate(argv) if a == "-y" for k in yaml.safe_load(argv[i + 1])]
            undeclared = set(names) - _declared(notebook)
            assert not undeclared, f"{command}: {notebook} declares no {sorted(undeclared)}"
            seen += 1
    assert seen >= 12


def test_usage_exit_codes_are_the_clis():
    from ddlab.cli import EXIT_CODES

    text = USAGE.read_text().split("<!-- exit-codes -->", 1)[1]
    rows = [r for r in text.split("\n\n", 1)[0].splitlines() if r.startswith("|")][2:]
    table = {int(r.split("|")[1]): r.split("|")[2].strip() for r in rows}
    assert table == EXIT_CODES


# --- links between the docs --------------------------------------------------------------------

DOCS = ["README.md", "docs/usage.md", "docs/results.md", "docs/api.md", "docs/DESIGN.md"]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_between_the_docs_lands(doc):
    """Relative links open a file that exists, and an anchor a heading it holds."""
    path = ROOT / doc
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#{1,6} (.*)$", dest.read_text(), re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{doc}: links that land nowhere: {broken}"
