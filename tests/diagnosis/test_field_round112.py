"""Held-out round 112 (issue 24): folded into ``work`` with no miss to fix.

Round 112 (h112001-h112002; a user's scheduler traceback in sgl-project/sglang#24413, NGRAM speculative decoding with
the outlines grammar backend, and a healthy DeepSeek-R1 TP8 serve excerpt on MI300X from xinyuwei-david/david-share's
readme, pinned to a commit) was measured once on main at 499655b4 (crashed 2/2, kind 2/2, phase 2/2) and folded into
``work``; docs/diagnosis.md, "Held-out round 112", says what it shows. With no miss there was no rule to add and no
label to dispute. These tests keep the round folded and each of its logs reading as labelled, by the signature that
read it at the measurement (none for the server that served to the end).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real

_IDS = folded_round(REAL_MANIFEST, 112)

# the signature each log is read by
_SIGNATURES = {
    "h112001": "spec_feature_conflict",  # NGRAM's token-bitmask traversal rolling back an outlines grammar
    "h112002": None,                     # a DeepSeek-R1 TP8 server on MI300X, ready, answering 200 to the end
}


def test_round112_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 1, "spec_feature_conflict": 1}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round112_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_h112001s_ngram_with_a_grammar_is_a_feature_conflict_while_serving():
    found = real("h112001")
    assert (found.crashed, found.kind, found.phase) == (True, "spec_feature_conflict", "serving")
    assert "NGRAM" in found.cause and "grammar" in found.cause


def test_h112002s_server_serves_to_the_end():
    found = real("h112002")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")
