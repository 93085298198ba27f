"""Held-out round 31 (issue 24): ddlab's misses fixed by general rules from the source.

Round 31 (h31001-h31009, log files committed to public repositories, pinned to a commit, at most 3 per
repository; h31007 and h31008 are sglang-jax's, SGLang's JAX/TPU port) was measured once on main at 7f81b85
(with the round's logs, c307ede: crashed 9/9, kind 8/9, phase 7/8); docs/diagnosis.md, "Held-out round 31",
explains the two misses. h31002: the loader's check of the launch's dtype against the quantization
method's activation dtypes ("torch.bfloat16 is not supported for quantization method awq. Supported
dtypes: [torch.float16]"): bad_argument, for every method (the list is each method's
get_supported_act_dtypes). h31006: a decode graph's replay failing after the HTTP server came up and
before "ready to roll", the scheduler having taken more prefill sequences than the launcher's warmup
sends: serving (a client's requests), not ready. A rule's test reads the corpus log (work split since the
fold), texts written from the source and near misses that must not read the same way; the positive tests
fail on 7f81b85 (the near misses hold on both). A text cited from a wheel is checked there where the wheel
is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, reading

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 31}


def test_round31_is_folded_into_work_with_nothing_disputed():
    assert sorted(_ROUND) == [f"h3100{i}" for i in range(1, 10)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())


def test_the_rounds_two_misses_read_as_labelled():
    assert_reads_as_labelled("h31002", "quant_dtype_unsupported")
    assert_reads_as_labelled("h31006", "replay_size")

# --- h31002: the quantization method does not take the launch's dtype ----------------------------------
# 0.4.10.post2 model_loader/loader.py:149, 0.5.23 :269 (_get_quantization_config, while the model is built)

_LOAD = ("[2025-12-27 11:27:20] server_args=ServerArgs(model_path='/m/DeepSeek-V3.2-AWQ', dtype='auto', "
         "quantization='awq', tp_size=4, dp_size=4)\n"
         "[2025-12-27 11:27:33 DP0 TP0] Load weight begin. avail mem=78.52 GB\n")


def _refusal(message: str, exc: str = "ValueError") -> str:
    return ("[2025-12-27 11:27:34 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/x/sglang/srt/managers/scheduler.py", line 2712, in run_scheduler_process\n'
            "    scheduler = Scheduler(\n"
            '  File "/x/sglang/srt/model_loader/loader.py", line 247, in _initialize_model\n'
            "    quant_config = _get_quantization_config(model_config, load_config, packed_modules_mapping)\n"
            '  File "/x/sglang/srt/model_loader/loader.py", line 208, in _get_quantization_config\n'
            "    raise ValueError(\n"
            f"{exc}: {message}\n")


def test_a_quantization_method_refusing_the_dtype_is_a_bad_argument():
    for method, dtype, supported in (("awq", "bfloat16", "[torch.float16]"),
                                     ("gptq", "bfloat16", "[torch.float16]"),
                                     ("fp8", "float32", "[torch.bfloat16, torch.float16]")):
        message = (f"torch.{dtype} is not supported for quantization method {method}. "
                   f"Supported dtypes: {supported}")
        found = diagnose(_LOAD + _refusal(message))
        assert reading(found) == (True, "bad_argument", "load_weights"), method
        assert found.signature == "quant_dtype_unsupported"
        first = supported[1:].split(",")[0].split(".")[1].rstrip("]")
        assert f"`--dtype {first}`" in found.suggestion


def test_other_refusals_at_load_do_not_read_as_the_dtype_check():
    capability = ("The quantization method awq is not supported for the current GPU. Minimum capability: 75. "
                  "Current capability: 70.")
    assert diagnose(_LOAD + _refusal(capability)).signature != "quant_dtype_unsupported"
    other = "torch.bfloat16 is not supported for this kernel. Supported dtypes: [torch.float16]"
    assert diagnose(_LOAD + _refusal(other)).signature != "quant_dtype_unsupported"
    # the one-dtype assert of a compressed-tensors MoE method keeps its own signature
    assert diagnose(_LOAD + _refusal("float16 is required for MoE compressed models. Set dtype=torch.float16",
                                     "AssertionError")).signature == "dtype_required"


def test_the_loaders_dtype_check_is_in_the_wheels():
    said = 'f"{model_config.dtype} is not supported for quantization "'
    assert_at_line("sglang", "0.5.23", "sglang/srt/model_loader/loader.py", 269, said)
    assert_at_line("sglang", "0.4.10.post2", "sglang/srt/model_loader/loader.py", 149, said)
    assert_at_line("sglang", "0.5.23", "sglang/srt/model_loader/loader.py", 270,
                   'f"method {model_config.quantization}. Supported dtypes: "')


# --- h31006: requests served between the HTTP server's start and "ready to roll" -------------------------
# the warmup is one request of num_dp_ranks prompts (0.5.23 entrypoints/http_server.py:2454-2456,
# 0.4.10.post2 :1022); each rank logs "Prefill batch, #new-seq: N" (0.5.23
# managers/scheduler_components/metrics_reporter.py:754-755; 0.4.10.post2 scheduler_metrics_mixin.py:93-94)

_UP = ("[2026-07-02 10:56:14] server_args=ServerArgs(model_path='/m/MiniCPM-SALA', dp_size=1, tp_size=1)\n"
       "[2026-07-02 10:56:33] Capture cuda graph begin. This can take up to several minutes. "
       "avail mem=11.17 GB\n"
       "[2026-07-02 10:56:40] Capture cuda graph end. Time elapsed: 7.01 s. mem usage=6.84 GB. "
       "avail mem=4.32 GB.\n"
       "[2026-07-02 10:56:40] INFO:     Application startup complete.\n"
       "[2026-07-02 10:56:40] INFO:     Uvicorn running on http://127.0.0.1:32997 (Press CTRL+C to quit)\n")


def _prefill(seqs: int, running: int = 0, rank: str = "") -> str:
    return (f"[2026-07-02 10:56:41{rank}] Prefill batch, #new-seq: {seqs}, #new-token: {20 * seqs}, "
            f"#cached-token: 0, full token usage: 0.00, #running-req: {running}, #queue-req: 0, "
            "#pending-token: 0, cuda graph: False, input throughput (token/s): 19.24\n")


def _replay(rank: str = "") -> str:
    return (f"[2026-07-02 10:56:41{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/x/sglang/srt/managers/scheduler.py", line 1534, in event_loop_overlap\n'
            "    batch_result = self.run_batch(batch)\n"
            '  File "/x/sglang/srt/managers/scheduler.py", line 3163, in run_batch\n'
            "    batch_result = self.model_worker.forward_batch_generation(\n"
            '  File "/x/sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", line 1075, in replay\n'
            "    self.replay_prepare(forward_batch, pp_proxy_tensors)\n"
            '  File "/x/sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", line 1046, in '
            "replay_prepare\n"
            "    attn_backend.init_forward_metadata_out_graph(fb_view)\n"
            "RuntimeError: The size of tensor a (5) must match the size of tensor b (8) at non-singleton "
            "dimension 0\n")


def test_more_sequences_than_the_warmup_sends_before_ready_are_served_requests():
    assert reading(diagnose(_UP + _prefill(1) + _prefill(3, running=1) + _replay())) == (
        True, "cuda_graph_replay", "serving")
    assert reading(diagnose(_UP + _prefill(2) + _replay())) == (True, "cuda_graph_replay", "serving")
    # 0.4.x's "Prefill batch." form, and a DP launch's rank taking more than the warmup's dp_size prompts
    old = _prefill(1).replace("Prefill batch,", "Prefill batch.")
    assert reading(diagnose(_UP + old + old + _replay()))[2] == "serving"
    dp2 = _UP.replace("dp_size=1", "dp_size=2")
    assert reading(diagnose(dp2 + _prefill(3, rank=" DP0 TP0") + _replay(" DP0 TP0")))[2] == "serving"


def test_the_warmups_own_batch_before_ready_stays_ready():
    assert reading(diagnose(_UP + _prefill(1) + _replay())) == (True, "cuda_graph_replay", "ready")
    assert reading(diagnose(_UP + _replay()))[2] == "ready"
    # a DP launch's warmup: dp_size prompts, one a rank (or all on one)
    dp2 = _UP.replace("dp_size=1", "dp_size=2")
    ranks = _prefill(1, rank=" DP0 TP0") + _prefill(1, rank=" DP1 TP1")
    assert reading(diagnose(dp2 + ranks + _replay(" DP0 TP0")))[2] == "ready"
    assert reading(diagnose(dp2 + _prefill(2, rank=" DP0 TP0") + _replay(" DP0 TP0")))[2] == "ready"
    # after "ready to roll" it was serving anyway
    ready = "[2026-07-02 10:56:41] The server is fired up and ready to roll!\n"
    assert reading(diagnose(_UP + ready + _prefill(1) + _replay()))[2] == "serving"
