"""Held-out round 116 (issue 24): folded into ``work`` with no miss to fix.

Round 116 (h116001-h116005; five log files committed to three users' repositories, each pinned to a commit: two
crashes of p4s2wd/sglang-dev's DeepSeek-V4 checkout on ~22 GB compute-capability-7.5 cards, PP0's fp8 MoE weights out
of memory while the model is built and the breakable prefill CUDA graph's capture failing on the attention op's output
size, the same setup's healthy PP4xTP2 run's end, XinzeLi-isuc/HeadKV-SGLang's healthy patched start copied whole from
its snapshot, and a ROCm start on one MI300X cut mid-load) was measured once on main at 1963c341 (crashed 5/5, kind 5/5,
phase 5/5) and folded into ``work``; docs/diagnosis.md, "Held-out round 116", says what it shows. With no miss there
was no rule to add and no label to dispute. These tests keep the round folded and each of its logs reading as
labelled, by the signature that read it at the measurement, as its text and as ``ddlab diagnose FILE`` reads it (the
progress bars' carriage returns of h116002 and h116004 kept).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, alike_cases, assert_reads_alike_either_way, assert_reads_as_labelled,
                      disputed, folded_round, real, with_carriage_returns)

_IDS = folded_round(REAL_MANIFEST, 116)

# the signature each log is read by
_SIGNATURES = {
    "h116001": "cuda_oom",  # PP0's scheduler: Fp8MoEMethod.create_weights -> torch.empty, torch.OutOfMemoryError
    "h116002": "capture_error",  # 'Capture target prefill CUDA graph begin', then the attention op's AssertionError
    "h116003": None,  # PP4xTP2's decode batches with the author's [pp-handoff-diag] lines, /generate answered 200
    "h116004": None,  # a HeadKV-patched start: weights, pool, 'ready to roll', three requests answered 200
    "h116005": None,  # a ROCm start on one MI300X: 'Load weight begin', the shard bar cut at 3/39
}


def test_round116_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 3, "cuda_oom": 1, "cuda_graph_capture": 1}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round116_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round116_logs_with_carriage_returns_are_those_two():
    assert with_carriage_returns(_IDS) == ["h116002", "h116004"]


@pytest.mark.parametrize("log_id", alike_cases(_IDS))
def test_round116_logs_read_the_same_with_their_carriage_returns(log_id):
    assert_reads_alike_either_way(log_id)


def test_h116001s_pipeline_stage_ran_out_of_memory_building_its_experts():
    found = real("h116001")
    assert (found.crashed, found.kind, found.phase) == (True, "cuda_oom", "load_weights")


def test_h116002s_prefill_graph_capture_failed_in_the_attention_op():
    found = real("h116002")
    assert (found.crashed, found.kind, found.phase) == (True, "cuda_graph_capture", "graph_capture")
    assert "Output tensor element mismatch" in found.cause


def test_h116005s_rocm_start_cut_mid_load_did_not_crash():
    found = real("h116005")
    assert (found.crashed, found.kind, found.phase) == (False, None, "load_weights")
    assert found.facts["attention_backend"] == "triton"
