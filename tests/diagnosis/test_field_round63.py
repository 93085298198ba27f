"""Held-out round 63 (issue 24): a scheduler traceback that went through the capture wrapper uncaught.

Round 63 (h63001-h63003; excerpts of two SGLang issues and a pull request) was measured once on main at
eddc39a (with the round's logs, 816d8f2): crashed 3/3, kind 2/3, phase 2/2. docs/diagnosis.md, "Held-out
round 63", tells the round. Its one miss, h63003 (ddlab said cuda_graph_capture; labelled unknown), is
ddlab's: the "Scheduler hit an exception" traceback starts at ``run_scheduler_process`` and runs through the
graph runner's constructor on ``self.capture()`` (0.4.0 managers/scheduler.py:1489, model_runner.py:624,
model_executor/cuda_graph_runner.py:193, the log's lines), inside the try that re-raises a RuntimeError as
"Capture cuda graph failed: ..." (:191-196). The scheduler logs ``traceback.format_exception`` of what it
caught (scheduler.py:1497-1499, utils.py:28-31), a chained exception's cause first from the frame that caught
it: a first traceback that passes through the constructor's frame from its caller is an error the wrapper did
not catch, cut before its exception line, so nothing says the capture failed (h62001's form starts at the
constructor and stays ``cuda_graph_capture``); round 53's h53005, the same form with no header, labelled
``cuda_graph_capture``, is disputed on the same second look. The rule: ``capture_error``'s ``cut_absent``
(crashes/kinds/graphs.py ``_ESCAPED_WRAPPER``). Each positive test here fails on 816d8f2.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, reading, reads, real)

_IDS = folded_round(REAL_MANIFEST, 63)


def test_round63_is_folded_into_work_with_no_label_disputed():
    assert _IDS == ["h63001", "h63002", "h63003"]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    entry = REAL_MANIFEST["h53005"]   # round 53's log of the same form, disputed on the same second look
    assert entry["kind_disputed"] == ["cuda_graph_capture", "unknown"] and entry["kind"] == "cuda_graph_capture"
    assert all(cite in entry["second_look"] for cite in ("cuda_graph_runner.py:382-388", "_ESCAPED_WRAPPER"))


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h63001", None),   # one bare 'AssertionError: Committed KV cache already freed' line
    ("h63002", None),   # a launch cut after the vLLM platform logger's line
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_other_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h63003: a traceback through the capture wrapper's frame, cut ------------------------------------

def test_h63003_reads_as_a_cut_traceback_not_the_capture_failing():
    found = real("h63003")
    assert reading(found) == (True, "unknown", "graph_capture") and found.signature is None


def test_h53005_the_same_form_with_no_header_reads_as_its_second_look():
    found = real("h53005")
    assert reading(found) == (True, "unknown", "graph_capture") and found.signature is None


_HEAD = "[2025-08-25 22:39:27 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
_SRT = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_SRT}/{path}", line {line}, in {func}\n    {code}\n'


_CAPTURE_051 = (_frame("model_executor/cuda_graph_runner.py", 384, "__init__", "self.capture()")
                + _frame("model_executor/cuda_graph_runner.py", 492, "capture",
                         ") = self.capture_one_batch_size(bs, forward)"))
_CALLER_051 = (_frame("managers/scheduler.py", 2561, "run_scheduler_process", "scheduler = Scheduler(")
               + _frame("model_executor/model_runner.py", 1622, "init_device_graphs",
                        "CudaGraphRunner(self) if not _is_npu else NPUGraphRunner(self)"))


# the same form in 0.5.1's frames (scheduler.py:2561, model_runner.py:1622, cuda_graph_runner.py:384, :492),
# with Python 3.11's caret lines under the caller's frame, and cut right after the constructor's frame
@pytest.mark.parametrize("text", [
    _HEAD + _CALLER_051 + _CAPTURE_051,
    _HEAD + _CALLER_051.replace("NPUGraphRunner(self)\n", "NPUGraphRunner(self)\n    ^^^^^^^^^^^^^^^^^^^^^\n")
    + _CAPTURE_051,
    _HEAD + _CALLER_051 + _CAPTURE_051.split("  File", 2)[1].join(["  File", ""]),
], ids=["0.5.1", "0.5.1-carets", "0.5.1-cut-at-the-constructor"])
def test_a_cut_traceback_through_the_wrapper_from_its_caller_does_not_read_as_the_capture_failing(text):
    assert reads(text)[:2] == (True, "unknown")


# near misses that must still read as the capture failing: the wrapper's caught error (its traceback starts
# at the constructor, h62001's form), and the whole chain the wrapper writes, whose second traceback reaches
# the constructor on its ``raise`` (0.5.1 cuda_graph_runner.py:386), cut before 'Capture cuda graph failed'
@pytest.mark.parametrize("text", [
    _HEAD + _CAPTURE_051,
    _HEAD + _CAPTURE_051 + "  ...\nRuntimeError: CUDA error: operation failed due to a previous error during "
    "capture\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent "
    "call last):\n" + _CALLER_051 + _frame("model_executor/cuda_graph_runner.py", 386, "__init__",
                                            "raise Exception("),
], ids=["caught-by-the-wrapper", "the-wrappers-chain"])
def test_the_wrappers_own_forms_still_read_as_the_capture_failing(text):
    assert reads(text)[:2] == (True, "cuda_graph_capture")


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.0", "sglang/srt/managers/scheduler.py", 1489,
     "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)"),
    ("sglang", "0.4.0", "sglang/srt/managers/scheduler.py", 1497, "except Exception:"),
    ("sglang", "0.4.0", "sglang/srt/managers/scheduler.py", 1499,
     'logger.error(f"Scheduler hit an exception: {traceback}")'),
    ("sglang", "0.4.0", "sglang/srt/model_executor/model_runner.py", 624,
     "self.cuda_graph_runner = CudaGraphRunner(self)"),
    ("sglang", "0.4.0", "sglang/srt/model_executor/cuda_graph_runner.py", 191, "try:"),
    ("sglang", "0.4.0", "sglang/srt/model_executor/cuda_graph_runner.py", 193, "self.capture()"),
    ("sglang", "0.4.0", "sglang/srt/model_executor/cuda_graph_runner.py", 194, "except RuntimeError as e:"),
    ("sglang", "0.4.0", "sglang/srt/model_executor/cuda_graph_runner.py", 196, 'f"Capture cuda graph failed: {e}\\n"'),
    ("sglang", "0.4.0", "sglang/utils.py", 30, "traceback.format_exception(etype, value, tb)"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/model_runner.py", 1622,
     "CudaGraphRunner(self) if not _is_npu else NPUGraphRunner(self)"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 386, "raise Exception("),
    ("sglang", "0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 388, "except RuntimeError as e:"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_rule_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
