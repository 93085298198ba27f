"""Run folders: where one deploy/watch keeps its evidence.

``outputs/runs/<UTC time>-<name>/`` holds ``config.json``, ``unit.service``,
``heartbeat.log``, ``journal.log`` and ``verdict.json``. A folder is never
reused: a second run in the same second gets a ``-2`` suffix. Names are
checked, so nothing can climb out of ``outputs/`` (``../``, ``/``).
Everything written here goes through :mod:`ddlab.core.redact` first.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from ddlab.core.errors import ConfigError
from ddlab.core.paths import outputs_dir
from ddlab.core.redact import redact, redact_text

__all__ = ["safe_name", "plain_text", "utc_stamp", "new_run_dir", "write_json", "write_text", "record_verdict"]

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=-]{0,127}")


def safe_name(name: str) -> str:
    """``name`` if it is safe as one path component, else a ConfigError."""
    if not _SAFE.fullmatch(name) or ".." in name:
        raise ConfigError(
            f"name {name!r}: must be 1-128 letters, digits, '.', '_', '=', '-', "
            "starting with a letter or digit, without '..' or '/'",
            fix="pick a plain name such as 'ddtree-b32'", value=name)
    return name


def plain_text(text: str) -> str:
    """``text`` with what a folder name cannot hold made ``-`` (anything but ASCII
    letters, digits and ``=-_.``) and runs of dots made one: never ``..``."""
    text = "".join(c if (c.isascii() and c.isalnum()) or c in "=-_." else "-" for c in text)
    return re.sub(r"\.{2,}", ".", text)


def utc_stamp(when: float | None = None) -> str:
    """``20261129T095316Z``: sortable, safe in paths."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))


def new_run_dir(name: str, *, parent: Path | None = None) -> Path:
    """Create and return a fresh ``<parent>/<UTC time>-<name>/`` (default parent: outputs/runs)."""
    parent = Path(parent) if parent else outputs_dir() / "runs"
    parent.mkdir(parents=True, exist_ok=True)
    base = f"{utc_stamp()}-{safe_name(name)}"
    for n in range(1, 1000):
        path = parent / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise ConfigError(f"run folder {base!r}: 999 runs of that name this second",
                      fix="wait a second and retry", value=base)


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, secrets masked, atomically (temp + rename)."""
    return write_text(path, json.dumps(redact(obj), indent=2, sort_keys=False, default=str) + "\n",
                      masked=True)


def write_text(path: Path, text: str, *, masked: bool = False) -> Path:
    """Write ``text`` with secrets masked, atomically, so a reader never sees half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text if masked else redact_text(text), encoding="utf-8")
    os.replace(tmp, path)
    return path


def record_verdict(verdict: dict, run_dir: str | Path | None) -> None:
    """Leave a job's verdict in its run folder (``verdict.json``: the report's headline
    and the index's); nothing when the job was given no folder."""
    if run_dir and Path(run_dir).is_dir():
        write_json(Path(run_dir) / "verdict.json", verdict)
