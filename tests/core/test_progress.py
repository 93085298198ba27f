"""A job's pace in words: the line a pipe keeps as each step of N ends."""

from __future__ import annotations

import pytest

from ddlab.core import progress
from ddlab.core.progress import Pace, duration_words


@pytest.mark.parametrize("seconds, said", [
    (0.4, "0s"), (42, "42s"), (59.6, "1m00s"), (252, "4m12s"), (3780, "1h03m"),
], ids=["nothing", "seconds", "rounds-up", "minutes", "hours"])
def test_a_duration_reads_as_a_person_says_it(seconds, said):
    assert duration_words(seconds) == said


def test_each_step_says_how_far_how_long_and_how_long_left(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    pace = Pace(10)
    assert pace.said(0) == "0/10 done, 0s elapsed, time left unknown"
    now[0] += 72
    assert pace.said(3) == "3/10 done, 1m12s elapsed, about 2m48s left"
    assert pace.said(3, count=False) == "1m12s elapsed, about 2m48s left"
    now[0] += 180
    assert pace.said(10) == "10/10 done in 4m12s"
    assert pace.said(10, count=False) == "done in 4m12s"
