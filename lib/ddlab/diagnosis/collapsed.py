"""A traceback whose every run of whitespace became one space, put back as the lines it was printed as.

Contract: :func:`split_collapsed` takes one line's text (its collector prefixes and quote markers
already peeled, :func:`ddlab.diagnosis.pastes.split_flattened` already applied) and returns the
lines it really was; :func:`ddlab.diagnosis.logtext.split_lines` applies it.

A flattened traceback (:mod:`.pastes`) kept each printed line's indentation, so its frames and code
lines are told by their runs of spaces. A *collapsed* one lost those too: a paste rendered as prose
(a quoted reply, a markdown paragraph) joins the lines and folds each run of whitespace into one
space, so SGLang's 'Scheduler hit an exception: {traceback}' (0.4.6.post4
srt/managers/scheduler.py:2286) reads 'Scheduler hit an exception: Traceback (most recent call last):
File ".../scheduler.py", line 2271, in run_scheduler_process scheduler.event_loop_normal() File ...
raise ValueError(msg) ValueError: token_to_kv_pool_allocator memory leak detected! ...' (check_memory's
raise, :1231-1236). What CPython prints still marks the breaks: every frame line is '  File "{path}",
line {n}, in {name}' and its code line follows it (Lib/traceback.py, StackSummary.format_frame_summary),
the exception line 'Type: message' follows the last code line (format_exception_only), carets
('~~^^') follow a code line (3.11+), and a chain's link sentences stand alone. A frame's name ends
at the first space, so the code after it is whole; so is the exception, from its type to the end of
what follows.
"""

from __future__ import annotations

import re

__all__ = ["split_collapsed"]

_HEADER = "Traceback (most recent call last):"
_COLLAPSED_RE = re.compile(r'Traceback \(most recent call last\): File "[^"]+", line \d+, in \S')
_FRAME_RE = re.compile(r'(?:^| )File "([^"]+)", line (\d+), in (\S+)(?= |$)')
_LINK_RE = re.compile(r" ?(During handling of the above exception, another exception occurred:"
                      r"|The above exception was the direct cause of the following exception:) ?")
_CARETS_RE = re.compile(r" (?=[~^]*\^[~^]*(?: |$))")
# the exception line after a frame's code: "Type: message" (or a bare Type at the end), as pastes.py's
_EXC_RE = re.compile(r"(?:^| )(?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning|Failure)"
                     r"(?:: |:?$))")


def split_collapsed(text: str) -> list[str]:
    """A traceback collapsed onto one line (single spaces), as the lines it was printed as."""
    if "  " in text or not _COLLAPSED_RE.search(text):
        return [text]
    out: list[str] = []
    pos = 0
    for frame in _FRAME_RE.finditer(text):
        out += _between(text[pos:frame.start()], first=not out)
        out.append(f'  File "{frame[1]}", line {frame[2]}, in {frame[3]}')
        pos = frame.end()
    out += _between(text[pos:], first=False)
    return [line for line in out if line.strip()]


def _between(part: str, first: bool) -> list[str]:
    """What stood between two frame lines: the header, or a code line, an exception and a chain's link."""
    part = part.strip()
    if first:
        return [part]
    lines: list[str] = []
    for i, piece in enumerate(_LINK_RE.split(part)):
        if i % 2:                                   # the link sentence, on its own line
            lines += ["", piece, ""]
            continue
        header = piece.endswith(_HEADER)
        body = piece[:-len(_HEADER)].rstrip() if header else piece
        exc = _EXC_RE.search(body)
        code, raised = (body[:exc.start()], body[exc.end():]) if exc else (body, "")
        lines += [f"    {bit}" for bit in _CARETS_RE.split(code.strip()) if bit]
        lines += [raised.strip()] if raised else []
        lines += [_HEADER] if header else []
    return lines
