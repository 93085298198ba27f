"""vLLM held-out round 111 (3 logs, w11101-w11103), folded into work with no miss to read.

Measured once on main at feee0235 (staged as caae8aae): crashed 3/3, kind 3/3, phase 3/3. Nothing was fixed, no rule
was added, nothing is disputed and nothing is left; the round's readings are pinned here, each log with the signature
that reads it, so a later change that reads one of them another way says which:

- w11101, w11102: two files of one user's vLLM 0.11.0 run (DraconicLegend/bettervllmlog) with a custom logging
  config: runtime.log, the start-up to the route list (ready; its tqdm redraws' carriage returns and ANSI colours
  kept), and server.log, nine chat requests in the config's own '<asctime> LEVEL <logger> - <message>' format with no
  vLLM file:line stamps (serving). Neither crashed.
- w11103: vLLM 0.26.0 on a DGX Spark (MvdB/dgx-spark-vllm) starting a hybrid Mamba model with prefix caching on, so
  Mamba cache 'align' mode; the attention block raised to 2096 tokens is over max_num_batched_tokens (2048), and
  _initialize_kv_caches -> VllmConfig.validate_block_size asserts "In Mamba cache align mode, block_size (2096) must
  be <= max_num_batched_tokens (2048)." (0.23.0 vllm/config/vllm.py:2079, :2112-2113; called from
  v1/engine/core.py:287): bad_argument, read by the config-check rule (vllm_crashes/loading.py ``CONFIG_CHECK``,
  the raising frame a ``validat*`` method of vllm/config/), phase memory_pool (the KV cache had been sized). The file
  was copied from the search store's text, which does not show its carriage returns (vLLM's multi-line records end
  their lines but the last with one, tqdm's shard bar redraws with them): the copy has none.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said)

_ROUND = [f"w111{n:02d}" for n in range(1, 4)]


def test_the_round_is_folded_with_its_three_logs():
    assert folded_round(VLLM_MANIFEST, 111) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


@pytest.mark.parametrize(("log_id", "verdict", "phase"), [
    ("w11101", (False, None, None), "ready"),
    ("w11102", (False, None, None), "serving"),
    ("w11103", (True, "bad_argument", "vllm_config_check"), "memory_pool"),
])
def test_each_log_is_read_by_its_signature(log_id, verdict, phase):
    text = read_log(f"{log_id}.log")
    assert said(text) == verdict
    assert said(text, "vllm") == verdict
    assert reads(text)[2] == phase


def test_the_copies_keep_or_lack_their_carriage_returns_as_described():
    assert read_log("w11101.log").count("\r") == 86
    assert "\r" not in read_log("w11103.log")


# --- the line the label rests on --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.23.0", "vllm/config/vllm.py",
     '            assert block_size <= self.scheduler_config.max_num_batched_tokens, (\n'
     '                "In Mamba cache align mode, block_size "'),
    ("0.23.0", "vllm/v1/engine/core.py", "        vllm_config.validate_block_size()"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
