"""The ``ddlab`` command where a user stands (issue 22), with no ``DDLAB_*`` variable.

From the copy's root, from ``notebooks/`` and from a subfolder (``params/base``) every
command finds the copy: ``ddlab runs`` lists the sweep that was run from
``notebooks/``, ``ddlab unit --base ddtree`` finds the base with no note, and the
commands that write (``ddlab sweep`` from ``notebooks/``, ``ddlab plot SWEEP`` from the
others) write into the copy's ``outputs/``, never ``notebooks/outputs/`` nor the real
checkout. From a folder outside any project, with the editable install, a command
works on the checkout it was installed from and says so in one line; with a plain
install layout (the package alone on ``PYTHONPATH``) it fails with the clear NoProject
error, exit 1, and creates no ``outputs/`` anywhere. Before the fix (the project was
looked for above the package, else in the current folder) ``ddlab sweep`` from
``notebooks/`` said "base 'local': not found; available: none"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from labkit import REPO

pytestmark = pytest.mark.timeout(1200)  # it may wait its turn on `local` behind a long sweep

PLACES = [".", "notebooks", "params/base"]
SWEEP = ("ddlab sweep --budget 4 --topk-cap 1 --cuda-graph false --requests 2 "
         "--max-new-tokens 16 --max-rounds 2 --no-bracket")
NOTE = "is not inside a ddlab project; using the checkout ddlab was installed from"


@pytest.fixture
def swept(user) -> str:
    """The id of a small sweep run by the CLI from ``notebooks/`` (the command the issue saw
    put its run into notebooks/outputs/), once per test run."""
    return user.once("cli-sweep", lambda: _sweep(user))


def _sweep(user) -> str:
    with user.local():
        done = user.shell(SWEEP, cwd=user.clone / "notebooks", timeout_s=300)
    assert done.returncode == 0, f"{SWEEP} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert not (user.clone / "notebooks" / "outputs").exists(), "the sweep wrote notebooks/outputs/"
    sweeps = sorted(p.name for p in (user.clone / "outputs" / "sweeps").iterdir())
    named = [s for s in sweeps if s in done.stdout + done.stderr]
    assert named, f"the sweep's output names none of the copy's sweeps {sweeps}:\n{done.stdout}"
    return named[-1]


def test_the_users_shell_sees_no_ddlab_variable(user):
    """The tier's premise: no process it starts is told where the project is."""
    done = user.shell("env", cwd=user.clone)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("DDLAB_")] == []


@pytest.mark.parametrize("place", PLACES)
def test_ddlab_finds_the_copy_from(user, swept, place):
    cwd = user.clone / place
    runs = user.shell("ddlab runs", cwd=cwd)
    assert runs.returncode == 0, runs.stderr
    assert swept in runs.stdout, f"`ddlab runs` in {place}/ does not list {swept}:\n{runs.stdout}"
    assert NOTE not in runs.stderr, runs.stderr

    unit = user.shell("ddlab unit --base ddtree", cwd=cwd)
    assert unit.returncode == 0, f"`ddlab unit --base ddtree` in {place}/: {unit.stderr}"
    assert "[Service]" in unit.stdout and "ExecStart=" in unit.stdout
    assert NOTE not in unit.stderr, unit.stderr

    if place == "notebooks":
        return  # the sweep itself was the command that writes, run from here
    plot = user.shell(f"ddlab plot {swept}", cwd=cwd)
    assert plot.returncode == 0, f"`ddlab plot` in {place}/:\n{plot.stdout}\n{plot.stderr}"
    written = [Path(line) for line in plot.stdout.splitlines() if line.endswith(".png")]
    assert written, f"`ddlab plot` printed no figure:\n{plot.stdout}"
    outputs = user.clone / "outputs"
    assert all(p.is_file() and p.resolve().is_relative_to(outputs.resolve()) for p in written), (
        f"figures not in the copy's outputs/ ({outputs}): {written}")
    assert not (user.clone / "notebooks" / "outputs").exists()
    assert not (cwd / "outputs").exists() or cwd == user.clone


def test_outside_any_project_the_editable_install_names_its_checkout(user):
    """Outside any project the editable install falls back to its checkout, read only here
    (a command that writes would write there), and says so in one line."""
    for command in ("ddlab runs", "ddlab unit --base ddtree"):
        done = user.shell(command, cwd=user.outside)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        notes = [line for line in done.stderr.splitlines() if NOTE in line]
        assert notes == [f"{user.outside} {NOTE}: {REPO}"], done.stderr
    assert list(user.outside.iterdir()) == []


@pytest.fixture
def plain_install(user, tmp_path) -> dict:
    """The environment of a non-editable install: the ddlab package copied alone into a
    site folder on PYTHONPATH (ahead of the venv's editable path), no project above it."""
    site = tmp_path / "site-packages"
    shutil.copytree(REPO / "lib" / "ddlab", site / "ddlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = user.env(PYTHONPATH=str(site))
    where = user.shell("python -c 'import ddlab; print(ddlab.__file__)'", cwd=user.outside, env=env)
    assert where.stdout.strip() == str(site / "ddlab" / "__init__.py"), where.stdout + where.stderr
    return env


@pytest.mark.parametrize("command", ["ddlab runs", "ddlab unit --base ddtree",
                                     "ddlab sweep --dry-run", "ddlab plot latest"])
def test_outside_any_project_a_plain_install_fails_with_the_fix(user, plain_install, command):
    done = user.shell(command, cwd=user.outside, env=plain_install)
    assert done.returncode == 1, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    verb = command.split()[1]
    assert done.stderr.strip() == (
        f"ddlab {verb}: {user.outside}: not inside a ddlab project (no folder here or above holds "
        f"params/ and notebooks/), and ddlab was not installed from a checkout; cd into your ddlab "
        f"checkout (git clone, then make demo), or set DDLAB_ROOT=/path/to/ddlab"), done.stderr
    assert done.stdout == ""
    made = [found for folder in (user.outside, Path(plain_install["PYTHONPATH"]).parent)
            for found in folder.rglob("outputs")]
    assert made == [], f"created {made}"
