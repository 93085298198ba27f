"""Held-out round 62 (issue 24): a scheduler traceback cut inside the capture wrapper, read as the capture failing.

Round 62 (h62001-h62008; excerpts of issue threads and a pull request) was measured once on main at 80bd1e0
(with the round's logs, 5f416d8): crashed 8/8, kind 7/8, phase 6/6. docs/diagnosis.md, "Held-out round 62",
tells the round. Its one miss, h62001 (ddlab said cuda_graph_capture; labelled unknown), is a label the second
look disputes, not a rule: the "Scheduler hit an exception" traceback starts at the graph runner's own
constructor, ``CudaGraphRunner.__init__`` on ``self.capture()`` (0.5.1 model_executor/cuda_graph_runner.py:384,
then ``capture`` :492, the log's lines), the try that re-raises a RuntimeError as "Capture cuda graph failed:
..." with SGLang's possible solutions (:382-388, :853-859). The scheduler logs ``traceback.format_exception`` of
what it caught (managers/scheduler.py:2603-2604, sglang/utils.py:79-82), which prints a chained exception's
first traceback from the frame that caught it: the capture failed, and the excerpt is cut before the wrapper's
exception line, the cut form h4004 and h4035 are labelled ``cuda_graph_capture`` for (h41001 and h51004
disputed the same way). Its kind is disputed (``kind_disputed`` [unknown, cuda_graph_capture]). No rule was
added, so no test here fails on 5f416d8: this module holds the fold, each log's reading, the cut form in other
releases' frames read the same, near misses that must not read so, and the wheel's lines the second look cites.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, reading, reads, real)

_IDS = folded_round(REAL_MANIFEST, 62)


def test_round62_is_folded_into_work_with_h62001s_kind_disputed():
    assert _IDS == [f"h620{i:02d}" for i in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h62001"]
    entry = REAL_MANIFEST["h62001"]
    assert entry["kind_disputed"] == ["unknown", "cuda_graph_capture"] and entry["kind"] == "unknown"
    assert all(cite in entry["second_look"]
               for cite in ("cuda_graph_runner.py:384", ":382-388", "scheduler.py:2603-2604", "h4004"))
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h62002", "dependency_mismatch"),   # SGLang's sgl-kernel version check, one line in inline code
    ("h62003", None),                    # an sglang-kt launch_server traceback cut after its runpy frames
    ("h62004", "asgi_exception"),        # uvicorn's one line 'Exception in ASGI application'
    ("h62005", None),                    # a 'sglang serve' command and one transformers FutureWarning
    ("h62006", None),                    # kvcached's patch lines on sglang 0.5.3
    ("h62007", None),                    # a TP0 scheduler traceback in event_loop_normal, cut
    ("h62008", "native_crash"),          # c10::Error frames, 'Fatal Python error: Aborted', faulthandler dumps
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_other_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h62001: a traceback cut inside the capture wrapper ----------------------------------------------

def test_h62001_reads_as_the_capture_failing_the_second_looks_reading():
    found = real("h62001")
    assert reading(found) == (True, "cuda_graph_capture", "graph_capture") and found.signature == "capture_error"


_HEAD = "[2025-08-25 22:39:27] Scheduler hit an exception: Traceback (most recent call last):\n"
_SRT = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_SRT}/{path}", line {line}, in {func}\n    {code}\n'


# the same cut form in other releases' frames, written from their source: 0.4.10.post2's constructor and
# capture (cuda_graph_runner.py:387 self.capture(), :492 capture_one_batch_size), 0.5.9's per-stream capture
# (cuda_graph_runner.py:370, :526, :513, h41001's), 0.5.19's decode runner (runner/decode_cuda_graph_runner.py:489)
@pytest.mark.parametrize("frames", [
    _frame("model_executor/cuda_graph_runner.py", 387, "__init__", "self.capture()")
    + _frame("model_executor/cuda_graph_runner.py", 492, "capture",
             ") = self.capture_one_batch_size(bs, forward)"),
    _frame("model_executor/cuda_graph_runner.py", 370, "__init__", "self.capture()")
    + _frame("model_executor/cuda_graph_runner.py", 526, "capture", "_capture_one_stream()")
    + _frame("model_executor/cuda_graph_runner.py", 513, "_capture_one_stream",
             ") = self.capture_one_batch_size(bs, forward, stream_idx)"),
    _frame("model_executor/runner/decode_cuda_graph_runner.py", 489, "__init__", "self.capture()"),
], ids=["0.4.10.post2", "0.5.9-per-stream", "0.5.19-decode-runner"])
def test_a_traceback_cut_inside_the_capture_wrapper_reads_as_the_capture_failing(frames):
    assert reads(_HEAD + frames) == (True, "cuda_graph_capture", "graph_capture")


_SCHED = _frame("managers/scheduler.py", 2561, "run_scheduler_process",
                "scheduler = Scheduler(")


_CAPTURE_CUT = (_HEAD + _SCHED + _frame("model_executor/cuda_graph_runner.py", 384, "__init__", "self.capture()")
                + _frame("model_executor/cuda_graph_runner.py", 492, "capture",
                         ") = self.capture_one_batch_size(bs, forward)") + "  ...\n")


# near misses that must not read as the capture failing: a traceback cut while the model loads (no capture frame),
# one cut in the eager runner, and the wrapper's own exception line naming a more specific cause, which that cause's
# kind takes: the norm kernel's error the thread's title names (flashinfer 0.5.0 csrc/norm.cu:48, 'RMSNorm failed
# with error code ' and cudaGetErrorString) on a GPU its build has no kernel for, an illegal memory access
@pytest.mark.parametrize(("text", "kind"), [
    (_HEAD + _SCHED + _frame("model_executor/model_runner.py", 245, "__init__", "self.initialize(min_per_gpu_memory)")
     + _frame("model_executor/model_runner.py", 291, "initialize", "self.load_model()"), "unknown"),
    (_HEAD + _frame("model_executor/runner/eager_runner.py", 198, "load_batch", "registry.fill_from("), "unknown"),
    (_CAPTURE_CUT + "Exception: Capture cuda graph failed: RMSNorm failed with error code no kernel image is "
                    "available for execution on the device\n", "unsupported_gpu"),
    (_CAPTURE_CUT + "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered\n",
     "cuda_illegal_access"),
], ids=["cut-while-loading", "cut-in-the-eager-runner", "wrapper-names-no-kernel-image", "wrapper-names-illegal-access"])
def test_a_cut_outside_the_capture_or_a_named_cause_does_not_read_as_the_capture_failing(text, kind):
    assert reads(text)[:2] == (True, kind)


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 382, "try:"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 384, "self.capture()"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 385, "except RuntimeError as e:"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 387,
     'f"Capture cuda graph failed: {e}\\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}"'),
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 492,
     ") = self.capture_one_batch_size(bs, forward)"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/cuda_graph_runner.py", 853, "CUDA_GRAPH_CAPTURE_FAILED_MSG = ("),
    ("sglang", "0.5.1", "sglang/srt/managers/scheduler.py", 2604, 'logger.error(f"Scheduler hit an exception: {traceback}")'),
    ("sglang", "0.5.1", "sglang/utils.py", 81, "traceback.format_exception(etype, value, tb)"),
    ("sglang", "0.3.6", "sglang/srt/model_executor/cuda_graph_runner.py", 184, "self.capture()"),
    ("sglang", "0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 387, "self.capture()"),
    ("sglang", "0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 492,
     ") = self.capture_one_batch_size(bs, forward)"),
    ("sglang", "0.5.9", "sglang/srt/model_executor/cuda_graph_runner.py", 370, "self.capture()"),
    ("sglang", "0.5.9", "sglang/srt/model_executor/cuda_graph_runner.py", 513,
     ") = self.capture_one_batch_size(bs, forward, stream_idx)"),
    ("sglang", "0.5.9", "sglang/srt/model_executor/cuda_graph_runner.py", 526, "_capture_one_stream()"),
    ("sglang", "0.5.1", "sglang/srt/model_executor/model_runner.py", 291, "self.load_model()"),
    ("sglang", "0.5.19", "sglang/srt/model_executor/runner/eager_runner.py", 198, "registry.fill_from("),
    ("flashinfer-python", "0.5.0", "flashinfer/data/csrc/norm.cu", 48, '<< "RMSNorm failed with error code "'),
    ("sglang", "0.5.19", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", 489, "self.capture()"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_second_look_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
