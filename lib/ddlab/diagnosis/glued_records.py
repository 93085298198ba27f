"""A vLLM log record glued after another writer's line, put back as its own line (vLLM round 85).

Contract: :func:`split_glued_record` takes one line's text and returns the lines it really holds;
:func:`ddlab.diagnosis.logtext.split_lines` applies it after the other glued writers (:mod:`.pastes`).

Two writers share the terminal: uvicorn's access line ('INFO: 172.16.18.69:52036 - "POST
/v1/chat/completions HTTP/1.1" 500 Internal Server Error') and vLLM's logger, whose record starts with its
stamp, "LEVEL MM-DD hh:mm:ss file.py:N] " (vllm/logger.py's format "%(levelname)s %(asctime)s
%(filename)s:%(lineno)d] %(message)s", datefmt "%m-%d %H:%M:%S" (0.7.2 vllm/logger.py:22-24); from 0.8 the
file in brackets, "[file.py:N]"). A paste that lost the newline between them leaves the record glued after the
other line's text: the stamp whole (a level word, a date, a time, a file and line closed by "]") still opens a
record there. Text that only quotes a level word ("an ERROR 500 answer") has no such stamp, and a prefix of
the same line (a process tag "(VllmWorkerProcess pid=614)", a collector's time or "service |") ends in a
bracket, a bar, a colon or a digit and is left alone.
"""

from __future__ import annotations

import re

__all__ = ["split_glued_record"]

_STAMP = (r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
          r"\[?[\w.-]+\.py:\d+\] ")
# the other writer's text ends in a letter (a word of its own, not a tag's bracket, a prefix's bar or colon,
# nor a time), then a space
_GLUED_RE = re.compile(rf"^(?P<head>.*[A-Za-z]) +(?P<tail>{_STAMP}.*)$")


def split_glued_record(text: str) -> list[str]:
    """``text`` as two lines where a vLLM record's stamp is glued after another writer's words."""
    match = _GLUED_RE.match(text) if "] " in text else None
    if not match or not re.search(r"\S \S", match["head"]):
        return [text]
    return [match["head"], match["tail"]]
