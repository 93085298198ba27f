"""What held-out round 42 of the vLLM corpus (w4201-w4213, measured once at ee278da with its logs 1ffade9)
showed: crashed 13/13, kind 11/13, phase 5/5. Its two misses were read from vLLM's source (docs/diagnosis.md,
"Held-out round 42"):

- w4205: vLLM 0.7.2's Ray executor giving up on the placement group it made, "ValueError: Cannot provide a
  placement group of placement_group_specs=[...] within 1800 seconds. See `ray status` ..."
  (executor/ray_utils.py:226-229), with no "The number of required GPUs exceeds ..." warning before it (Ray
  counts the GPUs but cannot give them): bad_argument, the reading of w3404 (loading.PLACEMENT_DEVICES, which
  now reads the wait's own ValueError too; 0.34.0's names the cause, "Tensor parallel size may exceed
  available GPUs in your cluster", v1/executor/ray_utils.py:245-255).
- w4211: the V2 model runner's "RuntimeError: UVA is not available" (0.28.0 v1/worker/gpu/buffer_utils.py:47),
  raised where vLLM reports no pinned memory: on CUDA only under WSL (platforms/cuda.py:290-309,
  utils/platform_utils.py:51-57): unsupported_gpu, a capability the platform lacks
  (backends.UVA_UNAVAILABLE).

Each rule is tested on the corpus log, on a text written from the source in another form, and on a near
miss that must not read the same way; every crashed log of the round is pinned to its signature.
"""

from __future__ import annotations

import pytest
from fieldkit import VLLM_MANIFEST, VLLM_WHEELS, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_MANIFEST = VLLM_MANIFEST

# the signature that reads each crashed log (None: an unknown death with no text of a kind)
_SIGNATURES = {
    "w4205": "vllm_placement_devices",          # the placement group's wait run out (0.7.2, no warning)
    "w4206": "vllm_cuda_oom",
    "w4207": "vllm_cuda_oom",
    "w4208": None,
    "w4210": "vllm_engine_dead",
    "w4211": "vllm_uva_unavailable",            # the V2 runner's UvaBuffer without pinned memory
    "w4212": "vllm_startup_free_memory",
}


def test_the_round_is_folded_with_its_thirteen_logs():
    round42 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 42)
    assert round42 == [f"w42{n:02d}" for n in range(1, 14)]
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round42)


def test_each_log_reads_as_labelled():
    """Crashed and kind for all thirteen, the phase where the log shows it."""
    for log_id in (f"w42{n:02d}" for n in range(1, 14)):
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        assert got[0] == log["crashed"], log_id
        assert got[1] == log["kind"], log_id
        if log["phase_in_log"] and not log.get("phase_disputed"):
            assert got[2] == log["phase"], log_id


def test_each_crashed_log_is_read_by_its_signature():
    for log_id, signature in _SIGNATURES.items():
        assert vllm_signature(read_log(f"{log_id}.log")) == signature, log_id


# --- w4205: the placement group's wait run out, no warning before it ---------------------------------------

_V0_RAY = [
    ("vllm/engine/multiprocessing/engine.py", 380, "run_mp_engine", "engine = MQLLMEngine.from_engine_args("),
    ("vllm/executor/ray_distributed_executor.py", 81, "_init_executor", "initialize_ray_cluster(self.parallel_config)"),
    ("vllm/executor/ray_utils.py", 348, "initialize_ray_cluster", "_wait_until_pg_ready(current_placement_group)"),
    ("vllm/executor/ray_utils.py", 226, "_wait_until_pg_ready", "raise ValueError("),
]
_V1_RAY = [
    ("vllm/v1/executor/ray_executor.py", 105, "_init_executor", "initialize_ray_cluster(self.parallel_config)"),
    ("vllm/v1/executor/ray_utils.py", 400, "initialize_ray_cluster", "_wait_until_pg_ready(current_placement_group)"),
    ("vllm/v1/executor/ray_utils.py", 245, "_wait_until_pg_ready", "raise ValueError("),
]


def test_the_placement_groups_wait_run_out_is_the_launchs_gpus():
    """w4205 shows only the INFO "Waiting for creating a placement group" lines, then the ValueError after
    1800 s; 0.34.0's text for a group of more than one GPU says why in its own words."""
    assert reads(read_log("w4205.log")) == (True, "bad_argument", "launch")
    v0 = vllm_traceback(*_V0_RAY, exc=(
        "ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0, "
        "'node:10.1.2.3': 0.001}, {'GPU': 1.0}] within 1800 seconds. See `ray status` to make sure the "
        "cluster has enough resources."), head="ERROR 04-18 14:47:42 engine.py:389] ")
    assert vllm_signature(v0) == "vllm_placement_devices"
    assert reads(v0) == (True, "bad_argument", "launch")
    v1 = vllm_traceback(*_V1_RAY, exc=(
        "ValueError: Cannot provide a placement group requiring 8 GPUs (placement_group_specs=[{'GPU': 1.0}, "
        "{'GPU': 1.0}]) within 1800 seconds."), head="(EngineCore_DP0 pid=12) ERROR 03-02 10:00:00 [core.py:708] ")
    assert vllm_signature(v1) == "vllm_placement_devices"
    assert reads(v1)[:2] == (True, "bad_argument")


def test_a_node_without_a_gpu_is_not_the_placement_wait():
    """The same function's refusal of a node with no GPU at all ("Current node has no GPU available",
    0.7.2 executor/ray_utils.py:336-340) names another cause; a start still waiting (the INFO lines, then the
    paste's end) has not failed."""
    no_gpu = vllm_traceback(*_V0_RAY[:3], ("vllm/executor/ray_utils.py", 336, "initialize_ray_cluster",
                                           "raise ValueError("),
                            exc="ValueError: Current node has no GPU available. current_node_resource={'CPU': 8.0}. "
                                "vLLM engine cannot start without GPU. Make sure you have at least 1 GPU available "
                                "in a node current_node_id='ab' current_ip='10.1.2.3'.")
    assert vllm_signature(no_gpu) != "vllm_placement_devices"
    waiting = ("INFO 04-18 14:10:22 ray_utils.py:214] Waiting for creating a placement group of specs for 317 "
               "seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` to see if you have enough "
               "resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP "
               "environment variable specified in each node if you are running on a multi-node.\n")
    assert vllm_signature(waiting) != "vllm_placement_devices"
    assert reads(waiting)[1] != "bad_argument"


# --- w4211: the V2 model runner's UVA buffers where vLLM finds no pinned memory ----------------------------

_V2_INIT = [
    ("vllm/v1/worker/gpu_worker.py", 430, "init_device", "self.model_runner: GPUModelRunner = GPUModelRunnerV2("),
    ("vllm/v1/worker/gpu/model_runner.py", 297, "__init__", "self.req_states = RequestState("),
    ("vllm/v1/worker/gpu/states.py", 37, "__init__", "self.all_token_ids = StagedWriteTensor("),
    ("vllm/v1/worker/gpu/buffer_utils.py", 199, "__init__", "self._uva_buf = UvaBuffer(size, dtype)"),
]
_WORKER = "(Worker_TP0 pid=300) ERROR 06-13 20:09:13 [multiproc_executor.py:962] "


def test_uva_not_available_is_a_platform_the_v2_runner_cannot_run_on():
    assert reads(read_log("w4211.log")) == (True, "unsupported_gpu", "launch")
    worker = vllm_traceback(*_V2_INIT, ("vllm/v1/worker/gpu/buffer_utils.py", 42, "__init__",
                                        'raise RuntimeError("UVA is not available")'),
                            exc="RuntimeError: UVA is not available", head=_WORKER)
    assert vllm_signature(worker) == "vllm_uva_unavailable"
    assert reads(worker)[:2] == (True, "unsupported_gpu")


def test_the_pinned_buffer_running_out_of_memory_is_not_uva():
    """UvaBuffer's own allocation failing (torch.zeros(..., pin_memory=True): a CUDA error) is memory, not
    the missing capability; the WSL warning in a start that comes up is no crash (w4202)."""
    oom = vllm_traceback(*_V2_INIT, ("vllm/v1/worker/gpu/buffer_utils.py", 48, "__init__",
                                     'self.cpu = torch.zeros(size, dtype=dtype, device="cpu", pin_memory=True)'),
                         exc="RuntimeError: CUDA error: out of memory", head=_WORKER)
    assert vllm_signature(oom) != "vllm_uva_unavailable"
    assert reads(oom)[1] != "unsupported_gpu"
    assert reads(read_log("w4202.log"))[0] is False
    assert "Using pin_memory=False as WSL is detected" in read_log("w4202.log").replace("'", "")


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.7.2", "vllm/executor/ray_utils.py", '"Cannot provide a placement group of "'),
    ("0.34.0", "vllm/v1/executor/ray_utils.py", 'f"Cannot provide a placement group requiring "'),
    ("0.34.0", "vllm/v1/executor/ray_utils.py", 'f"Tensor parallel size may exceed available GPUs in your "'),
    ("0.28.0", "vllm/v1/worker/gpu/buffer_utils.py", 'raise RuntimeError("UVA is not available")'),
    ("0.34.0", "vllm/v1/worker/gpu/buffer_utils.py", 'raise RuntimeError("UVA is not available")'),
    ("0.28.0", "vllm/utils/platform_utils.py", "return is_pin_memory_available() or current_platform.is_cpu()"),
    ("0.28.0", "vllm/platforms/cuda.py", "return envs.VLLM_WSL2_ENABLE_PIN_MEMORY"),
])


def test_the_cited_lines_hold_the_texts():
    for release, path, line, text in (
            ("0.7.2", "vllm/executor/ray_utils.py", 227, '"Cannot provide a placement group of "'),
            ("0.7.2", "vllm/executor/ray_utils.py", 337, 'f"Current node has no {device_str} available. "'),
            ("0.34.0", "vllm/v1/executor/ray_utils.py", 246, 'f"Cannot provide a placement group requiring "'),
            ("0.34.0", "vllm/v1/executor/ray_utils.py", 258, '"Cannot provide a placement group of "'),
            ("0.28.0", "vllm/v1/worker/gpu/buffer_utils.py", 47, 'raise RuntimeError("UVA is not available")'),
            ("0.34.0", "vllm/v1/worker/gpu/buffer_utils.py", 42, 'raise RuntimeError("UVA is not available")'),
            ("0.28.0", "vllm/utils/platform_utils.py", 57, "return is_pin_memory_available() or"),
            ("0.28.0", "vllm/platforms/cuda.py", 299, "\"Using 'pin_memory=False' as WSL is detected and the \""),
            ("0.28.0", "vllm/platforms/interface.py", 1002, "\"Using 'pin_memory=False' as WSL is detected. \"")):
        source = VLLM_WHEELS / release / path
        if not source.exists():
            pytest.skip(f"{source} is not unpacked")
        assert text in source.read_text().splitlines()[line - 1], (release, path, line)
