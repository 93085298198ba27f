"""What held-out round 48 of the vLLM corpus (w4801-w4805, measured once at 06e9fac with its logs d0e4115)
showed: crashed 5/5, kind 4/5, phase 4/4. Its one miss was read from the source (docs/diagnosis.md,
"Held-out round 48"):

- w4804: vLLM 0.8.5.post1 with vllm-ascend, the Ray executor's compiled graph on Ascend NPUs; on the first
  request the Ray worker's ``setup_device_if_necessary`` calls ``torch.cuda.set_device(self.worker.device)``
  (vllm 0.8.5.post1 executor/ray_utils.py:117, every platform but TPU; from ``execute_model_ray`` :130) and
  torch's ``_get_device_index`` refuses the worker's ``npu:0``: "ValueError: Expected a cuda device, but got:
  npu:0" (torch/cuda/_utils.py:34 in the log's torch; torch 2.13.0 :582). From 0.9.1 vLLM asks the platform
  (``current_platform.set_device``, ray_utils.py:116, which resolves to ``torch.<device_type>.set_device``,
  platforms/interface.py:498-501; vllm_ascend 0.9.2rc1 platform.py:97-98 ``torch.npu.set_device``). CUDA-only
  code reached on an NPU: a vLLM and a platform plug-in whose releases do not fit, dependency_mismatch as
  labelled (as w4013's CUDA-only ``torch.ops._C`` op under vllm-ascend). Fixed:
  ``vllm_cuda_call_other_device`` (``vllm_crashes/backends.py``).

The other four logs read as labelled.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_at_line, not_unpacked, read_log, reads, vllm_signature,
                      vllm_traceback, wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w48{n:02d}" for n in range(1, 6)]


def test_the_round_is_folded_with_its_five_logs():
    round48 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 48)
    assert round48 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round48)


def test_each_log_reads_as_labelled():
    """All five: crashed and kind as labelled, the phase where the log shows it (w4804 since its rule)."""
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        kind = got[1] if got[0] or got[1] == "request_error" else None
        assert (got[0], kind) == (log["crashed"], log["kind"]), (log_id, got)
        if log["phase_in_log"]:
            assert got[2] == log["phase"], (log_id, got)


# --- w4804: a CUDA-only call handed an NPU's device ---------------------------------------------------------

def test_the_ray_worker_setting_a_cuda_device_on_an_npu_is_a_mismatch():
    """The corpus log: the engine core's RayTaskError(ValueError) through ray_utils' setup_device_if_necessary
    to torch.cuda.set_device, then EngineDeadError and the request's 500: dependency_mismatch, serving."""
    text = read_log("w4804.log")
    assert reads(text) == (True, "dependency_mismatch", "serving")
    assert vllm_signature(text) == "vllm_cuda_call_other_device"


def test_the_same_refusal_in_another_form():
    """Written from vllm 0.7.3's V0 Ray path (executor/ray_utils.py:104-113: torch.cuda.set_device on every
    platform) on an Intel GPU, torch's allow_cpu form of the text: the same reading, whatever the wrapper."""
    xpu = vllm_traceback(
        ("vllm/executor/ray_utils.py", 118, "execute_model", "self.setup_device_if_necessary()"),
        ("vllm/executor/ray_utils.py", 112, "setup_device_if_necessary",
         "torch.cuda.set_device(self.worker.device)"),
        ("torch/cuda/__init__.py", 476, "set_device", "device = _get_device_index(device)"),
        ("torch/cuda/_utils.py", 34, "_get_device_index",
         'raise ValueError(f"Expected a cuda device, but got: {device}")'),
        exc="ValueError: Expected a cuda device, but got: xpu:1")
    assert reads(xpu)[:2] == (True, "dependency_mismatch")
    assert vllm_signature(xpu) == "vllm_cuda_call_other_device"
    hpu = "ValueError: Expected a cuda or cpu device, but got: hpu:0\n"
    assert vllm_signature(hpu) == "vllm_cuda_call_other_device"


def test_a_cpu_device_handed_to_cuda_is_not_a_platform_mismatch():
    """The near miss: the same torch check refusing a CPU device is a caller's tensor on the wrong device in
    a CUDA program (no other platform involved), not read as a mismatch of releases."""
    cpu = vllm_traceback(
        ("vllm/v1/worker/gpu_model_runner.py", 1200, "execute_model", "torch.cuda.set_device(device)"),
        ("torch/cuda/_utils.py", 34, "_get_device_index",
         'raise ValueError(f"Expected a cuda device, but got: {device}")'),
        exc="ValueError: Expected a cuda device, but got: cpu")
    assert vllm_signature(cpu) != "vllm_cuda_call_other_device"
    assert reads(cpu)[1] != "dependency_mismatch"


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.8.5.post1", "vllm/executor/ray_utils.py", "torch.cuda.set_device(self.worker.device)"),
    ("0.8.5.post1", "vllm/executor/ray_utils.py", "if current_platform.is_tpu():"),
    ("0.9.1", "vllm/executor/ray_utils.py", "current_platform.set_device(self.worker.device)"),
    ("0.9.1", "vllm/platforms/interface.py", "device = getattr(torch, self.device_type, None)"),
    ("0.9.2", "vllm/platforms/interface.py", "def set_device(cls, device: torch.device) -> None:"),
    ("0.7.3", "vllm/executor/ray_utils.py", "torch.cuda.set_device(self.worker.device)"),
])


@pytest.mark.parametrize(("release", "line", "code"), [
    ("0.8.5.post1", 117, "torch.cuda.set_device(self.worker.device)"),
    ("0.8.5.post1", 130, "self.setup_device_if_necessary()"),
    ("0.9.1", 116, "current_platform.set_device(self.worker.device)"),
])
def test_the_cited_ray_utils_lines(release, line, code):
    """The lines the rule cites (the log's own frames at 0.8.5.post1: ray_utils.py 117 and 130)."""
    source = VLLM_WHEELS / release / "vllm/executor/ray_utils.py"
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]


def test_vllm_ascend_sets_its_device_through_torch_npu():
    assert_at_line("vllm_ascend", "0.9.2rc1", "vllm_ascend/platform.py", 98, "torch.npu.set_device(device)")


def test_torchs_text():
    """torch's own check (torch/cuda/_utils.py, _get_device_index; :582 in torch 2.13.0)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        pytest.skip("torch not installed here")
    source = Path(spec.origin).parent / "cuda" / "_utils.py"
    assert 'raise ValueError(f"Expected a cuda device, but got: {device}")' in source.read_text()
