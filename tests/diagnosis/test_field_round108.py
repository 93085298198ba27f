"""Held-out round 108 (issue 24): verl's SGLang engines behind one another; torch_memory_saver's resume out of memory;
CUTLASS's TMA descriptor on a GPU without TMA.

Round 108 (h108001, h108003, h108004; threads of verl, torch_memory_saver and flash-attention) was measured once on
main at 74edfafa: crashed 2/3, kind 1/3, phase 0/1. docs/diagnosis.md, "Held-out round 108", tells the round. The
three misses were ddlab's:

- h108001 (verl-project/verl#1420): verl's rollout build, one SGLang engine per tensor-parallel group, launched by
  the group's first rank while the others wait at the group's barrier (sglang 0.4.6 entrypoints/verl_engine.py:53,
  :65; verl 76084d36 sglang_rollout.py:182-186); Ray prints both engines' bars into one log, and torch's watchdog on
  global rank 7 times the barrier out (SeqNum 3 of the 'mesh_tp' group, after 600 s). One engine's capture bar
  stands at 1/23 when the other's shard bar, at 0/4, prints after it: one engine captures its graphs only after its
  load (0.4.6 model_executor/model_runner.py:194, :222) and a drafter loads only after its target is built
  (managers/scheduler.py:261, :273), so that shard bar is another engine still loading. ddlab read the capture bar
  as the startup's furthest step; a startup is as far as its slowest engine now (diagnosis/engine_bars.py), as it
  is as far as its slowest stamped rank: load_weights.
- h108003 (fzyzcjy/torch_memory_saver#99): "[torch_memory_saver.cpp] cudaError error: 2 (out of memory) ...
  func=resume line=172". From 0.0.9 cu_mem_create returns cudaErrorMemoryAllocation after its soft line (0.0.9.post1,
  c29087a, csrc/utils.h:119-123) and resume checks it with CUDA_ERROR_CHECK (csrc/core.cpp:172), which prints that and
  calls exit(1) (csrc/utils.h:42-53): cuda_oom, crashed (crashes/kinds/memory.py, beside round 76's CUresult form).
- h108004 (Dao-AILab/flash-attention#1706): "Error: Failed to initialize the TMA descriptor 801", each after the
  descriptor's dump (NVIDIA/cutlass 62750a2 include/cute/atom/copy_traits_sm90_tma.hpp:1022-1036, flash-attention
  9a79170's submodule): cuTensorMapEncodeTiled answering 801, CUDA_ERROR_NOT_SUPPORTED, on a Jetson Orin (sm_87), a
  GPU without Hopper's TMA, handed FlashAttention-3's sm90 path: unsupported_gpu (device_crashes/archs.py).
Each positive test here fails on the staged commit (f44166e9's lib).
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, said

_IDS = folded_round(REAL_MANIFEST, 108)


def test_round108_is_folded_into_work_with_nothing_disputed_and_none_left():
    assert _IDS == ["h108001", "h108003", "h108004"]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"),
                         [("h108001", "nccl"), ("h108003", "cuda_oom"), ("h108004", "tma_unsupported")],
                         ids=["h108001", "h108003", "h108004"])
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h108001: two engines' bars, one still loading while the other captures -----------------------------------------

_WATCHDOG = ("(WorkerDict pid=66442) [Rank7]:[T506 14:16:14.487575902 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog "
             "caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
             "Timeout(ms)=600000) ran for 600066 milliseconds before timing out.\n")


def _shards(done: int, total: int = 4) -> str:
    percent = 100 * done // total
    return f"Loading safetensors checkpoint shards: {percent}% Completed | {done}/{total} [00:00<?, ?it/s]\n"


def _capture(done: int, total: int = 23) -> str:
    percent = 100 * done // total
    return f"Capturing batches (avail_mem=5.42 GB): {percent}%|| | {done}/{total} [00:00<00:12, 1.81it/s]\n"


_FIRST_LOADS = _shards(1) + "(WorkerDict pid=66010)\n(WorkerDict pid=66439)\n" + _shards(0)


# h108001's order (the other engine's bar at 0/4 after the capture bar), the engine behind mid-way through its shards
@pytest.mark.parametrize("text", [
    _FIRST_LOADS + _capture(0) + _capture(1) + _shards(0) + _WATCHDOG,
    _FIRST_LOADS + _capture(0) + _capture(5) + _shards(2) + _WATCHDOG,
], ids=["h108001", "mid-load"])
def test_an_engine_still_loading_while_another_captures_is_the_startups_phase(text):
    assert reads(text) == (True, "nccl", "load_weights")


# near misses: a drafter's load after its target's capture finished (23/23), the engine behind later finishing its
# shards, or beginning its own capture (a capture bar at 0 again)
@pytest.mark.parametrize("text", [
    _shards(4) + _capture(0) + _capture(22) + _capture(23) + _shards(0, 1) + _WATCHDOG,
    _FIRST_LOADS + _capture(0) + _capture(1) + _shards(0) + _shards(4) + _WATCHDOG,
    _FIRST_LOADS + _capture(0) + _capture(1) + _shards(0) + _capture(0) + _WATCHDOG,
], ids=["drafter", "shards-done", "capture-begun"])
def test_an_engine_that_caught_up_or_a_drafter_leaves_the_capture(text):
    assert reads(text) == (True, "nccl", "graph_capture")


# --- h108003: torch_memory_saver's resume, its CUDA check out of memory ---------------------------------------------

_SOFT = ("[torch_memory_saver.cpp] cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an issue e.g. torch allocator "
         "will free cache and retry)\n")
_RESUME = "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp func=resume line=172\n"


# h108003's two lines, the check's line alone, under Ray's actor prefix
@pytest.mark.parametrize("text", [_SOFT + _RESUME, _RESUME, "(WorkerDict pid=8123) " + _RESUME],
                         ids=["h108003", "alone", "ray"])
def test_torch_memory_savers_cuda_check_out_of_memory_is_cuda_oom(text):
    assert said(text) == (True, "cuda_oom", "cuda_oom")


# near misses: the soft line alone (malloc hands the error to torch's allocator, which retries: core.cpp:34-37),
# another cudaError (invalid argument, not memory)
@pytest.mark.parametrize("text", [
    _SOFT,
    "[torch_memory_saver.cpp] cudaError error: 1 (invalid argument)  file=csrc/core.cpp func=resume line=181\n",
], ids=["soft-line", "other-error"])
def test_other_torch_memory_saver_lines_are_not_cuda_oom(text):
    assert said(text)[1] != "cuda_oom"


def test_h108003_is_the_soft_line_then_the_check():
    assert (REAL / "h108003.log").read_text(encoding="utf-8") == _SOFT + _RESUME


# --- h108004: CUTLASS's TMA descriptor refused with 801 -------------------------------------------------------------

_DUMP = ("TMA Desc Addr:   0xfffe8d7f6a80\nformat         9\ndim            4\ngmem_address   0xd86cd7000\n"
         "globalDim      (128,1,8,282843,1)\nglobalStrides  (2,2048,256,2048,0)\nboxDim         (64,128,1,1,1)\n"
         "elementStrides (1,1,1,1,1)\ninterleave     0\nswizzle        3\nl2Promotion    2\noobFill        0\n")


# h108004's order (the error line, then the next descriptor's dump), the source's (the dump, then the error)
@pytest.mark.parametrize("text", [
    "Error: Failed to initialize the TMA descriptor 801\n" + _DUMP,
    _DUMP + "Error: Failed to initialize the TMA descriptor 801\n",
], ids=["h108004", "dump-first"])
def test_a_tma_descriptor_the_gpu_does_not_support_is_unsupported_gpu(text):
    assert said(text) == (True, "unsupported_gpu", "tma_unsupported")


# near miss: another CUresult (1, a value the encode refuses on a GPU that has TMA) is no GPU's refusal
def test_another_tma_descriptor_error_is_not_unsupported_gpu():
    assert said(_DUMP + "Error: Failed to initialize the TMA descriptor 1\n")[1] != "unsupported_gpu"


# --- the lines cited from the wheels --------------------------------------------------------------------------------
# verl's 0.4.6.post1 (verl 76084d36, #1385) has the same entrypoints/verl_engine.py as 0.4.6, unpacked here

_CITED = [
    ("sglang", "0.4.6", "sglang/srt/entrypoints/verl_engine.py", 53, "self._engine = Engine(**engine_kwargs)"),
    ("sglang", "0.4.6", "sglang/srt/entrypoints/verl_engine.py", 65,
     "dist.barrier(group=self._device_mesh_cpu.get_group())"),
    ("sglang", "0.4.6", "sglang/srt/model_executor/model_runner.py", 194, "self.load_model()"),
    ("sglang", "0.4.6", "sglang/srt/model_executor/model_runner.py", 214, "self.init_memory_pool("),
    ("sglang", "0.4.6", "sglang/srt/model_executor/model_runner.py", 222, "self.init_cuda_graphs()"),
    ("sglang", "0.4.6", "sglang/srt/managers/scheduler.py", 261, "self.tp_worker = TpWorkerClass("),
    ("sglang", "0.4.6", "sglang/srt/managers/scheduler.py", 273, "self.draft_worker = EAGLEWorker("),
    ("sglang", "0.4.6", "sglang/srt/model_executor/cuda_graph_runner.py", 336,
     "tqdm.tqdm(list(reversed(self.capture_bs)))"),
    ("sglang", "0.4.6", "sglang/srt/model_executor/cuda_graph_runner.py", 348,
     'f"Capturing batches ({avail_mem=:.2f} GB)"'),
    ("sglang", "0.4.6", "sglang/srt/model_loader/weight_utils.py", 438,
     'desc="Loading safetensors checkpoint shards",'),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
