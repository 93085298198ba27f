"""Held-out round 120 (issue 24): folded into ``work`` with no miss to fix.

Round 120 (h120001; one log file committed to a user's repository, pinned to a commit: c0derzer0/llmsys_f25_hw6's
sglang/logs/training.logs, a course assignment's offline SGLang engine (Qwen2.5-7B, dp2 on two A100s, the log level at
error) loading its weights, capturing CUDA graphs and completing its one batch, copied byte for byte from the fetched
snapshot) was measured once on main at e3df88be (crashed 1/1, kind 1/1, phase 0/0: the log does not show its phase)
and folded into ``work``; docs/diagnosis.md, "Held-out round 120", says what it shows. With no miss there was no rule to
add and no label to dispute. These tests keep the round folded and its log reading as labelled, by the signature that
read it at the measurement (none: the engine did not crash); its progress bars are written one a line, with no
carriage return, so it reads the same as its text and as ``ddlab diagnose FILE`` reads it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real, \
    with_carriage_returns

_IDS = folded_round(REAL_MANIFEST, 120)

# the signature each log is read by
_SIGNATURES = {
    "h120001": None,  # an offline engine's load, graph capture and one batch, its log level at error: no error line
}


def test_round120_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 1}
    assert not any(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round120_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round120s_log_holds_no_carriage_return_to_read_either_way():
    assert with_carriage_returns(_IDS) == []


def test_h120001s_offline_engine_did_not_crash_and_its_log_stops_after_the_capture():
    found = real("h120001")
    assert (found.crashed, found.kind) == (False, None)
    assert found.phase == "graph_capture", "the last phase the log shows: its batch ran with the log level at error"
    assert found.facts["dp_size"] == 2
