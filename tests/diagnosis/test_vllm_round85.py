"""What held-out round 85 of the vLLM corpus (w8501-w8520, measured once on main at 9fe3644 with its logs 266337e)
showed: crashed 19/20, kind 15/20, phase 16/17. Its six misses were read from the source (docs/diagnosis.md,
"Held-out round 85"): six fixed, none disputed, none left:

- w8503 (phase): kernel_warmup's DeepGEMM warmup frames, which only compile_or_warm_up_model runs right before
  capture_model (v1/worker/gpu_worker.py:425, :429 (0.11.1)), are graph_capture (diagnosis/vllm_frames.py _CAPTURE).
- w8506 (kind): distributed/utils.py's bare "N is not divisible by M" (ensure_divisibility, :12 (0.5.1)) is a model
  size the tensor-parallel size does not divide, bad_argument (vllm_crashes/parallel_sizes.py SIZE_NOT_DIVISIBLE).
- w8513 (kind): "Ray does not allocate any GPUs on the driver node." (executor/ray_distributed_executor.py:228
  (0.7.2)) is a placement refused, bad_argument (parallel_sizes.py DRIVER_NO_GPU).
- w8515 (kind): the V1 worker's "local_world_size (N) must be less than or equal to the number of visible devices
  (M)." (v1/worker/gpu_worker.py:210 (0.11.1)) is bad_argument (parallel_sizes.py LOCAL_WORLD_OVER_DEVICES).
- w8516 (kind): get_hf_text_config's bare assert on text_config's num_attention_heads
  (transformers_utils/config.py:567 (0.7.2)) is arch_unsupported (vllm_crashes/archs.py TEXT_CONFIG_LAYOUT).
- w8519 (crashed, kind): a vLLM record glued after uvicorn's access line is its own line
  (diagnosis/glued_records.py), so launcher.py's "MQLLMEngine is already dead" reads as the engine's death.

Each positive test below failed at 266337e (before the fixes). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said, vllm_traceback)

_ROUND = [f"w85{n:02d}" for n in range(1, 21)]


def test_the_round_is_folded_with_its_twenty_logs():
    assert folded_round(VLLM_MANIFEST, 85) == _ROUND


def test_none_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w8503: the DeepGEMM kernel warmup is the graph-capture step ------------------------------------------------------

_WARMUP = [("vllm/model_executor/warmup/kernel_warmup.py", 37, "kernel_warmup",
            "deep_gemm_warmup(model, max_tokens)"),
           ("vllm/model_executor/warmup/deep_gemm_warmup.py", 319, "deep_gemm_warmup",
            "deepgemm_grouped_fp8_gemm_nt_contiguous_warmup(model, max_tokens)")]


def test_the_deepgemm_warmup_is_graph_capture():
    assert reads(read_log("w8503.log")) == (True, "unknown", "graph_capture")


def test_the_deepgemm_warmup_in_another_form():
    """0.13.0's frames from kernel_warmup down (compile_or_warm_up_model cut off), unwrapped, under a worker's tag,
    the out-of-memory error after them."""
    text = vllm_traceback(*_WARMUP, exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
                          head="(Worker_TP0 pid=7) ERROR 11-25 08:05:06 [multiproc_executor.py:815] ")
    assert reads(text, family="vllm")[2] == "graph_capture"


def test_the_warmup_runs_right_before_the_capture():
    assert_in_wheel("0.11.1", "vllm/v1/worker/gpu_worker.py", "        kernel_warmup(self)")
    assert_in_wheel("0.11.1", "vllm/model_executor/warmup/kernel_warmup.py", "deep_gemm_warmup(model, max_tokens)")
    assert_in_wheel("0.11.1", "vllm/model_executor/warmup/deep_gemm_warmup.py",
                    "def deepgemm_grouped_fp8_gemm_nt_contiguous_warmup(")


@pytest.mark.parametrize("func", ["_warmup", "warmup_model", "profile_run"])
def test_near_misses_are_no_capture(func):
    frame = ("vllm/v1/worker/gpu_model_runner.py", 100, func, "out = torch.empty((n, m))")
    text = vllm_traceback(frame, exc="torch.OutOfMemoryError: CUDA out of memory.")
    assert reads(text, family="vllm")[2] != "graph_capture"


# --- w8506: a model size the tensor-parallel size does not divide -----------------------------------------------------

def test_the_bare_divisibility_assert_is_bad_argument():
    assert said(read_log("w8506.log")) == (True, "bad_argument", "vllm_tp_size_not_divisible")


def test_the_divisibility_assert_in_another_form():
    """Its frame in distributed/utils.py, the vocab over 6 ranks, a worker's tag."""
    frame = ("vllm/distributed/utils.py", 12, "ensure_divisibility",
             'assert numerator % denominator == 0, "{} is not divisible by {}".format(')
    text = vllm_traceback(frame, exc="AssertionError: 152064 is not divisible by 5",
                          head="(VllmWorkerProcess pid=9) ERROR 07-13 02:56:30 multiproc_worker_utils.py:226] ")
    assert said(text, family="vllm")[:2] == (True, "bad_argument")


def test_the_divisibility_assert_is_vllms_own():
    assert_in_wheel("0.5.1", "vllm/distributed/utils.py", '"{} is not divisible by {}".format(')


@pytest.mark.parametrize("text", [
    "ValueError: Weight output_size_per_partition = 64 is not divisible by min_thread_n = 128.\n",
    "AssertionError: 32768 is not divisible by 3 (vocab)\n",
    "INFO 07-13 02:56:30 llm_engine.py:1] 32768 is not divisible by 3, padding the vocab\n",
], ids=["marlin", "more-text", "notice"])
def test_near_misses_are_no_divisibility_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_tp_size_not_divisible"


# --- w8513: Ray put no GPU worker on the driver's node ----------------------------------------------------------------

def test_the_driver_without_a_gpu_is_bad_argument():
    assert said(read_log("w8513.log")) == (True, "bad_argument", "vllm_ray_driver_no_gpu")


def test_the_driver_without_a_gpu_in_another_form():
    """0.5.4's ray_gpu_executor, the ValueError at the end of the engine's traceback."""
    frame = ("vllm/executor/ray_gpu_executor.py", 156, "_init_workers_ray", "raise ValueError(")
    text = vllm_traceback(frame, exc="ValueError: Ray does not allocate any GPUs on the driver node. Consider "
                                     "adjusting the Ray placement group or running the driver on a GPU node.")
    assert said(text, family="vllm")[:2] == (True, "bad_argument")


def test_the_driver_refusal_is_vllms_own():
    assert_in_wheel("0.7.2", "vllm/executor/ray_distributed_executor.py",
                    '"Ray does not allocate any GPUs on the driver node. Consider "')
    assert_in_wheel("0.5.4", "vllm/executor/ray_gpu_executor.py",
                    '"Ray does not allocate any GPUs on the driver node. Consider "')


@pytest.mark.parametrize("text", [
    "INFO 02-09 02:31:05 ray_utils.py:1] Ray allocates 8 GPUs on the driver node.\n",
    "ValueError: Ray does not allocate any CPUs to this task.\n",
], ids=["notice", "other-resource"])
def test_near_misses_are_no_driver_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_ray_driver_no_gpu"


# --- w8515: more ranks on the node than it has GPUs -------------------------------------------------------------------

def test_the_local_world_over_the_devices_is_bad_argument():
    assert said(read_log("w8515.log")) == (True, "bad_argument", "vllm_local_world_over_devices")


def test_the_local_world_check_in_another_form():
    """0.21.0's frame (:268), a worker's tag, 4 ranks on a node with 2 GPUs."""
    frame = ("vllm/v1/worker/gpu_worker.py", 268, "init_device",
             "assert self.parallel_config.local_world_size <= visible_device_count, (")
    text = vllm_traceback(frame, exc="AssertionError: local_world_size (4) must be less than or equal to the "
                                     "number of visible devices (2).", head="(Worker pid=5) ERROR 05-01 10:00:00 "
                                                                            "[multiproc_executor.py:1] ")
    assert said(text, family="vllm")[:2] == (True, "bad_argument")


@pytest.mark.parametrize("release", ["0.11.1", "0.13.0", "0.21.0"])
def test_the_local_world_check_is_vllms_own(release):
    assert_in_wheel(release, "vllm/v1/worker/gpu_worker.py", 'less than or equal to the number of visible devices "')


@pytest.mark.parametrize("text", [
    "AssertionError: DP adjusted local rank 9 is out of bounds. \n",
    "INFO 05-01 10:00:00 [gpu_worker.py:1] local_world_size (8) fits the number of visible devices (8).\n",
], ids=["local-rank", "notice"])
def test_near_misses_are_no_local_world_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_local_world_over_devices"


# --- w8516: the text model's settings not where vLLM reads them ------------------------------------------------------

_TEXT_CONFIG = ("vllm/transformers_utils/config.py", 776, "get_hf_text_config",
                'assert hasattr(text_config, "num_attention_heads")')
_MODEL_CONFIG = ("vllm/config.py", 363, "__init__", "self.hf_text_config = get_hf_text_config(self.hf_config)")


def test_the_text_config_assert_is_arch_unsupported():
    assert said(read_log("w8516.log")) == (True, "arch_unsupported", "vllm_text_config_layout")


def test_the_text_config_assert_in_another_form():
    """0.8.5.post1's assert (:776, ``text_config`` a local there), under the engine's stamp, bare."""
    text = vllm_traceback(_MODEL_CONFIG, _TEXT_CONFIG, exc="AssertionError")
    assert said(text, family="vllm")[:2] == (True, "arch_unsupported")


@pytest.mark.parametrize("release, path, text", [
    ("0.7.2", "vllm/transformers_utils/config.py", 'assert hasattr(config.text_config, "num_attention_heads")'),
    ("0.8.5.post1", "vllm/transformers_utils/config.py", 'assert hasattr(text_config, "num_attention_heads")'),
], ids=["0.7.2", "0.8.5.post1"])
def test_the_text_config_assert_is_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize("frames", [
    [("vllm/transformers_utils/config.py", 700, "get_hf_text_config", "assert hasattr(config, 'hidden_size')")],
    [("vllm/model_executor/models/qwen2_vl.py", 90, "__init__", 'assert hasattr(text_config, "num_attention_heads")')],
], ids=["other-assert", "other-function"])
def test_near_misses_are_no_text_config_layout(frames):
    assert said(vllm_traceback(*frames, exc="AssertionError"), family="vllm")[2] != "vllm_text_config_layout"


# --- w8519: a vLLM record glued after uvicorn's access line -----------------------------------------------------------

_ACCESS = 'INFO:     10.0.0.7:40122 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error'


def test_the_glued_engine_death_is_a_crash():
    assert reads(read_log("w8519.log")) == (True, "unknown", "serving")


def test_the_glued_engine_death_in_another_form():
    """0.8's bracketed file, AsyncLLMEngine's death, glued after uvicorn's access line of a completion."""
    text = (_ACCESS + " CRITICAL 03-01 10:00:00 [launcher.py:116] AsyncLLMEngine is already dead, terminating "
            "server process\n")
    assert said(text, family="vllm")[:2] == (True, "unknown")


def test_the_launchers_death_line_is_vllms_own():
    assert_in_wheel("0.7.2", "vllm/entrypoints/launcher.py",
                    'logger.fatal("MQLLMEngine is already dead, terminating server "')


@pytest.mark.parametrize("text", [
    _ACCESS + " ERROR was returned to the client\n",
    "(VllmWorkerProcess pid=614) ERROR 02-14 08:44:33 multiproc_worker_utils.py:242] Worker ready.\n" + _ACCESS + "\n",
], ids=["level-word-quoted", "process-tag"])
def test_near_misses_are_no_glued_record(text):
    assert said(text, family="vllm")[:2] == (False, "request_error")
