"""Held-out round 89 (issue 24): sgl-kernel's functions called with arguments they do not take; a status check's
refused launch.

Round 89 (h89001-h89011; logs from public threads) was measured once on main at 395a1ce (with the round's logs,
6cdac4c): crashed 11/11, kind 9/11, phase 10/10. docs/diagnosis.md, "Held-out round 89", tells the round. Both
misses were ddlab's:

- h89003, a DeepSeek-V3 TP16 server from a source checkout: CUDA graph capture runs the MoE gate, and SGLang's
  biased_grouped_topk calls sgl-kernel's moe_fused_gate (imported by its bare name, 0.4.5.post1
  sglang/srt/layers/moe/topk.py:30; the release passes 5 arguments, :236, as its pin sgl-kernel==0.0.9.post1
  declares; sgl-kernel 0.1.0 sgl_kernel/moe.py:37 takes 7) with 7: "TypeError: moe_fused_gate() takes 5 positional
  arguments but 7 were given". The kernel library is another version than the source (crashes/kinds/packages.py
  kernel_call_mismatch), wherever it surfaces, capture included.
- h89004, a Mixtral server: sgl-kernel's rmsnorm raised "RMSNorm failed with error code invalid configuration
  argument", flashinfer's norm status check (flashinfer 0.5.0 data/csrc/norm.cu:47-48) with
  cudaErrorInvalidConfiguration's text: a refused launch, kernel_config_unsupported (device_crashes/status_checks.py
  status_launch_refused).

Each positive test fails on 6cdac4c.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 89)


def test_round89_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h890{n:02d}" for n in range(1, 12)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "reading"), [
    ("h89003", (True, "dependency_mismatch", "graph_capture")),
    ("h89004", (True, "kernel_config_unsupported", "serving")),
], ids=["h89003", "h89004"])
def test_the_rounds_misses_read_as_labelled(log_id, reading):
    found = real(log_id)
    assert (found.crashed, found.kind, found.phase) == reading


_SRT = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
_HEAD = "[2025-04-28 08:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"


def _frame(path: str, line: int, func: str, code: str, root: str = _SRT) -> list[str]:
    return [f'  File "{root}/{path}", line {line}, in {func}', f"    {code}"]


def _traceback(*frames: list[str], error: str) -> str:
    return "\n".join([_HEAD, *(line for frame in frames for line in frame), error]) + "\n"


# --- h89003: sgl-kernel's function called with arguments it does not take ------------------------------------------

_SERVING = _frame("managers/tp_worker.py", 190, "forward_batch_generation",
                  "logits_output = self.model_runner.forward(forward_batch)")
_TOPK = _frame("layers/moe/topk.py", 236, "biased_grouped_topk", "return moe_fused_gate(")
_NORM = _frame("layers/layernorm.py", 64, "forward_cuda", "out = rmsnorm(x, self.weight.data, self.variance_epsilon)")


# the same call while serving, given a keyword the installed build does not declare; rmsnorm given too many
@pytest.mark.parametrize("text", [
    _traceback(_SERVING, _TOPK,
               error="TypeError: moe_fused_gate() got an unexpected keyword argument 'routed_scaling_factor'"),
    _traceback(_SERVING, _NORM, error="TypeError: rmsnorm() takes from 2 to 4 positional arguments but 5 were given"),
], ids=["moe-fused-gate-keyword", "rmsnorm-arity"])
def test_a_kernel_functions_refused_call_is_a_version_mismatch(text):
    assert reads(text, family="sglang")[:2] == (True, "dependency_mismatch")


# near misses: SGLang's own function (a model's forward), a user's function of the same name called from the user's
# script (the last frame is not SGLang's), a longer name that only ends in a kernel's
@pytest.mark.parametrize("text", [
    _traceback(_SERVING, _frame("models/deepseek_v2.py", 1391, "forward", "hidden_states, residual = layer("),
               error="TypeError: forward() takes 4 positional arguments but 5 were given"),
    _traceback(_frame("bench.py", 12, "main", "moe_fused_gate(a, b, 1, 1, 8, 0, 1.0)", root="/home/me"),
               error="TypeError: moe_fused_gate() takes 5 positional arguments but 7 were given"),
    _traceback(_SERVING, _frame("layers/moe/topk.py", 236, "biased_grouped_topk", "return my_moe_fused_gate("),
               error="TypeError: my_moe_fused_gate() takes 5 positional arguments but 7 were given"),
], ids=["sglangs-own-forward", "users-script", "longer-name"])
def test_other_type_errors_are_no_version_mismatch(text):
    assert reads(text, family="sglang")[1] != "dependency_mismatch"


# --- h89004: a status check's refused launch -----------------------------------------------------------------------

_TORCH_OP = _frame("torch/_ops.py", 1116, "__call__", "return self._op(*args, **(kwargs or {}))",
                   root="/usr/local/lib/python3.10/dist-packages")


# the fused add's check (norm.cu:104-105) and the QK norm's (:71-72)
@pytest.mark.parametrize("text", [
    _traceback(_SERVING, _TORCH_OP,
               error="RuntimeError: FusedAddRMSNorm failed with error code invalid configuration argument"),
    _traceback(_SERVING, _TORCH_OP,
               error="RuntimeError: QKRMSNorm failed with error code invalid configuration argument"),
], ids=["fused-add-rmsnorm", "qk-rmsnorm"])
def test_a_status_checks_invalid_configuration_is_a_refused_launch(text):
    assert reads(text, family="sglang")[:2] == (True, "kernel_config_unsupported")


# near misses: a fault text after the same words stays a fault; cudaErrorInvalidValue's text is no refused launch
@pytest.mark.parametrize("error", [
    "RuntimeError: RMSNorm failed with error code an illegal memory access was encountered",
    "RuntimeError: RMSNorm failed with error code invalid argument",
], ids=["illegal-access", "invalid-argument"])
def test_other_status_texts_keep_their_reading(error):
    assert reads(_traceback(_SERVING, _TORCH_OP, error=error), family="sglang")[1] != "kernel_config_unsupported"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.5.post1", "sglang/srt/layers/moe/topk.py", 30, "from sgl_kernel import moe_fused_gate"),
    ("sglang", "0.4.5.post1", "sglang/srt/layers/moe/topk.py", 236, "return moe_fused_gate("),
    ("sglang", "0.4.5.post1", "sglang-0.4.5.post1.dist-info/METADATA", 249, "sgl-kernel==0.0.9.post1"),
    ("sgl-kernel", "0.1.0", "sgl_kernel/moe.py", 37, "def moe_fused_gate("),
    ("flashinfer-python", "0.5.0", "flashinfer/data/csrc/norm.cu", 48, '"RMSNorm failed with error code "'),
    ("flashinfer-python", "0.5.0", "flashinfer/data/csrc/norm.cu", 72, '"QKRMSNorm failed with error code "'),
    ("flashinfer-python", "0.5.0", "flashinfer/data/csrc/norm.cu", 105, '"FusedAddRMSNorm failed with error code "'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
