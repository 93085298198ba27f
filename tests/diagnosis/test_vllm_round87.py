"""What held-out round 87 of the vLLM corpus (w8701-w8725, measured once on main at 3894f55 with its logs ab5645c)
showed: crashed 25/25, kind 20/25, phase 19/24. Its eight misses were read from the source (docs/diagnosis.md,
"Held-out round 87"): four fixed, one phase disputed, three left (known_misses.json):

- w8704 (kind): a matmul that cannot multiply inside a drafter's own forward (medusa.py:28 (0.6.2)) is the draft not
  fitting the target, draft_incompatible (vllm_crashes/speculative.py DRAFT_FORWARD_SHAPE); the reporter's bold
  ("**RuntimeError: ...**") after the logger's stamp is peeled as a whole line's is (diagnosis/logtext.py).
- w8705 (kind): the default loader's shape assert (weight_utils.py:614 (0.9.1)) under a drafter's load_weights
  (eagle.py:215 (0.9.1)) is a draft for another target or method, draft_incompatible (DRAFT_WEIGHT_SHAPE).
- w8725 (kind, phase): CANN's "Not allow to synchronize captured-stream" (hicann/runtime api_error.cc:1038) is the
  NPU's form of CUDA's "operation not permitted when stream is capturing", in any server's log
  (crashes/kinds/graphs.py CAPTURE_FAILED): cuda_graph_capture at graph_capture.
- w8715 (phase): the oldest V0 engine's _init_cache and its workers' profile_num_available_blocks (0.2.1.post1
  engine/llm_engine.py:190, worker/worker.py:73) size the KV cache: memory_pool (diagnosis/vllm_frames.py).
- w8707 (phase): disputed to serving: "Graph capturing finished in 35 secs." (worker/model_runner.py:547 (0.2.7))
  and the offline LLM's "Processed prompts" bar (entrypoints/llm.py:181 (0.2.7)) come before the device asserts.
- w8701 (phase), w8708 (kind), w8722 (kind, phase): left (docs/diagnosis.md says why).

Each positive test below failed at ab5645c (before the fixes). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said, vllm_traceback)

_ROUND = [f"w87{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 87) == _ROUND


def test_one_phase_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w8707"]


def test_each_log_reads_as_labelled_but_its_known_misses():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {
        "w8701": ["phase"], "w8708": ["kind"], "w8722": ["kind", "phase"]}


# --- w8704: a drafter's forward that cannot multiply the target's hidden states ----------------------------------

def test_the_medusa_forward_shape_error_is_draft_incompatible():
    assert said(read_log("w8704.log"))[:2] == (True, "draft_incompatible")


_MEDUSA_FORWARD = ("vllm/model_executor/models/medusa.py", 28, "forward", "x = x + self.act(layer(x))")
_TORCH_LINEAR = ("torch/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)")


@pytest.mark.parametrize("exc", [
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x8192 and 4096x4096)",
    "**RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x8192 and 4096x4096)**",
], ids=["plain", "bold"])
def test_the_draft_forward_shape_error_in_another_form(exc):
    """0.6.2's frame (medusa.py:28), torch's linear under it, another size; plain and in the reporter's bold."""
    text = vllm_traceback(_MEDUSA_FORWARD, _TORCH_LINEAR, exc=exc)
    assert said(text, family="vllm")[:3] == (True, "draft_incompatible", "vllm_draft_forward_shape")


def test_the_medusa_forward_is_vllms_own():
    assert_in_wheel("0.6.2", "vllm/model_executor/models/medusa.py", "x = x + self.act(layer(x))")


@pytest.mark.parametrize("frames", [
    (("vllm/model_executor/models/llama.py", 300, "forward", "x = self.mlp(x)"), _TORCH_LINEAR),
    (_MEDUSA_FORWARD, ("vllm/model_executor/layers/linear.py", 200, "forward", "output = self.quant(x)")),
], ids=["target-forward", "vllm-layer-after-draft"])
def test_near_misses_are_no_draft_forward(frames):
    text = vllm_traceback(*frames, exc="RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x5120 and 4096x4096)")
    assert said(text, family="vllm")[2] != "vllm_draft_forward_shape"


# --- w8705: the default loader's shape assert under a drafter's load_weights ---------------------------------------

def test_the_eagle_load_shape_refusal_is_draft_incompatible():
    assert said(read_log("w8705.log"))[:2] == (True, "draft_incompatible")


_EAGLE_LOAD = ("vllm/model_executor/models/eagle.py", 215, "load_weights", "weight_loader(self.fc.weight, loaded_weight)")
_DEFAULT_LOADER = ("vllm/model_executor/model_loader/weight_utils.py", 614, "default_weight_loader",
                   "assert param.size() == loaded_weight.size(), (")
_REFUSED = "AssertionError: Attempted to load weight (torch.Size([5120, 15360])) into parameter (torch.Size([5120, 10240]))"


def test_the_draft_load_shape_refusal_in_another_form():
    """0.9.1's frames (eagle.py:215, weight_utils.py:614), another size."""
    text = vllm_traceback(_EAGLE_LOAD, _DEFAULT_LOADER, exc=_REFUSED)
    assert said(text, family="vllm")[:3] == (True, "draft_incompatible", "vllm_draft_weight_shape")


@pytest.mark.parametrize("path, text", [
    ("vllm/model_executor/models/eagle.py", "weight_loader(self.fc.weight, loaded_weight)"),
    ("vllm/model_executor/model_loader/weight_utils.py", 'f"Attempted to load weight ({loaded_weight.size()}) "'),
], ids=["eagle", "weight_utils"])
def test_the_draft_loader_lines_are_vllms_own(path, text):
    assert_in_wheel("0.9.1", path, text)


def test_near_miss_the_targets_own_shape_refusal_stays_weights_unreadable():
    target = ("vllm/model_executor/models/llama.py", 480, "load_weights", "weight_loader(param, loaded_weight)")
    text = vllm_traceback(target, _DEFAULT_LOADER, exc=_REFUSED)
    assert said(text, family="vllm")[:2] == (True, "weights_unreadable")


# --- w8725: CANN's refusal to synchronize a captured stream -------------------------------------------------------

def test_the_captured_stream_refusal_is_graph_capture():
    found = said(read_log("w8725.log"))
    assert found[:2] == (True, "cuda_graph_capture")


@pytest.mark.parametrize("family", [None, "sglang"], ids=["guessed", "sglang"])
def test_the_captured_stream_refusal_in_another_form(family):
    """The runtime's line (hicann/runtime api_error.cc:1038) under torch_npu's 107027, another stream, where no
    vLLM line names the family (vLLM's own table read it already: vllm_crashes/ascend.py NPU_CAPTURE_SYNC)."""
    text = ("RuntimeError: NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), "
            "error code is 107027\n"
            "EE9999: Inner Error!\n"
            "EE9999[PID: 4242] 2026-01-02-03:04:05.000.001 (EE9999):  Not allow to synchronize captured-stream, "
            "stream_id=17.[FUNC:StreamSynchronize][FILE:api_error.cc][LINE:1038]\n")
    assert said(text, family=family)[:2] == (True, "cuda_graph_capture")


@pytest.mark.parametrize("text", [
    "RuntimeError: NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), "
    "error code is 507011\n",
    "EE9999: Not allow to synchronize stream, stream_id=17.\n",
], ids=["another-code", "no-capture"])
def test_near_misses_are_no_captured_stream(text):
    assert said(text)[1] != "cuda_graph_capture"


# --- w8715: the oldest V0 engine's cache profile --------------------------------------------------------------------

def test_the_old_engines_cache_profile_is_memory_pool():
    assert reads(read_log("w8715.log"))[2] == "memory_pool"


def test_the_old_engines_cache_profile_in_another_form():
    """0.2.1.post1's frames (llm_engine.py:190 _init_cache, worker.py:73 profile_num_available_blocks), another fault."""
    text = vllm_traceback(
        ("vllm/engine/llm_engine.py", 198, "_init_cache", 'num_blocks = self._run_workers("profile_num_available_blocks",'),
        ("vllm/worker/worker.py", 99, "profile_num_available_blocks", "self.model("),
        exc="RuntimeError: CUDA error: an illegal memory access was encountered", head="")
    assert reads(text, family="vllm")[2] == "memory_pool"


@pytest.mark.parametrize("path, text", [
    ("vllm/engine/llm_engine.py", "def _init_cache(self) -> None:"),
    ("vllm/worker/worker.py", "def profile_num_available_blocks("),
], ids=["engine", "worker"])
def test_the_cache_profile_frames_are_vllms_own(path, text):
    assert_in_wheel("0.2.1.post1", path, text)


def test_near_miss_a_step_after_the_cache_stays_serving():
    text = vllm_traceback(("vllm/engine/llm_engine.py", 600, "step", "output = self._run_workers("),
                          ("vllm/worker/worker.py", 180, "execute_model", "output = self.model("),
                          exc="RuntimeError: CUDA error: an illegal memory access was encountered", head="")
    assert reads(text, family="vllm")[2] == "serving"


# --- w8707: disputed (serving); the lines the second look cites are vLLM's -----------------------------------------

@pytest.mark.parametrize("path, text", [
    ("vllm/worker/model_runner.py", 'logger.info(f"Graph capturing finished in {elapsed_time:.0f} secs.")'),
    ("vllm/entrypoints/llm.py", 'pbar = tqdm(total=num_requests, desc="Processed prompts")'),
], ids=["capture-finished", "progress-bar"])
def test_the_second_looks_lines_are_vllms_own(path, text):
    assert_in_wheel("0.2.7", path, text)
