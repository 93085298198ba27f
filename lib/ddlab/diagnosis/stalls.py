"""A hang with no watchdog text: no batch line for the watchdog's timeout while requests wait.

Contract: :func:`stall` reads a log's lines and returns a
:class:`~ddlab.diagnosis.rootcause.Candidate` of the ``hang`` signature when the
last progress line (``Prefill batch`` / ``Decode batch``, an answered generation
request) is a batch line that shows requests in flight
(``#running-req`` or ``#queue-req`` above 0) and the log goes on, stamped by
SGLang's logger, for at least ``timeout_s`` seconds after it with no batch line
(SGLang's own ``--watchdog-timeout``, 300 s unless the server args say
otherwise: the time after which its watchdog would have called the scheduler
stuck). Else None. Times are SGLang's stamps (a date, or the time of day alone
in older releases; a time of day that goes backwards is taken as the next day).

Why: a server started with the watchdog off, or a paste cut before the
watchdog's line, still shows the hang: requests keep arriving or the health
check keeps asking while the scheduler writes nothing. (Round 30) The lines from the tokenizer
manager's SIGTERM notice on are the stop an operator asked for, not the server going on: a silence
that only they end shows an idle server as well as a stuck one. (Round 98) A PD queue's abort ("Decode transfer
failed for request rank=...") is the scheduler's loop turning (0.5.5.post3 disaggregation/decode.py:736, from
process_decode_queue at :792 / :815): a progress line that shows no request in flight.
"""

from __future__ import annotations

import re
from datetime import datetime

from ddlab.crashes.kinds.runtime import HANG
from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.rootcause import Candidate, stop_asked

__all__ = ["stall", "WATCHDOG_DEFAULT_S"]

WATCHDOG_DEFAULT_S = 300  # SGLang's --watchdog-timeout default, every release since 0.4
_BATCH_RE = re.compile(r"(?:Prefill|Decode) batch\b|\"POST /\S+ HTTP/[\d.]+\" 200\b"  # progress
                       # (round 98) a PD queue's abort, logged from the scheduler's loop (0.5.5.post3
                       # disaggregation/decode.py:736, :393, prefill.py:261, :544): the loop turns
                       r"|(?:Prefill|Decode) (?:bootstrap|handshake|transfer) failed for request rank=")
_IN_FLIGHT_RE = re.compile(r"#(?:running|queue)-req: (\d+)")
_READY_RE = re.compile(r"The server is fired up and ready to roll")


def _seconds(stamp: str | None, day_offset: float = 0.0) -> float | None:
    if not stamp:
        return None
    text = stamp.replace(",", ".").replace("T", " ")
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%H:%M:%S.%f", "%H:%M:%S"):
        try:
            moment = datetime.strptime(text, fmt)
        except ValueError:
            continue
        if moment.year == 1900:  # the time of day alone
            return moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
        return moment.timestamp()
    return None


def _timeline(lines: list[Line]) -> list[tuple[Line, float]]:
    """Stamped lines with their time; a time of day that goes backwards is the next day."""
    out, day, last = [], 0.0, None
    for line in lines:
        seconds = _seconds(line.time)
        if seconds is None:
            continue
        if last is not None and seconds + day < last - 43200 and seconds < 86400:
            day += 86400
        out.append((line, seconds + day))
        last = seconds + day
    return out


def stall(lines: list[Line], timeout_s: float = WATCHDOG_DEFAULT_S) -> Candidate | None:
    """The hang the log shows by its silence (see the module docstring), or None."""
    stop = stop_asked(lines)
    timeline = _timeline(lines if stop is None else lines[:stop])
    batches = [(line, t) for line, t in timeline if _BATCH_RE.search(line.msg)]
    if not batches:
        return None
    last, at = batches[-1]
    waiting = sum(int(n) for n in _IN_FLIGHT_RE.findall(last.msg))  # an answered request says none
    after = [(line, t) for line, t in timeline if line.no > last.no]
    if not waiting or not after or any(_READY_RE.search(line.msg) for line, _ in after):
        return None
    end, end_t = after[-1]
    silent = end_t - at
    if silent < timeout_s:
        return None
    cause = (f"no batch line for {silent:.0f} s (--watchdog-timeout {timeout_s:g} s) while {waiting} "
             f"request(s) were in flight (the last batch line is line {last.no})")
    return Candidate(last.no, end.no, cause, HANG, lines=[last, end], rank=last.rank)
