"""Held-out round 21 (issue 24): folded into ``work``, its misses fixed by general rules read from the source.

Round 21 (h21001-h21012) was measured once on main at 64f1195 with the logs commit 4f4ba8a (37e9073, with
round 20's fixes, reads them identically: crashed 12/12, kind 7/12, phase 7/7); three logs were then dropped
for text that is not verbatim inside machine lines (h21008, h21011, h21012: the manifest's ``dropped``), and
the nine kept folded into ``work``; docs/diagnosis.md, "Held-out round 21", explains the misses, all four
ddlab's. A rule's test reads the corpus log (work split since the fold), a text written from the same
source texts, and a near miss that must not read the same way; the positive tests fail on 37e9073 (the
near misses hold on both). A text cited from a wheel is checked there where the wheel is unpacked
(skipped elsewhere).
"""

from __future__ import annotations

import json
from collections import Counter

from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import REAL, REAL_MANIFEST

# --- h21004: SGLang 0.1.x's own lines among the vLLM-stamped lines of the weights it loads with vLLM's code ---
# "Rank N: load weight end." (0.1.14 srt/managers/router/model_runner.py:334), "Rank N: max_total_num_token=...,
# " (model_rpc.py:108-113); the "INFO 03-27 19:02:43 weight_utils.py:163]" lines are vLLM's logger, imported

_VLLM_WEIGHTS = "INFO 03-27 19:02:43 weight_utils.py:163] Using model weights format ['*.bin']\n"
_RANKS = ("Rank 0: load weight end.\nRank 1: load weight end.\n"
          "Rank 0: max_total_num_token=52656, max_prefill_num_token=8776, context_len=4096, \n")


def test_sglang_01_model_runner_lines_are_sglang():
    assert detect_family(_VLLM_WEIGHTS * 4 + _RANKS) == "sglang"


def test_a_rank_line_of_another_kind_is_not_sglangs():
    # vLLM's stamped lines with a rank line SGLang 0.1.x does not write stay vLLM's
    assert detect_family(_VLLM_WEIGHTS * 4 + "Rank 0: loading weights\n") == "vllm"
    # the words inside a sentence, not at a line's start
    assert detect_family(_VLLM_WEIGHTS * 4 + "see: Rank 0: load weight end.\n") == "vllm"


# --- the fold ----------------------------------------------------------------------------------------------

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 21}


def test_round21_is_folded_into_work_without_its_three_dropped_logs():
    kept = [f"h21{n:03d}" for n in (1, 2, 3, 4, 5, 6, 7, 9, 10)]
    assert sorted(_ROUND) == kept and all(log["split"] == "work" for log in _ROUND.values())
    assert Counter(log["kind"] for log in _ROUND.values())["unknown"] == 3
    assert sum(not log["crashed"] for log in _ROUND.values()) == 1
    assert sum(log["phase_in_log"] for log in _ROUND.values()) == 5
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())
    dropped = json.loads((REAL / "manifest.json").read_text())["dropped"]
    for log_id in ("h21008", "h21011", "h21012"):
        assert "round 21" in dropped[log_id] and not (REAL / f"{log_id}.log").exists()
