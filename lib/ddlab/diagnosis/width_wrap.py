"""A paste a terminal hard-wrapped at its width, its records put back on one line each (vLLM round 77).

Contract: :func:`unwrapped_paste` takes a paste's text and returns it with each wrapped record joined
again, or the text unchanged where it shows no such wrap. A terminal (or a viewer copied from) that
breaks every line at its width W leaves every broken line exactly W characters long and no line
longer, and the rest of the record on the next line, which starts inside the record's text. So a
paste whose longest line (at least 80 characters) is shared by two lines or more, each of them (but a
last line) followed by a line that starts with a lower-case letter (inside a word or a sentence: no
record opens so, not a stamp, a process tag, a level, a path or a traceback line; nor with the first word of
the line it would continue, a collector's prefix such as docker compose's ``service-1  | ``), was wrapped there:
each such pair is joined with nothing (the break falls inside a word as often as at a space, and the
terminal keeps the space on one side). Where one W-long line is followed by anything else, the lines
are a collector's cut at a fixed length, or records that happen to share a length: nothing is joined.

Why: a message vLLM writes on one line (the shared-memory queue's 60-second notice) is read line by
line, and a wrap at the width breaks it where no signature looks (:attr:`Signature.wrapped` asks a
traceback's exception message joined again; a logged line has no message block to join).
"""

from __future__ import annotations

import re

__all__ = ["unwrapped_paste"]

_MIN_WIDTH = 80  # a terminal narrower than this is not one anybody pastes a log from
_REST_RE = re.compile(r"^[a-z]")  # the rest of a record, broken inside its text


def _rest(line: str, after: str) -> bool:
    """``after`` is the rest of ``line``'s record: lower-case at its start, and not opening as ``line`` does (a
    collector's prefix, ``service-1  | ``, that every line of the paste starts with)."""
    return bool(_REST_RE.match(after)) and after.split(maxsplit=1)[0] != line.split(maxsplit=1)[0]


def unwrapped_paste(text: str) -> str:
    """``text`` with the records a terminal wrapped at its width joined again (module docstring)."""
    raws = text.split("\n")
    lengths = [len(raw.rstrip("\r")) for raw in raws]
    width = max(lengths, default=0)
    last = len(raws) - 1 if raws[-1] else len(raws) - 2  # the paste's last line (a final newline's "" after it)
    cut = {i for i in range(last) if lengths[i] == width}
    if width < _MIN_WIDTH or lengths.count(width) < 2 or not all(_rest(raws[i], raws[i + 1]) for i in cut):
        return text
    out: list[str] = []
    for i, raw in enumerate(raws):
        if i - 1 in cut and out:
            out[-1] = out[-1].rstrip("\r") + raw
        else:
            out.append(raw)
    return "\n".join(out)
