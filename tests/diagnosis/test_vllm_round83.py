"""What held-out round 83 of the vLLM corpus (w8301-w8318, measured once on main at efb9a8f with its logs 03ce1e1)
showed: crashed 16/18, kind 12/18, phase 13/15. Its six misses were read from the source (docs/diagnosis.md,
"Held-out round 83"): four fixed, none disputed, two left (known_misses.json):

- w8310 (kind): the CPU platform's "CPU backend only supports V1." (platforms/cpu.py:102 (0.10.1.1)) is the launch's
  V0 refused by the CPU backend, bad_argument (vllm_crashes/loading.py CPU_V1_ONLY).
- w8313 (kind): the LoRA loader's "While loading DIR, expected target modules in [...] but received [...]"
  (lora/models.py:226, :278 (0.10.1.1)) is an adapter whose modules vLLM cannot place, weights_unreadable
  (vllm_crashes/adapters.py LORA_TARGETS).
- w8315 (kind): torch_npu's "OPS function error: HcclAllreduce, error code is 6" (NPU_CHECK_ERROR,
  NPUException.h:196 (2.5.1)) is an HCCL collective failing, nccl (vllm_crashes/ascend.py HCCL_CALL_FAILED).
- w8318 (kind): "Unknown attention backend: 'ASCEND'" (attention/backends/registry.py:29 (0.13.0)) is the name an
  older vllm-ascend's backend gives itself looked up in vLLM's enum, dependency_mismatch
  (vllm_crashes/installs.py PLUGIN_BACKEND_NAME).
- w8304 left: IPython's frames ("File PATH:LINE, in FUNC") are not read as frames.
- w8309 left: olmocr's "Got cancellation request for VLLM server" is written on a normal end too.

Each positive test below failed at 03ce1e1 (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel,
                      assert_vllm_logs_read_as_labelled, disputed, folded_round, read_log, reads, said, vllm_traceback)

_ROUND = [f"w83{n:02d}" for n in range(1, 19)]


def test_the_round_is_folded_with_its_eighteen_logs():
    assert folded_round(VLLM_MANIFEST, 83) == _ROUND


def test_none_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled_but_the_two_left():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {"w8304": ["crashed", "kind", "phase"],
                                                         "w8309": ["crashed", "kind", "phase"]}
    assert KNOWN_MISSES["vllm-real"]["w8304"] == ["crashed", "kind", "phase"]


# --- w8310: the CPU backend refuses the V0 engine ---------------------------------------------------------------------

_CPU = ("vllm/platforms/cpu.py", 106, "get_attn_backend_cls", 'raise ValueError("CPU backend only supports V1.")')
_SEL = ("vllm/attention/selector.py", 207, "_cached_get_attn_backend",
        "attention_cls = current_platform.get_attn_backend_cls(")


def test_the_cpu_backends_v0_refusal_is_bad_argument():
    text = read_log("w8310.log")
    assert said(text) == (True, "bad_argument", "vllm_cpu_v1_only")
    assert reads(text) == (True, "bad_argument", "launch")


def test_the_cpu_refusal_in_another_form():
    """0.11.0's frame (:106) in the engine's logged traceback, the bare ValueError."""
    text = vllm_traceback(_SEL, _CPU, exc="ValueError: CPU backend only supports V1.")
    assert said(text, family="vllm")[:2] == (True, "bad_argument")


@pytest.mark.parametrize("release, path, text", [
    ("0.10.1.1", "vllm/platforms/cpu.py", 'raise ValueError("CPU backend only supports V1.")'),
    ("0.11.0", "vllm/platforms/cpu.py", 'raise ValueError("CPU backend only supports V1.")'),
], ids=["0.10.1.1", "0.11.0"])
def test_the_cpu_refusal_is_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize("text", [
    "INFO 09-05 06:01:06 [cpu.py:1] The CPU backend only supports V1 on this build; using V1.\n",
    "ValueError: XPU backend only supports V1.\n",
], ids=["notice", "other-platform"])
def test_near_misses_are_no_cpu_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_cpu_v1_only"


# --- w8313: a LoRA adapter whose modules vLLM cannot place ------------------------------------------------------------

def test_the_adapters_targets_are_weights_unreadable():
    text = read_log("w8313.log")
    assert said(text) == (True, "weights_unreadable", "vllm_lora_targets_unsupported")
    assert reads(text)[2] == "serving"


def test_the_targets_refusal_in_another_form():
    """0.13.0's loader (lora_model.py:169) under the engine core's tag, the list uncut."""
    text = ("(EngineCore_DP0 pid=7) ERROR 10-01 10:00:00 [core.py:1] ValueError: While loading /data/lora/ckpt-50, "
            "expected target modules in ['o_proj', 'qkv_proj'] but received ['visual.merger.mlp.0']. Please verify "
            "that the loaded LoRA module is correct\n")
    assert said(text, family="vllm")[:2] == (True, "weights_unreadable")


def test_the_targets_refusal_is_vllms_own():
    assert_in_wheel("0.10.1.1", "vllm/lora/models.py", 'f" target modules in {expected_lora_modules}"')
    assert_in_wheel("0.13.0", "vllm/lora/lora_model.py", 'f"While loading {lora_dir}, expected"')


@pytest.mark.parametrize("text", [
    "INFO 10-01 10:00:00 [worker_manager.py:1] While loading /data/lora, expected target modules were found\n",
    "ValueError: expected target modules in ['q_proj'] but received nothing\n",
], ids=["notice", "no-path"])
def test_near_misses_are_no_targets_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_lora_targets_unsupported"


# --- w8315: an HCCL all-reduce failing through torch_npu's op queue ---------------------------------------------------

_ALLREDUCE = ("vllm/distributed/device_communicators/base_device_communicator.py", 35, "all_reduce",
              "dist.all_reduce(input_, group=self.device_group)")


def test_the_hccl_op_error_is_nccl():
    text = read_log("w8315.log")
    assert said(text) == (True, "nccl", "vllm_hccl_call_failed")


def test_the_hccl_op_error_in_another_form():
    """Another collective (all-gather) under a worker's tag, error code 7, no CANN line after it."""
    text = vllm_traceback(_ALLREDUCE, exc="RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:"
                                          "281 OPS function error: HcclAllGather, error code is 7",
                          head="(VllmWorker rank=1 pid=9) ERROR 04-08 18:07:20 [multiproc_executor.py:1] ")
    assert said(text, family="vllm")[:2] == (True, "nccl")


def test_the_op_check_is_torch_npus_own():
    assert_in_library_wheel("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/NPUException.h",
                            '" OPS function error: ", getErrorFunction(#err_code, ##__VA_ARGS__)')


@pytest.mark.parametrize("text", [
    "RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
    "aclnnMatmul, error code is 561103\n",
    "INFO 04-08 18:07:20 [core.py:1] HcclAllreduce took 3 ms\n",
], ids=["other-op", "notice"])
def test_near_misses_are_no_hccl_failure(text):
    assert said(text, family="vllm")[2] != "vllm_hccl_call_failed"


# --- w8318: vLLM does not know the plugin's backend name --------------------------------------------------------------

_UNKNOWN = "ValueError: Unknown attention backend: '{}'. Valid options are: FLASH_ATTN, TRITON_ATTN, CUSTOM\n"


def test_the_plugins_backend_name_is_dependency_mismatch():
    text = read_log("w8318.log")
    assert said(text) == (True, "dependency_mismatch", "vllm_plugin_backend_name")


def test_the_plugins_backend_name_in_another_form():
    """vllm-ascend's MLA backend's name, under the engine core's tag."""
    text = "(EngineCore_DP0 pid=3) ERROR 11-20 10:00:00 [core.py:1] " + _UNKNOWN.format("ASCEND_MLA")
    assert said(text, family="vllm")[:2] == (True, "dependency_mismatch")


def test_the_lookup_and_the_names_are_in_the_wheels():
    assert_in_wheel("0.13.0", "vllm/attention/backends/registry.py", "f\"Unknown attention backend: '{name}'. \"")
    assert_in_wheel("0.13.0", "vllm/distributed/kv_transfer/kv_connector/utils.py",
                    "AttentionBackendEnum[self.attn_backend.get_name()]")
    assert_in_library_wheel("vllm_ascend", "0.11.0rc0", "vllm_ascend/attention/attention_v1.py", 'return "ASCEND"')
    assert_in_library_wheel("vllm_ascend", "0.12.0rc1", "vllm_ascend/attention/attention_v1.py", 'return "CUSTOM"')


@pytest.mark.parametrize("text", [
    _UNKNOWN.format("FLASHATTN"),
    "INFO 11-20 10:00:00 [platform.py:1] Using attention backend ASCEND\n",
], ids=["user-typo", "notice"])
def test_near_misses_are_no_plugin_mismatch(text):
    assert said(text, family="vllm")[2] != "vllm_plugin_backend_name"
