"""What held-out round 82 of the vLLM corpus (w8201-w8221, measured once on main at 66fd625 with its logs 83f4eb0)
showed: crashed 20/21, kind 18/21, phase 13/14. Its three misses were read from the source (docs/diagnosis.md,
"Held-out round 82"): two fixed, one fixed in its phase and disputed in its kind, none left:

- w8201 (kind): flash-attn's CHECK_DEVICE, "cu_seqlens_q must be on CUDA" (Dao-AILab/flash-attention 00979f5
  csrc/flash_attn/flash_api.cpp:17), carried up by the multiprocessing executor ("Worker failed with error '...'",
  v1/executor/multiproc_executor.py:248 (0.11.0)): a kernel library refusing a tensor it was handed,
  kernel_config_unsupported (device_crashes/tensor_devices.py).
- w8206 (crashed): a logger that rewrites vLLM's records as "[ISO time][TAG][L] message [pid,tid][file.py:N,function]"
  is restamped in vLLM's own format, so the executor's "Worker proc ... died unexpectedly" reads as a death
  (diagnosis/vllm_log.py restamped).
- w8220 (phase fixed, kind disputed: request_error, pd_transfer): NIXL's "Handshake with ENGINE failed" is written by
  the handshake thread start_load_kv starts for a request's remote KV (nixl_connector.py:548, :911 (0.10.0)):
  serving (diagnosis/vllm_kv_lines.py); in that release the failed handshake's request is queued as ready anyway
  (:552-557) and the next step's _read_blocks raises KeyError (:951-952): the engine's death, pd_transfer.

Each positive test below failed at 83f4eb0 (before the fixes).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import detect_family, restamped
from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said, vllm_traceback)

_ROUND = [f"w82{n:02d}" for n in range(1, 22)]


def test_the_round_is_folded_with_its_twenty_one_logs():
    assert folded_round(VLLM_MANIFEST, 82) == _ROUND


def test_one_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w8220"]
    assert VLLM_MANIFEST["w8220"]["kind_disputed"] == ["request_error", "pd_transfer"]


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w8201: flash-attn's device check of a tensor it was handed ------------------------------------------------------

_FA = ("flash_attn/flash_attn_interface.py", 925, "forward",
       "out_padded, softmax_lse, S_dmask, rng_state = _wrapped_flash_attn_varlen_forward(")
_VIT = ("vllm/model_executor/models/qwen2_vl.py", 398, "forward", "output = flash_attn_varlen_func(q,")


def test_the_workers_device_refusal_is_kernel_config_unsupported():
    text = read_log("w8201.log")
    assert said(text) == (True, "kernel_config_unsupported", "vllm_kernel_device_refused")
    assert reads(text) == (True, "kernel_config_unsupported", "memory_pool")


def test_the_refusal_in_another_form():
    """The worker's own traceback (vLLM 0.11.0's ViT attention into the upstream flash-attn), TORCH_CHECK's
    RuntimeError with the macro's text alone, under a worker's tag."""
    text = vllm_traceback(_VIT, _FA, exc="RuntimeError: cu_seqlens_k must be on CUDA",
                          head="(VllmWorker TP0 pid=11) ERROR 10-20 10:00:00 [multiproc_executor.py:671] ")
    assert said(text, family="vllm")[:2] == (True, "kernel_config_unsupported")
    assert said("RuntimeError: Tensor a must be on CUDA\n")[:2] == (True, "kernel_config_unsupported")


def test_the_wrapper_is_vllms_own():
    assert_in_wheel("0.11.0", "vllm/v1/executor/multiproc_executor.py", 'f"Worker failed with error \'{result}\', please check the"')
    assert_in_wheel("0.11.0", "vllm/attention/layer.py", "use_upstream_fa = True")


@pytest.mark.parametrize("text", [
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n",
    "INFO 10-20 10:00:00 [gpu_model_runner.py:1] the inputs must be on CUDA before the forward\n",
    "RuntimeError: module.weight must be on CUDA\n",
], ids=["torch-device-check", "notice", "dotted-name"])
def test_near_misses_are_no_device_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_kernel_device_refused"


# --- w8206: a logger wrapping vLLM's records ---------------------------------------------------------------------------

_DIED = ("[2026-08-22 13:05:18.630086][UC][E] Worker proc VllmWorker-14 died unexpectedly (exit code: None), shutting "
         "down executor. [416204,434190][multiproc_executor.py:295,monitor_workers]\n")
_QUEUES = ("[2026-08-22 13:05:18.630420][UC][I] Parent process exited, terminating worker queues "
           "[416690,433942][multiproc_executor.py:804,death_pipe_monitor]\n")


def test_the_wrapped_worker_death_is_a_crash():
    assert reads(read_log("w8206.log"))[:2] == (True, "unknown")
    assert said(read_log("w8206.log"))[2] == "vllm_engine_dead"


def test_the_wrapped_death_in_another_form():
    """Another tag and a WARNING record before it, the death alone."""
    text = _QUEUES.replace("[UC][I]", "[APP][W]") + _DIED.replace("[UC]", "[SVC]")
    assert reads(text)[:2] == (True, "unknown")


def test_the_death_is_vllms_own_text():
    assert_in_wheel("0.11.0", "vllm/v1/executor/multiproc_executor.py", "died unexpectedly")


def test_the_record_is_restamped_as_vllms():
    assert restamped(_DIED) == ("ERROR 08-22 13:05:18 [multiproc_executor.py:295] Worker proc VllmWorker-14 died "
                                "unexpectedly (exit code: None), shutting down executor.\n")


@pytest.mark.parametrize("text", [
    _DIED.replace(" [416204,434190][multiproc_executor.py:295,monitor_workers]", ""),  # no tail
    "[2026-08-22 13:05:18] [E] Worker proc VllmWorker-14 died unexpectedly [1,2][x.py:1,f]\n",  # no tag
    "[2026-08-22 13:05:18 TP0] Scheduler hit an exception [1,2][x.py:1,f]\n",  # SGLang's stamp
], ids=["no-tail", "no-tag", "sglang-stamp"])
def test_near_misses_are_not_restamped(text):
    assert restamped(text) == text


def test_sglangs_stamp_still_reads_as_sglangs():
    assert detect_family("[2026-08-22 13:05:18 TP0] Scheduler hit an exception\n"
                         "[2026-08-22 13:05:18 TP0] Worker proc died\n") == "sglang"
    assert detect_family(_QUEUES * 3) == "sglang"  # no vLLM mark: the queues' notices alone name no server


# --- w8220: NIXL's handshake with a remote prefill engine failed ------------------------------------------------------

def test_the_handshake_failure_reads_serving():
    assert reads(read_log("w8220.log")) == (False, None, "serving")


def test_the_handshake_failure_in_another_form():
    """0.9.2's record (:534), under the decode engine core's tag, a KV line before it."""
    text = ("(EngineCore_DP0 pid=9) INFO 07-10 10:00:00 [core.py:1] Automatically detected platform cuda.\n"
            "(EngineCore_DP0 pid=9) ERROR 07-10 10:00:01 [nixl_connector.py:534] Handshake with prefill-0 failed\n")
    assert reads(text)[2] == "serving"


def test_the_handshake_runs_for_a_request_in_the_wheel():
    path = "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py"
    assert_in_wheel("0.10.0", path, 'logger.exception("Handshake with %s failed", eid)')
    assert_in_wheel("0.10.0", path, "# TODO: handle failure state of future in the")
    assert_in_wheel("0.11.1", path, '"Handshake failed for request %s, marking blocks as invalid", req_id')


@pytest.mark.parametrize("text", [
    "INFO 07-10 10:00:00 [nixl_connector.py:1] Handshake with prefill-0 took 0.2 s\n",
    "INFO 07-10 10:00:00 [core.py:1] # Handshake with the server failed? see the docs\n",
], ids=["handshake-done", "commented"])
def test_near_misses_do_not_read_serving(text):
    assert reads(text, family="vllm")[2] != "serving"
