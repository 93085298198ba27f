"""pytest's report of a failed test, read as the Python traceback it reports (vLLM round 98).

pytest prints a failure's traceback in its own form (pytest 8.3.3 src/_pytest/_code/code.py): each entry's source
lines, the failing one marked ">" (FormattedExcinfo.flow_marker, :797, :867), the exception's lines marked "E"
and indented ("E       RuntimeError: ...": fail_marker, :798, get_exconly :885-889); each entry's location as
"path:lineno: message" (ReprFileLocation.toterminal, :1295-1296), whose message is "in <function>" for an entry
shown short (the default --tb=auto shows all but the first and the last so, :941) and the exception's type for one
shown long (:943), written before a short entry's source and after a long one's (ReprEntry.toterminal,
:1251-1271). :func:`python_frames` rewrites such a report as Python writes a traceback, so the readers of frames
and exception lines read it: a short entry's location as '  File "path", line N, in function', an "E" line as the
exception's line, and pytest's failure header ("____ test_name ____", the terminal's sep) as
"Traceback (most recent call last):". Only a paste that is such a report is rewritten: one whose "E" line's
exception type is the message of a long entry's location ("../vllm/model_executor/models/utils.py:363:
RuntimeError" after "E       RuntimeError: torch.cat(): ..."); a log that only quotes a line like one keeps it.
"""

from __future__ import annotations

import re

__all__ = ["python_frames"]

_FAIL_RE = re.compile(r"^E {3,}(?P<line>(?P<type>(?:\w+\.)*\w+)(?::\s.*|:?\s*$))")
_SHORT_RE = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<no>\d+): in (?P<func>[\w<>.]+)\s*$")
_LONG_RE = re.compile(r"^(?P<path>[^\s:]+\.py):\d+: (?P<type>(?:\w+\.)*\w+)\s*$")
_HEADER_RE = re.compile(r"^_{3,} \S.* _{3,}\s*$")


def _is_report(raws: list[str]) -> bool:
    failed = {m["type"] for raw in raws if (m := _FAIL_RE.match(raw))}
    return any((m := _LONG_RE.match(raw)) and m["type"] in failed for raw in raws)


def python_frames(raws: list[str]) -> list[str]:
    """``raws`` with pytest's failure report written as Python's traceback, where the paste is one (see above);
    one line for one line."""
    if not _is_report(raws):
        return raws
    out = []
    for raw in raws:
        if m := _FAIL_RE.match(raw):
            out.append(m["line"])
        elif m := _SHORT_RE.match(raw):
            out.append(f'  File "{m["path"]}", line {m["no"]}, in {m["func"]}')
        elif _HEADER_RE.match(raw):
            out.append("Traceback (most recent call last):")
        else:
            out.append(raw)
    return out
