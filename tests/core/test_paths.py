"""The project is found as git finds a repository: $DDLAB_ROOT, the current folder or
one above it, the checkout an editable install came from; else a clear error, and no
folder is ever created on the way."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlab.core import paths
from ddlab.core.paths import NoProject, find_project, is_project


def _project(folder: Path) -> Path:
    for marker in ("params", "notebooks", "lib/ddlab"):
        (folder / marker).mkdir(parents=True)
    return folder


@pytest.fixture
def tree(tmp_path):
    """A project with a subfolder, and a package installed elsewhere (no project above it)."""
    project = _project(tmp_path / "checkout")
    (project / "notebooks" / "deep" / "er").mkdir(parents=True)
    site = tmp_path / "site-packages" / "ddlab"
    site.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return project, site


@pytest.mark.parametrize("where", ["", "notebooks", "notebooks/deep/er", "params"],
                         ids=["root", "notebooks", "subfolder", "params"])
def test_the_project_is_found_from_any_folder_inside_it(tree, where):
    project, site = tree
    assert find_project(project / where, site) == (project, "cwd")


def test_outside_a_project_the_editable_checkout_is_used(tree):
    project, _ = tree
    assert find_project(project.parent / "elsewhere", project / "lib" / "ddlab") == \
        (project, "install")


def test_outside_a_project_with_a_plain_install_there_is_none(tree):
    project, site = tree
    assert find_project(project.parent / "elsewhere", site) == (None, "")


def test_a_folder_with_only_one_marker_is_not_a_project(tmp_path):
    (tmp_path / "params").mkdir()
    assert not is_project(tmp_path)
    assert find_project(tmp_path, tmp_path / "x") == (None, "")


def test_outside_any_project_the_error_says_how_to_get_one_and_creates_nothing(
        tree, monkeypatch):
    project, site = tree
    elsewhere = project.parent / "elsewhere"
    monkeypatch.delenv("DDLAB_ROOT", raising=False)
    monkeypatch.delenv("DDLAB_OUTPUTS", raising=False)
    monkeypatch.setattr(paths, "_PACKAGE", site)
    monkeypatch.chdir(elsewhere)
    with pytest.raises(NoProject) as caught:
        paths.outputs_dir()
    assert str(elsewhere) in str(caught.value)
    assert "cd into your ddlab checkout" in str(caught.value)
    assert "DDLAB_ROOT" in str(caught.value)
    assert list(elsewhere.iterdir()) == []


def test_ddlab_root_wins_and_must_be_a_folder(tree, monkeypatch, tmp_path):
    project, _ = tree
    monkeypatch.chdir(project / "notebooks")
    other = _project(tmp_path / "other")
    monkeypatch.setenv("DDLAB_ROOT", str(other))
    assert paths.project_root() == other
    monkeypatch.setenv("DDLAB_ROOT", str(tmp_path / "missing"))
    with pytest.raises(NoProject, match="DDLAB_ROOT=.*missing: not a folder"):
        paths.project_root()


def test_the_install_fallback_says_once_where_it_works(tree, monkeypatch, caplog):
    project, _ = tree
    monkeypatch.delenv("DDLAB_ROOT", raising=False)
    monkeypatch.setattr(paths, "_PACKAGE", project / "lib" / "ddlab")
    monkeypatch.setattr(paths, "_announced", set())
    monkeypatch.chdir(project.parent / "elsewhere")
    with caplog.at_level("WARNING", logger="ddlab"):
        assert paths.project_root() == project
        assert paths.project_root() == project
    said = [r.getMessage() for r in caplog.records if "installed from" in r.getMessage()]
    assert said == [f"{project.parent / 'elsewhere'} is not inside a ddlab project; using the "
                    f"checkout ddlab was installed from: {project}"]
