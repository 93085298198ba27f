"""Held-out round 110 (issue 24): SGLang's tensor-parallel memory balance check; a graph runner's constructor is the
capture; a hybrid model's KV pool asked for a layer it does not hold.

Round 110 (h110001-h110004; log files committed to users' repositories, each pinned to a commit) was measured once
on main at ea249f9a: crashed 4/4, kind 2/4, phase 3/4. docs/diagnosis.md, "Held-out round 110", tells the round.

- h110001 (an AMD nightly's Grok-1 TP8 start, rocm/sgl-dev v0.5.3rc0): every rank's init_torch_distributed raises
  "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. ..." (0.5.3
  model_executor/model_runner.py:718; RuntimeError from 0.5.9 :845, 0.5.23 distributed/bootstrap.py:450): one GPU
  has half its memory held by another process. A GPU's memory another process holds is cuda_oom in the corpus
  (h99009, h105001) and cuda_oom's launch advice frees the GPU: ddlab's miss, fixed (crashes/kinds/memory.py,
  tp_memory_unbalanced); the check turned off leaves a warning, which is no crash.
- h110002 (DeepSeek-R1-MXFP4 with --enable-torch-compile, v0.5.5): Triton's "PassManager::run failed" under
  Inductor, then "Capture cuda graph failed"; the grep that quoted the server log cut the traceback, leaving
  "cuda_graph_runner.py, line 381, in __init__" beside the cause. The runner is built after "Capture cuda graph
  begin" and captures in its constructor (0.5.5 model_runner.py:1985-1995, cuda_graph_runner.py:381-384): its
  frame is graph_capture (crashes/frames.py). Ddlab's miss, fixed.
- h110004 (a Qwen3.5 MoE hybrid PD-prefill server, --attention-backend aiter): AiterAttnBackend reads layer 0's
  value buffer (0.5.9 layers/attention/aiter_backend.py:126) and the hybrid pool, holding the full-attention layers
  only, raises "ValueError: layer_id=0 not in full attention layers" (0.5.9 mem_cache/memory_pool.py:1288); the
  triton backend and 0.5.10's aiter ask get_v_head_dim() instead. Kernel_config_unsupported (crashes/kinds/
  hybrid_pools.py, new): ddlab's miss, fixed.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real, said

_IDS = folded_round(REAL_MANIFEST, 110)

# the signature each log is read by
_SIGNATURES = {
    "h110001": "tp_memory_unbalanced",  # every rank's balance check: another process holds a GPU's memory
    "h110002": "triton_pass_failed",    # Triton's MLIR passes failing under Inductor, in the graph runner's capture
    "h110003": None,                    # Grok-2's rope cache refusing its view while the model is built: unknown
    "h110004": "hybrid_pool_layer",     # the aiter backend asking the hybrid pool for layer 0
}


def test_round110_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round110_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_h110002_is_read_in_the_graph_capture():
    found = real("h110002")
    assert (found.crashed, found.kind, found.phase) == (True, "kernel_compile", "graph_capture")


# --- h110001: the tensor-parallel memory balance check --------------------------------------------------------------

_ROOT = "/sgl-workspace/sglang/python/sglang/srt/"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_ROOT}{path}", line {line}, in {func}\n    {code}\n'


_UNBALANCED = ("The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
               "min_per_gpu_memory=40.5, local_gpu_memory=79.1, local_gpu_memory * 0.9=71.19")
_INIT = ("[2025-10-05 06:01:01 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
         + _frame("model_executor/model_runner.py", 277, "__init__",
                  "min_per_gpu_memory = self.init_torch_distributed()"))


# 0.5.3's ValueError (h110001's), 0.5.9's RuntimeError, 0.1.x's message with no sizes, the exception line alone
@pytest.mark.parametrize("text", [
    _INIT + _frame("model_executor/model_runner.py", 718, "init_torch_distributed", "raise ValueError(")
    + f"ValueError: {_UNBALANCED}\n",
    _INIT + _frame("model_executor/model_runner.py", 845, "init_torch_distributed", "raise RuntimeError(msg)")
    + f"RuntimeError: {_UNBALANCED}\n",
    "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes.\n",
    f"RuntimeError: {_UNBALANCED}\n",
], ids=["valueerror", "runtimeerror", "0.1.x", "line-alone"])
def test_the_balance_check_raised_is_a_gpu_another_process_holds(text):
    assert said(text, family="sglang") == (True, "cuda_oom", "tp_memory_unbalanced")
    assert reads(text, family="sglang")[2] == "launch"


# near miss: the check turned off (SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK, SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0)
# only warns, and the start goes on
def test_the_balance_warning_is_no_crash():
    text = (f"[2025-10-05 06:01:01 TP1] WARNING model_runner.py:712: {_UNBALANCED}\n"
            "[2025-10-05 06:01:01 TP1] Init torch distributed ends. mem usage=0.62 GB\n"
            "[2025-10-05 06:01:02 TP1] Load weight begin. avail mem=39.88 GB\n")
    assert said(text, family="sglang")[:2] == (False, None)


# --- h110002: a graph runner's constructor is the capture -----------------------------------------------------------

# a paste cut at its start: the runner's buffers allocated in its constructor (0.5.5 cuda_graph_runner.py:372), and
# an EAGLE drafter's runner (0.5.5 speculative/eagle_draft_cuda_graph_runner.py)
@pytest.mark.parametrize("text", [
    _frame("model_executor/cuda_graph_runner.py", 372, "__init__", "self.next_token_logits_buffer = torch.zeros(")
    + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
      "79.19 GiB of which 1.02 GiB is free.\n",
    _frame("speculative/eagle_draft_cuda_graph_runner.py", 97, "__init__", "self.hidden_states = torch.zeros(")
    + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n",
], ids=["buffers", "drafter"])
def test_a_graph_runners_constructor_frame_is_the_capture(text):
    assert reads(text, family="sglang")[2] == "graph_capture"


# near misses: the runner's replay (a served batch), another part's constructor (the model runner's), a vision
# encoder's graph runner (0.5.23 multimodal/vit_cuda_graph_runner.py, not the server's startup graphs)
@pytest.mark.parametrize(("text", "phase"), [
    ("[2025-11-09 11:07:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
     + _frame("managers/scheduler.py", 1012, "event_loop_overlap", "batch_result = self.run_batch(batch)")
     + _frame("model_executor/cuda_graph_runner.py", 820, "replay", "self.graphs[self.bs].replay()")
     + "RuntimeError: CUDA error: an illegal memory access was encountered\n", "serving"),
    (_INIT + "RuntimeError: CUDA error: an illegal memory access was encountered\n", "launch"),
    (_frame("multimodal/vit_cuda_graph_runner.py", 60, "__init__", "self.buffers = torch.empty(")
     + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n", "launch"),
], ids=["replay", "model-runner", "vit-runner"])
def test_other_frames_are_not_the_capture(text, phase):
    assert reads(text, family="sglang")[2] == phase


# --- h110004: a hybrid model's KV pool asked for a layer it does not hold -------------------------------------------

_POOL = (_frame("layers/attention/aiter_backend.py", 126, "__init__",
                "self.v_head_dim = model_runner.token_to_kv_pool.get_value_buffer(0).shape[-1]")
         + _frame("mem_cache/memory_pool.py", 1298, "get_value_buffer",
                  "layer_id = self._transfer_full_attention_id(layer_id)")
         + _frame("mem_cache/memory_pool.py", 1288, "_transfer_full_attention_id", "raise ValueError("))


# h110004's backend, the wave backend's same read, the exception line alone
@pytest.mark.parametrize("text", [
    _POOL + "ValueError: layer_id=0 not in full attention layers: dict_keys([3, 7, 11, 15])\n",
    _POOL.replace("aiter_backend.py\", line 126", "wave_backend.py\", line 153")
    + "ValueError: layer_id=0 not in full attention layers: dict_keys([3, 7])\n",
    "ValueError: layer_id=2 not in full attention layers: dict_keys([3, 7, 11])\n",
], ids=["aiter", "wave", "line-alone"])
def test_a_layer_the_hybrid_pool_does_not_hold_is_kernel_config_unsupported(text):
    assert said(text, family="sglang") == (True, "kernel_config_unsupported", "hybrid_pool_layer")


# near misses: the message quoted in a log line (nothing raised), another exception type over the same words
@pytest.mark.parametrize("text", [
    "[2026-03-31 15:04:11 DP0 TP0 EP0] INFO: layer_id=0 not in full attention layers: using the linear backend\n",
    _POOL + "AssertionError: layer_id=0 not in full attention layers\n",
], ids=["logged", "assertion"])
def test_other_texts_are_not_a_hybrid_pool_refusal(text):
    assert said(text, family="sglang")[2] != "hybrid_pool_layer"


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_CITED = [
    ("sglang", "0.1.17", "sglang/srt/managers/router/model_runner.py", 255,
     'raise ValueError("The memory capacity is unbalanced. Some GPUs may be occupied by other processes.")'),
    ("sglang", "0.5.3", "sglang/srt/model_executor/model_runner.py", 718, "raise ValueError("),
    ("sglang", "0.5.3", "sglang/srt/model_executor/model_runner.py", 719,
     '"The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "'),
    ("sglang", "0.5.3", "sglang/srt/model_executor/model_runner.py", 712,
     'if get_bool_env_var("SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK"):'),
    ("sglang", "0.5.9", "sglang/srt/model_executor/model_runner.py", 845, "raise RuntimeError(msg)"),
    ("sglang", "0.5.9", "sglang/srt/model_executor/model_runner.py", 844,
     "if envs.SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK.get():"),
    ("sglang", "0.5.23", "sglang/srt/distributed/bootstrap.py", 450, "raise RuntimeError(msg)"),
    ("sglang", "0.5.5", "sglang/srt/model_executor/model_runner.py", 1995,
     "self.graph_runner = graph_runners[self.device](self)"),
    ("sglang", "0.5.5", "sglang/srt/model_executor/cuda_graph_runner.py", 381, "self.capture()"),
    ("sglang", "0.5.5", "sglang/srt/model_executor/cuda_graph_runner.py", 384,
     'f"Capture cuda graph failed: {e}\\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}"'),
    ("sglang", "0.5.5", "sglang/srt/speculative/eagle_worker.py", 224,
     "self.cuda_graph_runner = EAGLEDraftCudaGraphRunner(self)"),
    ("sglang", "0.5.9", "sglang/srt/layers/attention/aiter_backend.py", 126,
     "self.v_head_dim = model_runner.token_to_kv_pool.get_value_buffer(0).shape[-1]"),
    ("sglang", "0.5.9", "sglang/srt/layers/attention/wave_backend.py", 153,
     "self.v_head_dim = model_runner.token_to_kv_pool.get_value_buffer(0).shape[-1]"),
    ("sglang", "0.5.9", "sglang/srt/layers/attention/triton_backend.py", 100,
     "self.v_head_dim = model_runner.token_to_kv_pool.get_v_head_dim()"),
    ("sglang", "0.5.9", "sglang/srt/mem_cache/memory_pool.py", 1288, "raise ValueError("),
    ("sglang", "0.5.9", "sglang/srt/mem_cache/memory_pool.py", 1289,
     'f"{layer_id=} not in full attention layers: {self.full_attention_layer_id_mapping.keys()}"'),
    ("sglang", "0.5.3", "sglang/srt/mem_cache/memory_pool.py", 704, "raise ValueError("),
    ("sglang", "0.5.23", "sglang/srt/mem_cache/memory_pool.py", 4462, "raise ValueError("),
    ("sglang", "0.5.10", "sglang/srt/layers/attention/aiter_backend.py", 157,
     "self.v_head_dim = model_runner.token_to_kv_pool.get_v_head_dim()"),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
