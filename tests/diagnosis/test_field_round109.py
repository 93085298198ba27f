"""Held-out round 109 (issue 24): folded into ``work`` with no miss to fix.

Round 109 (h109001-h109004; log files committed to users' own repositories, three of them gzipped there and
decompressed, each pinned to a commit) was measured once on main at 74edfafa beside round 108 (crashed 4/4, kind 4/4,
phase 4/4) and folded into ``work``; docs/diagnosis.md, "Held-out round 109", says what it shows. With no miss there
was no rule to add and no label to dispute. These tests keep the round folded and each of its logs reading as
labelled, by the signature that read it at the measurement (none for the three servers that served to the end).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real

_IDS = folded_round(REAL_MANIFEST, 109)

# the signature each log is read by
_SIGNATURES = {
    "h109001": None,              # a 2-node DeepSeek-V4-Flash prefill server (DeepEP v2), ready, serving to the end
    "h109002": None,              # its decode server (no all-to-all backend, graphs on), ready, serving to the end
    "h109003": "gloo_peer_lost",  # SGLang Diffusion's worker: gloo 'Connection closed by peer', 3 errors in a row
    "h109004": None,              # a 1-node decode server (DeepEP v2 direct), ready, serving to the end
}


def test_round109_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 3, "nccl": 1}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round109_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_h109003s_lost_gloo_peer_is_a_crash_while_serving():
    found = real("h109003")
    assert (found.crashed, found.kind, found.phase) == (True, "nccl", "serving")
