"""What held-out round 59 of the vLLM corpus (w5901-w5925, measured once at 647d1b0 with its logs c20ce15)
showed: crashed 25/25, kind 25/25, phase 22/23. Its one miss was read from the source (docs/diagnosis.md,
"Held-out round 59"), and it was ddlab's:

- w5908: the offline LLM's "Processed prompts" bar at 726/1024 (0.9.2 entrypoints/llm.py:1559) glued to
  LMCache's "[2025-07-02 16:41:43,868] LMCache INFO: Reqid: ..." lines, read as an SGLang log that never left
  launch. LMCache's logger writes "[%(asctime)s] LMCache %(levelname)s: " under whichever server runs it
  (lmcache-0.3.1 lmcache/logging.py:25; its adapters for both, lmcache/integration/vllm and
  lmcache/integration/sglang), and that bracketed date is not SGLang's stamp (0.5.23 srt/utils/common.py:2630
  writes the message right after the bracket). Fixed: SGLang's stamp mark skips LMCache's
  (diagnosis/vllm_log.py _SGLANG_MARKS), so the bar's log is vLLM's and the bar is serving.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import detect_family, family_marks
from fieldkit import (VLLM_MANIFEST, assert_at_line, assert_vllm_logs_read_as_labelled, folded_round, library_text_test,
                      read_log, reads, wheel_text_test)

_ROUND = [f"w59{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 59) == _ROUND


def test_each_log_reads_as_labelled():
    """Crashed and kind as labelled, the phase where the log shows it: no miss is left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w5908: LMCache's stamp is no SGLang stamp ------------------------------------------------------------------

_BAR = ("Processed prompts:  12%|█▎        | 120/1024 [01:10<08:50,  1.70it/s, est. speed input: 900.12 toks/s, "
        "output: 400.50 toks/s]")
_LMCACHE = [
    "[2025-07-02 16:30:01,112] LMCache INFO: Creating LMCacheEngine instance default "
    "(cache_engine.py:682:lmcache.v1.cache_engine)",
    "[2025-07-02 16:30:01,113] LMCache WARNING: Failed to allocate memory for the KV cache. "
    "(cache_engine.py:198:lmcache.v1.cache_engine)",
]


def test_an_offline_bar_beside_lmcaches_lines_is_vllm_serving():
    """The corpus log: the bar glued to LMCache's vLLM adapter line, and one more such line."""
    assert detect_family(read_log("w5908.log")) == "vllm"
    assert reads(read_log("w5908.log")) == (False, None, "serving")


def test_the_same_stamp_in_another_form():
    """LMCache's engine lines (lmcache.v1, no vLLM name in them) outnumbering the bar, at two levels."""
    text = "\n".join([_BAR, *_LMCACHE]) + "\n"
    assert detect_family(text) == "vllm"
    assert reads(text) == (False, None, "serving")


@pytest.mark.parametrize("line", _LMCACHE, ids=["info", "warning"])
def test_lmcaches_stamp_is_no_sglang_mark(line):
    assert family_marks(line)[1] == 0


@pytest.mark.parametrize("line", [
    "[2025-07-02 16:30:01 TP0] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0",
    "[2025-07-02 16:30:01] Init LMCache connector with the config file",
    "[2025-07-02 16:30:01,112] LMCacheConnector INFO: started",
], ids=["sglang-batch-line", "sglang-line-naming-lmcache", "another-loggers-name"])
def test_sglangs_stamp_stays_its_mark(line):
    assert family_marks(line)[1] == 1


def test_an_sglang_log_with_lmcaches_lines_stays_sglangs():
    """SGLang with LMCache (its sglang adapter): its own stamped lines still name it."""
    text = "\n".join([
        "[2025-07-02 16:30:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', enable_lmcache=True)",
        *_LMCACHE,
        "[2025-07-02 16:30:05 TP0] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0",
    ]) + "\n"
    assert detect_family(text) == "sglang"


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.9.2", "vllm/entrypoints/llm.py", 'desc="Processed prompts"'),
    ("0.9.2", "vllm/entrypoints/llm.py", "est. speed input: "),
])
test_each_rules_library_text_is_in_its_wheel = library_text_test([
    ("lmcache", "0.3.1", "lmcache/logging.py", "[%(asctime)s] LMCache %(levelname)s:"),
    ("lmcache", "0.3.1", "lmcache/integration/vllm/vllm_v1_adapter.py", "LMCache hit tokens: %d"),
    ("sglang", "0.5.23", "sglang/srt/utils/common.py", 'format = f"[%(asctime)s{maybe_ms}{prefix}] %(message)s"'),
])


def test_the_cited_lines_hold_the_stamps():
    assert_at_line("lmcache", "0.3.1", "lmcache/logging.py", 25, "LMCache %(levelname)s:")
    assert_at_line("sglang", "0.5.23", "sglang/srt/utils/common.py", 2630, "[%(asctime)s{maybe_ms}{prefix}]")
