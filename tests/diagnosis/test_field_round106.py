"""Held-out round 106 (issue 24): sglang-jax's KV pool lines and its precompile frames; a vision model's warmup, a
traceback that escaped the capture wrapper and torch_npu's bare aclnn refusal, disputed.

Round 106 (h106001-h106005, h106007-h106009; excerpts of SGLang, Ascend/sglang and sglang-jax threads as the issues
index holds them) was measured once on main at 74edfafa: crashed 8/8, kind 6/8, phase 4/7. docs/diagnosis.md,
"Held-out round 106", tells the round.

- h106008 (sgl-project/sglang-jax#459): weights loaded, then "ModelRunner kv_cache_dtype", "TPU Memory profiling: ...",
  "ModelRunner max_total_num_tokens: 25951", "Creating fused KV buffers for 36 layers": sglang-jax's model runner
  sizing and allocating its KV pool (sglang-jax 8df44747 python/sgl_jax/srt/model_executor/model_runner.py:295, :325,
  :389; mem_cache/memory_pool.py:304), its memory_pool phase (JAX_MEMORY_POOL, diagnosis/jax_pool_lines.py).
- h106009 (sgl-project/sglang-jax#366): a traceback cut in the scheduler's constructor calling the worker's
  run_precompile -> precompile_extend (8a5deaa8 managers/scheduler.py:300, managers/tp_worker.py:187-191), sglang-jax's
  graph capture (crashes/frames.py _JAX_PRECOMPILE). Both ddlab's misses, fixed; the positive tests fail on b5eaa96d.
- h106002 (Ascend/sglang#518): the chat request after GET /model_info is the launcher's warmup of a vision model
  (0.5.10 entrypoints/http_server.py:1765-1769, :1785-1788, :1831): phase serving -> ready, disputed.
- h106004 (sgl-project/sglang#11308): a traceback from run_scheduler_process through the capture wrapper's
  self.capture() (0.5.3 model_executor/cuda_graph_runner.py:364-370), cut: the error escaped the wrapper's except
  RuntimeError, nothing says the capture failed (round 63's _ESCAPED_WRAPPER): kind cuda_graph_capture -> unknown.
- h106007 (Ascend/sglang#81): torch_npu's bare "call aclnnInplaceCopy failed, error code is 161002" (torch_npu 2.10.0
  op_api_common.h:336-337), what the op refused not in the line: kind kernel_config_unsupported -> unknown.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 106)


def test_round106_is_folded_into_work_with_three_disputes_and_none_left():
    assert _IDS == [f"h1060{n:02d}" for n in (1, 2, 3, 4, 5, 7, 8, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h106002", "h106004", "h106007"]
    assert REAL_MANIFEST["h106002"]["phase_disputed"] == ["serving", "ready"]
    assert REAL_MANIFEST["h106004"]["kind_disputed"] == ["cuda_graph_capture", "unknown"]
    assert REAL_MANIFEST["h106007"]["kind_disputed"] == ["kernel_config_unsupported", "unknown"]
    assert all(REAL_MANIFEST[i]["second_look"] for i in ("h106002", "h106004", "h106007"))
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


# the two fixed (h106008, h106009) and the three ddlab read as labelled at the measurement
@pytest.mark.parametrize(("log_id", "signature"), [
    ("h106008", None), ("h106009", None), ("h106001", None), ("h106003", "capture_error"), ("h106005", None),
], ids=["h106008", "h106009", "h106001", "h106003", "h106005"])
def test_the_rounds_logs_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h106008_reads_memory_pool_and_h106009_graph_capture():
    assert (real("h106008").crashed, real("h106008").phase) == (False, "memory_pool")
    assert (real("h106009").crashed, real("h106009").kind, real("h106009").phase) == (True, "unknown", "graph_capture")


def test_the_disputed_read_as_their_second_looks():
    assert (real("h106002").crashed, real("h106002").kind, real("h106002").phase) == (False, None, "ready")
    assert (real("h106004").crashed, real("h106004").kind, real("h106004").phase) == (True, "unknown", "graph_capture")
    assert (real("h106007").crashed, real("h106007").kind) == (True, "unknown")


# --- h106008: sglang-jax's KV pool lines ----------------------------------------------------------------------------

_STAMP = "[2025-11-19 22:04:23] "
_POOL_8DF4 = (f"{_STAMP}Qwen3 weights loaded successfully!\n"
              f"{_STAMP}ModelRunner kv_cache_dtype: <class 'jax.numpy.bfloat16'>\n"
              f"{_STAMP}TPU Memory profiling: available_device_memory=8.3GB, available_kv_cache=3.6GB, max_tokens=25951, "
              "cell_size=147456bytes\n"
              f"{_STAMP}ModelRunner max_total_num_tokens: 25951\n"
              f"{_STAMP}Creating fused KV buffers for 36 layers\n")


# 8df44747's lines (h106008's), the pool's end line alone (a paste that starts there), the first commit's pool line,
# cddbf6f's profiling line (no device memory), the budget line alone
@pytest.mark.parametrize("text", [
    _POOL_8DF4,
    f"{_STAMP}JAX Fused KV Cache allocated. #tokens: 25951, Fused KV size: 3.56 GB\n",
    f"{_STAMP}JAX KV Cache allocated. #tokens: 315424, K size: 16.85 GB, V size: 16.85 GB\n",
    f"{_STAMP}TPU Memory profiling: available_kv_cache=3.6GB, max_tokens=25951, cell_size=147456 bytes\n",
    f"{_STAMP}ModelRunner max_total_num_tokens: 25951\n",
], ids=["8df44747", "fused-allocated", "82500e0a", "cddbf6f", "budget"])
def test_sglang_jax_pool_lines_are_memory_pool(text):
    assert reads(text) == (False, None, "memory_pool")


# past the pool: sglang-jax's precompile after them is graph_capture still
def test_the_precompile_after_the_pool_is_graph_capture():
    assert reads(_POOL_8DF4 + f"{_STAMP}[EXTEND] Begin to precompile bs_paddings=[256] token_paddings=[256]\n")[2] \
        == "graph_capture"


# near misses: the buffers' size and time lines alone (they follow the pool's own lines), SGLang's budget line
# "max_total_num_tokens=N, ..." (the scheduler's, after its pool), the weights' end line alone, prose
@pytest.mark.parametrize("text", [
    f"{_STAMP}Total fused KV cache memory per layer: 0.10 GB, dtype: <class 'jax.numpy.bfloat16'>\n"
    f"{_STAMP}Total time to create 36 buffers: 1.36 seconds\n",
    "[2026-04-03 08:15:52 TP0] max_total_num_tokens=2171648, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=1, context_len=262144, available_gpu_mem=17.59 GB\n",
    f"{_STAMP}Qwen3 weights loaded successfully!\n",
    "the TPU memory profiling looks wrong after creating fused KV buffers\n",
], ids=["buffer-size-and-time", "sglang-budget", "weights-loaded", "prose"])
def test_other_pool_texts_are_not_sglang_jaxs_pool(text):
    assert reads(text)[2] != "memory_pool"


# --- h106009: sglang-jax's precompile frames ------------------------------------------------------------------------

_JAX = "/home/gcpuser/sky_workdir/sglang-jax/python/sgl_jax/srt/"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_JAX}{path}", line {line}, in {func}\n    {code}\n'


_CONSTRUCTOR = (_frame("managers/scheduler.py", 1108, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)")
                + _frame("managers/scheduler.py", 300, "__init__", "self.tp_worker.run_precompile()"))
_FORWARD = (_frame("managers/tp_worker.py", 188, "run_precompile", "self.precompile_extend(future_token_ids_map)")
            + _frame("managers/tp_worker.py", 231, "precompile_extend",
                     "self.forward_batch_generation(model_worker_batch, None, False, sampling_metadata)")
            + _frame("managers/tp_worker.py", 380, "forward_batch_generation",
                     "logits_output, cache_miss_count = self.model_runner.forward(")
            + "ValueError: the precompile's batch does not fit\n")


# h106009's frames, the scheduler's call alone (cut inside the callee's path), the overlap worker's, cddbf6f's
# compilation manager, a forward under the precompile with its exception line (the forward is no request's)
@pytest.mark.parametrize("text", [
    _CONSTRUCTOR + _frame("managers/tp_worker.py", 188, "run_precompile", "self.precompile_extend(future_token_ids_map)"),
    _CONSTRUCTOR + f'  File "{_JAX}managers/tp_w\n',
    _CONSTRUCTOR + _frame("managers/tp_worker_overlap_thread.py", 192, "run_precompile",
                          "self.worker.run_precompile(self.future_token_ids_map)"),
    _frame("managers/tp_worker.py", 335, "run_precompile", "self.compilation_manager.precompile_all(*args)")
    + _frame("model_executor/compilation_manager.py", 140, "precompile_all", "self._precompile_extend(*args)"),
    "Traceback (most recent call last):\n" + _CONSTRUCTOR + _FORWARD,
], ids=["h106009", "scheduler-call", "overlap-worker", "compilation-manager", "forward-under-it"])
def test_sglang_jax_precompile_frames_are_graph_capture(text):
    assert reads(text)[2] == "graph_capture"


# near misses: SGLang's kernel precompile after loading (0.5.23 model_runner.py:1436; a model's own,
# models/deepseek_v4.py:5089), sglang-jax's scheduler constructor without the precompile, a serving forward
@pytest.mark.parametrize("text", [
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 1436, in '
    "maybe_precompile_model_kernels_after_loading\n    self.model.precompile_kernels_after_loading()\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/models/deepseek_v4.py", line 5089, in '
    "precompile_kernels_after_loading\n    _precompile(\n",
    _frame("managers/scheduler.py", 1108, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)")
    + _frame("managers/scheduler.py", 296, "__init__", "self.init_memory_pool_and_cache()"),
    _frame("managers/scheduler.py", 1120, "run_scheduler_process", "scheduler.event_loop_normal()")
    + _frame("managers/scheduler.py", 540, "event_loop_normal", "result = self.run_batch(batch)")
    + "ValueError: the batch does not fit\n",
], ids=["sglang-kernel-precompile", "jax-constructor", "jax-serving"])
def test_other_frames_are_not_sglang_jaxs_precompile(text):
    assert reads(text)[2] != "graph_capture"


# --- h106002: the launcher's warmup chat request of a vision model (disputed, ddlab unchanged) ----------------------

_UP = ("[2026-04-03 08:15:54] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
       '[2026-04-03 08:15:55] INFO:     127.0.0.1:38034 - "GET /model_info HTTP/1.1" 200 OK\n'
       "/home/u/sglang/python/sglang/srt/entrypoints/openai/serving_chat.py:222: DeprecationWarning: max_tokens is "
       "deprecated in favor of the max_completion_tokens field\n"
       "  max_output_tokens = request.max_completion_tokens or request.max_tokens\n")


def test_the_warmups_chat_request_before_ready_to_roll_is_ready_and_a_clients_after_it_serving():
    assert reads(_UP)[2] == "ready"
    assert reads(_UP + "[2026-04-03 08:16:02] The server is fired up and ready to roll!\n"
                 '[2026-04-03 08:16:09] INFO:     127.0.0.1:38040 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                 )[2] == "serving"


# --- h106004: a traceback that escaped the capture wrapper (disputed, ddlab unchanged) ------------------------------

_CI = "/public_sglang_ci/runner/_work/sglang/sglang/python/sglang/srt/"


def _ci(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_CI}{path}", line {line}, in {func}\n    {code}\n'


_CAPTURE = (_ci("model_executor/cuda_graph_runner.py", 366, "__init__", "self.capture()")
            + _ci("model_executor/cuda_graph_runner.py", 485, "capture", ") = self.capture_one_batch_size(bs, forward)")
            + _ci("model_executor/cuda_graph_runner.py", 661, "capture_one_batch_size", "run_once()"))
_HEADER = "[2025-10-07 23:22:55 DP1 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"


def test_a_cut_traceback_through_the_capture_wrapper_from_the_scheduler_is_unknown():
    escaped = (_HEADER + _ci("model_executor/model_runner.py", 1842, "init_device_graphs",
                             "self.graph_runner = graph_runners[self.device](self)") + _CAPTURE)
    assert reads(escaped) == (True, "unknown", "graph_capture")


def test_a_cut_traceback_that_starts_at_the_constructor_is_the_captures_failure():
    assert reads(_HEADER + _CAPTURE)[:2] == (True, "cuda_graph_capture")


# --- h106007: torch_npu's bare aclnn refusal (disputed, ddlab unchanged) --------------------------------------------

_COPY = ("RuntimeError: copy_d2d_baseformat_opapi:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:90 NPU function "
         "error: call aclnnInplaceCopy failed, error code is 161002\n")


def test_torch_npus_bare_aclnn_refusal_is_unknown():
    assert reads(_COPY)[:2] == (True, "unknown")


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_NPU_INCLUDE = "torch_npu/include/"
_CITED = [
    ("sglang", "0.5.3", "sglang/srt/model_executor/cuda_graph_runner.py", 364, "try:"),
    ("sglang", "0.5.3", "sglang/srt/model_executor/cuda_graph_runner.py", 366, "self.capture()"),
    ("sglang", "0.5.3", "sglang/srt/model_executor/cuda_graph_runner.py", 367, "except RuntimeError as e:"),
    ("sglang", "0.5.3", "sglang/srt/model_executor/cuda_graph_runner.py", 369, 'f"Capture cuda graph failed: {e}'),
    ("sglang", "0.5.3", "sglang/srt/model_executor/cuda_graph_runner.py", 485,
     ") = self.capture_one_batch_size(bs, forward)"),
    ("sglang", "0.5.3", "sglang/srt/model_executor/cuda_graph_runner.py", 661, "run_once()"),
    ("sglang", "0.5.3", "sglang/srt/model_executor/model_runner.py", 1842,
     "self.graph_runner = graph_runners[self.device](self)"),
    ("sglang", "0.5.3", "sglang/srt/managers/scheduler.py", 2889, 'logger.error(f"Scheduler hit an exception: {traceback}")'),
    ("sglang", "0.5.3", "sglang/utils.py", 82, 'err_str = "".join(traceback.format_exception(etype, value, tb))'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/http_server.py", 1765, "time.sleep(1)"),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/http_server.py", 1768, 'url + "/model_info", timeout=5'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/http_server.py", 1785,
     'is_vlm = bool(model_info.get("has_image_understanding", False))'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/http_server.py", 1788, 'request_name = "/v1/chat/completions"'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/http_server.py", 1831, '"max_tokens": max_new_tokens,'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/http_server.py", 1929,
     'logger.info("The server is fired up and ready to roll!")'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/openai/protocol.py", 566,
     'deprecated="max_tokens is deprecated in favor of the max_completion_tokens field"'),
    ("sglang", "0.5.10", "sglang/srt/entrypoints/openai/serving_chat.py", 223,
     "max_output_tokens = request.max_completion_tokens or request.max_tokens"),
    ("sglang", "0.5.10", "sglang/srt/configs/model_config.py", 196, "self.is_image_understandable_model = "),
    ("sglang", "0.5.10", "sglang/srt/configs/model_config.py", 1328, '"Qwen3_5ForConditionalGeneration",'),
    ("torch_npu", "2.10.0", f"{_NPU_INCLUDE}third_party/op-plugin/op_plugin/utils/op_api_common.h", 337,
     'NPU_CHECK_ERROR(workspace_status, "call " #aclnn_api " failed");'),
    ("torch_npu", "2.10.0", f"{_NPU_INCLUDE}torch_npu/csrc/core/npu/NPUException.h", 193, '" NPU function error: " +'),
    ("torch_npu", "2.10.0", f"{_NPU_INCLUDE}torch_npu/csrc/core/npu/NPUException.h", 195,
     '", error code is " + std::to_string(error_code)'),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
