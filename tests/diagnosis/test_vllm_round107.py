"""vLLM held-out round 107 (6 logs, w10701-w10706), folded into work after its miss was read.

Measured once on main at 74edfafa (staged as fc21ff21 beside round 106): crashed 6/6, kind 6/6, phase 5/6. One miss,
read against the source of the release its log shows:

- w10701 (phase, fixed): vLLM 0.10.1.1 inside a MinerU container; the engine core's KV cache sizing finds no memory
  ("Available KV cache memory: -0.72 GiB", check_enough_kv_cache_memory's "No available memory for the cache blocks",
  v1/core/kv_cache_utils.py:682, from _initialize_kv_caches, v1/engine/core.py:189), "EngineCore failed to start."
  (:699-700, only when building the core raised), the API server's "Engine core initialization failed"; then the
  container's entrypoint starts its own uvicorn fallback ("Application startup complete."). vLLM's API server enters
  build_async_engine_client before serve_http (entrypoints/openai/api_server.py:1870, :1882), so it never started
  uvicorn: a uvicorn line after the failed start, before any engine starts again, is another app's, not this engine's
  ready (diagnosis/vllm_diagnosis.py ``_uvicorn_after_failed_start``): memory_pool, as labelled.

The positive test below failed at the round 106 commit (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads)

_ROUND = [f"w107{n:02d}" for n in range(1, 7)]


def test_the_round_is_folded_with_its_six_logs():
    assert folded_round(VLLM_MANIFEST, 107) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w10701: a container's fallback server after the engine failed to start -----------------------------------------

def test_a_uvicorn_start_after_a_failed_engine_start_is_not_its_ready():
    assert reads(read_log("w10701.log")) == (True, "kv_pool_oom", "memory_pool")


def test_a_new_engine_start_after_the_failure_keeps_its_uvicorn_lines():
    text = read_log("w10701.log").replace(
        "[entrypoint] Falling back to pipeline-only mode",
        "(APIServer pid=9) INFO 03-19 11:14:40 [api_server.py:1805] vLLM API server version 0.10.1.1\n"
        "(APIServer pid=9) INFO 03-19 11:14:40 [utils.py:326] non-default args: {'model_tag': 'm'}")
    assert reads(text) == (True, "kv_pool_oom", "ready")


def test_no_failed_start_line_no_rule():
    text = read_log("w10701.log").replace("EngineCore failed to start.", "EngineCore stopped.")
    assert "EngineCore failed to start." not in text
    assert reads(text) == (True, "kv_pool_oom", "ready")


# --- the lines the rule cites ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.10.1.1", "vllm/v1/engine/core.py", 'logger.exception("EngineCore failed to start.")'),
    ("0.10.1.1", "vllm/entrypoints/openai/api_server.py", "    async with build_async_engine_client("),
    ("0.10.1.1", "vllm/entrypoints/openai/api_server.py", "        shutdown_task = await serve_http("),
    ("0.10.1.1", "vllm/v1/core/kv_cache_utils.py", 'raise ValueError("No available memory for the cache blocks. "'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
