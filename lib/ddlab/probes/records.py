"""Probe records read back out of a server's log.

:func:`probe_records` finds every ``DDLAB_PROBE {json}`` line the hook wrote
(schema in :mod:`ddlab.probes.hook`), whatever precedes it on the line: SGLang's
``[2026-11-30 09:14:02] `` or ``[2026-11-30 09:14:02 TP0] `` prefix, a journald
``Nov 30 09:14:02 host python[123]: `` prefix, or both. A line cut short (its JSON
does not parse) is skipped.

It also reads the field's hand-patched ``DFLASH_DIAG`` lines, leniently:

- ``DFLASH_DIAG {json}``: the object as given;
- ``DFLASH_DIAG [words] name=value ...``: leading words without ``=`` become
  ``tag``; each ``name=value`` a field summary shaped like the hook's: ``None``
  -> type NoneType; ``torch.Size([4, 33])`` or ``name.shape=(65,)`` -> a Tensor's
  ``shape``; ``name.dtype=`` / ``name.device=`` join ``name``'s entry; an int,
  float, True or False -> its ``value``; anything else -> ``text``, as written.

Each record comes back with ``source`` (``DDLAB_PROBE`` or ``DFLASH_DIAG``); a
DFLASH_DIAG record has ``event`` "diag", ``summaries.fields``, and the pid and
rank the line's prefixes tell (journald's ``[pid]``, SGLang's ``TPn``), if any.
"""

from __future__ import annotations

import json
import re

__all__ = ["none_fields", "probe_records"]

_PROBE = re.compile(r"\bDDLAB_PROBE (?=\{)")
_DIAG = re.compile(r"\bDFLASH_DIAG\b\s*")
_PAIR = re.compile(r"(?P<name>[A-Za-z_][\w.]*)="
                   r"(?P<value>(?:\((?:[^()]|\([^()]*\))*\)|\[[^\[\]]*\]|[^\s(\[])+)")
_PID = re.compile(r"\[(\d+)\]:\s")
_RANK = re.compile(r"\bTP(\d+)\]")
_INTS = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")
_DECODER = json.JSONDecoder()
_ERROR_EVENTS = ("raised", "diag")


def probe_records(log_text: str) -> list[dict]:
    """Every DDLAB_PROBE and DFLASH_DIAG record in ``log_text``, in order (module docstring)."""
    out = []
    for line in log_text.splitlines():
        record = _probe_record(line)
        if record is None:
            record = _diag_record(line)
        if record is not None:
            out.append(record)
    return out


def none_fields(records: list[dict]) -> list[str]:
    """The attribute names reported as None where it failed: in error-mode (``raised``)
    records and DFLASH_DIAG records; first seen first, each once."""
    names: list[str] = []
    for record in records:
        if record.get("event") not in _ERROR_EVENTS:
            continue
        for field in (record.get("summaries") or {}).get("fields") or []:
            if field.get("type") == "NoneType" and field.get("name") not in names:
                names.append(field["name"])
    return names


def _probe_record(line: str) -> dict | None:
    match = _PROBE.search(line)
    if match is None:
        return None
    try:
        record, _ = _DECODER.raw_decode(line, match.end())
    except ValueError:
        return None
    return {**record, "source": "DDLAB_PROBE"} if isinstance(record, dict) else None


def _diag_record(line: str) -> dict | None:
    match = _DIAG.search(line)
    if match is None:
        return None
    rest = line[match.end():].strip()
    base = {"source": "DFLASH_DIAG", "event": "diag", "mode": "error", "target": None,
            "call": None, "pid": _int(_PID.search(line[:match.start()])),
            "rank": _int(_RANK.search(line[:match.start()]))}
    if rest.startswith("{"):
        try:
            given, _ = _DECODER.raw_decode(rest)
        except ValueError:
            given = None
        if isinstance(given, dict):
            return {**base, **given, "source": "DFLASH_DIAG"}
    first = _PAIR.search(rest)
    tag = rest[:first.start()].strip() if first else rest
    return {**base, "tag": tag or None,
            "summaries": {"args": [], "subject": None, "fields": _diag_fields(rest)}}


def _diag_fields(text: str) -> list[dict]:
    fields: dict[str, dict] = {}
    for match in _PAIR.finditer(text):
        name, value = match.group("name", "value")
        base, _, attr = name.rpartition(".")
        if base and attr in ("shape", "dtype", "device"):
            entry = fields.setdefault(base, {"name": base, "type": "Tensor"})
            entry[attr] = _ints(value) if attr == "shape" else value
        else:
            fields[name] = {"name": name, **_diag_value(value)}
    return list(fields.values())


def _diag_value(text: str) -> dict:
    if text == "None":
        return {"type": "NoneType", "value": None}
    if text in ("True", "False"):
        return {"type": "bool", "value": text == "True"}
    if text.startswith("torch.Size("):
        return {"type": "Tensor", "shape": _ints(text)}
    if _NUMBER.fullmatch(text):
        number = float(text) if any(c in text for c in ".eE") else int(text)
        return {"type": type(number).__name__, "value": number}
    return {"type": "str", "text": text}


def _ints(text: str) -> list[int]:
    return [int(x) for x in _INTS.findall(text)]


def _int(match) -> int | None:
    return int(match.group(1)) if match else None
