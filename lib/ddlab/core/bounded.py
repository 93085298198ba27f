"""Reading a log that may be huge: its first and last bytes, never the middle.

A server that served for days leaves a journal of hundreds of MB; its start (versions,
arguments) is at the head and its end (the crash) at the tail. The watch reads a host's log
file this way (:mod:`ddlab.hosts.services`), and ``ddlab diagnose FILE`` reads a saved log
the same way, so both see the same lines and give the same verdict. What was left out is
one line starting with :data:`LEFT_OUT`, where the gap is.
"""

from __future__ import annotations

from typing import BinaryIO

__all__ = ["LEFT_OUT", "HEAD_BYTES", "TAIL_BYTES", "bounded_lines", "read_bounded"]

LEFT_OUT = "[ddlab] bounded read:"  # the note line where a log read left bytes out
HEAD_BYTES, TAIL_BYTES = 512 << 10, 2 << 20  # what a bounded read keeps of a log's head and tail


def bounded_lines(raw: bytes, skipped=(0, 0), *, partial: bool = False) -> tuple[str, int]:
    """The complete lines of a bounded read (``skipped``: n bytes left out after the
    first ``at``, :class:`ddlab.hosts.transport.Completed`) as text, a :data:`LEFT_OUT`
    line where the gap is; and how many bytes of the source they cover, up to the end
    of the last complete line (where the next read starts); ``partial``: a last line
    without its newline too."""
    at, n = skipped
    end = len(raw) if partial else raw.rfind(b"\n") + 1
    if not n:
        return raw[:end].decode("utf-8", "replace"), end
    head = raw[:raw.rfind(b"\n", 0, at) + 1]
    start = raw.find(b"\n", at) + 1
    if start == 0 or end <= at:  # no complete line after the gap: all of it is read
        tail, covered = b"", len(raw) + n
    else:
        tail, covered = raw[start:end], end + n
    left = covered - len(head) - len(tail)
    note = (f"{LEFT_OUT} {left} bytes ({left / 2**20:.1f} MB) of log left out here: a read "
            "returns the first and the last MB only\n")
    return head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace"), covered


def read_bounded(stream: BinaryIO, *, head: int = HEAD_BYTES, tail: int = TAIL_BYTES,
                 size: int | None = None) -> tuple[str, int]:
    """(text, bytes left out) of a whole log: all of it when it is at most ``head`` + ``tail``
    bytes, else its first ``head`` and last ``tail`` bytes around a :data:`LEFT_OUT` line.
    ``size``: the stream's length where it can seek (a file); a pipe is read through once,
    keeping at most ``head`` + 2 x ``tail`` bytes in memory."""
    if size is not None and size > head + tail:
        first = stream.read(head)
        stream.seek(size - tail)
        raw, skipped = first + stream.read(tail), size - tail - head
    else:
        first, rest, skipped = stream.read(head), b"", 0
        while chunk := stream.read(1 << 20):
            rest += chunk
            if len(rest) > 2 * tail:
                skipped += len(rest) - tail
                rest = rest[-tail:]
        if len(rest) > tail:
            skipped += len(rest) - tail
            rest = rest[-tail:]
        raw = first + rest
    text, _ = bounded_lines(raw, (len(first), skipped), partial=True)
    return text, skipped
