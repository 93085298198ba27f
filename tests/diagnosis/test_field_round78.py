"""Held-out round 78 (issue 24): a weight loader's narrow refused; the custom all-reduce's CUDA check.

Round 78 (h78001-h78007; excerpts of SGLang and FastChat threads) was measured once on main at 6357a08 (with the
round's logs, 9b6e3fd): crashed 7/7, kind 5/7, phase 7/7. docs/diagnosis.md, "Held-out round 78", tells the round.
Both misses were ddlab's:

- h78004, "RuntimeError: start (8) + length (8) exceeds dimension size (8)." raised by FusedMoE._load_w2's
  "loaded_weight = loaded_weight.narrow(" (0.5.8 layers/moe/fused_moe_triton/layer.py:501): torch's narrow
  refusing this rank's shard of a checkpoint tensor smaller than the layer's shards, read as weights_unreadable
  (loader_narrow, crashes/kinds/weights.py) as vLLM's loaders read the same text (vllm_loader_narrow).
- h78006, "Failed: Cuda error .../csrc/custom_all_reduce.cuh:307 'peer access is not supported between these two
  devices'": the custom all-reduce's CUDACHECK, which prints that and exits (vLLM v0.4.3
  csrc/custom_all_reduce.cuh:14-21, :307 its cudaIpcOpenMemHandle of a peer's buffer; SGLang 0.1.17 takes vLLM's
  P2P test out, srt/utils.py:456-463), read as nccl (custom_all_reduce_failed, crashes/kinds/runtime.py).
Each positive test fails on 9b6e3fd.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, said

_IDS = folded_round(REAL_MANIFEST, 78)


def test_round78_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h780{n:02d}" for n in range(1, 8)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [("h78004", "loader_narrow"), ("h78006", "custom_all_reduce_failed")],
                         ids=["h78004", "h78006"])
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h78004: torch's narrow refusing a rank's shard inside a weight loader ----------------------------------------

_SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"
_HEAD = "[2026-01-25 01:19:08 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
_LOAD = (f'  File "{_SITE}model_loader/loader.py", line 670, in load_weights_and_postprocess\n'
         "    model.load_weights(weights)\n")
_NARROW = "RuntimeError: start (8) + length (8) exceeds dimension size (8).\n"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_SITE}{path}", line {line}, in {func}\n    {code}\n'


# 0.5.8's fused-MoE loader, its w13 shard (:428) as the w2 one (:501, Python 3.12's carets after the call); 0.4.10.post2's
# RowParallelLinear.weight_loader (linear.py:1254, the call on one line, Python 3.10: no carets) under llama's
# load_weights (models/llama.py:637); another rank's sizes; the user's trimmed '.../' paths
_MOE = _frame("layers/moe/fused_moe_triton/layer.py", 607, "weight_loader", "self._weight_loader_physical(")
_W2 = (_frame("layers/moe/fused_moe_triton/layer.py", 501, "_load_w2", "loaded_weight = loaded_weight.narrow(")
       + "                    ^^^^^^^^^^^^^^^^^^^^^\n")
_W13 = _frame("layers/moe/fused_moe_triton/layer.py", 428, "_load_w13", "loaded_weight = loaded_weight.narrow(")
_ROW = (_frame("models/llama.py", 637, "load_weights", "weight_loader(param, loaded_weight)")
        + _frame("layers/linear.py", 1254, "weight_loader",
                 "loaded_weight = loaded_weight.narrow(input_dim, start_idx, shard_size)"))


@pytest.mark.parametrize("text", [
    _HEAD + _LOAD + _MOE + _W2 + _NARROW,
    _HEAD + _LOAD + _MOE + _W13 + _NARROW.replace("(8) + length (8)", "(1536) + length (1536)").replace(
        "size (8)", "size (2048)"),
    _HEAD + _LOAD + _ROW + "RuntimeError: start (5504) + length (5504) exceeds dimension size (8192).\n",
    (_HEAD + _LOAD + _MOE + _W2).replace(_SITE, ".../") + _NARROW,
], ids=["w2", "w13-0.5.8", "row-parallel-0.4.10", "trimmed"])
def test_a_loaders_narrow_refused_is_weights_unreadable(text):
    assert said(text) == (True, "weights_unreadable", "loader_narrow")
    assert reads(text)[2] == "load_weights"


# near misses: the same text from a narrow outside the loaders (a model's forward while serving), a narrow of the
# layer's own parameter (param_data, not the checkpoint's tensor: 0.5.8 layers/linear.py:633), the error with no
# frames, another error raised by the loader's narrow, the text in prose
_FORWARD = _frame("models/llama.py", 120, "forward", "x = hidden_states.narrow(-1, start, length)")
_PARAM = _frame("layers/linear.py", 633, "weight_loader", "param_data = param_data.narrow(output_dim, shard_offset, "
                                                          "shard_size)")


@pytest.mark.parametrize("text", [
    _HEAD + _frame("managers/tp_worker.py", 200, "forward_batch_generation", "self.model_runner.forward(") + _FORWARD
    + _NARROW,
    _HEAD + _LOAD + _PARAM + _NARROW,
    _NARROW,
    _HEAD + _LOAD + _MOE + _W2 + "RuntimeError: narrow(): length must be non-negative.\n",
    "why does start (8) + length (8) exceed dimension size (8) in the loader?\n",
], ids=["forward", "param-narrow", "no-frames", "other-narrow-error", "prose"])
def test_other_narrow_refusals_are_not_the_loaders(text):
    assert said(text)[2] != "loader_narrow"


# --- h78006: the custom all-reduce's CUDACHECK ---------------------------------------------------------------------

_PEER = "'peer access is not supported between these two devices'"


# the check's line from other builds and calls (v0.4.2's :310, a relative __FILE__, a path cut by the paste as vd07's
# is, the IPC handle of a graph buffer at :330 failing with another error), once per rank or alone, after the
# tokenizer's warning as h78006
@pytest.mark.parametrize("text", [
    f"Failed: Cuda error /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:310 {_PEER}\n",
    f"Failed: Cuda error csrc/custom_all_reduce.cuh:307 {_PEER}\nFailed: Cuda error csrc/custom_all_reduce.cuh:307 "
    f"{_PEER}\n",
    "Failed: Cuda error /workspace/csrc/custom_all_red",
    "Failed: Cuda error /tmp/build/csrc/custom_all_reduce.cuh:330 'invalid argument'\n",
    "Special tokens have been added in the vocabulary, make sure the associated word embeddings are fine-tuned or "
    f"trained.\n\nFailed: Cuda error /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:307 {_PEER}\n",
], ids=["v0.4.2", "relative-path", "cut-path", "other-call", "after-tokenizer"])
def test_the_custom_all_reduces_cuda_check_is_nccl(text):
    assert said(text) == (True, "nccl", "custom_all_reduce_failed")
    assert reads(text)[2] == "launch"


def test_its_advice_names_the_option_and_p2p():
    from ddlab.diagnosis.diagnosis import diagnose
    advice = diagnose(f"Failed: Cuda error csrc/custom_all_reduce.cuh:307 {_PEER}\n").suggestion
    assert "--disable-custom-all-reduce" in advice and "NCCL_P2P_DISABLE=1" in advice


# near misses: the same CUDACHECK format from another file (NCCL's examples print it so), vLLM's warning that it
# turned the custom all-reduce off for want of P2P (v0.4.3 custom_all_reduce.py:166-170), the file named in prose
@pytest.mark.parametrize("text", [
    f"Failed: Cuda error test/allreduce.cu:42 {_PEER}\n",
    "WARNING 06-16 10:00:00 custom_all_reduce.py:166] Custom allreduce is disabled because your platform lacks GPU "
    "P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.\n",
    "has anyone seen csrc/custom_all_reduce.cuh:307 fail with peer access?\n",
], ids=["other-file", "vllm-warning", "prose"])
def test_other_cuda_checks_are_not_the_custom_all_reduce(text):
    assert said(text)[2] != "custom_all_reduce_failed"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.8", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 501, "loaded_weight = loaded_weight.narrow("),
    ("sglang", "0.5.8", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 428, "loaded_weight = loaded_weight.narrow("),
    ("sglang", "0.5.8", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 435, "def _load_w2("),
    ("sglang", "0.5.8", "sglang/srt/layers/linear.py", 633,
     "param_data = param_data.narrow(output_dim, shard_offset, shard_size)"),
    ("sglang", "0.4.10.post2", "sglang/srt/layers/linear.py", 1254,
     "loaded_weight = loaded_weight.narrow(input_dim, start_idx, shard_size)"),
    ("sglang", "0.4.10.post2", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 340,
     'f"Shard size {shard_size} at rank {tp_rank} exceeds loaded_weight dimension {loaded_weight.shape[shard_dim]}"'),
    ("sglang", "0.4.10.post2", "sglang/srt/models/llama.py", 637, "weight_loader(param, loaded_weight)"),
    ("sglang", "0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 948,
     "loaded_shard_size = loaded_weight.shape[shard_dim] // self.moe_tp_size"),
    ("sglang", "0.1.17", "sglang/srt/utils.py", 456, "def monkey_patch_vllm_p2p_access_check():"),
    ("sglang", "0.1.17", "sglang/srt/utils.py", 463, 'setattr(tgt, "gpu_p2p_access_check", lambda *arg, **kwargs: True)'),
    ("sglang", "0.1.17", "sglang/srt/managers/controller/model_runner.py", 243, "monkey_patch_vllm_p2p_access_check()"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
