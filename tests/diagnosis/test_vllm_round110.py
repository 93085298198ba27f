"""vLLM held-out round 110 (3 logs, w11001-w11003), folded into work after its miss was read.

Measured once on main at 499655b4 (staged as 22554cfc): crashed 3/3, kind 2/3, phase 3/3. One log missed, read
against the source of the vLLM releases near its dev build and of torch:

- w11001 (kind, fixed): a ROCm dev build of vLLM (0.1.dev8023, between 0.10.0 and 0.10.1) started with
  --tensor-parallel-size 2 in a container that sees one GPU. On ROCm the config's device-count check that moves a
  too-large layout to Ray is CUDA's only (0.10.0 vllm/config.py:2156), so the multiproc executor starts a worker per
  rank with local_rank=rank (v1/executor/multiproc_executor.py:86); rank 1's init_device binds cuda:1
  (v1/worker/gpu_worker.py:155-156) through the platform's torch.cuda.set_device (platforms/rocm.py:249), and torch's
  set_device (torch 2.8.0 torch/cuda/__init__.py:569) raises "torch.AcceleratorError: HIP error: invalid device
  ordinal". More ranks on the node than GPUs it sees, the layout 0.11.1 refuses first with its own assert
  (v1/worker/gpu_worker.py:210, round 85's LOCAL_WORLD_OVER_DEVICES): bad_argument (vllm_crashes/parallel_sizes.py
  ``MP_RANK_PAST_DEVICES``). A Ray worker's invalid ordinal (round 89's w8907: Ray chose the devices the worker sees)
  and one raised outside set_device (LMCache's connector, round 17's vr11) stay unknown.

The positive tests below failed at 499655b4 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w110{n:02d}" for n in range(1, 4)]
_MAIN = ("vllm/v1/executor/multiproc_executor.py", 488, "worker_main", "worker = WorkerProc(*args, **kwargs)")
_INIT = ("vllm/v1/executor/multiproc_executor.py", 384, "__init__", "self.worker.init_device()")
_DEVICE = ("vllm/v1/worker/gpu_worker.py", 156, "init_device", "current_platform.set_device(self.device)")
_PLATFORM = ("vllm/platforms/cuda.py", 80, "set_device", "torch.cuda.set_device(device)")
_TORCH = ("torch/cuda/__init__.py", 569, "set_device", "torch._C._cuda_setDevice(device)")
_ORDINAL = "torch.AcceleratorError: CUDA error: invalid device ordinal"
_WORKER = "(VllmWorker rank=1 pid=839) ERROR 10-24 13:48:14 [multiproc_executor.py:514] "


def test_the_round_is_folded_with_its_three_logs():
    assert folded_round(VLLM_MANIFEST, 110) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w11001: a multiproc worker's rank past the GPUs its process sees -------------------------------------------------

def test_a_multiproc_rank_past_the_visible_gpus_is_a_bad_argument():
    assert said(read_log("w11001.log")) == (True, "bad_argument", "vllm_mp_rank_past_devices")
    assert reads(read_log("w11001.log")) == (True, "bad_argument", "launch")


def test_cudas_invalid_ordinal_at_the_workers_set_device_reads_the_same():
    text = vllm_traceback(_MAIN, _INIT, _DEVICE, _PLATFORM, _TORCH, exc=_ORDINAL, head=_WORKER)
    assert vllm_signature(text) == "vllm_mp_rank_past_devices"
    older = text.replace("torch.AcceleratorError:", "RuntimeError:")
    assert vllm_signature(older) == "vllm_mp_rank_past_devices"


def test_a_ray_workers_invalid_ordinal_is_not_this():
    assert said(read_log("w8907.log"))[2] != "vllm_mp_rank_past_devices"
    ray = ("vllm/executor/ray_utils.py", 43, "execute_method", "return executor(*args, **kwargs)")
    text = vllm_traceback(ray, _DEVICE, _PLATFORM, _TORCH, exc=_ORDINAL, head=_WORKER)
    assert vllm_signature(text) != "vllm_mp_rank_past_devices"


def test_an_invalid_ordinal_raised_outside_set_device_is_not_this():
    assert said(read_log("vr11.log"))[2] != "vllm_mp_rank_past_devices"
    empty = ("vllm/v1/worker/gpu_worker.py", 170, "init_device", "torch.empty(1, device=self.device)")
    text = vllm_traceback(_MAIN, _INIT, empty, exc=_ORDINAL, head=_WORKER)
    assert vllm_signature(text) != "vllm_mp_rank_past_devices"


def test_another_error_at_the_workers_set_device_is_not_this():
    text = vllm_traceback(_MAIN, _INIT, _DEVICE, _PLATFORM, _TORCH, exc="torch.AcceleratorError: CUDA error: "
                          "out of memory", head=_WORKER)
    assert vllm_signature(text) != "vllm_mp_rank_past_devices"


# --- the lines the rule cites ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.10.0", "vllm/v1/executor/multiproc_executor.py", "                        local_rank=rank,"),
    ("0.10.0", "vllm/v1/worker/gpu_worker.py",
     '            self.device = torch.device(f"cuda:{self.local_rank}")\n'
     "            current_platform.set_device(self.device)"),
    ("0.10.0", "vllm/platforms/rocm.py", "        torch.cuda.set_device(device)"),
    ("0.10.0", "vllm/config.py",
     "            elif (current_platform.is_cuda()\n"
     "                  and cuda_device_count_stateless() < self.world_size):"),
    ("0.10.1.1", "vllm/v1/worker/gpu_worker.py", "            current_platform.set_device(self.device)"),
    ("0.11.1", "vllm/v1/worker/gpu_worker.py",
     "            assert self.parallel_config.local_world_size <= visible_device_count, ("),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


def test_the_cited_line_is_torchs_own():
    assert_in_library_wheel("torch", "2.8.0", "torch/cuda/__init__.py", "        torch._C._cuda_setDevice(device)")
