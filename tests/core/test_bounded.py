"""A log read bounded (ddlab.core.bounded): its head and its tail, the middle said, never read.

The watch reads a host's log file this way; ``ddlab diagnose FILE`` and ``ddlab diagnose -``
read a saved log the same way (tests/diagnosis/test_diagnosis.py runs the command on one).
"""

from __future__ import annotations

import io
import os
import subprocess

import pytest

from ddlab.core.bounded import LEFT_OUT, read_bounded

HEAD, TAIL = 1000, 3000


def _log(n_lines: int) -> bytes:
    return b"".join(b"line %06d %s\n" % (i, b"x" * 40) for i in range(n_lines))


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_a_log_within_the_bound_is_read_whole_and_as_text():
    raw = _log(60) + b"\xff not utf-8 \xc3\nno newline at the end"  # 3 KB + 2 lines
    assert len(raw) <= HEAD + TAIL
    text, left = read_bounded(io.BytesIO(raw), head=HEAD, tail=TAIL, size=len(raw))
    assert left == 0 and text == raw.decode("utf-8", "replace")
    assert read_bounded(io.BytesIO(raw), head=HEAD, tail=TAIL) == (text, 0), "a pipe reads the same"


def test_a_big_log_keeps_whole_lines_of_its_head_and_tail_and_says_the_gap():
    raw = _log(2000)  # 106 KB
    text, left = read_bounded(io.BytesIO(raw), head=HEAD, tail=TAIL, size=len(raw))
    lines = _lines(text)
    notes = [i for i, line in enumerate(lines) if line.startswith(LEFT_OUT)]
    assert len(notes) == 1, "one note, where the gap is"
    head, tail = lines[:notes[0]], lines[notes[0] + 1:]
    every = _lines(raw.decode())
    assert head == every[:len(head)] and tail == every[-len(tail):], "whole lines, in order"
    assert len(head) == HEAD // 53 and len(tail) == TAIL // 53, "no line cut at either edge"
    assert left == len(raw) - HEAD - TAIL
    gap = len(raw) - sum(len(line) + 1 for line in head + tail)
    assert f"{gap} bytes" in lines[notes[0]], "the note counts the bytes not shown"


def test_a_pipe_is_read_through_once_with_the_same_text(tmp_path):
    raw = _log(2000) + b"the last line, no newline"
    path = tmp_path / "journal.log"
    path.write_bytes(raw)
    with path.open("rb") as stream:
        from_file = read_bounded(stream, head=HEAD, tail=TAIL, size=len(raw))
    read_end, write_end = os.pipe()
    writer = subprocess.Popen(["cat", str(path)], stdout=write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        from_pipe = read_bounded(stream, head=HEAD, tail=TAIL)
    writer.wait()
    assert from_pipe == from_file
    assert from_file[0].endswith("the last line, no newline"), "a whole log keeps its last line"


@pytest.mark.parametrize("seekable", [True, False], ids=["file", "pipe"])
@pytest.mark.parametrize("n_lines", [75, 76, 77, 100, 150, 400])
def test_around_the_bound_nothing_is_lost_twice_or_shown_twice(n_lines, seekable):
    raw = _log(n_lines)  # 75 lines are within HEAD + TAIL, 150 within HEAD + 2 x TAIL
    text, left = read_bounded(io.BytesIO(raw), head=HEAD, tail=TAIL,
                              size=len(raw) if seekable else None)
    shown = [line for line in _lines(text) if not line.startswith(LEFT_OUT)]
    every = _lines(raw.decode())
    assert len(set(shown)) == len(shown) and set(shown) <= set(every)
    assert (left == 0) == (len(raw) <= HEAD + TAIL) and (left == 0) == (shown == every)
