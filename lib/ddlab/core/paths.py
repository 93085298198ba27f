"""Where ddlab finds its inputs (params/) and puts its outputs (outputs/).

A project is a folder that holds ``params/`` and ``notebooks/`` (a ddlab
checkout, or a copy of one). It is found as git finds a repository, in order:

1. ``$DDLAB_ROOT``, when set (it must be a folder);
2. the current folder or the first folder above it that is a project: a
   JupyterLab kernel runs in ``notebooks/``, a user anywhere under the checkout;
3. the checkout an editable install came from (``pip install -e``, which `make`
   does), for a command run outside any project; the first such use in a process
   says so once (a log warning), since the answer then depends on where ddlab was
   installed from, not on where the user stands.

Outside any project a command that needs one fails with :class:`NoProject`,
which says how to get one; nothing here creates a folder, so no ``outputs/``
ever appears in a folder that is not a project. ``$DDLAB_OUTPUTS`` moves outputs
elsewhere (tests use it).
"""

from __future__ import annotations

import os
from pathlib import Path

from ddlab.core.errors import ConfigError
from ddlab.core.log import get_logger

__all__ = ["NoProject", "is_project", "find_project", "project_root", "params_dir", "outputs_dir"]

MARKERS = ("params", "notebooks")
_PACKAGE = Path(__file__).resolve().parent.parent  # lib/ddlab in a checkout
_announced: set[Path] = set()
log = get_logger(__name__)


class NoProject(ConfigError):
    """No ddlab project here, above here, nor where ddlab was installed from."""


def is_project(folder: Path) -> bool:
    """True when ``folder`` holds ``params/`` and ``notebooks/``."""
    return all((folder / marker).is_dir() for marker in MARKERS)


def find_project(start: Path, package: Path) -> tuple[Path | None, str]:
    """The project for a process standing in ``start`` whose ddlab package is
    ``package``, and how it was found (``env``, ``cwd`` or ``install``); ``(None, "")``
    when there is none. ``$DDLAB_ROOT`` is read by :func:`project_root`, not here."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if is_project(folder):
            return folder, "cwd"
    for folder in package.resolve().parents:  # lib/ddlab -> lib -> the checkout
        if is_project(folder) and (folder / "lib" / "ddlab").is_dir():
            return folder, "install"
    return None, ""


def project_root() -> Path:
    """The ddlab project this process works in (see the module docstring)."""
    env = os.environ.get("DDLAB_ROOT")
    if env:
        root = Path(env).expanduser().resolve()
        if not root.is_dir():
            raise NoProject(f"DDLAB_ROOT={env}: not a folder",
                            fix="point DDLAB_ROOT at a ddlab checkout, or unset it to use "
                                "the project around the current folder", value=env)
        return root
    cwd = _cwd()
    root, how = find_project(cwd, _PACKAGE)
    if root is None:
        raise NoProject(
            f"{cwd}: not inside a ddlab project (no folder here or above holds params/ and "
            f"notebooks/), and ddlab was not installed from a checkout",
            fix="cd into your ddlab checkout (git clone, then make demo), or set "
                "DDLAB_ROOT=/path/to/ddlab", value=str(cwd))
    if how == "install" and root not in _announced:
        _announced.add(root)
        log.warning(f"{cwd} is not inside a ddlab project; using the checkout ddlab was "
                    f"installed from: {root}")
    return root


def _cwd() -> Path:
    try:
        return Path.cwd()
    except FileNotFoundError:  # the current folder was removed under us
        raise NoProject("the current folder no longer exists",
                        fix="cd into your ddlab checkout, or set DDLAB_ROOT") from None


def params_dir() -> Path:
    return project_root() / "params"


def outputs_dir() -> Path:
    env = os.environ.get("DDLAB_OUTPUTS")
    return Path(env).expanduser().resolve() if env else project_root() / "outputs"
