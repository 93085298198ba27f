"""Held-out round 115 (issue 24): folded into ``work`` with no miss to fix.

Round 115 (h115001; the whole of sglang/logs/training.logs committed to c0derzer0/llmsys_f25_hw6, pinned to a commit: a
course homework's offline sgl.Engine run of Qwen2.5-7B-Instruct with dp_size=2 on two A100s and log_level='error', an
nvidia-smi snapshot pasted above it, both DP ranks' shard and capture bars, then the script's own bar at 1/1) was
measured once on main at 46d61089 (crashed 1/1, kind 1/1, phase 0/0: its phase, serving, is shown by the user's bar
alone, no SGLang line, so `phase_in_log` is false) and folded into ``work``; docs/diagnosis.md, "Held-out round 115",
says what it shows. With no miss there was no rule to add and no label to dispute. These tests keep the round folded
and its log reading as labelled, by the signature that read it at the measurement (none: the engine did not crash).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real

_IDS = folded_round(REAL_MANIFEST, 115)

# the signature each log is read by
_SIGNATURES = {
    "h115001": None,  # an offline engine, dp_size=2: both ranks' capture bars at 36/36, the user's batch bar at 1/1
}


def test_round115_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 1}
    # the phase is the user's bar's, not an SGLang line's: not counted
    assert [i for i in _IDS if not REAL_MANIFEST[i]["phase_in_log"]] == ["h115001"]


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round115_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_h115001s_offline_engine_with_two_dp_ranks_did_not_crash():
    found = real("h115001")
    assert (found.crashed, found.kind, found.signature) == (False, None, None)
    assert found.facts["dp_size"] == 2
