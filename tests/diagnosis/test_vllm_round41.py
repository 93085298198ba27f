"""What held-out round 41 of the vLLM corpus (w4101-w4112, measured once at 47dad1d with its logs 04b7f84)
showed: crashed 12/12, kind 8/12, phase 7/8. Its misses were read from vLLM's, vllm-ascend's and torch_npu's
source (docs/diagnosis.md, "Held-out round 41"):

- w4103: a merged layer's weight_loader narrowing the checkpoint tensor to its shard, torch's "start (0) +
  length (6144) exceeds dimension size (3072).": weights_unreadable (loading.LOADER_NARROW).
- w4104: vllm-ascend's model runner calling vLLM's CudagraphDispatcher.dispatch with a keyword the installed
  vLLM's does not take: dependency_mismatch (ascend.PLUGIN_CALL_MISMATCH).
- w4106: torch_npu's "HCCL function error: hcclCommInitRootInfoConfig(...)" at a pipeline stage's first
  send: nccl (ascend.HCCL_CALL_FAILED).
- w4111: block FP8's "the last dimension of `x` 3420 must be divisible by `group_size` 128":
  kernel_config_unsupported (adapters.FP8_GROUP_WIDTH); its phase is a guess the log does not show
  (``phase_in_log`` false, not measured).
- w4108: its kind was read; its labelled phase (serving) is disputed: the kept lines are a worker's frames
  inside the model's forward, which the profile run's dummy prefill runs as a served batch does.

Each rule is tested on the corpus log, on a text written from the source in another form, and on a near
miss that must not read the same way; every crashed log of the round is pinned to its signature.
"""

from __future__ import annotations

import pytest
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_in_library_wheel, library_text_test, read_log, reads,
                      vllm_signature, vllm_traceback, wheel_text_test)

_MANIFEST = VLLM_MANIFEST

# the signature that reads each crashed log (None: an unknown death with no text of a kind)
_SIGNATURES = {
    "w4103": "vllm_loader_narrow",              # weight_loader's narrow past the checkpoint tensor's end
    "w4104": "vllm_ascend_call_mismatch",       # vllm-ascend -> CudagraphDispatcher.dispatch(num_tokens=...)
    "w4105": None,
    "w4106": "vllm_hccl_call_failed",           # hcclCommInitRootInfoConfig at the first PP send
    "w4107": None,
    "w4108": "vllm_kernel_config_unsupported",  # CANN's tiling refusing the cos shape
    "w4109": "vllm_kv_max_len",
    "w4110": None,
    "w4111": "vllm_fp8_group_width",            # per_token_group_quant_fp8's divisibility assert
    "w4112": "vllm_engine_dead",
}


def test_the_round_is_folded_with_its_twelve_logs():
    round41 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 41)
    assert round41 == [f"w41{n:02d}" for n in range(1, 13)]
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round41)


def test_each_log_reads_as_labelled():
    """Crashed and kind for all twelve, the phase where the log shows it and no second look disputes it."""
    for log_id in (f"w41{n:02d}" for n in range(1, 13)):
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        assert got[0] == log["crashed"], log_id
        assert got[1] == log["kind"], log_id
        if log["phase_in_log"] and not log.get("phase_disputed"):
            assert got[2] == log["phase"], log_id


def test_each_crashed_log_is_read_by_its_signature():
    for log_id, signature in _SIGNATURES.items():
        assert vllm_signature(read_log(f"{log_id}.log")) == signature, log_id


# --- w4103: a weight_loader's narrow past the checkpoint tensor's end -----------------------------------

_LOAD = (("vllm/model_executor/model_loader/default_loader.py", 269, "load_weights",
          "loaded_weights = model.load_weights("),
         ("vllm/model_executor/models/llama.py", 455, "load_weights", "weight_loader(param, loaded_weight, shard_id)"))


def test_a_narrow_in_a_weight_loader_is_the_checkpoint():
    text = vllm_traceback(*_LOAD, ("vllm/model_executor/layers/linear.py", 720, "weight_loader",
                                   "loaded_weight = loaded_weight.narrow(output_dim, start_idx,"),
                          exc="RuntimeError: start (4096) + length (4096) exceeds dimension size (4096).")
    assert reads(text)[1:] == ("weights_unreadable", "load_weights")
    assert vllm_signature(text) == "vllm_loader_narrow"


def test_a_narrow_outside_a_weight_loader_is_not_the_checkpoint():
    text = vllm_traceback(("vllm/v1/worker/gpu_model_runner.py", 2200, "execute_model", "x = self.model(...)"),
                          ("vllm/model_executor/models/llama.py", 300, "forward",
                           "q = qkv.narrow(-1, 0, self.q_size)"),
                          exc="RuntimeError: start (0) + length (4096) exceeds dimension size (2048).")
    assert vllm_signature(text) != "vllm_loader_narrow"
    assert reads(text)[1] != "weights_unreadable"


# --- w4104: vllm-ascend calling vLLM's API with arguments the installed vLLM lacks ----------------------

_PROFILE = (("vllm_ascend/worker/worker_v1.py", 235, "determine_available_memory", "self.model_runner.profile_run()"),
            ("vllm_ascend/worker/model_runner_v1.py", 3062, "profile_run", "hidden_states = self._dummy_run("))


def test_the_plugin_calling_vllm_with_another_releases_arguments_is_a_mismatch():
    text = vllm_traceback(*_PROFILE, ("vllm_ascend/worker/model_runner_v1.py", 2971, "_dummy_run",
                                      "self.cudagraph_dispatcher.dispatch(batch_descriptor, use_cascade_attn)"),
                          exc="TypeError: CudagraphDispatcher.dispatch() missing 1 required positional argument: "
                              "'has_lora'")
    assert reads(text)[1] == "dependency_mismatch"
    assert vllm_signature(text) == "vllm_ascend_call_mismatch"


def test_the_same_type_error_raised_in_vllms_own_frame_is_not_the_plugin():
    text = vllm_traceback(("vllm/v1/worker/gpu_model_runner.py", 3000, "_dummy_run",
                           "self.cudagraph_dispatcher.dispatch(num_tokens=n, uniform_decode=u, has_lora=h)"),
                          exc="TypeError: CudagraphDispatcher.dispatch() got an unexpected keyword argument "
                              "'num_tokens'")
    assert vllm_signature(text) != "vllm_ascend_call_mismatch"
    inside = vllm_traceback(*_PROFILE, ("vllm/v1/cudagraph_dispatcher.py", 150, "dispatch",
                                        "key = BatchDescriptor(num_tokens=num_tokens, bad=1)"),
                            exc="TypeError: BatchDescriptor.__new__() got an unexpected keyword argument 'bad'")
    assert vllm_signature(inside) != "vllm_ascend_call_mismatch"


# --- w4106: torch_npu's HCCL call failing -------------------------------------------------------------

def test_an_hccl_call_failing_is_nccls_ascend_twin():
    text = vllm_traceback(("vllm/distributed/parallel_state.py", 500, "all_reduce",
                           "torch.distributed.all_reduce(input_, group=self.device_group)"),
                          exc="RuntimeError: HcclAllreduce:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:300 "
                              "HCCL function error: HcclAllReduce(inputDataPtr, outputDataPtr, numel, hcclType, "
                              "hcclReduceOp, comm, stream.stream(false)), error code is 7")
    assert reads(text)[1] == "nccl"
    assert vllm_signature(text) == "vllm_hccl_call_failed"


def test_an_npu_op_failing_is_not_hccl():
    text = vllm_traceback(("vllm_ascend/ops/rotary_embedding.py", 80, "forward", "torch_npu._npu_rotary_embedding("),
                          exc="RuntimeError: _npu_rotary_embedding:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:"
                              "40 NPU function error: call aclnnRotaryEmbedding failed, error code is 561002")
    assert vllm_signature(text) != "vllm_hccl_call_failed"
    assert reads(text)[1] != "nccl"


# --- w4111: block FP8 refusing a layer's width --------------------------------------------------------

def test_block_fp8_refusing_a_width_is_the_kernel_configuration():
    text = vllm_traceback(("vllm/model_executor/layers/quantization/utils/fp8_utils.py", 667,
                           "per_token_group_quant_fp8", "assert x.shape[-1] % group_size == 0, ("),
                          exc="AssertionError: the last dimension of `x` 1000 must be divisible by `group_size` 128")
    assert reads(text)[1] == "kernel_config_unsupported"
    assert vllm_signature(text) == "vllm_fp8_group_width"


def test_another_divisibility_assert_is_not_block_fp8():
    text = vllm_traceback(("vllm/model_executor/layers/quantization/utils/fp8_utils.py", 668,
                           "per_token_group_quant_fp8", 'assert x.stride(-1) == 1, "`x` groups must be contiguous"'),
                          exc="AssertionError: `x` groups must be contiguous")
    assert vllm_signature(text) != "vllm_fp8_group_width"


# --- w4108: the phase a second look disputes ----------------------------------------------------------

def test_w4108s_phase_is_disputed_and_its_kind_read():
    log = _MANIFEST["w4108"]
    assert log["phase_disputed"][0] == log["phase"] == "serving" and log["second_look"]
    assert reads(read_log("w4108.log"))[1] == "kernel_config_unsupported"


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.9.2", "vllm/model_executor/layers/quantization/utils/fp8_utils.py",
     'f"the last dimension of `x` {x.shape[-1]} must be divisible "'),
    ("0.10.2", "vllm/model_executor/layers/quantization/utils/fp8_utils.py", 'f"by `group_size` {group_size}"'),
    ("0.9.2", "vllm/model_executor/layers/linear.py", "loaded_weight = loaded_weight.narrow(output_dim, start_idx,"),
    ("0.10.2", "vllm/model_executor/layers/linear.py", "loaded_weight = loaded_weight.narrow(output_dim, start_idx,"),
    ("0.11.2", "vllm/v1/cudagraph_dispatcher.py", "self, batch_descriptor: BatchDescriptor, use_cascade_attn: bool"),
    ("0.13.0", "vllm/v1/cudagraph_dispatcher.py", "num_tokens: int,"),
])

test_each_rules_library_text_is_in_its_wheel = library_text_test([
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/distributed/HCCLUtils.hpp", '" HCCL function error: "'),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/distributed/HCCLUtils.hpp",
     "HCCL_CHECK_ERROR(hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)));"),
    ("torch_npu", "2.5.1", "torch_npu/utils/_error_code.py", 'HCCL = (200, "call hccl api failed")'),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/worker/model_runner_v1.py",
     "self.aclgraph_dispatcher.dispatch(batch_descriptor)"),
])


def test_the_cited_lines_hold_the_texts():
    for release, path, line, text in (
            ("0.9.2", "vllm/model_executor/layers/quantization/utils/fp8_utils.py", 380,
             "assert (x.shape[-1] % group_size == 0)"),
            ("0.9.2", "vllm/model_executor/layers/linear.py", 706, "loaded_weight.narrow(output_dim, start_idx,"),
            ("0.10.2", "vllm/model_executor/layers/linear.py", 720, "loaded_weight.narrow(output_dim, start_idx,"),
            ("0.11.2", "vllm/v1/cudagraph_dispatcher.py", 118, "def dispatch("),
            ("0.13.0", "vllm/v1/cudagraph_dispatcher.py", 143, "def dispatch(")):
        source = VLLM_WHEELS / release / path
        if not source.exists():
            pytest.skip(f"{source} is not unpacked")
        assert text in source.read_text().splitlines()[line - 1], (release, path, line)
    assert_in_library_wheel("vllm_ascend", "0.11.0rc0", "vllm_ascend/worker/model_runner_v1.py",
                            "self.aclgraph_dispatcher.dispatch(batch_descriptor)")
