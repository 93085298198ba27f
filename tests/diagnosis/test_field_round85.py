"""Held-out round 85 (issue 24): an exception line a paste shifted right; the detokenizer's loop waiting at launch.

Round 85 (h85001-h85007; excerpts of SGLang, verl and transformers threads and two repositories' notes files) was
measured once on main at 66fd625 (with the round's logs, 029046d): crashed 7/7, kind 6/7, phase 4/5.
docs/diagnosis.md, "Held-out round 85", tells the round. Both misses were ddlab's:

- h85001, get_quantization_config's frame, its code line and " ValueError: awq quantization requires some operators
  from vllm. Pleaes install vllm by `pip install vllm==0.7.2`" (0.4.4.post3 sglang/srt/layers/quantization/
  __init__.py:109-111), the exception line indented one space by the paste: it read as a second code line, the
  traceback as cut. An exception line (with its message) below a frame's code line and less indented than that code
  line is the exception line (diagnosis/cut_names.py unshifted); it reads dependency_mismatch, the advice naming the
  method, vllm and the install the message names (crashes/kinds/packages.py).
- h85002, eight ranks' nccl lines, then a detokenizer traceback cut at its event_loop frame (0.4.4.post1
  managers/detokenizer_manager.py:107, the recv from the scheduler; :263 run_detokenizer_process): that loop runs
  from launch on, so its frame alone marks no serving (crashes/frames.py _LOOP); its dispatcher's call, a handler's
  frame or the log's batch lines still do.

Each positive test fails on 029046d.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 85)


def test_round85_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h850{n:02d}" for n in range(1, 8)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_h85001_reads_dependency_mismatch_and_h85002_launch():
    assert (real("h85001").crashed, real("h85001").kind) == (True, "dependency_mismatch")
    assert "`pip install vllm==0.7.2`" in real("h85001").suggestion
    assert (real("h85002").crashed, real("h85002").kind, real("h85002").phase) == (True, "unknown", "launch")


# --- h85001: an exception line the paste shifted ---------------------------------------------------------------------

_QUANT = "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/quantization/"


# 0.4.5's frames as printed, the exception line shifted two spaces; 0.4.10.post2's marlin FP8 stub (fp8.py:25), shifted
@pytest.mark.parametrize(("text", "install"), [
    ('Traceback (most recent call last):\n'
     f'  File "{_QUANT}__init__.py", line 110, in get_quantization_config\n'
     '    raise ValueError(\n'
     '  ValueError: gptq_marlin quantization requires some operators from vllm. Pleaes install vllm by '
     '`pip install vllm==0.7.2`\n', "`pip install vllm==0.7.2`"),
    ('Traceback (most recent call last):\n'
     f'  File "{_QUANT}fp8.py", line 24, in dummy_func\n'
     '    raise ImportError(\n'
     ' ImportError: marlin FP8 requires some operators from vllm. Please install vllm.\n', "`pip install vllm`"),
], ids=["0.4.5-shifted", "0.4.10.post2-marlin-fp8"])
def test_a_shifted_exception_line_is_the_exception(text, install):
    found = diagnose(text, family="sglang")
    assert (found.crashed, found.kind) == (True, "dependency_mismatch")
    assert install in found.suggestion


# near misses: a line as deep as the code line (a second code line, the paste cut between), a shifted line with no
# message (no exception line a paste could shift), prose naming the message
@pytest.mark.parametrize("text", [
    f'  File "{_QUANT}__init__.py", line 110, in get_quantization_config\n'
    '    raise ValueError(\n'
    '    ValueError: awq quantization requires some operators from vllm.\n',
    f'  File "{_QUANT}__init__.py", line 110, in get_quantization_config\n'
    '    raise ValueError(\n'
    ' ValueError\n',
    "docker run ... and then awq quantization requires some operators from vllm, says the server\n",
], ids=["as-deep-as-code", "no-message", "prose"])
def test_other_lines_do_not_read_as_that_exception(text):
    assert reads(text, family="sglang")[1] != "dependency_mismatch"


# --- h85002: the detokenizer's loop ----------------------------------------------------------------------------------

_MGR = "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/"
_BOOT = ('  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n    self.run()\n'
         '  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run\n'
         '    self._target(*self._args, **self._kwargs)\n')


def _detok(run_line: int, loop_line: int, below: str = "") -> str:
    return (f'{_BOOT}  File "{_MGR}detokenizer_manager.py", line {run_line}, in run_detokenizer_process\n'
            f'    manager.event_loop()\n  File "{_MGR}detokenizer_manager.py", line {loop_line}, in event_loop\n'
            f'{below}')


# 0.4.10.post2's loop at its recv (:108 under :275), 0.5.23's (:188 under :561), each cut there
@pytest.mark.parametrize("text", [
    "[2025-08-01 10:00:00 TP0] sglang is using nccl==2.21.5\n" + _detok(275, 108),
    "[2026-05-01 10:00:00 TP0] Init torch distributed begin.\n" + _detok(561, 188),
], ids=["0.4.10.post2", "0.5.23"])
def test_the_detokenizers_loop_alone_is_no_serving(text):
    assert reads(text, family="sglang") == (True, "unknown", "launch")


# near misses: the loop calling its dispatcher (0.4.10.post2 :110) or trim_matched_stop (0.4.2 :143), a batch line
# before the cut loop, the data-parallel controller's loop (0.4.10.post2 data_parallel_controller.py:316)
@pytest.mark.parametrize("text", [
    _detok(275, 110, '    output = self._request_dispatcher(recv_obj)\n'),
    _detok(240, 143, '    self.trim_matched_stop(\n'),
    "[2025-08-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 20, token usage: 0.00, gen throughput "
    "(token/s): 40.00, #queue-req: 0\n" + _detok(275, 108),
    f'{_BOOT}  File "{_MGR}data_parallel_controller.py", line 320, in event_loop\n',
], ids=["dispatcher", "trim-matched-stop", "decode-batch", "dp-controller"])
def test_a_detokenizer_at_work_or_another_loop_stays_serving(text):
    assert reads(text, family="sglang")[2] == "serving"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.4.4.post3", "layers/quantization/__init__.py", 109, "raise ValueError("),
    ("0.4.4.post3", "layers/quantization/__init__.py", 110, "quantization requires some operators from vllm. "),
    ("0.4.4.post3", "layers/quantization/__init__.py", 111, "Pleaes install vllm by `pip install vllm==0.7.2`"),
    ("0.4.5", "layers/quantization/__init__.py", 111, "quantization requires some operators from vllm. "),
    ("0.4.10.post2", "layers/quantization/__init__.py", 118, "install vllm by `pip install vllm==0.9.0.1`"),
    ("0.4.10.post2", "layers/quantization/fp8.py", 25, "marlin FP8 requires some operators from vllm."),
    ("0.4.4.post1", "managers/detokenizer_manager.py", 107, "recv_obj = self.recv_from_scheduler.recv_pyobj()"),
    ("0.4.4.post1", "managers/detokenizer_manager.py", 263, "manager.event_loop()"),
    ("0.4.10.post2", "managers/detokenizer_manager.py", 106, "def event_loop(self):"),
    ("0.4.10.post2", "managers/detokenizer_manager.py", 110, "output = self._request_dispatcher(recv_obj)"),
    ("0.4.10.post2", "managers/data_parallel_controller.py", 316, "def event_loop(self):"),
    ("0.4.2", "managers/detokenizer_manager.py", 143, "self.trim_matched_stop("),
    ("0.4.2", "managers/detokenizer_manager.py", 105, "assert len(output) > 0"),
    ("0.5.23", "managers/detokenizer_manager.py", 184, "def event_loop(self):"),
    ("0.5.23", "managers/detokenizer_manager.py", 188, "recv_obj = sock_recv(self.recv_from_scheduler)"),
    ("0.5.23", "managers/detokenizer_manager.py", 189, "output = self._request_dispatcher(recv_obj)"),
    ("0.5.23", "managers/detokenizer_manager.py", 228, "def handle_batch_embedding_out("),
    ("0.5.23", "managers/detokenizer_manager.py", 310, "def _decode_batch_token_id_output("),
    ("0.5.23", "managers/detokenizer_manager.py", 450, "def handle_batch_token_id_out("),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(release, path, line, text):
    assert_at_line("sglang", release, f"sglang/srt/{path}", line, text)
