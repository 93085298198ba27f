"""Held-out round 118 (issue 24): folded into ``work`` with no miss to fix.

Round 118 (h118001-h118002; two log files committed to two users' SGLang checkouts, each pinned to a commit: the last
20 lines of Jiminator/sglang's TP8 serve log under nsys, serving until SIGTERM, the detokenizer's 'exit code -15' and
SGLang's SIGQUIT echo after the notice, then nsys's own lines; and the whole of Preeti1012/sglang-dynamic's
single_family_900req1_80mem_new.txt, a modified checkout's start and a 900-request burst with the author's debug
prints) was measured once on main at 603f282b (crashed 2/2, kind 2/2, phase 2/2) and folded into ``work``;
docs/diagnosis.md, "Held-out round 118", says what it shows. With no miss there was no rule to add and no label to
dispute. These tests keep the round folded and each of its logs reading as labelled, by the signature that read it at
the measurement (none: neither server crashed); neither holds a carriage return, so each reads the same as its
text and as ``ddlab diagnose FILE`` reads it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real, \
    with_carriage_returns

_IDS = folded_round(REAL_MANIFEST, 118)

# the signature each log is read by
_SIGNATURES = {
    "h118001": None,  # TP8 under nsys: a decode batch, then SIGTERM, the detokenizer's exit -15 and the SIGQUIT echo
    "h118002": None,  # a modified checkout's start, 'ready to roll', a 900-request burst, the file ending mid-serving
}


def test_round118_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 2}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round118_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round118_logs_hold_no_carriage_return_to_read_either_way():
    assert with_carriage_returns(_IDS) == []


def test_h118001s_server_stopped_by_sigterm_did_not_crash_while_serving():
    found = real("h118001")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")


def test_h118002s_burst_on_a_modified_checkout_did_not_crash_while_serving():
    found = real("h118002")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")
    assert found.facts["max_total_num_tokens"] == 184072
