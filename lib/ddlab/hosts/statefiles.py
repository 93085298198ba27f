"""ddlab's state files on a host (``lock.json``, ``installed.json``), read bounded.

The host is no authority: anyone with access may have edited, corrupted or
replaced these files (issue 23 found a 10^5-deep JSON, a 100 MB file, binary
bytes and a symbolic link to a root-only file each ending ``deploy`` in a
traceback after production was stopped). So a state file is read with a size
cap (:data:`MAX_STATE_BYTES`; ddlab's own are a few KB) by ``dd`` without
following a symbolic link (``iflag=nofollow``), must be UTF-8, is nested no
deeper than :data:`MAX_DEPTH` (checked before the parser sees it) and must be a
JSON object. Anything else is :class:`StateFileError`, one line:
``unreadable: <why>; remove <path>``. A missing file is None. A 100 MB file
costs one read of its first MB (a few ms on the test host).
"""

from __future__ import annotations

import json
import re

from ddlab.core.errors import StateFileError
from ddlab.hosts.transport import Transport

__all__ = ["read_state", "MAX_STATE_BYTES", "MAX_DEPTH"]

MAX_STATE_BYTES = 1 << 20
MAX_DEPTH = 32
_READ = ('[ ! -L "$1" ] || { echo "a symbolic link" >&2; exit 3; }; [ -e "$1" ] || exit 4; '
         'exec dd if="$1" iflag=nofollow,count_bytes count="$2" bs=64K status=none')
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(rb"[^\[\]{}]")


def read_state(transport: Transport, path: str) -> dict | None:
    """The JSON object in the state file at ``path`` on the host; None when there is none;
    :class:`StateFileError` when it cannot be read (module docstring)."""
    done = transport.run(["sh", "-c", _READ, "sh", path, str(MAX_STATE_BYTES + 1)], check=False)
    if done.exit_code == 4:
        return None
    if done.exit_code == 3 or "symbolic link" in done.stderr:
        raise _unreadable(path, "a symbolic link (ddlab never follows one)")
    if done.exit_code != 0:
        said = done.stderr.strip().splitlines()[-1:] or [f"exit {done.exit_code}"]
        raise _unreadable(path, said[0][-200:])
    return parse_state(done.stdout_bytes, path)


def parse_state(data: bytes, path: str) -> dict:
    """``data`` as a state file's JSON object, or :class:`StateFileError`."""
    if len(data) > MAX_STATE_BYTES:
        raise _unreadable(path, f"larger than {MAX_STATE_BYTES >> 20} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _unreadable(path, f"not UTF-8 text (byte {err.start})") from None
    depth = nesting(data)
    if depth > MAX_DEPTH:
        raise _unreadable(path, f"JSON nested {depth} deep (at most {MAX_DEPTH})")
    try:
        value = json.loads(text)
    except ValueError as err:
        raise _unreadable(path, f"not JSON ({str(err)[:120]})") from None
    if not isinstance(value, dict):
        raise _unreadable(path, f"a JSON {type(value).__name__}, not an object")
    return value


def nesting(data: bytes) -> int:
    """How deep the brackets of a JSON text nest (strings left out), without parsing it."""
    depth = deepest = 0
    for char in _NOT_BRACKETS.sub(b"", _STRINGS.sub(b"", data)):
        depth += 1 if char in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _unreadable(path: str, why: str) -> StateFileError:
    return StateFileError(f"unreadable: {path} is {why}", fix=f"remove {path}", path=path, why=why)
