"""vLLM held-out round 109 (4 logs, w10901-w10904), folded into work after its misses were read.

Measured once on main at ed46bd65 (staged as f6ee41a5): crashed 4/4, kind 2/4, phase 3/4. Three logs missed, read
against the source of the vllm-ascend and vLLM releases their logs and issues name:

- w10901 (kind, fixed): vLLM 0.10.0 with vllm-ascend, torchair graph mode enabled in --additional-config for
  Qwen3-235B-A22B; as vLLM builds its config, the platform's check_and_update_config calls check_ascend_config
  (vllm_ascend 0.10.0rc1 platform.py:141), which refuses it: "NotImplementedError: Torchair graph mode only works with
  following model types:[...]" (ascend_config.py:167; :155 (0.9.2rc1), :224 (0.11.0rc0)); its neighbour "ACL Graph
  does not support deepseek." (:176) refuses the other graph mode for DeepSeek. A graph mode chosen for a model type
  that cannot take it: bad_argument (vllm_crashes/ascend.py ``ASCEND_GRAPH_MODE_MODEL``).
- w10903 (phase, fixed): a CI job's excerpt; its first line is the V1 runner's "Encoder cache will be initialized with
  a budget of 16384 tokens, and profiled with 1 image items", which the runners log only inside profile_run
  (v1/worker/gpu_model_runner.py:1827, :1864 (0.9.0); :6168, :6201 (0.23.0); gpu/model_runner.py:1070, :1082 ->
  gpu/mm/encoder_runner.py:132 (0.34.0); vllm_ascend 0.9.0rc1 worker/model_runner_v1.py:1361, in
  _profile_multimodal): the profile run that sizes the KV cache, memory_pool (diagnosis/vllm_log.py's markers). The
  worker's death says no cause: unknown, as labelled.
- w10904 (kind, fixed): vllm-ascend (v0.8.5rc1 per the issue) on V0 with Ray; the profile run's forward reaches the
  plug-in's decoder layer, which builds vLLM's own DeepseekV2Attention when use_mla is off and calls it with kv_cache
  and attn_metadata (vllm_ascend 0.9.0rc1 models/deepseek_v2.py:496-499, :561-566), keywords vLLM's forward does not
  take (0.8.5.post1 model_executor/models/deepseek_v2.py:289): "TypeError: DeepseekV2Attention.forward() got an
  unexpected keyword argument 'kv_cache'". torch's nn.Module.__call__ hands the arguments on (torch 2.8.0
  nn/modules/module.py:1769, :1777, :1784), so the error's last frames are torch's, and the caller above them is the
  plug-in's: round 41's rule, which wanted the plug-in's frame last, now looks through those frames:
  dependency_mismatch (vllm_crashes/ascend.py ``PLUGIN_CALL_MISMATCH``).

The positive tests below failed at ed46bd65 (before the fixes). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w109{n:02d}" for n in range(1, 5)]
_TORCH = [("torch/nn/modules/module.py", 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
          ("torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)")]
_LAYER = ("vllm_ascend/models/deepseek_v2.py", 496, "forward", "hidden_states = self.self_attn(")
_KWARG = "TypeError: DeepseekV2Attention.forward() got an unexpected keyword argument 'kv_cache'"


def test_the_round_is_folded_with_its_four_logs():
    assert folded_round(VLLM_MANIFEST, 109) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w10901: vllm-ascend's config check refusing a graph mode for the model's type ----------------------------------

def test_torchair_graph_mode_refused_for_the_model_type_is_a_bad_argument():
    assert said(read_log("w10901.log")) == (True, "bad_argument", "vllm_ascend_graph_mode_model")
    assert reads(read_log("w10901.log")) == (True, "bad_argument", "launch")


def test_acl_graphs_refusing_deepseek_reads_the_same():
    text = read_log("w10901.log").replace(
        "Torchair graph mode only works with following model types:['deepseek', 'pangu'].",
        "ACL Graph does not support deepseek. Please try torchair graph mode to serve deepseek models on vllm-ascend.")
    assert said(text)[2] == "vllm_ascend_graph_mode_model"


def test_another_not_implemented_error_in_the_check_is_not_this_rule():
    text = read_log("w10901.log").replace(
        "Torchair graph mode only works with following model types:['deepseek', 'pangu'].",
        "Pipeline parallelism is not supported on this platform.")
    assert "Torchair graph mode only works" not in text
    assert said(text)[2] != "vllm_ascend_graph_mode_model"


# --- w10903: the encoder cache's budget, logged in the profile run ---------------------------------------------------

def test_the_encoder_cache_budget_line_is_the_profile_run():
    assert reads(read_log("w10903.log")) == (True, "unknown", "memory_pool")


def test_without_the_budget_line_nothing_shows_the_profile_run():
    text = "".join(line for line in read_log("w10903.log").splitlines(keepends=True)
                   if "Encoder cache will be initialized" not in line)
    assert reads(text) == (True, "unknown", "launch")


# --- w10904: the plug-in's call through torch's module call -----------------------------------------------------------

def test_the_plugins_call_through_torchs_module_call_is_a_mismatch():
    assert said(read_log("w10904.log")) == (True, "dependency_mismatch", "vllm_ascend_call_mismatch")
    assert vllm_signature(vllm_traceback(_LAYER, *_TORCH, exc=_KWARG)) == "vllm_ascend_call_mismatch"


def test_vllms_own_layer_above_torchs_frames_is_not_the_plugin():
    text = read_log("w10904.log").replace("/vllm-workspace/vllm-ascend/vllm_ascend/models/deepseek_v2.py",
                                          "/vllm-workspace/vllm/vllm/model_executor/models/deepseek_v2.py")
    assert said(text)[2] != "vllm_ascend_call_mismatch"
    own = ("vllm/model_executor/models/deepseek_v2.py", 496, "forward", "hidden_states = self.self_attn(")
    assert vllm_signature(vllm_traceback(_LAYER, own, *_TORCH, exc=_KWARG)) != "vllm_ascend_call_mismatch"


def test_a_frame_of_torch_other_than_the_module_call_is_not_looked_through():
    other = ("torch/nn/functional.py", 2546, "linear", "return torch._C._nn.linear(input, weight, bias)")
    assert vllm_signature(vllm_traceback(_LAYER, *_TORCH, other, exc=_KWARG)) != "vllm_ascend_call_mismatch"


# --- the lines the rules cite ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.8.5.post1", "vllm/model_executor/models/deepseek_v2.py", "            attn_cls = DeepseekV2Attention"),
    ("0.8.5.post1", "vllm/model_executor/models/deepseek_v2.py",
     "        positions: torch.Tensor,\n        hidden_states: torch.Tensor,\n    ) -> torch.Tensor:\n"
     "        if self.q_lora_rank is not None:"),
    ("0.9.0", "vllm/v1/worker/gpu_model_runner.py", '"Encoder cache will be initialized with a budget of %s tokens,"'),
    ("0.23.0", "vllm/v1/worker/gpu_model_runner.py", '"Encoder cache will be initialized with a "'),
    ("0.34.0", "vllm/v1/worker/gpu/mm/encoder_runner.py", '"Encoder cache will be initialized with a budget of'),
    ("0.34.0", "vllm/v1/worker/gpu/model_runner.py", "self.model_state.encoder_runner.profile_encoder_cache("),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize(("package", "release", "path", "text"), [
    ("vllm-ascend", "0.10.0rc1", "vllm_ascend/ascend_config.py",
     '"Torchair graph mode only works with following model types:"'),
    ("vllm-ascend", "0.10.0rc1", "vllm_ascend/ascend_config.py", '"ACL Graph does not support deepseek. Please "'),
    ("vllm-ascend", "0.10.0rc1", "vllm_ascend/platform.py", "        check_ascend_config(vllm_config, enforce_eager)"),
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/ascend_config.py",
     '"Torchair graph mode only works with following model types:"'),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/ascend_config.py",
     '"Torchair graph mode only works with following model types:"'),
    ("vllm-ascend", "0.9.0rc1", "vllm_ascend/models/deepseek_v2.py",
     "            attn_cls = DeepseekV2Attention"),
    ("vllm-ascend", "0.9.0rc1", "vllm_ascend/models/deepseek_v2.py",
     "        hidden_states = self.self_attn(\n            positions=positions,\n"
     "            hidden_states=hidden_states,\n            kv_cache=kv_cache,"),
    ("vllm-ascend", "0.9.0rc1", "vllm_ascend/worker/model_runner_v1.py",
     '"Encoder cache will be initialized with a budget of %s tokens,"'),
    ("torch", "2.8.0", "torch/nn/modules/module.py", "            return forward_call(*args, **kwargs)"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_the_libraries_own(package, release, path, text):
    assert_in_library_wheel(package, release, path, text)
