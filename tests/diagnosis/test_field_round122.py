"""Held-out round 122 (issue 24): folded into ``work``; one miss ddlab's, fixed, one the label's, disputed.

Round 122 (h122001-h122003, h122021-h122026; nine log files committed to six users' repositories, each pinned to a
commit, two collectors) was measured once on main at b619aa72: crashed 9/9, kind 7/9, phase 8/8. docs/diagnosis.md,
"Held-out round 122", tells the round.

- h122023 (Prathmesh234/mutliturn-inferenceX, a June-2026 SGLang nightly on GB300, MiniMax-M2.5 NVFP4 at TP4/EP4):
  every rank's ModelOpt NVFP4 MoE post-load step, process_weights_after_loading, multiplies the input scales by the
  weight scales and torch refuses 256 against 64. SGLang keeps the input scales for all the model's experts (0.5.23
  layers/quantization/modelopt_quant.py:2634-2639, _sglang_require_global_experts) and the weight scales for the
  rank's own (:2592-2601); the default branch takes the input scale's max over its shards unsliced (:2809) into
  _compute_gemm1_alphas (:2825, :2357). Read as labelled, weights_unreadable, by crashes/kinds/weights.py
  postload_scale_shape: a size mismatch under a quantization method's process_weights_after_loading.
- h122025 (ajith-sirra-amd/InferenceMAX_Rocm_Team, GLM-5.1 MXFP4 at TP2 on MI355X, 33 minutes serving): one rank's
  HIP queue aborts with HSA_STATUS_ERROR_OUT_OF_RESOURCES ('Available Free mem : 874 MB'), 'Fatal Python error:
  Aborted', and ten minutes later the peer's NCCL watchdog times out on an all-gather. The queue callback's
  OUT_OF_RESOURCES is the runtime failing to allocate a kernel's scratch from the GPU's memory (ROCR-Runtime c7785a6
  core/runtime/amd_aql_queue.cpp:1091, :1167-1173, :1227-1228; ROCm clr f9f995c rocclr/device/rocm/rocdevice.cpp:
  2981-3003 prints the free memory for that status alone, then aborts): kind [native_crash, cuda_oom], disputed; read
  by device_crashes/hip_queue.py hip_queue_out_of_scratch, ranked above the peer's collective timeout.
- The seven others read as labelled at the measurement.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, alike_cases, assert_reads_alike_either_way, assert_reads_as_labelled,
                      disputed, folded_round, reads, real, said, with_carriage_returns)

_IDS = folded_round(REAL_MANIFEST, 122)

# the signature each undisputed log is read by
_SIGNATURES = {
    "h122001": None,  # a HiSim-hooked scheduler's exception no signature explains: unknown, as labelled
    "h122002": None,  # a README's healthy start, serving
    "h122003": None,  # a blog's expected startup output, ready
    "h122021": "request_http_4xx",  # a request's 400 while the server goes on
    "h122022": "nccl",  # a TP4 start's NCCL failure at launch
    "h122023": "postload_scale_shape",  # ModelOpt's NVFP4 MoE post-load step: 256 input scales against 64
    "h122024": None,  # a PD prefill server's healthy run
    "h122026": "kv_tokens_exhausted",  # the KV tokens run out while serving
}


def test_round122_is_folded_into_work_with_one_dispute_and_none_left():
    assert _IDS == sorted([*_SIGNATURES, "h122025"])
    assert disputed(REAL_MANIFEST, _IDS) == ["h122025"]
    assert REAL_MANIFEST["h122025"]["kind_disputed"] == ["native_crash", "cuda_oom"]
    assert REAL_MANIFEST["h122025"]["second_look"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {
        None: 3, "unknown": 1, "request_error": 1, "nccl": 1, "weights_unreadable": 1, "native_crash": 1,
        "slots_exhausted": 1}
    assert [i for i in _IDS if not REAL_MANIFEST[i]["phase_in_log"]] == ["h122001"]


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round122_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round122_logs_with_carriage_returns():
    assert with_carriage_returns(_IDS) == ["h122001", "h122021", "h122023", "h122024", "h122025", "h122026"]


@pytest.mark.parametrize("log_id", alike_cases(_IDS))
def test_round122_logs_read_the_same_as_their_bytes_decode(log_id):
    assert_reads_alike_either_way(log_id)


def test_the_disputed_reads_as_its_second_look():
    found = real("h122025")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "cuda_oom", "serving", "hip_queue_out_of_scratch")
    assert "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in found.cause
    assert "--mem-fraction-static" in found.suggestion


# --- h122025: the HIP runtime out of a kernel's scratch, the peer's collective timeout after it -----------------------

_SERVING = ("[2026-06-03 18:20:30 TP0] Decode batch, #running-req: 32, #token: 601344, token usage: 0.88, cuda graph: "
            "True, gen throughput (token/s): 412.33, #queue-req: 0\n"
            "[2026-06-03 18:20:41] INFO:     127.0.0.1:59830 - \"GET /metrics HTTP/1.1\" 200 OK\n")
_DUMP = ("Fatal Python error: Aborted\n\n"
         "Thread 0x00007df77d042000 (most recent call first):\n"
         '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/streams.py", line 231 in synchronize\n'
         '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1441 in event_loop_overlap\n\n')
_TIMEOUT = ("[rank0]:[E603 18:30:41.043072935 ProcessGroupNCCL.cpp:683] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=289, OpType=_ALLGATHER_BASE, NumelIn=154880, NumelOut=309760, "
            "Timeout(ms)=600000) ran for 600029 milliseconds before timing out.\n"
            "terminate called after throwing an instance of 'c10::DistBackendError'\n"
            "Fatal Python error: Aborted\n")


def _callback(status: str, tail: str) -> str:
    return (f":0:rocdevice.cpp            :3582: 6041945320100 us:  Callback: Queue 0x7de27c200000 {status}: "
            f"{tail}\n")


_SCRATCH = _callback("Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES",
                     "The runtime failed to allocate the necessary resources. This error may also occur when the "
                     "core runtime library needs to spawn threads or create internal OS-specific events. Code: "
                     "0x1008 Available Free mem : 874 MB")


# h122025's form (the peer's timeout ten minutes after), and the abort alone
@pytest.mark.parametrize("text", [
    _SERVING + _SCRATCH + _DUMP + _SERVING + _TIMEOUT,
    _SERVING + _SCRATCH + _DUMP,
], ids=["h122025", "abort-alone"])
def test_the_runtime_out_of_scratch_is_cuda_oom(text):
    assert said(text, family="sglang") == (True, "cuda_oom", "hip_queue_out_of_scratch")
    assert reads(text, family="sglang")[2] == "serving"


# near misses: a collective timeout with no earlier fault stays NCCL's; the callback's other statuses (a kernel's
# memory fault) stay the page fault's; OUT_OF_RESOURCES where no queue aborted (a queue not created) is not this
@pytest.mark.parametrize("text, kind", [
    (_SERVING + _TIMEOUT, "nccl"),
    (_SERVING + _callback("aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
                          "The agent attempted to access memory beyond the largest legal address. code: 0x29")
     + _DUMP + _TIMEOUT, "cuda_illegal_access"),
    (_SERVING + "RuntimeError: HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
                "resources. Queue create failed\n", None),
], ids=["timeout-alone", "aperture-violation", "no-queue-abort"])
def test_other_queue_errors_are_not_the_scratch(text, kind):
    assert said(text, family="sglang")[2] != "hip_queue_out_of_scratch"
    if kind:
        assert said(text, family="sglang")[1] == kind


# --- h122023: a quantization method's post-load step refusing the scales' sizes -------------------------------------

_START = ("[2026-06-09 01:16:23 TP2 EP2] Load weight begin. avail mem=274.39 GB\n"
          "[2026-06-09 01:16:23 TP2 EP2] Detected nvfp4 checkpoint. Please note that the format is experimental and "
          "subject to change.\n"
          "[2026-06-09 01:17:17 TP2 EP2] Scheduler hit an exception: Traceback (most recent call last):\n"
          '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 1343, in load_model\n'
          "    self.model = self.loader.load_model(\n"
          '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 746, in '
          "load_weights_and_postprocess\n"
          "    quant_method.process_weights_after_loading(module)\n")
_POSTLOAD = ('  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/modelopt_quant.py", line 1890, in '
             "process_weights_after_loading\n"
             "    (w13_input_scale * w13_weight_scale_2).to(torch.float32),\n")
_HELPER = ('  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/modelopt_quant.py", line 2357, in '
           "_compute_gemm1_alphas\n"
           "    g1_alphas = (w13_input_scale * gate_scale).to(torch.float32)\n")
_SIZES = "RuntimeError: The size of tensor a (256) must match the size of tensor b (64) at non-singleton dimension 0\n"
_SIGQUIT = ("\n[2026-06-09 01:17:17] Received sigquit from a child process. It usually means the child failed.\n")


# h122023's form (the multiplication in the method itself), 0.5.23's (in a helper it calls)
@pytest.mark.parametrize("text", [
    _START + _POSTLOAD + _SIZES + _SIGQUIT,
    _START + '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/modelopt_quant.py", line 2825, in '
             "process_weights_after_loading\n    g1_alphas, g1_alphas_up = _compute_gemm1_alphas(\n"
    + _HELPER + _SIZES + _SIGQUIT,
], ids=["h122023", "helper-0.5.23"])
def test_a_size_mismatch_in_the_post_load_step_is_weights_unreadable(text):
    assert said(text, family="sglang") == (True, "weights_unreadable", "postload_scale_shape")
    assert reads(text, family="sglang")[2] == "load_weights"


# near misses: the same sizes in a quantization method's forward (a request's batch while serving), another error in
# the post-load step
@pytest.mark.parametrize("text", [
    "[2026-06-09 02:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 12, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0\n"
    "[2026-06-09 02:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1441, in event_loop_overlap\n'
    "    batch_result = self.run_batch(batch)\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/modelopt_quant.py", line 1990, in apply\n'
    "    x_scale = x_scale * layer.w13_input_scale_quant\n" + _SIZES + _SIGQUIT,
    _START + _POSTLOAD + "AssertionError: w13_input_scale must be scalar\n" + _SIGQUIT,
], ids=["forward", "other-error"])
def test_other_errors_are_not_the_post_load_shapes(text):
    assert said(text, family="sglang")[2] != "postload_scale_shape"
