"""Held-out round 58 (issue 24): folded into work with no miss to read.

Round 58 (h58001-h58008; 3 dropped before the measurement; excerpts of issue threads and a pull request) was measured
once on main at 647d1b0 (with the round's logs, 1818060): crashed 8/8, kind 8/8, phase 4/4. docs/diagnosis.md, "Held-out
round 58", tells the round. No label was disputed and no rule was added: this module holds the fold (every log of
the round in `work`, none disputed, none listed in known_misses.json) and each log's reading against its labels, by
the signature that reads it. Two of the logs' own lines are checked against what they were copied from: h58004's
five frames are sglang 0.5.9's, the release its thread names (skipped where that wheel is not unpacked), and
h58002's capture bar keeps the width the thread's paste has.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round)

_IDS = folded_round(REAL_MANIFEST, 58)


def test_round58_is_folded_into_work_with_no_label_disputed_and_no_miss_left():
    assert _IDS == [f"h5800{i}" for i in range(1, 9)]
    assert not disputed(REAL_MANIFEST, _IDS)
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h58001", "amd_gpu_page_fault"),   # HSA's "Memory access fault by GPU node-N ... Reason: Unknown."
    ("h58002", None),                   # the scheduler's traceback cut before its exception, under the capture bar
    ("h58003", None),                   # a 0.1.x start: rpyc's "server started on" lines among transformers' notices
    ("h58004", None),                   # a batch's forward frames, cut both ends
    ("h58005", "cuda_illegal_access"),  # the NCCL watchdog's what() on an illegal memory access
    ("h58006", None),                   # "TpModelWorkerClient hit an exception" under Ray's bare colour codes
    ("h58007", None),                   # multiprocessing's "Process Process-N:" headers, cut after the first frame
    ("h58008", None),                   # the kt fork's per-layer GPU-expert lines
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


_SRT = "sglang/srt"


@pytest.mark.parametrize(("path", "line", "text"), [
    (f"{_SRT}/managers/scheduler.py", 1165, "batch_result = self.run_batch(batch)"),
    (f"{_SRT}/managers/scheduler.py", 2328, "batch_result = self.model_worker.forward_batch_generation("),
    (f"{_SRT}/managers/tp_worker.py", 456, "out = self.model_runner.forward("),
    (f"{_SRT}/model_executor/model_runner.py", 2401, "output = self._forward_raw("),
    (f"{_SRT}/model_executor/model_runner.py", 2500, "ret, can_run_graph = self.forward_extend("),
], ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_h58004s_frames_are_the_release_its_thread_names(path, line, text):
    assert text in (REAL / "h58004.log").read_text()
    assert_at_line("sglang", "0.5.9", path, line, text)


def test_h58002s_capture_bar_keeps_the_width_of_the_threads_paste():
    bar = (REAL / "h58002.log").read_text().splitlines()[0]
    assert bar.startswith("Capturing batches (bs=1 avail_mem=69.86 GB):   0%|")
    assert bar.endswith("| 0/1 [00:00<?, ?it/s]")
    assert (len(bar), bar.count(" " * 134)) == (206, 1)
