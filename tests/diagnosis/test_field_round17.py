"""Held-out round 17 (issue 24): folded into ``work`` with no miss to fix.

Round 17 (h17001-h17017) was measured once on main at 51e05f3 (crashed 17/17, kind 17/17, phase 8/8)
and folded into ``work``; docs/diagnosis.md, "Held-out round 17", says what it shows. With no miss
there was no rule to add and no label to dispute. The round tests little of the kinds: 9 of its 17
logs are labelled ``unknown`` (each excerpt is cut before any exception line), 5 are healthy
excerpts and 3 are ``cuda_graph_capture``. These tests keep the round folded and keep each of its
logs reading as labelled, so a later rule that reads more into a cut traceback shows up here.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import REAL_MANIFEST, assert_reads_as_labelled, real

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 17}

# the signature each log is read by (None: no signature; ``unknown`` or not crashed)
_SIGNATURES = {
    "h17001": "capture_error",  # cut in cuda_graph_runner's capture -> capture_one_batch_size -> run_once
    "h17002": "capture_error",  # cut building the decode graph runner (init_decode_cuda_graph)
    "h17003": "capture_error",  # cut in the model's forward under capture_one_batch_size -> run_once
    "h17004": None,             # capture under way (3/8 batch sizes), no error
    "h17005": None,             # cut in run_batch while serving (hybrid Mamba, speculative decoding)
    "h17006": None,             # a PD decode server's run_batch, cut; no stamp
    "h17007": None,             # cut in the overlap event loop's frames
    "h17008": None,             # cut while caching a finished decode request
    "h17009": None,             # cut two frames into Scheduler.__init__ while weights load
    "h17010": None,             # cut in the scheduler's constructor (TpModelWorker)
    "h17011": None,             # a bare traceback (no header, no stamp) cut at ModelRunner
    "h17012": None,             # weights, KV cache and memory pool done; no error
    "h17013": None,             # weight loading at 0/3 shards; no error
    "h17014": None,             # a docker-compose service's server_args line only
    "h17015": None,             # SGLang 0.1.x's 'router init state:' traceback, cut
    "h17016": None,             # sglang-jax decoding one request
    "h17017": None,             # the tail of the launcher's recursive SIGQUIT teardown
}


def test_round17_is_folded_into_work_undisputed():
    assert sorted(_ROUND) == [f"h17{n:03d}" for n in range(1, 18)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())
    assert Counter(log["kind"] for log in _ROUND.values()) == {"unknown": 9, None: 5, "cuda_graph_capture": 3}
    assert sum(log["phase_in_log"] for log in _ROUND.values()) == 8


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round17_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


@pytest.mark.parametrize("log_id", sorted(log_id for log_id, log in _ROUND.items() if log["kind"] == "unknown"))
def test_round17_unknowns_say_the_exception_line_is_cut(log_id):
    found = real(log_id)
    assert found.cause.startswith("the log ends inside a traceback"), (log_id, found.cause)
    assert found.suggestion.startswith("The log ends inside a traceback"), (log_id, found.suggestion)
