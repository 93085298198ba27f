"""Held-out round 113 (issue 24): folded into ``work`` with no miss to fix.

Round 113 (h113001-h113002; a healthy SGLang start in Docker pasted up to 'Uvicorn running' from MaxUhl98/Thesis's
inference_server readme, and the last 64 lines of a serve log committed to HwaminJung00/sglang-peak-kv-admission,
Qwen3-4B's decode batches drained and the server stopped by SIGTERM, each pinned to a commit) was measured once on main
at feee0235 (crashed 2/2, kind 2/2, phase 2/2) and folded into ``work``; docs/diagnosis.md, "Held-out round 113", says
what it shows. With no miss there was no rule to add and no label to dispute. These tests keep the round folded and
each of its logs reading as labelled, by the signature that read it at the measurement (none: neither server crashed).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real

_IDS = folded_round(REAL_MANIFEST, 113)

# the signature each log is read by
_SIGNATURES = {
    "h113001": None,  # a Llama-3.1-8B start in Docker: pool, graphs captured, the HTTP server up, before the warmup
    "h113002": None,  # Qwen3-4B's decode batches drained, then SIGTERM, drained to 0 and a graceful exit
}


def test_round113_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 2}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round113_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_h113001s_start_up_to_uvicorn_stands_at_the_launchers_warmup():
    found = real("h113001")
    assert (found.crashed, found.kind, found.phase) == (False, None, "ready")


def test_h113002s_server_stopped_by_sigterm_did_not_crash_while_serving():
    found = real("h113002")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")
