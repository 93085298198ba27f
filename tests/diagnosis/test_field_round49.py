"""Held-out round 49 (issue 24): its one miss, h49001's kind and phase, read by a rule from torch_npu's and SGLang's source.

Round 49 (h49001-h49005; excerpts of issue and pull-request threads) was measured once on main at a9e178e
(with the round's logs, 2a21843: crashed 5/5, kind 4/5, phase 3/4); docs/diagnosis.md, "Held-out round 49",
explains the miss. h49001 is the EAGLE draft NPU graph runner's _replay_update thread dying inside torch_npu's
NPUGraph.update, cut at update_capture_record's 'raise RuntimeError('. torch_npu raises there where the inputs
handed to the update do not match the operators recorded at capture (torch_npu 2.10.0 torch_npu/npu/graphs.py:282,
from NPUGraph.update :395), and SGLang updates a captured NPU graph only to replay it (0.5.13
hardware_backend/npu/graph_runner/eagle_draft_npu_graph_runner.py:90 in _replay_update, a thread _replay starts
for each replay, :105-110). ddlab read it unknown at launch; npu_graph_update_raised reads it cuda_graph_replay at
serving, as labelled. A rule's test reads the corpus log, texts written from the same source in other forms, and
near misses that must not read the same way; the positive tests fail on a9e178e. A text cited from a wheel is
checked there where it is unpacked (/work/wheels/torch_npu-2.10.0 holds graphs.py; skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, reads, real, said

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 49}

_SITE = "/usr/local/python3.11.14/lib/python3.11/site-packages/"
_RUNNERS = _SITE + "sglang/srt/hardware_backend/npu/graph_runner/"
_NPU_GRAPHS = _SITE + "torch_npu/npu/graphs.py"
_GRAPHS_PY = "torch_npu/npu/graphs.py"
_EAGLE_NPU = "sglang/srt/hardware_backend/npu/graph_runner/eagle_draft_npu_graph_runner.py"
# torch_npu 2.10.0 graphs.py:282-288: the message, and pta_error's "[ERROR] ... ERR00001 PTA invalid parameter"
# (torch_npu/utils/_error_code.py:64, :71) as the tuple's second element
_REFUSED = ("RuntimeError: ('Currently, there are 54 operators that need to be updated by capture, and there are "
            "only 2 elements in the incoming cpu_update_input list', '\\n[ERROR] 2026-06-05-10:12:01 (PID:4242, "
            "Device:0, RankID:0) ERR00001 PTA invalid parameter')")


def test_round49_is_folded_into_work_with_no_label_disputed():
    assert sorted(_ROUND) == [f"h4900{i}" for i in range(1, 6)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())
    assert [log["kind"] for log in _ROUND.values()].count("unknown") == 4


def test_the_update_thread_cut_in_torch_npu_reads_as_labelled():
    assert_reads_as_labelled("h49001", "npu_graph_update_raised")
    found = real("h49001")
    assert found.phase == "serving" and "NPUGraph.update" in found.suggestion


def test_the_rest_of_the_round_reads_as_labelled():
    for log_id in ("h49002", "h49003", "h49004", "h49005"):
        assert_reads_as_labelled(log_id, None)


# --- the same failure in other forms, written from SGLang's and torch_npu's source ---------------------------

def _thread(runner: str, target: str, line: int, code: str, torch_npu: bool = True, exc: str | None = None) -> str:
    """threading.excepthook's print of a runner's update thread (CPython 3.11 threading.py)."""
    text = (f"Exception in thread Thread-8 ({target}):\nTraceback (most recent call last):\n"
            '  File "/usr/local/python3.11.14/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
            "    self.run()\n"
            '  File "/usr/local/python3.11.14/lib/python3.11/threading.py", line 982, in run\n'
            "    self._target(*self._args, **self._kwargs)\n"
            f'  File "{_RUNNERS}{runner}", line {line}, in {target}\n    {code}\n')
    if torch_npu:
        text += (f'  File "{_NPU_GRAPHS}", line 395, in update\n'
                 "    self.graph_dispatch_mode.update_capture_record(cpu_update_input)\n"
                 f'  File "{_NPU_GRAPHS}", line 282, in update_capture_record\n    raise RuntimeError(\n')
    return text + (f"{exc}\n" if exc else "")


def test_the_whole_exception_of_the_draft_runners_update_reads_the_same():
    text = _thread("eagle_draft_npu_graph_runner.py", "_replay_update", 90, "self.graphs[self.bs].update(",
                   exc=_REFUSED)
    assert reads(text) == (True, "cuda_graph_replay", "serving")
    assert said(text)[2] == "npu_graph_update_raised"


def test_the_decode_runners_update_thread_cut_at_its_own_frame_reads_the_same():
    # 0.5.13 npu_graph_runner.py:145 in _update_inputs, the thread replay starts at :218
    text = _thread("npu_graph_runner.py", "_update_inputs", 145, "self.graphs[self.bs].update(", torch_npu=False)
    assert reads(text) == (True, "cuda_graph_replay", "serving")


def test_the_update_run_by_0523s_backend_reads_the_same():
    # 0.5.23 npu_cudagraph_backend.py:185-189: graph.update submitted to an executor, the replay, then
    # update_future.result() re-raising in the scheduler
    text = ("[2026-06-05 10:12:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{_RUNNERS}npu_graph_runner.py", line 418, in replay\n'
            "    output = self.backend.replay_with_input_update(\n"
            f'  File "{_RUNNERS}npu_cudagraph_backend.py", line 189, in replay_with_input_update\n'
            "    update_future.result()\n"
            '  File "/usr/local/python3.11.14/lib/python3.11/concurrent/futures/_base.py", line 449, in result\n'
            "    return self.__get_result()\n"
            '  File "/usr/local/python3.11.14/lib/python3.11/concurrent/futures/thread.py", line 58, in run\n'
            "    result = self.fn(*self.args, **self.kwargs)\n"
            f'  File "{_NPU_GRAPHS}", line 395, in update\n'
            "    self.graph_dispatch_mode.update_capture_record(cpu_update_input)\n"
            f'  File "{_NPU_GRAPHS}", line 282, in update_capture_record\n    raise RuntimeError(\n'
            f"{_REFUSED}\n")
    assert reads(text) == (True, "cuda_graph_replay", "serving")


# --- near misses: the same torch_npu file and frames under a capture ------------------------------------------
# 0.5.13 speculative/eagle_draft_cuda_graph_runner.py:196 (self.capture() in __init__, inside the try that
# re-raises "Capture cuda graph failed"), :258, :385; eagle_draft_npu_graph_runner.py:77; torch_npu 2.10.0
# graphs.py:533 (graph.__exit__), :370 (NPUGraph.capture_end)

_DRAFT = _SITE + "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py"
_CAPTURE = ("Traceback (most recent call last):\n"
            f'  File "{_DRAFT}", line 196, in __init__\n    self.capture()\n'
            f'  File "{_DRAFT}", line 258, in capture\n    CudaGraphRunner.capture(self)\n'
            f'  File "{_DRAFT}", line 385, in capture_one_batch_size\n    out = self._capture_graph(\n')


def test_torch_npu_failing_under_the_draft_runners_capture_is_a_capture():
    text = (_CAPTURE + f'  File "{_RUNNERS}eagle_draft_npu_graph_runner.py", line 77, in _capture_graph\n'
            "    out = run_once_fn()\n"
            f'  File "{_NPU_GRAPHS}", line 533, in __exit__\n    self.npu_graph.capture_end()\n'
            f'  File "{_NPU_GRAPHS}", line 370, in capture_end\n    super().capture_end()\n')
    assert said(text)[1:] == ("cuda_graph_capture", "capture_error")


def test_the_update_frames_under_a_capture_are_not_read_as_a_replay():
    # SGLang never updates a graph while it captures (above); a traceback that shows it is the capture's
    text = (_CAPTURE + f'  File "{_RUNNERS}eagle_draft_npu_graph_runner.py", line 90, in _replay_update\n'
            "    self.graphs[self.bs].update(\n"
            f'  File "{_NPU_GRAPHS}", line 395, in update\n'
            "    self.graph_dispatch_mode.update_capture_record(cpu_update_input)\n"
            f'  File "{_NPU_GRAPHS}", line 282, in update_capture_record\n    raise RuntimeError(\n')
    assert said(text)[1:] == ("cuda_graph_capture", "capture_error")


# --- the source lines the rule cites ----------------------------------------------------------------------------

def test_torch_npu_raises_in_the_update_where_the_inputs_do_not_match_the_capture():
    assert_at_line("torch_npu", "2.10.0", _GRAPHS_PY, 270, "def update_capture_record(self, cpu_update_input):")
    assert_at_line("torch_npu", "2.10.0", _GRAPHS_PY, 281,
                   "if len(cpu_update_input) != len(self.graph_dispatch_records):")
    assert_at_line("torch_npu", "2.10.0", _GRAPHS_PY, 282, "raise RuntimeError(")
    assert_at_line("torch_npu", "2.10.0", _GRAPHS_PY, 283, 'f"Currently, there are {len(self.graph_dispatch_records)} "')
    assert_at_line("torch_npu", "2.10.0", _GRAPHS_PY, 388, "def update(self, cpu_update_input):")
    assert_at_line("torch_npu", "2.10.0", _GRAPHS_PY, 395,
                   "self.graph_dispatch_mode.update_capture_record(cpu_update_input)")


def test_sglang_updates_a_captured_npu_graph_only_to_replay_it():
    assert_at_line("sglang", "0.5.13", _EAGLE_NPU, 86, "def _replay_update(self, seq_lens_list):")
    assert_at_line("sglang", "0.5.13", _EAGLE_NPU, 90, "self.graphs[self.bs].update(")
    assert_at_line("sglang", "0.5.13", _EAGLE_NPU, 96, "def _replay(self, forward_batch: ForwardBatch):")
    assert_at_line("sglang", "0.5.13", _EAGLE_NPU, 106, "target=self._replay_update, args=(seq_lens_for_each_draft_step,)")
    assert_at_line("sglang", "0.5.13", _EAGLE_NPU, 109, "self.graphs[self.bs].replay()")
    assert_at_line("sglang", "0.5.13", "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", 504,
                   "self._replay(forward_batch)")
    runner = "sglang/srt/hardware_backend/npu/graph_runner/npu_graph_runner.py"
    assert_at_line("sglang", "0.5.13", runner, 145, "self.graphs[self.bs].update(")
    assert_at_line("sglang", "0.5.13", runner, 218,
                   "thread = threading.Thread(target=self._update_inputs, args=(seq_lens,))")
    backend = "sglang/srt/hardware_backend/npu/graph_runner/npu_cudagraph_backend.py"
    assert_at_line("sglang", "0.5.23", backend, 185, "update_future = self._update_executor.submit(")
    assert_at_line("sglang", "0.5.23", backend, 189, "update_future.result()")
