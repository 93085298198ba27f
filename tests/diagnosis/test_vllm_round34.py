"""The rules that held-out round 34 of the vLLM corpus (w3401-w3409, measured once at ffdf6fc with its logs
4dc316c) showed missing: flashinfer's own check finding its kernel's launch refused with "invalid argument"
(w3401: BatchPrefillWithPagedKVCache on two T4s, the shared memory its tile asks for more than the GPU gives);
more GPUs asked than the Ray cluster has, which vLLM only warns of before waiting on a placement group that
cannot be made (w3404: TP=4, the start killed by SIGTERM in that wait, read as a native crash before).

Each rule is general and cited from vLLM's source (its wheels) or the library's: the log that showed it is one
case, a text written from the source in another form is the other, and a text beside it that the rule must not
take is a third. The source checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import library_text_test, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_RAY_085 = "vllm/executor/ray_utils.py"
_RAY_034 = "vllm/v1/executor/ray_utils.py"
test_each_rules_text_is_vllms_own = wheel_text_test([
    # without a placement group of its own, vLLM warns that the cluster has too few devices and waits
    ("0.8.5.post1", _RAY_085, "# Log a warning message and delay resource allocation failure response."),
    ("0.8.5.post1", _RAY_085, '"The number of required %ss exceeds the total "'),
    ("0.8.5.post1", _RAY_085, "PG_WAIT_TIMEOUT = 1800"),
    ("0.8.5.post1", _RAY_085, '"Cannot provide a placement group of "'),
    # inside one, the same words are a ValueError at once
    ("0.8.5.post1", _RAY_085, 'f"The number of required {device_str}s exceeds the total "'),
    ("0.34.0", _RAY_034, 'f"The number of required {device_str}s exceeds the total "'),
    ("0.34.0", _RAY_034, '"The number of required %ss exceeds the total "'),
    ("0.6.4.post1", "vllm/executor/ray_utils.py", 'f"The number of required {device_str}s exceeds the total "'),
])

_FI = "flashinfer/data/csrc"
test_each_rules_library_text_is_in_its_wheel = library_text_test([
    # flashinfer's check on its prefill kernel's launch status, and the status's origin
    ("flashinfer-python", "0.6.11.post2", f"{_FI}/batch_prefill.cu",
     '<< "BatchPrefillWithPagedKVCache failed with error " << cudaGetErrorString(status);'),
    ("flashinfer-python", "0.6.11.post2", f"{_FI}/batch_decode.cu",
     '<< "BatchDecodeWithPagedKVCache failed with error " << cudaGetErrorString(status);'),
    ("flashinfer-python", "0.6.11.post2", f"{_FI}/rope.cu",
     '<< "BatchQKApplyRotary failed with error code " << cudaGetErrorString(status);'),
    ("flashinfer-python", "0.6.11.post2", "flashinfer/data/include/flashinfer/attention/prefill.cuh",
     "cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_size));"),
])

_WORKER = "(Worker_TP0 pid=300) ERROR 06-13 20:09:13 [multiproc_executor.py:962] "
_FORWARD = [
    ("vllm/v1/worker/gpu_worker.py", 700, "execute_model", "output = self.model_runner.execute_model("),
    ("vllm/v1/attention/backends/flashinfer.py", 1200, "forward", "prefill_wrapper.run("),
    ("flashinfer/prefill.py", 2100, "run", "self._cached_module.paged_run(*run_args)"),
]


def test_flashinfers_launch_refused_with_an_invalid_argument_is_this_shape_unsupported():
    """w3401: the first LoRA request on two T4s; both TP workers fail in flashinfer's paged prefill, "Check
    failed: (status == cudaSuccess) is false: BatchPrefillWithPagedKVCache failed with error invalid
    argument"; read unknown before. The status is cudaFuncSetAttribute's or cudaLaunchKernel's (prefill.cuh
    :2983, :3006): the launch refused, the kind of FlashMLA's "CUDA error (...): invalid argument"."""
    assert reads(read_log("w3401.log")) == (True, "kernel_config_unsupported", "serving")
    assert vllm_signature(read_log("w3401.log")) == "vllm_flashinfer_launch_refused"
    # the decode kernel's check, as torch's extension of older flashinfer releases raised it (no TVM prefix)
    decode = vllm_traceback(*_FORWARD, exc="RuntimeError: BatchDecodeWithPagedKVCache failed with error "
                                           "invalid argument", head=_WORKER)
    assert vllm_signature(decode) == "vllm_flashinfer_launch_refused"
    assert reads(decode)[:2] == (True, "kernel_config_unsupported")
    # rope.cu's form, "failed with error code", with the launch's other refusal
    rope = vllm_traceback(*_FORWARD, exc="RuntimeError: Check failed: (status == cudaSuccess) is false: "
                                         "BatchQKApplyRotary failed with error code invalid configuration "
                                         "argument")
    assert vllm_signature(rope) == "vllm_flashinfer_launch_refused"


def test_flashinfers_other_statuses_are_not_a_refused_launch():
    """The same check with a fault's or an allocation's status is not a launch refused."""
    fault = vllm_traceback(*_FORWARD, exc="RuntimeError: Check failed: (status == cudaSuccess) is false: "
                                          "BatchPrefillWithPagedKVCache failed with error an illegal memory "
                                          "access was encountered", head=_WORKER)
    assert vllm_signature(fault) != "vllm_flashinfer_launch_refused"
    assert reads(fault)[1] != "kernel_config_unsupported"
    oom = vllm_traceback(*_FORWARD, exc="RuntimeError: BatchPrefillWithPagedKVCache failed with error out of "
                                        "memory", head=_WORKER)
    assert vllm_signature(oom) != "vllm_flashinfer_launch_refused"


_V0_START = [
    ("vllm/engine/multiprocessing/engine.py", 436, "run_mp_engine", "engine = MQLLMEngine.from_vllm_config("),
    ("vllm/executor/ray_distributed_executor.py", 105, "_init_executor",
     "initialize_ray_cluster(self.parallel_config)"),
    ("vllm/executor/ray_utils.py", 370, "initialize_ray_cluster", "_wait_until_pg_ready(current_placement_group)"),
]
_WARNING = ("WARNING 05-26 18:53:53 [ray_utils.py:342] The number of required GPUs exceeds the total number of "
            "available GPUs in the placement group.\n")
_WAITING = ("INFO 05-26 18:54:03 [ray_utils.py:233] Waiting for creating a placement group of specs for 10 "
            "seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` and `ray list nodes` to see if you "
            "have enough resources.\n")


def test_more_gpus_than_the_ray_cluster_has_is_the_launchs_argument():
    """w3404: a V0 start of TP=4 over a local Ray instance; vLLM warns "The number of required GPUs exceeds
    the total number of available GPUs in the placement group" (ray_utils.py:342), waits on the placement
    group it creates for 150 s and more, and is killed (SIGTERM, Ray's glog dump, KeyboardInterrupt in
    _wait_until_pg_ready); read native_crash before. vLLM itself would fail the wait after PG_WAIT_TIMEOUT
    with ValueError, and inside a placement group raises the same words at once (:329)."""
    assert reads(read_log("w3404.log")) == (True, "bad_argument", "launch")
    assert vllm_signature(read_log("w3404.log")) == "vllm_placement_devices"
    # the wait run out (vLLM's own ValueError after 1800 s), the warning before it
    timed_out = _WARNING + _WAITING + vllm_traceback(*_V0_START, exc=(
        "ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}] "
        "within 1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough "
        "resources."))
    assert vllm_signature(timed_out) == "vllm_placement_devices"
    assert reads(timed_out)[:2] == (True, "bad_argument")
    # inside a placement group: the ValueError at once (0.34.0's v1 executor)
    at_once = vllm_traceback(
        ("vllm/v1/executor/ray_utils.py", 351, "initialize_ray_cluster", "raise ValueError("),
        exc="ValueError: The number of required GPUs exceeds the total number of available GPUs in the "
            "placement group. Required number of devices: 8. Total number of devices: 4.")
    assert vllm_signature(at_once) == "vllm_placement_devices"
    assert reads(at_once)[:2] == (True, "bad_argument")


def test_a_placement_group_made_in_the_end_is_no_crash_and_a_bundle_is_its_own_rule():
    """The warning alone, the placement group made once the cluster grew and the server up, is no crash;
    a bundle of two GPUs stays the placement-bundle rule."""
    started = (_WARNING + _WAITING + "INFO 05-26 18:55:00 [ray_distributed_executor.py:176] use_ray_spmd_worker: "
               "False\nINFO:     Started server process [1]\nINFO:     Waiting for application startup.\n"
               "INFO:     Application startup complete.\n")
    assert reads(started)[0] is False
    bundle = vllm_traceback(
        ("vllm/v1/executor/ray_utils.py", 346, "initialize_ray_cluster", "raise ValueError("),
        exc="ValueError: Placement group bundle cannot have more than 1 GPU.")
    assert vllm_signature(bundle) == "vllm_placement_bundle"
