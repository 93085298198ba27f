"""Where ddlab finds its inputs (params/) and puts its outputs (outputs/).

The project root is, in order: ``$DDLAB_ROOT``; the checkout this package was
installed from (``lib/ddlab`` inside it, the editable install `make` does); the
current directory. ``$DDLAB_OUTPUTS`` moves outputs elsewhere (tests use it).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["project_root", "params_dir", "outputs_dir"]

_PACKAGE = Path(__file__).resolve().parent


def project_root() -> Path:
    """The ddlab checkout: holds params/, notebooks/ and outputs/."""
    env = os.environ.get("DDLAB_ROOT")
    if env:
        return Path(env).resolve()
    checkout = _PACKAGE.parent.parent
    if (checkout / "params").is_dir() and (checkout / "lib" / "ddlab").is_dir():
        return checkout
    return Path.cwd()


def params_dir() -> Path:
    return project_root() / "params"


def outputs_dir() -> Path:
    env = os.environ.get("DDLAB_OUTPUTS")
    return Path(env).resolve() if env else project_root() / "outputs"
