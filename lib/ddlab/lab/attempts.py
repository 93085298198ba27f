"""Earlier attempts: what was already tried on a host, for the diagnosis' next step.

The diagnosis takes ``tried`` (:func:`ddlab.diagnosis.diagnosis.diagnose`: key ->
values that already failed the same way), so its advice moves to the next lever
instead of proposing again what failed (issue 23 item 9: ``--mem-fraction-static``
0.92 crashed, then 0.88 was told "try 0.92"). Every start ddlab makes leaves a run
folder with ``config.json`` (host, base, the config's flags) and, once watched,
``verdict.json`` (state, kind): a ``ddlab deploy`` under ``outputs/runs/``, a sweep's
cells and a search's trials under ``outputs/sweeps/<id>/``. :func:`tried_before` reads
the newest :data:`MAX_FOLDERS` of them, so ``watch``, ``sweep`` and ``envelope`` (whose
cells are watched) all pass the earlier attempts on the same host and base. Read only,
never an error: an odd folder is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

from ddlab.core.paths import outputs_dir

__all__ = ["tried_before", "MAX_FOLDERS"]

MAX_FOLDERS = 300  # the newest run folders read (a name starts with its UTC time)


def tried_before(host: str, base: str, kind: str, *, exclude: str | Path = "") -> dict:
    """Flag values (snake case key -> values, oldest first) of the earlier starts on
    ``host`` of ``base`` whose verdict was the crash ``kind``; ``exclude``: this start's
    own run folder."""
    if not kind:
        return {}
    tried: dict[str, list] = {}
    for folder in _folders(exclude):
        config, verdict = _json(folder / "config.json"), _json(folder / "verdict.json")
        if (config.get("host") != host or config.get("base") != base
                or verdict.get("kind") != kind or verdict.get("state") != "crashed"):
            continue
        for flag, value in ((config.get("config") or {}).get("flags") or {}).items():
            values = tried.setdefault(str(flag).replace("-", "_"), [])
            if value not in values:
                values.append(value)
    return tried


def _folders(exclude) -> list[Path]:
    root = outputs_dir()
    found = [*root.glob("runs/*/"), *root.glob("sweeps/*/*/")]
    own = Path(exclude).resolve() if exclude else None
    newest = sorted(found, key=lambda p: p.name)[-MAX_FOLDERS:]
    return [p for p in newest if own is None or p.resolve() != own]


def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
