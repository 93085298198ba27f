"""Held-out round 79 (issue 24): a cooperative launch refused; a request's image; NCCL's buffer; a launcher's Killed.

Round 79 (h79001-h79013; excerpts of SGLang issue and PR threads) was measured once on main at 6ca4acf (with the
round's logs, 8957ad0): crashed 12/13, kind 8/13, phase 7/8. docs/diagnosis.md, "Held-out round 79", tells the round.
Three misses were ddlab's:

- h79003, "RuntimeError: Failed: CUDA error .../DeepEP/csrc/kernels/intranode.cu:505 'too many blocks in cooperative
  launch'": the CUDA runtime refusing a cooperative launch whose grid the GPU cannot hold at once
  (cudaErrorCooperativeLaunchTooLarge, 720), as DeepEP's CUDA_CHECK throws it (deepseek-ai/DeepEP c18eabd
  csrc/kernels/exception.cuh:18, :25-31; launch.cuh:8-18, :29; intranode.cu:505), read as kernel_config_unsupported
  (cooperative_launch_too_large, device_crashes/cooperative.py).
- h79005, 0.1.x's "Exception in TokenizerManager:" traceback through get_pixel_values -> expand2square ->
  PIL's Image.new: the per-request image preprocessing's except prints it and returns None (0.1.9
  managers/tokenizer_manager.py:53-74), one request fails and the server serves on: request_error, no crash
  (image_preprocess_failed, crashes/kinds/images.py).
- h79010, NCCL's last error "Failed to CUDA calloc 67108864 bytes" (ncclCudaCalloc's WARN when the device allocation
  returned nothing, NCCL v2.20.5-1 src/include/alloc.h:186): cuda_oom (crashes/kinds/memory.py).
h79004 (the custom all-reduce's CUDACHECK) was measured a miss and is read right by round 78's rule, merged after the
measurement. h79011's kind is disputed (host_oom labelled; the shell's 'Killed' after the launcher's sigquit is the
launcher's own kill_process_tree: 0.4.5 entrypoints/engine.py:438-442, srt/utils.py:661-662), read as unknown.
Each positive test fails on 8957ad0.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real, said

_IDS = folded_round(REAL_MANIFEST, 79)


def test_round79_is_folded_into_work_with_one_kind_disputed():
    assert _IDS == [f"h790{n:02d}" for n in range(1, 14)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h79011"]
    assert REAL_MANIFEST["h79011"]["kind_disputed"] == ["host_oom", "unknown"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h79003", "cooperative_launch_too_large"), ("h79004", "custom_all_reduce_failed"),
    ("h79005", "image_preprocess_failed"), ("h79010", "cuda_oom"),
], ids=["h79003", "h79004", "h79005", "h79010"])
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h79011_reads_as_its_second_look():
    found = real("h79011")
    assert (found.crashed, found.kind, found.signature) == (True, "unknown", None)


# --- h79003: a cooperative launch refused for its grid ------------------------------------------------------------

_TOO_LARGE = "'too many blocks in cooperative launch'"
_HEAD = "[2026-04-29 03:48:36 TP0 EP0] Scheduler hit an exception: Traceback (most recent call last):\n"
_SITE = "/usr/local/lib/python3.12/dist-packages/"
_DISPATCH = (f'  File "{_SITE}sglang/srt/layers/moe/token_dispatcher/deepep.py", line 412, in _dispatch_core\n'
             "    ) = buffer.dispatch(\n"
             f'  File "{_SITE}deep_ep/buffer.py", line 370, in dispatch\n'
             "    self.runtime.intranode_dispatch(x, x_scales, topk_idx, topk_weights,\n")


# the same refusal from DeepEP's internode kernels and its driver-API check ("CU error", cuGetErrorString's words),
# torch's CUDA check ("CUDA error: ", its hint lines below), a trimmed path, DeepEP's line alone as h79003's
# second excerpt is
@pytest.mark.parametrize("text", [
    _HEAD + _DISPATCH + f"RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/kernels/internode.cu:1162 "
    f"{_TOO_LARGE}\n",
    _HEAD + _DISPATCH + f"RuntimeError: Failed: CU error csrc/kernels/intranode.cu:505 {_TOO_LARGE}\n",
    _HEAD + _DISPATCH + "RuntimeError: CUDA error: too many blocks in cooperative launch\nCUDA kernel errors might "
    "be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging "
    "consider passing CUDA_LAUNCH_BLOCKING=1\n",
    (_HEAD + _DISPATCH).replace(_SITE, ".../") + f"RuntimeError: Failed: CUDA error .../intranode.cu:505 {_TOO_LARGE}\n",
    f"RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/kernels/intranode.cu:505 {_TOO_LARGE}\n",
], ids=["internode", "cu-check", "torch-check", "trimmed", "line-alone"])
def test_a_cooperative_launch_too_large_is_kernel_config_unsupported(text):
    assert said(text) == (True, "kernel_config_unsupported", "cooperative_launch_too_large")


# near misses: DeepEP's check finding a fault (an illegal access), its host assert on the SM count, the words in a
# user's prose, a launch refused for another reason by the same check
@pytest.mark.parametrize("text", [
    _HEAD + _DISPATCH + "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/kernels/intranode.cu:505 "
    "'an illegal memory access was encountered'\n",
    _HEAD + _DISPATCH + "RuntimeError: Failed: Assertion error csrc/kernels/intranode.cu:503 'num_sms % 2 == 0'\n",
    "does anyone know why DeepEP says too many blocks in cooperative launch on H20?\n",
    _HEAD + _DISPATCH + "RuntimeError: Failed: CUDA error csrc/kernels/intranode.cu:505 'invalid device function'\n",
], ids=["fault", "host-assert", "prose", "other-error"])
def test_other_deepep_checks_are_not_a_cooperative_launch_refused(text):
    assert said(text)[2] != "cooperative_launch_too_large"


def test_the_fault_in_deepeps_check_stays_a_fault():
    text = (_HEAD + _DISPATCH + "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/kernels/intranode.cu:505 "
            "'an illegal memory access was encountered'\n")
    assert said(text)[1] == "cuda_illegal_access"


# --- h79005: one request's image the tokenizer manager failed to preprocess ---------------------------------------

_PIL = ('  File "/usr/lib/python3/dist-packages/PIL/Image.py", line 2941, in new\n'
        "    return im._new(core.fill(mode, size, color))\n"
        "TypeError: color must be int or single-element tuple\n")


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "/opt/sglang/python/sglang/srt/{path}", line {line}, in {func}\n    {code}\n'


# 0.2.12's print (the function still get_pixel_values, tokenizer_manager.py:643, mm_utils.py:184), 0.3.2's
# logger.error with its stamp (_process_single_image_task, tokenizer_manager.py:768, mm_utils.py:256), 0.4.10.post2's
# llava processor failing to load the image (multimodal/processors/llava.py:47, utils.py:758), and h79005 without
# its header line (a paste that starts at "Traceback")
@pytest.mark.parametrize("text", [
    "Exception in TokenizerManager:\nTraceback (most recent call last):\n"
    + _frame("managers/tokenizer_manager.py", 643, "get_pixel_values", "image = expand2square(")
    + _frame("mm_utils.py", 184, "expand2square", "result = Image.new(pil_img.mode, (width, width), background_color)")
    + _PIL,
    "[2024-10-02 08:01:15] Exception in TokenizerManager:\nTraceback (most recent call last):\n"
    + _frame("managers/tokenizer_manager.py", 768, "_process_single_image_task", "image = expand2square(")
    + _frame("mm_utils.py", 256, "expand2square", "result = Image.new(pil_img.mode, (width, width), background_color)")
    + _PIL,
    "[2025-08-01 10:00:00] Exception in TokenizerManager:\nTraceback (most recent call last):\n"
    + _frame("multimodal/processors/llava.py", 47, "_process_single_image_task",
             "image, image_size = load_image(image_data)")
    + _frame("utils.py", 758, "load_image", "image = Image.open(image_file)")
    + "FileNotFoundError: [Errno 2] No such file or directory: '/data/cat.png'\n",
    "Traceback (most recent call last):\n"
    + _frame("managers/tokenizer_manager.py", 61, "get_pixel_values", "image = expand2square(")
    + _frame("mm_utils.py", 167, "expand2square", "result = Image.new(pil_img.mode, (width, width), background_color)")
    + _PIL,
], ids=["0.2.12", "0.3.2-stamped", "0.4.10-load", "no-header"])
def test_a_requests_image_that_failed_preprocessing_is_a_request_error(text):
    assert said(text) == (False, "request_error", "image_preprocess_failed")
    assert reads(text)[2] == "serving"


# near misses: the same error from a function of that name in the user's own script, the scheduler dying in a
# multimodal model's forward (a crash of its own), the PIL error with no frames
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    '  File "/home/user/eval_llava.py", line 40, in get_pixel_values\n    image = expand2square(image, mean)\n'
    + _PIL,
    "[2024-10-02 08:01:15 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    + _frame("managers/scheduler.py", 1200, "run_batch", "logits_output = self.tp_worker.forward_batch_generation(")
    + _frame("models/llava.py", 300, "forward", "image_features = self.encode_images(pixel_values)")
    + "RuntimeError: shape '[1, 576, 4096]' is invalid for input of size 0\n",
    "TypeError: color must be int or single-element tuple\n",
], ids=["user-script", "scheduler-forward", "no-frames"])
def test_other_image_errors_are_not_the_tokenizer_managers_catch(text):
    assert said(text)[2] != "image_preprocess_failed"


# --- h79010: NCCL's device allocation that did not fit -------------------------------------------------------------

_DIST = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:76, "
         "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
         "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n")


# the same WARN of ncclCudaMalloc (alloc.h:161) and the async calloc (:206) under torch 2.5's NCCLUtils.cpp:317, the
# message inside a scheduler's traceback of a collective
@pytest.mark.parametrize("text", [
    _DIST + "Failed to CUDA malloc 2097152 bytes\n",
    _DIST.replace("NCCLUtils.cpp:76", "NCCLUtils.cpp:317").replace("2.20.5", "2.21.5")
    + "Failed to CUDA calloc async 4194304 bytes\n",
    "[2025-07-25 13:55:13 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    + _frame("layers/sampler.py", 120, "forward", "torch.distributed.all_reduce(")
    + _DIST + "Failed to CUDA calloc 67108864 bytes\n",
], ids=["malloc", "calloc-async", "in-traceback"])
def test_nccls_device_allocation_failing_is_cuda_oom(text):
    assert said(text) == (True, "cuda_oom", "cuda_oom")


def test_its_advice_is_a_lower_static_fraction():
    from ddlab.diagnosis.diagnosis import diagnose
    advice = diagnose(_DIST + "Failed to CUDA calloc 67108864 bytes\n").suggestion
    assert "NCCL" in advice and "--mem-fraction-static" in advice and "weights do not fit" not in advice


# near misses: NCCL's pinned host allocation and its host malloc (host memory, not the GPU's), a CUDA call that
# failed for another reason
@pytest.mark.parametrize("text", [
    _DIST + "Failed to CUDA host alloc 4194304 bytes\n",
    _DIST + "Failed to malloc 1048576 bytes\n",
    _DIST + "Cuda failure 'invalid argument'\n",
], ids=["host-alloc", "host-malloc", "other-cuda-failure"])
def test_nccls_other_failures_are_not_cuda_oom(text):
    assert said(text)[1] != "cuda_oom"


# --- h79011: the launcher's own Killed after a child's sigquit -----------------------------------------------------

def test_the_launchers_killed_after_its_sigquit_is_not_the_oom_killer():
    text = ("[2025-04-05 00:01:19] Received sigquit from a child process. It usually means the child failed.\n"
            "./entrypoint.sh: line 48: 28 Killed python3 -m sglang.launch_server --host 0.0.0.0 --port 30000\n")
    assert said(text)[:2] == (True, "unknown")


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.1.9", "sglang/srt/managers/tokenizer_manager.py", 53, "def get_pixel_values("),
    ("sglang", "0.1.9", "sglang/srt/managers/tokenizer_manager.py", 56, "try:"),
    ("sglang", "0.1.9", "sglang/srt/managers/tokenizer_manager.py", 61, "image = expand2square("),
    ("sglang", "0.1.9", "sglang/srt/managers/tokenizer_manager.py", 74,
     'print("Exception in TokenizerManager:\\n" + get_exception_traceback())'),
    ("sglang", "0.1.9", "sglang/srt/managers/tokenizer_manager.py", 155,
     "pixel_values, image_hash, image_size = await self.get_pixel_values("),
    ("sglang", "0.1.9", "sglang/srt/mm_utils.py", 167,
     "result = Image.new(pil_img.mode, (width, width), background_color)"),
    ("sglang", "0.2.12", "sglang/srt/managers/tokenizer_manager.py", 643, "image = expand2square("),
    ("sglang", "0.2.12", "sglang/srt/managers/tokenizer_manager.py", 657, '"Exception in TokenizerManager:\\n"'),
    ("sglang", "0.3.2", "sglang/srt/managers/tokenizer_manager.py", 768, "image = expand2square("),
    ("sglang", "0.3.2", "sglang/srt/managers/tokenizer_manager.py", 789, '"Exception in TokenizerManager:\\n"'),
    ("sglang", "0.3.6", "sglang/srt/managers/image_processor.py", 109, '"Exception in TokenizerManager:\\n"'),
    ("sglang", "0.4.10.post2", "sglang/srt/multimodal/processors/llava.py", 47,
     "image, image_size = load_image(image_data)"),
    ("sglang", "0.4.10.post2", "sglang/srt/multimodal/processors/llava.py", 82, '"Exception in TokenizerManager:\\n"'),
    ("sglang", "0.4.5", "sglang/srt/entrypoints/engine.py", 438, "def sigquit_handler(signum, frame):"),
    ("sglang", "0.4.5", "sglang/srt/entrypoints/engine.py", 442, "kill_process_tree(os.getpid())"),
    ("sglang", "0.4.5", "sglang/srt/utils.py", 635, "def kill_process_tree("),
    ("sglang", "0.4.5", "sglang/srt/utils.py", 661, "if parent_pid == os.getpid():"),
    ("sglang", "0.4.5", "sglang/srt/utils.py", 662, "itself.kill()"),
    ("sglang", "0.5.23", "sglang/srt/layers/moe/token_dispatcher/deepep.py", 355,
     'self.num_sms = config_dispatch["num_sms"]'),
    ("triton", "3.5.0", "triton/backends/nvidia/include/driver_types.h", 939,
     "cudaErrorCooperativeLaunchTooLarge    =     720,"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
