"""Probe records read back out of a server's log.

:func:`probe_records` finds every ``DDLAB_PROBE {json}`` line the hook wrote
(schema in :mod:`ddlab.probes.hook`), whatever precedes it on the line: SGLang's
``[2026-11-30 09:14:02] `` or ``[2026-11-30 09:14:02 TP0] `` prefix, a journald
``Nov 30 09:14:02 host python[123]: `` prefix, or both. A record that cannot be read
is skipped and counted (:attr:`Records.skipped`): a line cut short (its JSON does not
parse), one longer than :data:`MAX_RECORD_CHARS` or nested deeper than
:data:`MAX_RECORD_DEPTH` (the hook writes metadata only, a few levels deep; anything else
on such a line is not its record, and a hostile one must not end the reader with a
RecursionError or a MemoryError).

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

__all__ = ["MAX_RECORD_CHARS", "MAX_RECORD_DEPTH", "Records", "none_fields", "not_armed",
           "probe_records"]

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
MAX_RECORD_CHARS = 256 * 1024
MAX_RECORD_DEPTH = 16


class Unreadable(ValueError):
    """A probe record's line that cannot be read (cut, too long, too deep)."""


class Records(list):
    """The records read, in order; ``skipped``: how many could not be read."""

    skipped: int = 0


def probe_records(log_text: str) -> Records:
    """Every DDLAB_PROBE and DFLASH_DIAG record in ``log_text``, in order; those that
    cannot be read are counted in ``skipped`` (module docstring)."""
    out = Records()
    for line in log_text.splitlines():
        try:
            record = _probe_record(line)
            if record is None:
                record = _diag_record(line)
        except Unreadable:
            out.skipped += 1
            continue
        if record is not None:
            out.append(record)
    return out


def none_fields(records: list[dict], events=_ERROR_EVENTS) -> list[str]:
    """The attribute names reported as None where it failed: in error-mode (``raised``)
    records and DFLASH_DIAG records; first seen first, each once. ``events=("call",)``:
    those a first=N probe saw None as the call began (a path that fails without raising,
    such as 0.5.23's graph copy that skips a None field and replays a stale buffer)."""
    names: list[str] = []
    for record in records:
        if record.get("event") not in events:
            continue
        for field in (record.get("summaries") or {}).get("fields") or []:
            if field.get("type") == "NoneType" and field.get("name") not in names:
                names.append(field["name"])
    return names


def not_armed(records: list[dict]) -> list[dict]:
    """The probes that never wrapped their target: a ``missing`` record (the path resolves
    nowhere: ``closest`` is the nearest existing path) or a ``failed`` one, with no
    ``armed`` record for that target in any process; each target once, as
    ``{"target", "why", "closest"}``."""
    armed = {r.get("target") for r in records if r.get("event") == "armed"}
    out: dict[str, dict] = {}
    for record in records:
        target = record.get("target")
        if record.get("event") in ("missing", "failed") and target not in armed \
                and isinstance(target, str) and target not in out:
            error = record.get("error") or {}
            out[target] = {"target": target, "why": str(error.get("message") or "")[:300],
                           "closest": record.get("closest") or None}
    return list(out.values())


def _probe_record(line: str) -> dict | None:
    match = _PROBE.search(line)
    if match is None:
        return None
    record = _json_at(line, match.end())
    if not isinstance(record, dict):
        raise Unreadable("not an object")
    return {**record, "source": "DDLAB_PROBE"}


def _json_at(line: str, start: int):
    """The JSON value at ``start``, bounded in size and depth, else :class:`Unreadable`."""
    if len(line) - start > MAX_RECORD_CHARS:
        raise Unreadable("too long")
    if _depth(line, start) > MAX_RECORD_DEPTH:
        raise Unreadable("too deep")
    try:
        value, _ = _DECODER.raw_decode(line, start)
    except ValueError:
        raise Unreadable("cut or not JSON") from None
    return value


def _depth(text: str, start: int) -> int:
    """The deepest nesting of brackets outside strings from ``start`` on (no recursion)."""
    depth = deepest = 0
    quoted = escaped = False
    for char in text[start:]:
        if quoted:
            quoted = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
            if depth <= 0:
                break
    return deepest


def _diag_record(line: str) -> dict | None:
    match = _DIAG.search(line)
    if match is None:
        return None
    rest = line[match.end():].strip()
    if len(rest) > MAX_RECORD_CHARS:
        raise Unreadable("too long")
    base = {"source": "DFLASH_DIAG", "event": "diag", "mode": "error", "target": None,
            "call": None, "pid": _int(_PID.search(line[:match.start()])),
            "rank": _int(_RANK.search(line[:match.start()]))}
    if rest.startswith("{"):
        try:
            given = _json_at(rest, 0)
        except Unreadable as err:
            if str(err) != "cut or not JSON":
                raise
            given = None  # written by hand: read as words below
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
