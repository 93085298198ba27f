"""Held-out round 81 (issue 24): torch's collective check under the capture wrapper; flashinfer's plan/run dtype check;
Ray's tag naming an actor by its repr.

Round 81 (h81001-h81008; excerpts of SGLang and flashinfer issue threads) was measured once on main at e1a91c0 (with
the round's logs, 97afc9a): crashed 8/8, kind 6/8, phase 5/6. docs/diagnosis.md, "Held-out round 81", tells the
round. The three misses were ddlab's:

- h81002, "Exception: Capture cuda graph failed: Detected mismatch between collectives on ranks. Rank 13 is running
  collective: ...": torch's collective fingerprint check (ProcessGroupWrapper.cpp:170 at pytorch 017943b) under
  SGLang's capture wrapper (0.5.6.post2 model_executor/cuda_graph_runner.py:354-356): the ranks are out of step,
  nccl as the wrapper around a lost peer is (capture_peer_lost, crashes/kinds/runtime.py).
- h81004, flashinfer's frames cut at _check_cached_qkv_data_type's 'raise ValueError(': the function raises only its
  plan/run dtype mismatch (flashinfer v0.2.0 flashinfer/utils.py:199, :203; 0.5.0 :261, :265), read as
  kernel_config_unsupported, cut or whole (plan_dtype_mismatch, device_crashes/plan_dtypes.py).
- h81005, every line under Ray's tag "(WorkerDict(rank=54 pod=...) pid=384, ip=...) ": Ray names an actor by its repr
  where its class defines __repr__ (ray 2.43.0 _private/log_monitor.py:379-383, _private/worker.py:2091-2092), which
  RAY_TAG (diagnosis/viewer_prefixes.py) now takes, so the capture frames give graph_capture. Its kind, then read
  cuda_graph_capture (a traceback cut inside the capture that starts at the wrapper's own frame: 0.5.6
  cuda_graph_runner.py:344-346), is disputed (kind_disputed), as h41001's was.
Each positive test fails on 97afc9a.
"""

from __future__ import annotations

import re

import pytest

from ddlab.diagnosis.viewer_prefixes import RAY_TAG
from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real, said

_IDS = folded_round(REAL_MANIFEST, 81)


def test_round81_is_folded_into_work_with_h81005s_kind_disputed():
    assert _IDS == [f"h810{n:02d}" for n in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h81005"]
    assert REAL_MANIFEST["h81005"]["kind_disputed"] == ["unknown", "cuda_graph_capture"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h81002", "capture_peer_lost"), ("h81004", "plan_dtype_mismatch"),
], ids=["h81002", "h81004"])
def test_the_rounds_kind_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h81005_reads_at_graph_capture_as_its_second_look_says():
    found = real("h81005")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "cuda_graph_capture", "graph_capture", "capture_error")


_SRT = "/sgl-workspace/sglang/python/sglang/srt/"


def _frame(path: str, line: int, func: str, code: str, root: str = _SRT) -> str:
    return f'  File "{root}{path}", line {line}, in {func}\n    {code}\n'


# --- h81002: torch's collective check under the capture wrapper ----------------------------------------------------

_HEAD = "[2025-12-31 20:43:31 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):\n"
_WRAPPER_0562 = (_frame("model_executor/model_runner.py", 2448, "init_device_graphs",
                        "self.graph_runner = graph_runners[self.device](self)")
                 + _frame("model_executor/cuda_graph_runner.py", 354, "__init__", "raise Exception("))
_MISMATCH_BARRIER = ("Detected mismatch between collectives on ranks. Rank 3 is running collective: "
                     "CollectiveFingerPrint(SequenceNumber=17OpType=BARRIER), but Rank 0 is running collective: "
                     "CollectiveFingerPrint(SequenceNumber=45OpType=BARRIER).Collectives differ in the following "
                     "aspects: \t Sequence number: 17vs 45")
# the fingerprint of a collective with tensors (ProcessGroupWrapper.cpp's other branch of operator<<)
_MISMATCH_TENSORS = ("Detected mismatch between collectives on ranks. Rank 1 is running collective: "
                     "CollectiveFingerPrint(SequenceNumber=9, OpType=ALLREDUCE, TensorShape=[8, 7168], "
                     "TensorDtypes=BFloat16, TensorDeviceTypes=cuda), but Rank 0 is running collective: "
                     "CollectiveFingerPrint(SequenceNumber=9, OpType=ALLGATHER, TensorShape=[8, 7168], "
                     "TensorDtypes=BFloat16, TensorDeviceTypes=cuda).Collectives differ in the following aspects:  "
                     "Op type: ALLREDUCEvs ALLGATHER")
_POSSIBLE = ("Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
             "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n")


# 0.5.6.post2's frames with the barrier's fingerprint, the same with a collective's tensors, the wrapper's line alone
@pytest.mark.parametrize("text", [
    _HEAD + _WRAPPER_0562 + f"Exception: Capture cuda graph failed: {_MISMATCH_BARRIER}\n" + _POSSIBLE,
    _HEAD + _WRAPPER_0562 + f"Exception: Capture cuda graph failed: {_MISMATCH_TENSORS}\n" + _POSSIBLE,
    f"Exception: Capture cuda graph failed: {_MISMATCH_BARRIER}\n",
], ids=["0.5.6.post2-barrier", "0.5.6.post2-tensors", "line-alone"])
def test_a_capture_failure_over_a_collective_mismatch_is_nccl(text):
    assert said(text) == (True, "nccl", "capture_peer_lost")
    assert reads(text)[2] == "graph_capture"


# near misses: the wrapper around an OOM (stays the capture's, as a009 and h77005), the wrapper around another
# RuntimeError, torch's text outside the wrapper (not a capture's), a user's prose
@pytest.mark.parametrize("text", [
    _HEAD + _WRAPPER_0562 + "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.50 GiB\n",
    _HEAD + _WRAPPER_0562 + "Exception: Capture cuda graph failed: mismatch between shapes on ranks\n",
    _HEAD + _frame("distributed/parallel_state.py", 1183, "barrier", "torch.distributed.barrier(group=group)")
    + f"RuntimeError: {_MISMATCH_BARRIER}\n",
    "with TORCH_DISTRIBUTED_DEBUG=DETAIL capture failed, it said Detected mismatch between collectives on ranks\n",
], ids=["oom", "other-error", "outside-capture", "prose"])
def test_other_texts_are_not_a_capture_over_a_collective_mismatch(text):
    assert said(text)[2] != "capture_peer_lost"


# --- h81004: flashinfer's plan/run dtype check ---------------------------------------------------------------------

_SITE = "/usr/local/lib/python3.10/dist-packages/"
_RUN_020 = (_frame("flashinfer/prefill.py", 2330, "forward_return_lse", "return self.run_return_lse(q, k, v)", _SITE)
            + _frame("flashinfer/prefill.py", 2242, "run", "_check_cached_qkv_data_type(", _SITE))
_DECODE_050 = (_frame("layers/attention/flashinfer_backend.py", 731, "forward_decode",
                      "o = decode_wrapper.forward(")
               + _frame("flashinfer/decode.py", 1234, "run", "_check_cached_qkv_data_type(", _SITE))


# 0.2.0's ragged prefill with the q message, 0.5.0's decode with the k message under SGLang's frames, 0.5.0's cut at
# its raise (line 261), the message alone
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n" + _RUN_020
    + _frame("flashinfer/utils.py", 199, "_check_cached_qkv_data_type", "raise ValueError(", _SITE)
    + "ValueError: The dtype of q torch.bfloat16 does not match the q_data_type torch.float16 specified in plan "
      "function.\n",
    _HEAD + _DECODE_050
    + _frame("flashinfer/utils.py", 265, "_check_cached_qkv_data_type", "raise ValueError(", _SITE)
    + "ValueError: The dtype of k torch.float8_e4m3fn does not match the kv_data_type torch.bfloat16 specified in "
      "plan function.\n",
    _HEAD + _DECODE_050 + _frame("flashinfer/utils.py", 261, "_check_cached_qkv_data_type", "raise ValueError(", _SITE),
    "ValueError: The dtype of q torch.bfloat16 does not match the q_data_type torch.float16 specified in plan "
    "function.\n",
], ids=["0.2.0-q", "0.5.0-k", "0.5.0-cut", "line-alone"])
def test_the_plan_run_dtype_check_is_kernel_config_unsupported(text):
    assert said(text) == (True, "kernel_config_unsupported", "plan_dtype_mismatch")


# near misses: another of flashinfer's utils raising (expand_5d), the check's frame cut before its raise, another
# type with the same words, a user's prose
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n" + _RUN_020.replace("_check_cached_qkv_data_type(", "expand_5d(")
    + _frame("flashinfer/utils.py", 51, "expand_5d", "raise ValueError(", _SITE),
    "Traceback (most recent call last):\n" + _RUN_020
    + _frame("flashinfer/utils.py", 198, "_check_cached_qkv_data_type", "if q.dtype != dtype_q:", _SITE),
    "RuntimeError: The dtype of q torch.bfloat16 does not match the q_data_type torch.float16 specified in plan "
    "function.\n",
    "with flashinfer 0.2.0 I think the dtype of q does not match what plan expects\n",
], ids=["other-raise", "cut-before-raise", "other-type", "prose"])
def test_other_texts_are_not_the_plan_run_dtype_check(text):
    assert said(text)[2] != "plan_dtype_mismatch"


# --- h81005: Ray's tag naming an actor by its repr -----------------------------------------------------------------

_TAG = "(WorkerDict(rank=3 pod=trainer-0001) pid=1207, ip=10.0.0.7) "
_CAPTURE_056 = ("[2026-03-16 12:18:54 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
                + _frame("model_executor/cuda_graph_runner.py", 344, "__init__", "self.capture()")
                + _frame("model_executor/cuda_graph_runner.py", 502, "capture", "_capture_one_stream()")
                + _frame("model_executor/cuda_graph_runner.py", 486, "_capture_one_stream",
                         ") = self.capture_one_batch_size(bs, forward, stream_idx)"))


def _tagged(text: str, tag: str = _TAG) -> str:
    return "".join(tag + line + "\n" for line in text.splitlines())


_ESCAPED_056 = ("[2026-03-16 12:18:54 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
                + _frame("managers/scheduler.py", 2680, "run_scheduler_process", "scheduler = Scheduler(")
                + _frame("model_executor/model_runner.py", 2226, "init_device_graphs",
                         "self.graph_runner = graph_runners[self.device](self)")
                + _frame("model_executor/cuda_graph_runner.py", 344, "__init__", "self.capture()")
                + _frame("model_executor/cuda_graph_runner.py", 502, "capture", "_capture_one_stream()"))


# 0.5.6's capture under the tag, cut at the wrapper's frame (h81005's form: the capture's) and cut below the
# scheduler's own frames (an error that escaped the wrapper: unknown, but at graph_capture)
@pytest.mark.parametrize(("text", "signature"), [
    (_tagged(_CAPTURE_056), "capture_error"),
    (_tagged(_ESCAPED_056), None),
], ids=["cut-in-wrapper", "cut-escaped"])
def test_sglangs_lines_under_an_actors_repr_tag_are_read(text, signature):
    assert said(text)[2] == signature
    assert reads(text)[2] == "graph_capture"


@pytest.mark.parametrize("line", [
    "(WorkerDict(rank=54 pod=xxx-sg-0048-018) pid=384, ip=10.101.241.184) [2026-03-16 12:18:54 TP1] x",
    "(Actor() pid=12) x",
], ids=["h81005", "empty-repr"])
def test_rays_tag_takes_a_name_with_one_level_of_parentheses(line):
    assert re.match(RAY_TAG, line)


# near misses: two levels of parentheses, a name with no pid after it, parentheses that open the line's own text
@pytest.mark.parametrize("line", [
    "(WorkerDict(cfg=Cfg(a=1)) pid=384, ip=10.0.0.1) x",
    "(WorkerDict(rank=54) ip=10.0.0.1) x",
    "(see WorkerDict(rank=54)) pid=384 is gone",
], ids=["nested", "no-pid", "prose"])
def test_other_parentheses_are_not_rays_tag(line):
    assert not re.match(RAY_TAG, line)


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.6.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 353, "except RuntimeError as e:"),
    ("sglang", "0.5.6.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 354, "raise Exception("),
    ("sglang", "0.5.6.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 355,
     'f"Capture cuda graph failed: {e}\\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}"'),
    ("sglang", "0.5.6.post2", "sglang/srt/model_executor/model_runner.py", 2448,
     "self.graph_runner = graph_runners[self.device](self)"),
    ("sglang", "0.5.6", "sglang/srt/model_executor/cuda_graph_runner.py", 344, "self.capture()"),
    ("sglang", "0.5.6", "sglang/srt/model_executor/cuda_graph_runner.py", 345, "except RuntimeError as e:"),
    ("sglang", "0.5.6", "sglang/srt/model_executor/cuda_graph_runner.py", 486,
     ") = self.capture_one_batch_size(bs, forward, stream_idx)"),
    ("sglang", "0.5.6", "sglang/srt/model_executor/cuda_graph_runner.py", 502, "_capture_one_stream()"),
    ("sglang", "0.5.6", "sglang/srt/managers/scheduler.py", 2697, 'logger.error(f"Scheduler hit an exception: '),
    ("flashinfer-python", "0.5.0", "flashinfer/utils.py", 257, "def _check_cached_qkv_data_type("),
    ("flashinfer-python", "0.5.0", "flashinfer/utils.py", 261, "raise ValueError("),
    ("flashinfer-python", "0.5.0", "flashinfer/utils.py", 262,
     'f"The dtype of q {q.dtype} does not match the q_data_type {dtype_q} specified in plan function."'),
    ("flashinfer-python", "0.5.0", "flashinfer/utils.py", 265, "raise ValueError("),
    ("flashinfer-python", "0.5.0", "flashinfer/decode.py", 1234, "_check_cached_qkv_data_type("),
    ("ray", "2.43.0", "ray/_private/ray_constants.py", 320, 'LOG_PREFIX_ACTOR_NAME = ":actor_name:"'),
    ("ray", "2.43.0", "ray/_private/log_monitor.py", 379,
     "if next_line.startswith(ray_constants.LOG_PREFIX_ACTOR_NAME):"),
    ("ray", "2.43.0", "ray/_private/log_monitor.py", 381, "file_info.actor_name = next_line.split("),
    ("ray", "2.43.0", "ray/_private/worker.py", 2091, 'if data.get("actor_name"):'),
    ("ray", "2.43.0", "ray/_private/worker.py", 2092, "res = f\"{data['actor_name']} {res}\""),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
