"""The repository keeps its promises: dependencies agree, notebooks are clean,
the README's file tree is true, the quick start is two commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent

# PyPI name -> conda-forge name, where they differ.
CONDA_NAMES = {"torch": "pytorch", "playwright": "playwright-python"}


def _requirement(spec: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*", spec)
    assert match, f"unparsable requirement {spec!r}"
    return match.group(1).lower(), match.group(2).replace(" ", "")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_agrees_with_pyproject():
    project = _pyproject()["project"]
    wanted = dict(_requirement(s) for s in project["dependencies"])
    wanted.update(_requirement(s) for s in project["optional-dependencies"]["test"])
    wanted = {CONDA_NAMES.get(name, name): version for name, version in wanted.items()}

    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    conda = dict(_requirement(s) for s in env["dependencies"] if isinstance(s, str))
    assert conda.pop("python") == "=3.11"
    conda.pop("pip", None)
    assert conda == wanted


def test_torch_is_pinned_to_the_local_cpu_build():
    deps = dict(_requirement(s) for s in _pyproject()["project"]["dependencies"])
    assert deps["torch"] == "==2.13.0"


def _notebooks() -> list[Path]:
    return sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def test_papermill_starts_without_building_iri_parsers():
    """Every ddlab run and notebook run starts papermill (nbformat, jsonschema): the installed
    jsonschema must not import rfc3987-syntax, whose import builds Lark parsers (1.3-1.5 CPU-s a
    process; pyproject.toml's jsonschema bound says why)."""
    code = "import sys, papermill; print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", (
        f"importing papermill imported {done.stdout.strip()}: reinstall with pyproject.toml's jsonschema bound")


def test_there_are_notebooks():
    assert _notebooks(), "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.name)
def test_notebook_is_committed_clean(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not [c for c in code if c.get("outputs")], f"{path.name}: strip outputs"
    assert not [c for c in code if c.get("execution_count")], f"{path.name}: strip execution counts"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: needs exactly one cell tagged 'parameters'"


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.name)
def test_notebook_holds_no_logic(path: Path):
    """Notebooks hold parameters, calls into ddlab and display: no def, no loops."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        for line in source.splitlines():
            assert not re.match(r"\s*(def|class|for|while|async def)\b", line), (
                f"{path.name}: move '{line.strip()}' into lib/ddlab")


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.name)
def test_notebook_parameters_are_documented(path: Path):
    """Each parameter has a trailing comment, so papermill --help-notebook explains it."""
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"]
                if "parameters" in c.get("metadata", {}).get("tags", []))
    for line in "".join(cell["source"]).splitlines():
        if re.match(r"[A-Za-z_]\w*\s*(:[^=]+)?=", line):
            assert "#" in line, f"{path.name}: parameter line lacks a comment: {line}"
            # papermill skips a parameter line holding a second '='
            assert line.count("=") == 1, f"{path.name}: '=' in a parameter's comment: {line}"


def _readme_tree() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- tree -->\s*```text\n(.*?)```", readme, re.S)
    assert block, "README.md lacks the file tree block (<!-- tree --> ```text ...```)"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_file_tree_is_true():
    """Every path named in the README's tree exists, and every top-level entry is named."""
    named = []
    for line in _readme_tree():
        path = line.split("#", 1)[0].strip()
        assert path, f"tree line without a path: {line!r}"
        assert (ROOT / path).exists(), f"README names {path}, which does not exist"
        named.append(path.rstrip("/"))
    tracked = {p.name for p in ROOT.iterdir()
               if not p.name.startswith(".") or p.name == ".ci"}
    tracked -= {"build", "__pycache__"}
    tracked = {t for t in tracked if not t.endswith(".egg-info")}
    missing = sorted(t for t in tracked if t not in {n.split("/")[0] for n in named})
    assert not missing, f"README's tree does not mention: {missing}"


def test_quick_start_is_two_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```(?:sh|bash)?\n(.*?)```", readme, re.S)
    assert block, "README.md lacks a Quick start code block"
    commands = [line for line in block.group(1).splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert commands == ["make demo", "make test"]


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_outputs_is_ignored_but_for_its_readme():
    ignore = (ROOT / ".gitignore").read_text().splitlines()
    assert "/outputs/*" in ignore and "!/outputs/README.md" in ignore
    assert (ROOT / "outputs" / "README.md").is_file()


_NAMED_PATH = re.compile(r"(?<![\w/.-])((?:lib|notebooks|params|outputs|tests|docs|tools|bench|\.ci)"
                         r"/[\w./<>*-]*[\w/>*])")


def test_every_path_the_readme_names_exists():
    """Issue 22: the README named a file that no longer held what it said. Every path it
    names exists; one with a placeholder (``NAME``, ``<time>``, ``*``) or under
    ``outputs/`` (made by runs) needs its folder to exist."""
    readme = (ROOT / "README.md").read_text()
    missing = []
    for path in sorted(set(_NAMED_PATH.findall(readme))):
        if any(mark in path for mark in ("<", "*", "NAME")) or path.startswith("outputs/"):
            folder = path.split("<")[0].split("*")[0].split("NAME")[0].rsplit("/", 1)[0]
            if not (ROOT / folder).is_dir():
                missing.append(path)
        elif not (ROOT / path.rstrip("/")).exists():
            missing.append(path)
    assert not missing, f"README names paths that do not exist: {missing}"
