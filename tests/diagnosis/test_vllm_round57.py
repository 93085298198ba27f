"""What held-out round 57 of the vLLM corpus (w5701-w5725, measured once at 20d21c8 with its logs 9774136)
showed: crashed 24/25, kind 23/25, phase 18/21. Its four misses were read from the source (docs/diagnosis.md,
"Held-out round 57"), and each was ddlab's:

- w5703: the engine core failed to start right after "Profiling CUDA graph memory: PIECEWISE=51 ...", its
  traceback cut. That line is profile_cudagraph_memory's, run inside determine_available_memory's profiling
  (0.19.1 v1/worker/gpu_model_runner.py:5876, v1/worker/gpu_worker.py:381). Fixed: a memory_pool marker
  (diagnosis/vllm_log.py).
- w5709: torch_npu's "status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE INTERNAL ASSERT FAILED",
  the assert NPUGraph::capture_begin makes right after AclmdlRICaptureBegin (Ascend/pytorch 9e73e70
  torch_npu/csrc/core/npu/NPUGraph.cpp:318, :323). Fixed: the capture not begun is ``npu_capture_failed``
  (device_crashes/npu.py), cuda_graph_capture, graph_capture.
- w5721: a CUDA OOM in TurboQuant attention's _continuation_prefill, a prefill over context already cached, which
  the runner's start-up batches never take (0.20.0 v1/attention/backends/turboquant_attn.py:589, :621-622, :650;
  v1/worker/gpu_model_runner.py:5439). Fixed: a serving frame (diagnosis/vllm_frames.py).
- w5722: a CUDA OOM handed to a chat stream through V0's AsyncLLMEngine.generate: the engine loop died of it and
  its callback propagates the exception to every open stream (0.7.2 engine/async_llm_engine.py:69, :682-684,
  :145-156; a request's own ValueError alone goes to that request, :737-739). Fixed: a crash's error through a
  stream every request shares is that crash (vllm_crashes/requests.py ENGINE_STREAMS, diagnosis/rootcause.py).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import vllm_phase_marker
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_in_library_wheel, assert_vllm_logs_read_as_labelled,
                      folded_round, not_unpacked, read_log, reads, said, vllm_traceback)

_ROUND = [f"w57{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 57) == _ROUND


def test_each_log_reads_as_labelled():
    """Crashed and kind as labelled, the phase where the log shows it: no miss is left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w5703: the CUDA graphs' memory profiled -------------------------------------------------------------------

_STARTED = ("vllm/v1/engine/core.py", 1082, "run_engine_core",
            "engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)")


def test_profiling_the_graphs_memory_is_the_memory_pool():
    """The corpus log: the profiling line, then 'EngineCore failed to start.' and its traceback, cut."""
    assert reads(read_log("w5703.log")) == (True, "unknown", "memory_pool")


def test_the_same_line_in_another_form():
    """0.20.0's line (v1/worker/gpu_model_runner.py:5963), a FULL-only mode, then a cut traceback."""
    line = ("(EngineCore_DP0 pid=4242) INFO 05-02 09:00:01 [gpu_model_runner.py:5963] Profiling CUDA graph memory: "
            "FULL=67 (largest=512)\n")
    assert reads(line + vllm_traceback(_STARTED, exc=None))[2] == "memory_pool"


@pytest.mark.parametrize(("msg", "phase"), [
    ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 51/51", "graph_capture"),
    ("Profiling CUDA graph memory usage is on the to-do list", None),
], ids=["the-capture-itself", "a-sentence-naming-it"])
def test_other_graph_lines_are_not_the_profiling(msg, phase):
    assert vllm_phase_marker(msg) == phase


# --- w5709: torch_npu's capture-status assert ------------------------------------------------------------------

_ASSERT = ('RuntimeError: status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE INTERNAL ASSERT FAILED '
           'at "{path}":{line}, please report a bug to PyTorch.')
_ACL_CAPTURE = [("vllm_ascend/compilation/acl_graph.py", 153, "__call__",
                 "with torch.npu.graph(aclgraph, pool=self.graph_pool):"),
                ("torch_npu/npu/graphs.py", 220, "__enter__", "self.npu_graph.capture_begin(")]


def test_the_capture_status_assert_is_a_graph_capture():
    """The corpus log: the engine core's ERROR line with the assert, then 'Process EngineCore_0:' frames, cut."""
    assert said(read_log("w5709.log"))[:2] == (True, "cuda_graph_capture")
    assert reads(read_log("w5709.log")) == (True, "cuda_graph_capture", "graph_capture")


def test_the_same_assert_in_another_form():
    """The source build's path and line (NPUGraph.cpp:323), under vllm-ascend's capture frames."""
    exc = _ASSERT.format(path="/usr1/torch_npu/csrc/core/npu/NPUGraph.cpp", line=323)
    assert reads(vllm_traceback(*_ACL_CAPTURE, exc=exc))[:2] == (True, "cuda_graph_capture")


@pytest.mark.parametrize("exc", [
    "RuntimeError: mempool_id_.first > 0 INTERNAL ASSERT FAILED at \"NPUGraph.cpp\":228, please report a bug to "
    "PyTorch.",
    "RuntimeError: status == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE was expected by my checker",
], ids=["another-assert", "not-torch-npus"])
def test_other_asserts_are_not_the_capture_status(exc):
    assert said(vllm_traceback(("my_app/run.py", 3, "main", "run()"), exc=exc))[2] != "vllm_npu_capture_failed"


# --- w5721: a prefill over cached context ----------------------------------------------------------------------

_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 72.00 MiB."
_TQ = [("vllm/v1/attention/backends/turboquant_attn.py", 890, "_prefill_attention",
        "out = self._continuation_prefill("),
       ("vllm/v1/attention/backends/turboquant_attn.py", 960, "_continuation_prefill",
        "v_full = torch.cat([v_cached_trim.to(qdtype), val_chunk], dim=0)")]


def test_a_continuation_prefill_is_serving():
    """The corpus log: the engine core's ERROR lines from _continuation_prefill to the OOM, its head cut."""
    assert reads(read_log("w5721.log")) == (True, "cuda_oom", "serving")


def test_the_same_prefill_in_another_form():
    """0.34.0's call (v1/attention/backends/turboquant_attn.py:890), its frames alone."""
    assert reads(vllm_traceback(*_TQ, exc=_OOM)) == (True, "cuda_oom", "serving")


@pytest.mark.parametrize("frames", [
    [("vllm/v1/worker/gpu_worker.py", 381, "determine_available_memory", "self.model_runner.profile_run()"), *_TQ],
    [("vllm/v1/attention/backends/turboquant_attn.py", 798, "_prefill_attention", "if q_len == seq_len:")],
], ids=["under-the-profiling", "a-first-chunk-prefill"])
def test_a_prefill_under_start_up_or_without_cached_context_is_not_serving(frames):
    assert reads(vllm_traceback(*frames, exc=_OOM))[2] != "serving"


# --- w5722: V0's engine loop's death handed to a stream --------------------------------------------------------

_HEAD = "ERROR 02-11 08:25:49 serving_completion.py:392] "
_STREAM = [("vllm/entrypoints/openai/serving_completion.py", 352, "completion_stream_generator",
            "async for prompt_idx, res in result_generator:"),
           ("vllm/utils.py", 506, "merge_async_iterators", "async for item in iterator:")]
_V0_GENERATE = ("vllm/engine/async_llm_engine.py", 1006, "generate", "async for output in await self.add_request(")
_V1_GENERATE = ("vllm/v1/engine/async_llm.py", 310, "generate", "out = q.get_nowait() or await q.get()")


def _stream_error(*frames, exc: str) -> str:
    return _HEAD + "Error in completion stream generator.\n" + vllm_traceback(*frames, exc=exc, head=_HEAD)


def test_an_oom_through_v0s_generate_is_the_engines_death():
    """The corpus log: the OOM line, then 'Error in chat completion stream generator.' into generate, cut."""
    assert reads(read_log("w5722.log")) == (True, "cuda_oom", "serving")


def test_the_same_death_in_another_form():
    """The completion handler's stream (0.7.2 entrypoints/openai/serving_completion.py), the OOM under it."""
    text = _stream_error(*_STREAM, _V0_GENERATE, exc="torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                                     "allocate 2.00 GiB.")
    assert said(text)[:2] == (True, "cuda_oom")


@pytest.mark.parametrize(("frames", "exc"), [
    ([*_STREAM, _V0_GENERATE], "ValueError: The decoder prompt (length 9000) is longer than the maximum model "
                               "length of 8192."),
    ([*_STREAM, _V1_GENERATE], "RuntimeError: Expected all tensors to be on the same device"),
], ids=["a-requests-own-valueerror", "v1s-generate"])
def test_a_requests_own_error_or_v1s_stream_stays_a_request_error(frames, exc):
    """add_request's ValueError goes to its request alone (0.7.2 engine/async_llm_engine.py:737-739); V1's
    AsyncLLM hands an engine's death to its streams as EngineDeadError, not through this frame."""
    assert said(_stream_error(*frames, exc=exc))[:2] == (False, "request_error")


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.19.1", "vllm/v1/worker/gpu_model_runner.py", 5862, "def profile_cudagraph_memory(self) -> int:"),
    ("0.19.1", "vllm/v1/worker/gpu_model_runner.py", 5877, '"Profiling CUDA graph memory: %s",'),
    ("0.19.1", "vllm/v1/worker/gpu_worker.py", 332, "def determine_available_memory(self) -> int:"),
    ("0.19.1", "vllm/v1/worker/gpu_worker.py", 381, "self.model_runner.profile_cudagraph_memory()"),
    ("0.20.0", "vllm/v1/worker/gpu_model_runner.py", 5964, '"Profiling CUDA graph memory: %s",'),
    ("0.20.0", "vllm/v1/worker/gpu_worker.py", 385, "self.model_runner.profile_cudagraph_memory()"),
    ("0.20.0", "vllm/v1/attention/backends/turboquant_attn.py", 62, "_CONTINUATION_DECODE_THRESHOLD = 128"),
    ("0.20.0", "vllm/v1/attention/backends/turboquant_attn.py", 589, "if q_len == seq_len:"),
    ("0.20.0", "vllm/v1/attention/backends/turboquant_attn.py", 621, "cached_len = seq_len - q_len"),
    ("0.20.0", "vllm/v1/attention/backends/turboquant_attn.py", 622, "if q_len <= _CONTINUATION_DECODE_THRESHOLD:"),
    ("0.20.0", "vllm/v1/attention/backends/turboquant_attn.py", 650, "out = self._continuation_prefill("),
    ("0.20.0", "vllm/v1/worker/gpu_model_runner.py", 5439, "seq_lens = max_query_len"),
    ("0.20.0", "vllm/model_executor/warmup/kernel_warmup.py", 73, "num_tokens=16,"),
    ("0.20.0", "vllm/model_executor/warmup/kernel_warmup.py", 77, "create_mixed_batch=True,"),
    ("0.34.0", "vllm/v1/attention/backends/turboquant_attn.py", 798, "if q_len == seq_len:"),
    ("0.34.0", "vllm/v1/attention/backends/turboquant_attn.py", 890, "out = self._continuation_prefill("),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 69, "error_callback(exception)"),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 145, "def propagate_exception(self,"),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 155, "for rid in tuple(self._request_streams.keys()):"),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 682, "def _error_callback(self, exc: Exception) -> None:"),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 684, "self._request_tracker.propagate_exception(exc)"),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 737, "except ValueError as e:"),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 739, "self._request_tracker.process_exception("),
    ("0.7.2", "vllm/engine/async_llm_engine.py", 1006, "async for output in await self.add_request("),
    ("0.7.2", "vllm/entrypoints/openai/serving_chat.py", 359, "async for res in result_generator:"),
    ("0.7.2", "vllm/entrypoints/openai/serving_chat.py", 661,
     'logger.exception("Error in chat completion stream generator.")'),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules cite."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]


def test_torch_npus_capture_status_is_in_its_headers():
    """AclmdlRICaptureGetInfo and the status enum (torch_npu 2.10.0's include/), which capture_begin asserts."""
    include = "torch_npu/include/torch_npu/csrc/core/npu"
    assert_in_library_wheel("torch_npu", "2.10.0", f"{include}/interface/AclInterface.h",
                            "aclError AclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus *status")
    assert_in_library_wheel("torch_npu", "2.10.0", f"{include}/NPUGraphsUtils.h",
                            "int(aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE) == 1")
