"""The files and environment that arm probes on a host, without editing its install.

The deploy side copies the files :func:`install_files` writes into a folder on
the host (any folder the service user can read, e.g. the run's folder) and sets
:func:`probe_env`'s variables in the unit or process environment:

- ``DDLAB_PROBES``: the probes, as the JSON list the hook reads;
- ``PYTHONPATH``: that folder FIRST, then whatever PYTHONPATH the service had
  (pass it as ``pythonpath=``; a unit with no PYTHONPATH gets the folder alone).

Python then imports the folder's ``sitecustomize.py`` at start-up, in the server
and in every process it spawns with that environment; it arms
``ddlab_probe_hook.py`` and chains the host's own ``sitecustomize``. An
interpreter started with ``-S``, ``-E`` or ``-I`` skips PYTHONPATH or site, and
so the probes.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath

from ddlab.probes.spec import parse_probes

__all__ = ["HOOK_NAME", "SITECUSTOMIZE_NAME", "install_files", "probe_env", "probe_files"]

HOOK_NAME = "ddlab_probe_hook.py"
SITECUSTOMIZE_NAME = "sitecustomize.py"
_HERE = Path(__file__).resolve().parent
_SOURCES = {HOOK_NAME: _HERE / "hook.py", SITECUSTOMIZE_NAME: _HERE / "sitecustomize_template.py"}


def probe_files() -> dict[str, str]:
    """``{file name: text}`` of the two files the host needs (for a remote write)."""
    return {name: source.read_text() for name, source in _SOURCES.items()}


def install_files(folder: Path) -> list[Path]:
    """Write ``sitecustomize.py`` and ``ddlab_probe_hook.py`` into ``folder`` (made if
    missing); -> the two paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, source in _SOURCES.items():
        path = folder / name
        path.write_text(source.read_text())
        written.append(path)
    return written


def probe_env(specs, folder: str | PurePath, *, pythonpath: str = "") -> dict[str, str]:
    """``{"DDLAB_PROBES": json, "PYTHONPATH": folder[:pythonpath]}`` for ``specs`` (probe
    texts or :class:`~ddlab.probes.spec.ProbeSpec`, checked by :func:`parse_probes`); ``folder`` is where the
    files are on the host, ``pythonpath`` the service's own PYTHONPATH, kept after it."""
    probes = [spec.to_json() for spec in parse_probes(specs)]
    path = str(folder) if not pythonpath else f"{folder}:{pythonpath}"
    return {"DDLAB_PROBES": json.dumps(probes, separators=(",", ":")), "PYTHONPATH": path}

