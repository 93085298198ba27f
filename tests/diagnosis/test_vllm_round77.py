"""What held-out round 77 of the vLLM corpus (w7701-w7720, measured once on main at 6ca4acf with its logs cdc0179)
showed: crashed 18/20, kind 16/20, phase 10/12. Its five misses were read from the source (docs/diagnosis.md,
"Held-out round 77"): all five fixed, none disputed, none left:

- w7703 (kind): V0's ModelConfig asserts a "factor" in the model's rope_scaling for every rope type it does not list
  as factorless (``assert "factor" in rope_scaling`` in _get_and_verify_max_len, 0.5.4 config.py:1535, 0.6.2 :1746):
  a rope_scaling layout the release does not know, arch_unsupported (vllm_crashes/archs.py ROPE_FACTOR_MISSING).
- w7710 (phase): LMCache's scheduler-side lookup ("Reqid: ..., Total tokens N, LMCache hit tokens: N, need to load:
  N", lmcache 0.3.1 vllm_v1_adapter.py:834, called only from vLLM's schedule()) and its stores of a request's tokens
  ("Storing KV cache for N out of M tokens ... for request X", :678, :763): serving (diagnosis/vllm_kv_lines.py).
- w7711 (kind): a traceback cut in V0's _check_if_gpu_supports_dtype, whose one raise is "Bfloat16 is only supported
  on GPUs with compute capability of at least 8.0" (0.2.7 worker/worker.py:231): unsupported_gpu (vllm_crashes/
  installs.py BF16_CHECK_CUT).
- w7715 (crashed, kind): a paste a terminal wrapped at 127 columns: its records are joined again before they are read
  (diagnosis/width_wrap.py), so the shm queue's stall notice with a request in flight reads as the corpus's hang.
- w7720 (crashed, kind; phase): the start-up's "Initial profiling/warmup run took N s" (0.30.0 compilation/monitor.py:82)
  after the shm stall notice shows the wait was that run (engine.py SHM_STALL cleared_by) and marks memory_pool
  (vllm_log.py's phase table).

Each positive test below failed at cdc0179 (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_in_library_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, not_unpacked, read_log, reads, said, vllm_traceback)

_ROUND = [f"w77{n:02d}" for n in range(1, 21)]


def test_the_round_is_folded_with_its_twenty_logs():
    assert folded_round(VLLM_MANIFEST, 77) == _ROUND


def test_none_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w7703: V0's max-length check asserting a rope_scaling factor ----------------------------------------------------

def test_the_rope_factor_assert_is_arch_unsupported():
    assert said(read_log("w7703.log")) == (True, "arch_unsupported", "vllm_rope_factor_missing")
    assert reads(read_log("w7703.log"))[2] == "launch"


def test_the_same_assert_in_another_form():
    """0.5.4's offline LLM building its engine (engine/arg_utils.py create_engine_config), config.py:1535."""
    text = vllm_traceback(
        ("vllm/engine/arg_utils.py", 760, "create_engine_config", "model_config = ModelConfig("),
        ("vllm/config.py", 175, "__init__", "self.max_model_len = _get_and_verify_max_len("),
        ("vllm/config.py", 1535, "_get_and_verify_max_len", 'assert "factor" in rope_scaling'),
        exc="AssertionError", head="")
    assert said(text, family="vllm")[:2] == (True, "arch_unsupported")


@pytest.mark.parametrize("text", [
    # another assert in the same function: not the rope layout
    vllm_traceback(("vllm/config.py", 1500, "_get_and_verify_max_len", "assert max_model_len > 0"),
                   exc="AssertionError", head=""),
    # the factor asserted in an app's own function
    vllm_traceback(("myapp/rope.py", 10, "scale", 'assert "factor" in rope_scaling'), exc="AssertionError", head=""),
], ids=["another-assert", "app-function"])
def test_near_misses_are_no_rope_factor(text):
    assert said(text, family="vllm")[2] != "vllm_rope_factor_missing"


# --- w7710: LMCache's per-request lines -------------------------------------------------------------------------------

def test_lmcaches_lookups_and_stores_are_serving():
    assert reads(read_log("w7710.log")) == (False, None, "serving")


@pytest.mark.parametrize("line", [
    "[2025-06-01 10:00:00,000] LMCache INFO: Reqid: chatcmpl-1, Total tokens 2048, LMCache hit tokens: 0, need to "
    "load: 0 (vllm_v1_adapter.py:834:lmcache.integration.vllm.vllm_v1_adapter)",
    "(VllmWorker rank=0 pid=9) [2025-06-01 10:00:01,000] LMCache INFO: Storing KV cache for 2048 out of 2048 tokens "
    "(skip_leading_tokens=0) for request chatcmpl-1 (vllm_v1_adapter.py:763:lmcache.integration.vllm.vllm_v1_adapter)",
], ids=["lookup-0.3.1", "store-wait_for_save-0.3.1"])
def test_the_same_lines_in_another_form(line):
    text = "(EngineCore_DP0 pid=8) INFO 06-01 10:00:00 [core.py:70] Initializing a V1 LLM engine (v0.9.1)\n" + line + "\n"
    assert reads(text, family="vllm")[2] == "serving"


def test_the_attn_metadata_warning_alone_marks_no_serving():
    """start_load_kv's warning (vllm_v1_adapter.py:494 (0.3.1)) is also written for the profile run's dummy batch."""
    text = ("(VllmWorker rank=0 pid=9) [2025-06-01 10:00:00,000] LMCache WARNING: In connector.start_load_kv, but the "
            "attn_metadata is None (vllm_v1_adapter.py:494:lmcache.integration.vllm.vllm_v1_adapter)\n")
    assert reads(text, family="vllm")[2] != "serving"


# --- w7711: a traceback cut in V0's bfloat16 check -------------------------------------------------------------------

def test_the_cut_dtype_check_is_unsupported_gpu():
    assert said(read_log("w7711.log")) == (True, "unsupported_gpu", "vllm_bf16_check_cut")
    assert reads(read_log("w7711.log"))[2] == "launch"


def test_the_same_cut_in_another_form():
    """0.4.0.post1's init_device, cut on the raise's code line (worker.py:312)."""
    text = vllm_traceback(
        ("vllm/worker/worker.py", 100, "init_device", "_check_if_gpu_supports_dtype(self.model_config.dtype)"),
        ("vllm/worker/worker.py", 312, "_check_if_gpu_supports_dtype", "raise ValueError("), exc=None, head="")
    assert said(text, family="vllm")[:2] == (True, "unsupported_gpu")


@pytest.mark.parametrize("text", [
    # the check passed: the traceback goes on into the distributed set-up and ends on its own exception
    vllm_traceback(
        ("vllm/worker/worker.py", 71, "init_model", "_init_distributed_environment(self.parallel_config, self.rank,"),
        exc="RuntimeError: NCCL error: unhandled system error", head=""),
    # cut in the caller, above the check
    vllm_traceback(("vllm/worker/worker.py", 71, "init_model", "_check_if_gpu_supports_dtype(self.model_config.dtype)"),
                   exc=None, head=""),
], ids=["past-the-check", "cut-in-the-caller"])
def test_near_misses_are_no_dtype_check(text):
    assert said(text, family="vllm")[2] != "vllm_bf16_check_cut"


# --- w7715: a paste a terminal wrapped at its width ------------------------------------------------------------------

def test_the_wrapped_stall_notice_is_a_hang():
    assert said(read_log("w7715.log")) == (True, "hang", "vllm_shm_stall")


_NOTICE = ("(EngineCore_DP0 pid=7) INFO 05-13 15:28:39 [shm_broadcast.py:542] No available shared memory broadcast "
           "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
           "time-consuming work (e.g. compilation, weight/kv cache quantization).")
_STATS = ("(APIServer pid=1) INFO 05-13 15:27:54 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
          "Avg generation throughput: 0.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%")


def _wrapped(text: str, width: int) -> str:
    return "\n".join(line[i:i + width] for line in text.splitlines() for i in range(0, len(line), width)) + "\n"


def test_the_same_stall_wrapped_at_another_width():
    """0.15.1's notice (shm_broadcast.py:542) under a stats line with requests in flight, wrapped at 110 columns."""
    assert said(_wrapped(f"{_STATS}\n{_NOTICE}\n{_NOTICE}", 110), family="vllm")[:2] == (True, "hang")


@pytest.mark.parametrize("text", [
    # two lines of the same (longest) length, each followed by a record of its own: a collector's cut, no wrap
    f"{_STATS[:110]}\n{_NOTICE[:110]}\n(APIServer pid=1) INFO 05-13 15:29:00 [api_server.py:1] Shutting down\n",
    # docker compose's prefix on every line: a next line that opens as the cut one does is its own record
    "svc-1  | " + _NOTICE[:100] + "\nsvc-1  | " + _NOTICE[:100] + "\nsvc-1  | done\n",
], ids=["collector-cut", "compose-prefix"])
def test_near_misses_are_left_as_pasted(text):
    from ddlab.diagnosis.width_wrap import unwrapped_paste
    assert unwrapped_paste(text) == text


# --- w7720: the profiling run ending after the stall notice ----------------------------------------------------------

def test_the_profiling_runs_end_clears_the_stall():
    assert reads(read_log("w7720.log")) == (False, None, "memory_pool")


_W = "(Worker_TP0 pid=84) INFO 06-08 22:27:10 "


def test_the_same_start_up_in_another_form():
    """0.30.0's worker: the notice during the profiling run, then its end (compilation/monitor.py:82)."""
    text = (f"{_W}[gpu_model_runner.py:3000] Model loading took 14.5 GiB memory and 30.1 seconds\n"
            "(EngineCore_DP0 pid=74) INFO 06-08 22:27:56 [shm_broadcast.py:681] No available shared memory broadcast "
            "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
            "time-consuming work (e.g. compilation, weight/kv cache quantization).\n"
            f"{_W}[monitor.py:82] Initial profiling/warmup run took 75.02 s\n")
    assert reads(text, family="vllm") == (False, None, "memory_pool")


def test_a_stall_with_nothing_after_it_stays_a_hang():
    text = (f"{_W}[monitor.py:82] Initial profiling/warmup run took 75.02 s\n"
            "(EngineCore_DP0 pid=74) INFO 06-08 22:29:56 [shm_broadcast.py:681] No available shared memory broadcast "
            "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
            "time-consuming work (e.g. compilation, weight/kv cache quantization).\n")
    assert said(text, family="vllm")[:2] == (True, "hang")


# --- the rules' texts, where the releases hold them -------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.5.0", "vllm/config.py", 1287, 'assert "factor" in rope_scaling'),
    ("0.5.1", "vllm/config.py", 1426, 'assert "factor" in rope_scaling'),
    ("0.5.4", "vllm/config.py", 1535, 'assert "factor" in rope_scaling'),
    ("0.6.2", "vllm/config.py", 1746, 'assert "factor" in rope_scaling'),
    ("0.6.2", "vllm/config.py", 1743, 'if rope_type == "mrope":'),
    ("0.6.3.post1", "vllm/config.py", 1754, 'scaling_factor = rope_scaling.get("factor", 1.0)'),
    ("0.2.7", "vllm/worker/worker.py", 231, "raise ValueError("),
    ("0.2.7", "vllm/worker/worker.py", 232, '"Bfloat16 is only supported on GPUs with compute capability "'),
    ("0.2.7", "vllm/worker/worker.py", 71, "_check_if_gpu_supports_dtype(self.model_config.dtype)"),
    ("0.4.0.post1", "vllm/worker/worker.py", 312, "raise ValueError("),
    ("0.5.4", "vllm/worker/worker.py", 358, "raise ValueError("),
    ("0.6.2", "vllm/worker/worker.py", 468, "raise ValueError("),
    ("0.30.0", "vllm/compilation/monitor.py", 82, '"Initial profiling/warmup run took %.2f s",'),
    ("0.18.0", "vllm/compilation/monitor.py", 77, '"Initial profiling/warmup run took %.2f s",'),
    ("0.30.0", "vllm/compilation/decorators.py", 572, "monitor_profiling_run(),"),
    ("0.10.1.1", "vllm/v1/core/sched/scheduler.py", 385, "self.connector.get_num_new_matched_tokens("),
    ("0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py", 542, "logger.info("),
], ids=lambda value: str(value).replace("/", "-")[:40] if isinstance(value, str) else None)
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)


@pytest.mark.parametrize("text", [
    '"Reqid: %s, Total tokens %d, LMCache hit tokens: %d, need to load: %d",',
    '"Storing KV cache for %d out of %d tokens "',
    'logger.warning("In connector.start_load_kv, but the attn_metadata is None")',
], ids=["lookup", "store", "attn-metadata-warning"])
def test_lmcaches_texts_are_in_its_adapter(text):
    assert_in_library_wheel("lmcache", "0.3.1", "lmcache/integration/vllm/vllm_v1_adapter.py", text)
