"""Held-out round 87 (issue 24): the attention backend built in the pool's phase; a rank's frames over another's line.

Round 87 (h87001-h87008; excerpts of users' SGLang notes and benchmark repositories) was measured once on main at
9fe3644 (with the round's logs, bb06b05): crashed 8/8, kind 8/8, phase 7/8. docs/diagnosis.md, "Held-out round 87",
tells the round. The one miss was ddlab's:

- h87003, a TP2 tail: TP1's "Memory pool end" and "Capture piecewise CUDA graph begin", then TP0's traceback through
  ModelRunner.initialize -> init_attention_backend into FlashInfer's workspace allocation, out of memory. initialize
  builds the attention backend after the KV pool and before the graphs are captured (0.5.12
  sglang/srt/model_executor/model_runner.py:766, after init_memory_pool :749, before init_device_graphs :791 and
  init_piecewise_cuda_graphs :825): model_runner.py's init_attention_backend frame is memory_pool
  (crashes/frames.py _ATTN_BACKEND), and the crashing rank's own frames, where they name a startup step, decide the
  phase over another rank's later progress line (diagnosis/phase.py _own_rank).

Each positive test fails on bb06b05.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 87)


def test_round87_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h870{n:02d}" for n in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_h87003_reads_cuda_oom_in_the_pools_phase():
    found = real("h87003")
    assert (found.crashed, found.kind, found.phase) == (True, "cuda_oom", "memory_pool")


# --- h87003: the attention backend, built after the pool and before the capture ------------------------------------

_SRT = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 384.00 MiB. GPU 0 has a total capacity of "
        "23.56 GiB of which 338.75 MiB is free.")


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_SRT}/{path}", line {line}, in {func}\n    {code}\n'


def _traceback(*frames: str, head: str = "[2025-08-01 10:00:02 TP0] Scheduler hit an exception: ") -> str:
    return f"{head}Traceback (most recent call last):\n" + "".join(frames) + _OOM + "\n"


_RUNNER = "model_executor/model_runner.py"
# 0.4.10.post2: tp_worker.py:84 -> model_runner.py:242 -> initialize :338 -> init_attention_backend :1322 ->
# _get_attention_backend :1362 -> _get_attention_backend_from_str :1388 -> flashinfer_backend.py:121
_V0410 = (_frame("managers/tp_worker.py", 84, "__init__", "self.model_runner = ModelRunner("),
          _frame(_RUNNER, 242, "__init__", "self.initialize(min_per_gpu_memory)"),
          _frame(_RUNNER, 338, "initialize", "self.init_attention_backend()"),
          _frame(_RUNNER, 1322, "init_attention_backend", "self.attn_backend = self._get_attention_backend()"),
          _frame(_RUNNER, 1362, "_get_attention_backend", "attn_backend = self._get_attention_backend_from_str("),
          _frame(_RUNNER, 1388, "_get_attention_backend_from_str", "return FlashInferAttnBackend(self)"),
          _frame("layers/attention/flashinfer_backend.py", 121, "__init__", "global_workspace_buffer = torch.empty("))
# 0.5.12's own frames, from initialize down (model_runner.py:766 -> :2408 -> flashinfer_backend.py:202)
_V0512 = (_frame(_RUNNER, 766, "initialize", "self.init_attention_backend()"),
          _frame(_RUNNER, 2408, "init_attention_backend", "self.attn_backend = self._get_attention_backend()"),
          _frame("layers/attention/flashinfer_backend.py", 202, "__init__", "global_workspace_buffer = torch.empty("))
_TP1_POOL = "[2025-08-01 10:00:01 TP1] Memory pool end. avail mem=0.49 GB\n"
_TP1_CAPTURE = ("[2025-08-01 10:00:01 TP1] Capture cuda graph begin. This can take up to several minutes. "
                "avail mem=0.40 GB\n")
_TP1_PIECEWISE = "[2025-08-01 10:00:01 TP1] Capture piecewise CUDA graph begin. avail mem=0.08 GB\n"


# another rank's capture line before the crashing rank's traceback (0.4.10.post2's and 0.5.12's frames, each
# release's capture line), the traceback alone (a cut paste), and the crashing rank's own pool line before it
@pytest.mark.parametrize("text", [
    _TP1_POOL + _TP1_CAPTURE + _traceback(*_V0410),
    _TP1_POOL + _TP1_PIECEWISE + _traceback(*_V0512),
    _traceback(*_V0410),
    "[2025-08-01 10:00:01 TP0] Memory pool end. avail mem=0.51 GB\n" + _TP1_PIECEWISE + _traceback(*_V0512),
], ids=["0.4.10-other-rank-capture", "0.5.12-other-rank-piecewise", "0.4.10-traceback-alone", "0.5.12-own-pool-line"])
def test_the_attention_backends_build_is_the_pools_phase(text):
    assert reads(text, family="sglang") == (True, "cuda_oom", "memory_pool")


_CAPTURE = (_frame(_RUNNER, 339, "initialize", "self.init_cuda_graphs()"),
            _frame(_RUNNER, 1496, "init_cuda_graphs", "self.cuda_graph_runner = CudaGraphRunner(self)"),
            _frame("model_executor/cuda_graph_runner.py", 387, "__init__", "self.capture()"),
            _frame("model_executor/cuda_graph_runner.py", 492, "capture",
                   ") = self.capture_one_batch_size(bs, forward)"))
_EAGLE = (_frame("speculative/eagle_worker.py", 167, "__init__", "self.init_attention_backend()"),
          _frame("speculative/eagle_worker.py", 189, "init_attention_backend",
                 "self.draft_attn_backend = FlashInferMultiStepDraftBackend("))


# near misses: a traceback inside the capture (its own frames say graph_capture), the crashing rank's own capture
# line before the attention backend's frame (its own progress raises it), a speculative worker's own
# init_attention_backend (run after the target's capture: no pool frame), a log no rank stamped (whose line it is
# is not known), prose naming the frame
@pytest.mark.parametrize(("text", "phase"), [
    (_TP1_POOL + _traceback(*_CAPTURE), "graph_capture"),
    ("[2025-08-01 10:00:01 TP0] Capture cuda graph begin. avail mem=0.40 GB\n" + _traceback(*_V0512),
     "graph_capture"),
    (_TP1_POOL + _TP1_CAPTURE + _traceback(*_EAGLE), "graph_capture"),
    ("[2025-08-01 10:00:01] Capture cuda graph begin. avail mem=0.40 GB\n"
     + _traceback(*_V0512, head="[2025-08-01 10:00:02] Scheduler hit an exception: "), "graph_capture"),
    (_TP1_POOL + _TP1_CAPTURE + "[2025-08-01 10:00:02 TP0] the model_runner.py init_attention_backend frame raised: "
     + _OOM + "\n", "graph_capture"),
], ids=["capture-frames", "own-capture-line", "eagle-worker", "no-rank-stamp", "prose"])
def test_other_frames_and_lines_keep_their_phase(text, phase):
    assert reads(text, family="sglang")[2] == phase


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.5.12", _RUNNER, 609, "def initialize(self, pre_model_load_memory: float):"),
    ("0.5.12", _RUNNER, 749, "self.init_memory_pool(pre_model_load_memory)"),
    ("0.5.12", _RUNNER, 766, "self.init_attention_backend()"),
    ("0.5.12", _RUNNER, 791, "self.init_device_graphs()"),
    ("0.5.12", _RUNNER, 825, "self.init_piecewise_cuda_graphs()"),
    ("0.5.12", _RUNNER, 2408, "self.attn_backend = self._get_attention_backend()"),
    ("0.5.12", _RUNNER, 3077, 'f"Capture piecewise CUDA graph begin. avail mem={before_mem:.2f} GB"'),
    ("0.5.12", "model_executor/model_runner_kv_cache_mixin.py", 909, 'f"Memory pool end. "'),
    ("0.5.12", "layers/attention/flashinfer_backend.py", 202, "global_workspace_buffer = torch.empty("),
    ("0.5.12", "managers/scheduler.py", 437, "self.init_model_worker()"),
    ("0.5.12", "speculative/eagle_worker.py", 226, "self.init_attention_backend()"),
    ("0.5.5", _RUNNER, 471, "self.init_memory_pool("),
    ("0.5.5", _RUNNER, 478, "self.init_attention_backend()"),
    ("0.5.5", _RUNNER, 479, "self.init_device_graphs()"),
    ("0.4.10.post2", _RUNNER, 242, "self.initialize(min_per_gpu_memory)"),
    ("0.4.10.post2", _RUNNER, 331, "self.init_memory_pool("),
    ("0.4.10.post2", _RUNNER, 338, "self.init_attention_backend()"),
    ("0.4.10.post2", _RUNNER, 339, "self.init_cuda_graphs()"),
    ("0.4.10.post2", _RUNNER, 1322, "self.attn_backend = self._get_attention_backend()"),
    ("0.4.10.post2", _RUNNER, 1362, "attn_backend = self._get_attention_backend_from_str("),
    ("0.4.10.post2", _RUNNER, 1388, "return FlashInferAttnBackend(self)"),
    ("0.4.10.post2", _RUNNER, 1496, "self.cuda_graph_runner = CudaGraphRunner(self)"),
    ("0.4.10.post2", "layers/attention/flashinfer_backend.py", 121, "global_workspace_buffer = torch.empty("),
    ("0.4.10.post2", "managers/tp_worker.py", 84, "self.model_runner = ModelRunner("),
    ("0.4.10.post2", "model_executor/cuda_graph_runner.py", 387, "self.capture()"),
    ("0.4.10.post2", "model_executor/cuda_graph_runner.py", 492, "= self.capture_one_batch_size(bs, forward)"),
    ("0.4.10.post2", "speculative/eagle_worker.py", 167, "self.init_attention_backend()"),
    ("0.4.10.post2", "speculative/eagle_worker.py", 189, "self.draft_attn_backend = FlashInferMultiStepDraftBackend("),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(release, path, line, text):
    assert_at_line("sglang", release, f"sglang/srt/{path}", line, text)
