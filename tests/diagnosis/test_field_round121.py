"""Held-out round 121 (issue 24): folded into ``work`` with no miss to fix.

Round 121 (h121001-h121002; two ``python -m sglang.bench_one_batch`` runs from one user's notes on porting IBM Granite
4.0-H, blazingbhavneek/Obsidian-Notebook's 'AI/SGLang/SGLang PR - IBM Granite.md', pinned to a commit: bench_one_batch
builds the model runner in-process, an engine, not a server, as the corpus keeps offline engines' logs (round 120's
h120001); the model refused before the port, rank 0's traceback tail cut at its start by the author's '...', and a
healthy run after it) was measured once on main at 230e26e3 (crashed 2/2, kind 2/2, phase 0/0: neither log shows its
phase) and folded into ``work``; docs/diagnosis.md, "Held-out round 121", says what they show. With no miss there was no
rule to add and no label to dispute. These tests keep the round folded and its logs reading as labelled, by the
signatures that read them at the measurement; neither file holds a carriage return, so each reads the same as its text
and as ``ddlab diagnose FILE`` reads it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_reads_as_labelled, disputed, folded_round, real, \
    with_carriage_returns

_IDS = folded_round(REAL_MANIFEST, 121)

# the signature each log is read by
_SIGNATURES = {
    "h121001": "transformers_fallback_refused",  # no native class and the Transformers fallback refused
    "h121002": None,  # load, Mamba and KV pools, graph capture, the benchmark's batches, torch's exit warning
}


def test_round121_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {"arch_unsupported": 1, None: 1}
    assert not any(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round121_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round121s_logs_hold_no_carriage_return_to_read_either_way():
    assert with_carriage_returns(_IDS) == []


def test_h121001s_refused_architecture_is_read_from_the_traceback_tail_the_author_kept():
    found = real("h121001")
    assert (found.crashed, found.kind) == (True, "arch_unsupported")
    assert "GraniteMoeHybridForCausalLM" in found.cause


def test_h121002s_benchmark_did_not_crash_and_its_exit_warning_is_no_error():
    found = real("h121002")
    assert (found.crashed, found.kind) == (False, None)
    assert found.phase == "graph_capture", "the last phase the log shows: bench_one_batch prints its own batch lines"
    assert found.facts["max_total_num_tokens"] == 399740
