"""Held-out round 80 (issue 24): the scheduler's busy memory check; a quantization method's post-load step.

Round 80 (h80001-h80009; excerpts of SGLang issue and PR threads) was measured once on main at e1a91c0 (with the
round's logs, fd16810): crashed 9/9, kind 8/9, phase 4/5. docs/diagnosis.md, "Held-out round 80", tells the round.
Both misses were ddlab's:

- h80003, "AssertionError: SWA Pool Mem Leak Detected! [swa] total=322816, ...": the scheduler's check after each
  batch under SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY, asserting the pools' accounting (0.5.23
  managers/scheduler_components/invariant_checker.py:344-345; 0.5.12 managers/scheduler_runtime_checker_mixin.py:
  448-449; 0.5.10 :248, "Mem Leak Detected! total_tokens=..."): the leak the idle check reports, found while
  serving, slots_exhausted (busy_memory_check_failed, crashes/kinds/slots.py).
- h80007, faulthandler's frames ending in fp8.py's process_weights_after_loading: the quantization method's
  post-load step, which the model loaders call right after load_weights (0.5.5.post3 model_loader/loader.py:618;
  0.5.23 :1089), is the weights being loaded, load_weights (crashes/frames.py). The frames' missing indentation
  was not the cause: the function was not among the load frames.
Each positive test fails on fd16810.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real, said

_IDS = folded_round(REAL_MANIFEST, 80)


def test_round80_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h800{n:02d}" for n in range(1, 10)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h80003", "busy_memory_check_failed"), ("h80007", "native_crash"),
], ids=["h80003", "h80007"])
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h80003s_phase_is_serving_as_labelled():
    # its phase is not in the log (phase_in_log false), so the round's measure did not count it
    assert real("h80003").phase == "serving"


# --- h80003: the busy check's assertion --------------------------------------------------------------------------

_HEAD = "[2026-06-10 08:12:31 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
_SRT = "/sgl-workspace/sglang/python/sglang/srt/"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_SRT}{path}", line {line}, in {func}\n    {code}\n'


_LOOP_0523 = (_frame("managers/scheduler.py", 2134, "event_loop_overlap",
                     "self.invariant_checker.self_check_during_busy()")
              + _frame("managers/scheduler_components/invariant_checker.py", 344, "self_check_during_busy",
                       'assert not full_leak, f"Full Pool Mem Leak Detected! {full_msg}"'))
_LOOP_0510 = (_frame("managers/scheduler.py", 1383, "event_loop_overlap", "self.self_check_during_busy()")
              + _frame("managers/scheduler_runtime_checker_mixin.py", 248, "self_check_during_busy",
                       "total_tokens == self.max_total_num_tokens"))
_LOOP_0512 = (_frame("managers/scheduler.py", 1616, "event_loop_overlap", "self.self_check_during_busy()")
              + _frame("managers/scheduler_runtime_checker_mixin.py", 449, "self_check_during_busy",
                       'assert not swa_leak, f"SWA Pool Mem Leak Detected! {swa_msg}"'))


# 0.5.23's full pool in the scheduler's traceback, 0.5.10's one pool ("Mem Leak Detected! total_tokens=..."), 0.5.12's
# SWA pool from the mixin, and h80003's line alone (its code line dropped)
@pytest.mark.parametrize("text", [
    _HEAD + _LOOP_0523 + "AssertionError: Full Pool Mem Leak Detected! [full] total=1048576, available=1024, "
    "evictable=1040384, protected=4096, session_held=0, uncached=2560\n",
    _HEAD + _LOOP_0510 + "AssertionError: Mem Leak Detected! total_tokens=523264 vs self.max_total_num_tokens=524288\n",
    _HEAD + _LOOP_0512 + "AssertionError: SWA Pool Mem Leak Detected! [swa] total=65536, available=512, "
    "evictable=60416, protected=1024, session_held=0, uncached=3072\n",
    "AssertionError: SWA Pool Mem Leak Detected! [swa] total=322816, available=2816, evictable=308992, "
    "protected=2560, session_held=0, uncached=8704\n",
], ids=["0.5.23-full", "0.5.10", "0.5.12-swa", "line-alone"])
def test_the_busy_memory_checks_leak_is_slots_exhausted_while_serving(text):
    assert said(text) == (True, "slots_exhausted", "busy_memory_check_failed")
    assert reads(text)[2] == "serving"


# near misses: the check's own log line at level 2 (no leak asserted), a user's prose, another assertion in the same
# frames, the idle check's leak (its own signature)
@pytest.mark.parametrize("text", [
    "[2026-06-10 08:12:31 TP0] [Mem Check (BUSY)] [swa] total=322816, available=2816, evictable=308992, "
    "protected=2560, session_held=0, uncached=8704\n",
    "With SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY=1 I get the SWA Pool Mem Leak Detected message sometimes\n",
    _HEAD + _LOOP_0523 + "AssertionError\n",
    _HEAD + _frame("managers/scheduler.py", 5296, "self_check_during_idle", "self._report_leak(\"pool\", msg)")
    + "ValueError: token_to_kv_pool_allocator memory leak detected! available_size=10, protected_size=0\n",
], ids=["info-line", "prose", "bare-assert", "idle-check"])
def test_other_texts_are_not_the_busy_checks_leak(text):
    assert said(text)[2] != "busy_memory_check_failed"


# --- h80007: a quantization method's post-load step ----------------------------------------------------------------

_DUMP = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f3c1d7fe740 (most recent call first):\n"


# 0.5.5.post3's frames as faulthandler indents them (fp8_kernel.py:1425 aiter's static_per_tensor_quant), 0.5.23's
# (utils.py:186, fp8.py:1249), and a Python traceback cut below the post-load step
@pytest.mark.parametrize("text", [
    _DUMP + f'  File "{_SRT}layers/quantization/fp8_kernel.py", line 1425 in scaled_fp8_quant\n'
    f'  File "{_SRT}layers/quantization/utils.py", line 155 in requantize_with_max_scale\n'
    f'  File "{_SRT}layers/quantization/fp8.py", line 434 in process_weights_after_loading\n',
    _DUMP + f'  File "{_SRT}layers/quantization/utils.py", line 186 in requantize_with_max_scale\n'
    f'  File "{_SRT}layers/quantization/fp8.py", line 1249 in process_weights_after_loading\n',
    "Traceback (most recent call last):\n"
    + _frame("layers/quantization/fp8.py", 1249, "process_weights_after_loading",
             "weight_scale, weight = requantize_with_max_scale(")
    + _frame("layers/quantization/utils.py", 186, "requantize_with_max_scale",
             "weight[start:end, :], _ = scaled_fp8_quant(weight_dq, max_w_scale)")
    + "RuntimeError: CUDA error: an illegal memory access was encountered\n",
], ids=["0.5.5.post3-dump", "0.5.23-dump", "traceback"])
def test_a_crash_in_the_post_load_step_is_at_load_weights(text):
    assert reads(text)[2] == "load_weights"


# near misses: the same quantization module serving a batch (its apply under the model's forward), a segfault with
# no frame, a function whose name only begins the same
@pytest.mark.parametrize("text", [
    _DUMP + f'  File "{_SRT}layers/quantization/fp8_kernel.py", line 1425 in scaled_fp8_quant\n'
    f'  File "{_SRT}layers/quantization/fp8.py", line 1307 in apply\n'
    f'  File "{_SRT}managers/scheduler.py", line 2134 in event_loop_overlap\n',
    "Fatal Python error: Segmentation fault\n",
    _DUMP + f'  File "{_SRT}layers/quantization/fp8.py", line 1249 in process_weights_after_loading_hook\n'
    f'  File "{_SRT}managers/scheduler.py", line 2134 in event_loop_overlap\n',
], ids=["serving-apply", "no-frame", "other-name"])
def test_other_frames_are_not_the_post_load_step(text):
    assert reads(text)[2] != "load_weights"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py", 344,
     'assert not full_leak, f"Full Pool Mem Leak Detected! {full_msg}"'),
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py", 345,
     'assert not swa_leak, f"SWA Pool Mem Leak Detected! {swa_msg}"'),
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py", 92,
     'f"[{pool_name}] {total=}, {available=}, {evictable=}, "'),
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler.py", 2057,
     "if envs.SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY.get():"),
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler.py", 2058, "self.invariant_checker.self_check_during_busy()"),
    ("sglang", "0.5.23", "sglang/srt/managers/scheduler.py", 2134, "self.invariant_checker.self_check_during_busy()"),
    ("sglang", "0.5.23", "sglang/srt/environ.py", 501, "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY = EnvInt(0)"),
    ("sglang", "0.5.12", "sglang/srt/managers/scheduler_runtime_checker_mixin.py", 449,
     'assert not swa_leak, f"SWA Pool Mem Leak Detected! {swa_msg}"'),
    ("sglang", "0.5.10", "sglang/srt/managers/scheduler_runtime_checker_mixin.py", 248,
     'f"Mem Leak Detected! {total_tokens=} vs {self.max_total_num_tokens=}"'),
    ("sglang", "0.5.10", "sglang/srt/environ.py", 219, "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY = EnvInt(0)"),
    ("sglang", "0.5.4", "sglang/srt/managers/scheduler_runtime_checker_mixin.py", 119,
     'f"Mem Leak Detected! {total_tokens=} vs {self.max_total_num_tokens=}"'),
    ("sglang", "0.5.4", "sglang/srt/environ.py", 133, "SGLANG_ENABLE_RUNTIME_MEM_LEAK_CHECK = EnvBool(False)"),
    ("sglang", "0.5.5.post3", "sglang/srt/model_loader/loader.py", 606,
     "def load_weights_and_postprocess(model, weights, target_device):"),
    ("sglang", "0.5.5.post3", "sglang/srt/model_loader/loader.py", 607, "model.load_weights(weights)"),
    ("sglang", "0.5.5.post3", "sglang/srt/model_loader/loader.py", 618,
     "quant_method.process_weights_after_loading(module)"),
    ("sglang", "0.5.5.post3", "sglang/srt/model_executor/model_runner.py", 915,
     "DefaultModelLoader.load_weights_and_postprocess(model, iter, target_device)"),
    ("sglang", "0.5.5.post3", "sglang/srt/layers/quantization/fp8_kernel.py", 1425,
     "static_per_tensor_quant(output, input, scale)"),
    ("sglang", "0.5.5.post3", "sglang/srt/layers/quantization/utils.py", 155,
     "weight[start:end, :], _ = scaled_fp8_quant(weight_dq, max_w_scale)"),
    ("sglang", "0.5.5.post3", "sglang/srt/layers/quantization/fp8.py", 434,
     "weight_scale, weight = requantize_with_max_scale("),
    ("sglang", "0.5.23", "sglang/srt/model_loader/loader.py", 1030,
     "DefaultModelLoader.postprocess_weights(model, target_device)"),
    ("sglang", "0.5.23", "sglang/srt/model_loader/loader.py", 1089,
     "quant_method.process_weights_after_loading(module)"),
    ("sglang", "0.5.23", "sglang/srt/layers/quantization/fp8.py", 1249,
     "weight_scale, weight = requantize_with_max_scale("),
    ("sglang", "0.5.23", "sglang/srt/layers/quantization/utils.py", 186,
     "weight[start:end, :], _ = scaled_fp8_quant(weight_dq, max_w_scale)"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
