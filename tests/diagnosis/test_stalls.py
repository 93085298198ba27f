"""ddlab.diagnosis.stalls: a hang told by silence (no batch line for the watchdog's timeout)."""

from __future__ import annotations

import pytest

from ddlab.diagnosis.logtext import split_lines
from ddlab.diagnosis.stalls import stall

_BATCH = "[{t}] Decode batch, #running-req: {r}, #token: 900, token usage: 0.01, #queue-req: {q}"
_METRICS = '[{t}] INFO:     10.0.3.7:51200 - "GET /metrics HTTP/1.1" 200 OK'
_ANSWER = '[{t}] INFO:     10.0.3.7:51200 - "POST /generate HTTP/1.1" 200 OK'


def _log(*rows: str) -> list:
    return split_lines("\n".join(rows))


@pytest.mark.parametrize("rows, hung", [
    ((_BATCH.format(t="2026-12-02 10:00:00", r=4, q=1), _METRICS.format(t="2026-12-02 10:05:01")), True),
    ((_BATCH.format(t="2026-12-02 10:00:00", r=4, q=1), _METRICS.format(t="2026-12-02 10:04:59")), False),
    ((_BATCH.format(t="2026-12-02 10:00:00", r=0, q=0), _METRICS.format(t="2026-12-02 10:09:00")), False),
    ((_BATCH.format(t="2026-12-02 10:00:00", r=2, q=0), _ANSWER.format(t="2026-12-02 10:00:01"),
      _METRICS.format(t="2026-12-02 10:09:00")), False),
    ((_BATCH.format(t="23:58:00", r=2, q=0), _METRICS.format(t="00:04:00")), True),
], ids=["silent-past-the-timeout", "not-yet", "nothing-in-flight", "answered-after-the-batch",
        "time-of-day-past-midnight"])
def test_silence_while_requests_wait_is_a_hang(rows, hung):
    found = stall(_log(*rows))
    assert (found is not None) == hung
    if hung:
        assert found.signature.kind == "hang" and "request(s) were in flight" in found.cause


def test_the_servers_own_timeout_counts():
    rows = (_BATCH.format(t="2026-12-02 10:00:00", r=4, q=1), _METRICS.format(t="2026-12-02 10:05:01"))
    assert stall(_log(*rows), timeout_s=600) is None
