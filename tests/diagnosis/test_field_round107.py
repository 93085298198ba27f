"""Held-out round 107 (issue 24): folded into ``work`` with no miss to fix.

Round 107 (h107001, h107003, h107006-h107009; users' and other projects' repositories, each file pinned to a
commit) was measured once on main at 74edfafa beside round 106 (crashed 6/6, kind 6/6, phase 6/6) and folded into
``work``; docs/diagnosis.md, "Held-out round 107", says what it shows. With no miss there was no rule to add and no
label to dispute; h107002, h107004 and h107005 were left out before the measurement as near repeats of h107001,
h30013 and h31005. These tests keep the round folded and each of its logs reading as labelled, by the signature
that read it at the measurement.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real

_IDS = folded_round(REAL_MANIFEST, 107)

# the signature each log is read by
_SIGNATURES = {
    "h107001": "nccl",                  # two nodes' NCCL bootstrap mismatch, every rank dying in ncclCommInitRank
    "h107003": "pd_transfer",           # a PD request's KV transfer failing on both sides, answered 500: one request
    "h107006": "amd_gpu_page_fault",    # ROCm's 'Memory access fault by GPU node-6' at init, then the abort
    "h107007": "kv_pool_oom",           # every DP rank's init_memory_pool: 'Not enough memory'
    "h107008": "dependency_mismatch",   # Ascend: 'from vllm._custom_ops import rotary_embedding', no vllm
    "h107009": "import_error",          # Ascend: a remote-code processor's imports (torchaudio) not installed
}


def test_round107_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {
        "dependency_mismatch": 2, "nccl": 1, "request_error": 1, "cuda_illegal_access": 1, "kv_pool_oom": 1}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round107_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_h107003s_failed_transfer_is_one_requests_error_not_a_crash():
    found = real("h107003")
    assert (found.crashed, found.kind, found.phase) == (False, "request_error", "serving")
