"""Held-out round 84 (issue 24): ServerArgs' size asserts read alone; DeepGEMM's host assert on a launch's status.

Round 84 (h84001-h84009; excerpts of SGLang, sparkrun and Xinference threads) was measured once on main at 66fd625
(with the round's logs, e14b924): crashed 9/9, kind 7/9, phase 5/5. docs/diagnosis.md, "Held-out round 84", tells
the round. Both kind misses were ddlab's:

- h84002, the one line "AssertionError: tp_size must be divisible by number of nodes": ServerArgs' own check of
  (tp_size * pp_size) against nnodes (0.4.10.post2 sglang/srt/server_args.py:1913, 0.5.23
  arg_groups/validation_hook.py:180), with no frame for server_args_error's context: bad_argument
  (SIZES_NOT_DIVISIBLE, crashes/kinds/arg_asserts.py), the advice naming `--tp-size` and `--nnodes`.
- h84006, DeepGEMM's "Assertion failed: .../fp8_gemm.cuh:435, condition: status == cudaSuccess", then "Fatal Python
  error: PyThreadState_Get": DG_HOST_ASSERT on cudaLaunchKernelEx's return (deepseek-ai/DeepGEMM 6db7e18
  deep_gemm/include/deep_gemm/fp8_gemm.cuh:431-435; the macro prints and throws, utils.cuh:20-28), a launch's
  cudaError of any kind, names no fault: round 77's device-assert line no longer reads a '== cudaSuccess' condition
  (device_crashes/device.py), and the fatal error reads native_crash. (DeepGEMM's source is a repository, not a
  wheel: its lines are not checked here.)

Each positive test fails on e14b924.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 84)


def test_round84_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h840{n:02d}" for n in range(1, 10)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_h84002_reads_bad_argument_and_h84006_native_crash():
    assert (real("h84002").crashed, real("h84002").kind, real("h84002").signature) == (True, "bad_argument",
                                                                                     "server_args_sizes")
    assert "`--tp-size`, `--nnodes`" in real("h84002").suggestion
    assert (real("h84006").crashed, real("h84006").kind) == (True, "native_crash")


# --- h84002: ServerArgs' size asserts ------------------------------------------------------------------------------

# 0.4.10.post2's traceback through check_server_args; the chunk's check and the attention groups' (0.5.23), logged
# with a stamp
@pytest.mark.parametrize(("text", "flags"), [
    ('Traceback (most recent call last):\n'
     '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/server_args.py", line 1913, in check_server_args\n'
     '    ) % self.nnodes == 0, "tp_size must be divisible by number of nodes"\n'
     "AssertionError: tp_size must be divisible by number of nodes\n", "`--tp-size`, `--nnodes`"),
    ("[2026-05-01 10:00:00] AssertionError: chunked_prefill_size must be divisible by page_size\n",
     "`--chunked-prefill-size`, `--page-size`"),
    ("AssertionError: tp_size must be divisible by moe_dp_size\n", "`--tp-size`, `--moe-dp-size`"),
], ids=["0.4.10.post2-frames", "chunk-page", "moe-dp"])
def test_server_args_size_asserts_are_bad_argument(text, flags):
    found = diagnose(text)
    assert (found.crashed, found.kind, found.phase, found.signature) == (True, "bad_argument", "launch",
                                                                         "server_args_sizes")
    assert flags in found.suggestion


# near misses: a model's head check (not a ServerArgs field), another field's words, the same words raised as
# another type, a user's prose
@pytest.mark.parametrize("text", [
    "AssertionError: num_heads must be divisible by tp_size\n",
    "AssertionError: hidden_size must be divisible by number of nodes\n",
    "ValueError: tp_size must be divisible by number of nodes\n",
    "with --nnodes 2 I get that tp_size must be divisible by number of nodes\n",
], ids=["heads", "hidden-size", "value-error", "prose"])
def test_other_divisibility_texts_are_not_server_args_sizes(text):
    assert diagnose(text).signature != "server_args_sizes"


# --- h84006: DeepGEMM's host assert on a CUDA call's status ----------------------------------------------------------

_FATAL = ("Fatal Python error: PyThreadState_Get: the function must be called with the GIL held, but the GIL is "
          "released (the current Python thread state is NULL)\nPython runtime state: initialized\n")
_DG = "/usr/local/lib/python3.10/dist-packages/deep_gemm/jit/../include/deep_gemm/"


# 97575bf's launch check (fp8_gemm.cuh:496), the smem attribute's check (6db7e18 :413), each then the fatal error
@pytest.mark.parametrize("text", [
    f"Assertion failed: {_DG}fp8_gemm.cuh:496, condition: status == cudaSuccess\n{_FATAL}",
    f"Assertion failed: {_DG}fp8_gemm.cuh:413, condition: cudaFuncSetAttribute(kernel, "
    f"cudaFuncAttributeMaxDynamicSharedMemorySize, smem_size) == cudaSuccess\n{_FATAL}",
], ids=["97575bf-launch", "6db7e18-smem"])
def test_a_host_assert_on_a_cuda_status_is_no_kernel_fault(text):
    assert reads(text)[:2] == (True, "native_crash")


# near misses: DeepGEMM's device assert (a trap, the fault: sgl-deep-gemm 0.1.4 common/exception.cuh:19-20), and a
# host assert with the fault's own words after it
@pytest.mark.parametrize("text", [
    f"Assertion failed: {_DG}fp8_gemm.cuh:120, condition: shape_m <= BLOCK_M * kNumBlocks\n{_FATAL}",
    f"Assertion failed: {_DG}fp8_gemm.cuh:435, condition: status == cudaSuccess\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n",
], ids=["device-assert", "fault-named"])
def test_a_device_assert_or_a_named_fault_stays_cuda_illegal_access(text):
    assert reads(text)[1] == "cuda_illegal_access"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.10.post2", "sglang/srt/server_args.py", 1913, '"tp_size must be divisible by number of nodes"'),
    ("sglang", "0.5.16", "sglang/srt/server_args.py", 7579, '"tp_size must be divisible by number of nodes"'),
    ("sglang", "0.5.19", "sglang/srt/arg_groups/validation_hook.py", 36, '"tp_size must be divisible by number of'),
    ("sglang", "0.5.23", "sglang/srt/arg_groups/validation_hook.py", 180, '"tp_size must be divisible by number of'),
    ("sglang", "0.5.23", "sglang/srt/arg_groups/validation_hook.py", 245,
     '"chunked_prefill_size must be divisible by page_size"'),
    ("sglang", "0.5.23", "sglang/srt/arg_groups/parallel_hook.py", 160, '"tp_size must be divisible by attn_cp_size"'),
    ("sglang", "0.5.23", "sglang/srt/arg_groups/parallel_hook.py", 173, '"tp_size must be divisible by moe_dp_size"'),
    ("sgl-deep-gemm", "0.1.4", "deep_gemm/include/deep_gemm/common/exception.cuh", 19,
     'printf("Assertion failed: %s:%d, condition: %s\\n", __FILE__, __LINE__, #cond);'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
