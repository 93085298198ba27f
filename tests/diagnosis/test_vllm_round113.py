"""vLLM held-out round 113 (2 logs, w11301-w11302), folded into work after its miss was read.

Measured once on main at 12aad7d6 (staged as 2c70a3da): crashed 2/2, kind 1/2, phase 2/2. One log missed, read
against the source of the vLLM releases near its source build and of torch:

- w11302 (kind, fixed): a source build of vLLM (0.1.dev1+gf90a375) with a vllm-ascend dev build (0.1.dev47) on
  torch 2.5.1 and torch_npu, V0's Ray executor over two nodes: every worker's load_model builds a DeepSeek-V2-style
  model, and DeepseekScalingRotaryEmbedding._compute_inv_freq calls torch.arange(..., device="cuda") (the log's
  frames are vLLM 0.7.3's lines: model_executor/layers/rotary_embedding.py:653-654, :671, :98, :649, :1099; 0.8.0
  asks the platform, current_platform.device_type, :740). The NPU build of torch has no CUDA module and torch's
  _lazy_init raises "AssertionError: Torch not compiled with CUDA enabled" (torch 2.8.0 torch/cuda/__init__.py:403;
  the log's torch :310): a vLLM build whose code takes a CUDA path the plug-in and its torch do not give, the
  dependency_mismatch the collector labelled (vllm_crashes/installs.py ``TORCH_WITHOUT_CUDA``, read only where the
  exception is torch's AssertionError with those words; _lazy_init's other assert, "libcudart functions
  unavailable", and the words in a line that is no exception are not this).
- w11301 (read as labelled, unknown): torch_npu's SetDevice refusing an invalid device ID (error 107001) in one Ray
  worker's init_device, the visible NPUs narrowed by Ray: a device-visibility setup no kind names.

The positive tests below failed at 12aad7d6 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w113{n:02d}" for n in range(1, 3)]
_ROPE = ("vllm/model_executor/layers/rotary_embedding.py", 653, "_compute_inv_freq",
         "pos_freqs = self.base**(torch.arange(")
_CACHE = ("vllm/model_executor/layers/rotary_embedding.py", 671, "_compute_cos_sin_cache",
          "inv_freq = self._compute_inv_freq(self.scaling_factor)")
_DEVICE_CTX = ("torch/utils/_device.py", 106, "__torch_function__", "return func(*args, **kwargs)")
_LAZY = ("torch/cuda/__init__.py", 310, "_lazy_init", 'raise AssertionError("Torch not compiled with CUDA enabled")')
_NO_CUDA = "AssertionError: Torch not compiled with CUDA enabled"
_WORKER = "ERROR 04-14 13:53:52 worker_base.py:593] "


def test_the_round_is_folded_with_its_two_logs():
    assert folded_round(VLLM_MANIFEST, 113) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


def test_the_invalid_npu_device_stays_unknown():
    assert reads(read_log("w11301.log")) == (True, "unknown", "launch")


# --- w11302: torch built without CUDA, reached by code that takes a CUDA path -----------------------------------------

def test_torch_without_cuda_under_a_cuda_path_is_a_dependency_mismatch():
    assert said(read_log("w11302.log")) == (True, "dependency_mismatch", "vllm_torch_without_cuda")
    assert reads(read_log("w11302.log")) == (True, "dependency_mismatch", "load_weights")


def test_the_assertion_at_torchs_lazy_init_reads_the_same():
    text = vllm_traceback(_CACHE, _ROPE, _DEVICE_CTX, _LAZY, exc=_NO_CUDA, head=_WORKER)
    assert vllm_signature(text) == "vllm_torch_without_cuda"
    assert said(text)[:2] == (True, "dependency_mismatch")


def test_lazy_inits_other_assertion_is_not_this():
    broken = ("torch/cuda/__init__.py", 405, "_lazy_init", "raise AssertionError(")
    text = vllm_traceback(_CACHE, _ROPE, _DEVICE_CTX, broken, head=_WORKER,
                          exc="AssertionError: libcudart functions unavailable. It looks like you have a broken build?")
    assert vllm_signature(text) != "vllm_torch_without_cuda"


def test_the_words_outside_an_assertion_are_not_this():
    warned = ("INFO 04-14 13:53:34 api_server.py:900] vLLM API server version 0.7.3\n"
              "WARNING 04-14 13:53:35 utils.py:100] Cannot query the CUDA device: Torch not compiled with CUDA "
              "enabled\n"
              "INFO 04-14 13:53:40 launcher.py:29] Route: /v1/completions, Methods: POST\n"
              "INFO:     Application startup complete.\n")
    assert vllm_signature(warned) != "vllm_torch_without_cuda"
    raised = vllm_traceback(_CACHE, _ROPE, exc="RuntimeError: no CUDA device, Torch not compiled with CUDA enabled?",
                            head=_WORKER)
    assert vllm_signature(raised) != "vllm_torch_without_cuda"


# --- the lines the rule cites ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.7.3", "vllm/model_executor/layers/rotary_embedding.py",
     "        pos_freqs = self.base**(torch.arange(\n"
     '            0, self.rotary_dim, 2, dtype=torch.float, device="cuda") /'),
    ("0.7.3", "vllm/model_executor/layers/rotary_embedding.py",
     "        t = torch.arange(self.max_position_embeddings * self.scaling_factor,\n"
     '                         device="cuda",'),
    ("0.8.0", "vllm/model_executor/layers/rotary_embedding.py",
     "                         device=current_platform.device_type) /"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


def test_the_cited_line_is_torchs_own():
    assert_in_library_wheel("torch", "2.8.0", "torch/cuda/__init__.py",
                            '        if not hasattr(torch._C, "_cuda_getDeviceCount"):\n'
                            '            raise AssertionError("Torch not compiled with CUDA enabled")')
