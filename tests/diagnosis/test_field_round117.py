"""Held-out round 117 (issue 24): SGLang's own exit after the SIGTERM drain is the stop; FlashInfer's autotune opens
the CUDA graph init; gloo's lost peer after another rank's exception, and HiSparse's device buffer pool running out.

Round 117 (h117001-h117008; eight log files committed to five users' repositories, each pinned to a commit) was
measured once on main at bdcb8392: crashed 7/8, kind 6/8, phase 7/8. docs/diagnosis.md, "Held-out round 117", tells
the round; its three misses were ddlab's, fixed:

- h117001 (a DFLASH run's last 57 lines): after "SIGTERM received. ... Draining requests and shutting down..." and
  "Gracefully exiting... Remaining number of requests 0", sigterm_watchdog's kill_process_tree(os.getpid(),
  include_parent=True) ends its own process with sys.exit(0) (0.5.16 managers/tokenizer_manager.py:2768,
  utils/common.py:2024-2026); print_exception_wrapper catches Exception only (:3199-3200), so SystemExit leaves the
  loop, printed with the lifespan task's CancelledError under it. The stop's own exit, no crash (diagnosis/stops.py
  exited_on_stop, asked by rootcause.candidates).
- h117003 (a Gemma-4 NVFP4 fork, its traceback's File lines absent): "Running FlashInfer autotune with cache: ..."
  after "Memory pool end": the tune opens the CUDA graph init, inside capture_cuda_graphs from 0.5.16 (0.5.19
  model_runner_components/cuda_graph_setup.py:181, runner/eager_runner.py:155) and right before
  init_device_graphs in 0.5.10-0.5.13 (0.5.12 model_executor/model_runner.py:767, :791): graph_capture
  (diagnosis/precompile_lines.py FLASHINFER_AUTOTUNE, a phase marker of logtext).
- h117008 (a DeepSeek-V3.2 DP8 fork with HiSparse): DP0 TP0's scheduler raises "HiSparse prefix-extend buffer alloc
  failed ..." and the seven other ranks' gloo "Connection closed by peer" two seconds later. A lost gloo peer after
  an earlier unexplained exception is that exception's consequence (diagnosis/consequences.py PEER_ECHOES); and
  HiSparse's device buffer pool running out of slots, upstream's "HiSparse alloc_device_buffer returned None" and
  its kin (0.5.12 managers/hisparse_coordinator.py:322, :390; 0.5.23 :972, :1042, :284), the fork's message of the
  same pool, is slots_exhausted (crashes/kinds/slots.py hisparse_buffer_exhausted).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, alike_cases, assert_at_line, assert_reads_alike_either_way,
                      assert_reads_as_labelled, disputed, folded_round, reads, real, said, with_carriage_returns)

_IDS = folded_round(REAL_MANIFEST, 117)

# the signature each log is read by
_SIGNATURES = {
    "h117001": None,  # decode batches, the SIGTERM drain, SGLang's own SystemExit(0) and the lifespan's CancelledError
    "h117002": None,  # a start stopped by SIGTERM while its weights load
    "h117003": None,  # FusedMoE without g1_scale_c in the FlashInfer autotune's dummy forward: unknown, graph_capture
    "h117004": None,  # a healthy Qwen3.8-27B run serving
    "h117005": "kv_weights_fill_gpu",  # the weights leave no room for the KV cache
    "h117006": "cuda_oom",  # CUDA out of memory while serving
    "h117007": "port_in_use",  # the port is taken
    "h117008": "hisparse_buffer_exhausted",  # DP0's HiSparse buffer alloc failed, then the other ranks' gloo peers lost
}


def test_round117_is_folded_into_work_undisputed_and_none_left():
    assert _IDS == sorted(_SIGNATURES)
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {None: 3, "unknown": 1, "kv_pool_oom": 1,
                                                               "cuda_oom": 1, "port_in_use": 1, "slots_exhausted": 1}


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round117_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_round117_logs_with_carriage_returns_are_those_four():
    assert with_carriage_returns(_IDS) == ["h117002", "h117003", "h117006", "h117008"]


@pytest.mark.parametrize("log_id", alike_cases(_IDS))
def test_round117_logs_read_the_same_as_their_bytes_decode(log_id):
    assert_reads_alike_either_way(log_id)


def test_h117001s_sigterm_exit_is_a_stop():
    found = real("h117001")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")
    assert "stopped by SIGTERM" in found.render()


def test_h117003s_autotune_failure_is_read_in_the_graph_capture():
    found = real("h117003")
    assert (found.crashed, found.kind, found.phase) == (True, "unknown", "graph_capture")
    assert "g1_scale_c" in found.cause


def test_h117008s_first_ranks_exception_is_the_cause():
    found = real("h117008")
    assert (found.crashed, found.kind, found.phase) == (True, "slots_exhausted", "serving")
    assert "HiSparse prefix-extend buffer alloc failed" in found.cause


# --- h117001: SGLang's own exit after the SIGTERM drain -------------------------------------------------------------

_SERVED = ("[2026-08-24 13:43:40] Decode batch, #running-req: 1, #full token: 33032, full token usage: 0.05, "
           "cuda graph: True, gen throughput (token/s): 163.16, #queue-req: 0\n")
_NOTICE = ("[2026-08-24 13:43:59] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
           "[2026-08-24 13:44:03] Gracefully exiting... Remaining number of requests 0. Remaining requests "
           "remaining_rids=[].\n"
           "[2026-08-24 13:44:04] kill_process_tree called: parent_pid=1, include_parent=True, pid=1\n")
_SRT = "/sgl-workspace/sglang/python/sglang/srt/"
_SITE = "/opt/sglang/lib/python3.12/site-packages/"


def _exit(code: str = "SystemExit: 0", cancelled: str = "asyncio.exceptions.CancelledError") -> str:
    return ("[2026-08-24 13:44:04] ERROR:    Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run\n'
            "    return self._loop.run_until_complete(task)\n"
            f'  File "{_SRT}managers/tokenizer_manager.py", line 3159, in sigterm_watchdog\n'
            "    kill_process_tree(os.getpid(), include_parent=True)\n"
            f'  File "{_SRT}utils/common.py", line 2261, in kill_process_tree\n'
            "    sys.exit(0)\n"
            f"{code}\n\nDuring handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            f'  File "{_SITE}starlette/routing.py", line 655, in lifespan\n'
            "    await receive()\n"
            f'  File "{_SITE}uvicorn/lifespan/on.py", line 137, in receive\n'
            "    return await self.receive_queue.get()\n"
            '  File "/usr/lib/python3.12/asyncio/queues.py", line 158, in get\n'
            "    await getter\n"
            f"{cancelled}\n\n"
            "[2026-08-24 13:44:04] kill_process_tree called: parent_pid=1, include_parent=False, pid=1\n")


# h117001's form, asyncio's short name, sys.exit() with no code
@pytest.mark.parametrize("text", [
    _SERVED + _NOTICE + _exit(),
    _SERVED + _NOTICE + _exit(cancelled="asyncio.CancelledError"),
    _SERVED + _NOTICE + _exit(code="SystemExit"),
], ids=["h117001", "short-name", "no-code"])
def test_sglangs_own_exit_after_the_sigterm_drain_is_the_stop(text):
    assert said(text, family="sglang") == (False, None, None)
    assert reads(text, family="sglang")[2] == "serving"


# near misses: a non-zero exit (print_exception_wrapper's sys.exit(1), 0.5.16 tokenizer_manager.py:3206), a real
# exception in the chain after the notice, the same exit with no SIGTERM notice before it
@pytest.mark.parametrize("text", [
    _SERVED + _NOTICE + _exit(code="SystemExit: 1"),
    _SERVED + _NOTICE + _exit(cancelled="RuntimeError: Event loop is closed"),
    _SERVED + _exit(),
], ids=["exit-1", "runtime-error", "no-notice"])
def test_other_exits_stay_crashes(text):
    assert said(text, family="sglang")[0] is True


# --- h117003: FlashInfer's autotune opens the CUDA graph init -------------------------------------------------------

_POOL_END = ("[2026-10-02 14:11:13] Load weight end. type=Gemma4ForConditionalGeneration, avail mem=18.32 GB\n"
             "[2026-10-02 14:11:13] Memory pool end. avail mem=8.81 GB\n")
_RAISED = ("[2026-10-02 14:11:25] Scheduler hit an exception: Traceback (most recent call last):\n"
           "    scheduler = Scheduler(\n"
           "    self.init_all_cuda_graphs()\n"
           "    self._flashinfer_autotune(buffers=buffers, batch_size=batch_size)\n"
           "    g1_scale_c=layer.g1_scale_c.data,\n"
           "AttributeError: 'FusedMoE' object has no attribute 'g1_scale_c'\n"
           "[2026-10-02 14:11:25] Received sigquit from a child process. It usually means the child failed.\n")


# 0.5.12-0.5.23's line with its cache, 0.5.10's, 0.5.13's with the cache reuse turned off
@pytest.mark.parametrize("line", [
    "Running FlashInfer autotune with cache: /root/.cache/sglang/flashinfer/autotune/0.6.18/sm120/a8/rank_tp0.json",
    "Running FlashInfer autotune...",
    "Running FlashInfer autotune (cache reuse DISABLED via SGLANG_FLASHINFER_AUTOTUNE_CACHE=0)",
], ids=["cache", "0.5.10", "no-reuse"])
def test_flashinfer_autotune_is_the_graph_capture(line):
    text = _POOL_END + f"[2026-10-02 14:11:14] {line}\n" + _RAISED
    assert reads(text, family="sglang")[:3] == (True, "unknown", "graph_capture")


# near misses: the flag in server_args (no tune run), the same failure with no autotune line
@pytest.mark.parametrize("text", [
    "[2026-10-02 14:10:01] server_args=ServerArgs(model_path='m', disable_flashinfer_autotune=False)\n"
    + _POOL_END + _RAISED,
    _POOL_END + _RAISED,
], ids=["flag", "no-line"])
def test_other_lines_are_not_the_autotune(text):
    assert reads(text, family="sglang")[2] == "memory_pool"


# --- h117008: a lost gloo peer after another rank's exception; HiSparse's pool out of slots -------------------------

_GLOO = ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer "
         "[10.0.0.7]:3779")


def _died(rank: str, at: str, frame: tuple[str, int, str, str], exc: str) -> str:
    path, line, func, code = frame
    return (f"[2026-04-17 {at} {rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{_SRT}managers/scheduler.py", line 1321, in event_loop_overlap\n'
            "    batch = self.get_next_batch_to_run()\n"
            f'  File "{_SRT}{path}", line {line}, in {func}\n'
            f"    {code}\n"
            f"{exc}\n")


_BROADCAST = ("utils/common.py", 1102, "broadcast_pyobj", "dist.broadcast(tensor_size, src=src, group=dist_group)")
_OWN = ("managers/schedule_batch.py", 1677, "prepare_for_extend", "self.sparse_coordinator.prepare(reqs)")
_PEER_LOST = _died("DP7 TP7", "04:23:31", _BROADCAST, _GLOO)


# another rank's exception no signature reads, then the peers' lost connection: the exception is the cause
@pytest.mark.parametrize("own", [
    "RuntimeError: sparse prefix buffer is inconsistent for req 0d3f (size=4160)",
    "IndexError: index 4160 is out of bounds for dimension 0 with size 4096",
], ids=["runtime", "index"])
def test_a_lost_gloo_peer_after_another_ranks_exception_is_its_consequence(own):
    text = _died("DP0 TP0", "04:23:29", _OWN, own) + _PEER_LOST + _PEER_LOST.replace("DP7 TP7", "DP1 TP1")
    found = reads(text, family="sglang")
    assert found[:2] == (True, "unknown")
    assert said(text, family="sglang")[2] is None


# near misses: a lost peer alone (that rank's log on another node), and one before a later exception
@pytest.mark.parametrize("text", [
    _PEER_LOST,
    _PEER_LOST + _died("DP0 TP0", "04:23:40", _OWN, "RuntimeError: sparse prefix buffer is inconsistent"),
], ids=["alone", "before"])
def test_a_lost_gloo_peer_with_no_earlier_exception_stays_nccl(text):
    assert said(text, family="sglang") == (True, "nccl", "gloo_peer_lost")


_HISPARSE = ("managers/hisparse_coordinator.py", 972, "alloc_device_buffer", "raise RuntimeError(")


# h117008's fork's message, upstream's coordinator (0.5.23 :972, :1042, :284) and allocator (allocator/hisparse.py:191)
@pytest.mark.parametrize("exc", [
    "RuntimeError: HiSparse prefix-extend buffer alloc failed for req 0d3f653d34174f6e (alloc_size=4160)",
    "RuntimeError: HiSparse alloc_device_buffer returned None",
    "RuntimeError: HiSparse _grow_device_buffers failed (total_grow=512)",
    "RuntimeError: HiSparse spec failed to allocate 4096 scratch slots.",
    "AssertionError: Hisparse allocation failed in alloc_device_buffer",
], ids=["fork", "returned-none", "grow", "spec-scratch", "allocator"])
def test_hisparses_pool_out_of_slots_is_slots_exhausted(exc):
    text = _died("DP0 TP0", "04:23:29", _HISPARSE, exc) + _PEER_LOST
    assert said(text, family="sglang") == (True, "slots_exhausted", "hisparse_buffer_exhausted")


# near misses: HiSparse's state and configuration errors, and its own INFO lines while it serves
@pytest.mark.parametrize("text", [
    _died("DP0 TP0", "04:23:29", _HISPARSE, "RuntimeError: HiSparse spec swap is not initialized."),
    _died("DP0 TP0", "04:23:29", _HISPARSE, "ValueError: HiSparse spec swap currently supports DSA caches only."),
    "[2026-04-17 04:21:47 DP4 TP4] HiSparse prefix-cache tail-restore: req=5d24 prefix_len=131008 "
    "restored_tail_tokens=64\n" + _SERVED,
], ids=["not-initialized", "dsa-only", "info"])
def test_other_hisparse_texts_are_not_its_pool_running_out(text):
    assert said(text, family="sglang")[2] != "hisparse_buffer_exhausted"


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_CITED = [
    ("sglang", "0.5.16", "sglang/srt/managers/tokenizer_manager.py", 2752,
     'f"Gracefully exiting... Remaining number'),
    ("sglang", "0.5.16", "sglang/srt/managers/tokenizer_manager.py", 2768,
     "kill_process_tree(os.getpid(), include_parent=True)"),
    ("sglang", "0.5.16", "sglang/srt/managers/tokenizer_manager.py", 3199, "await func()"),
    ("sglang", "0.5.16", "sglang/srt/managers/tokenizer_manager.py", 3200, "except Exception:"),
    ("sglang", "0.5.16", "sglang/srt/managers/tokenizer_manager.py", 3206, "sys.exit(1)"),
    ("sglang", "0.5.16", "sglang/srt/utils/common.py", 2024, "if parent_pid == os.getpid():"),
    ("sglang", "0.5.16", "sglang/srt/utils/common.py", 2026, "sys.exit(0)"),
    ("uvicorn", "0.54.0", "uvicorn/lifespan/on.py", 137, "return await self.receive_queue.get()"),
    ("sglang", "0.5.10", "sglang/srt/model_executor/model_runner.py", 2099, '"Running FlashInfer autotune..."'),
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 2550, '"Running FlashInfer autotune with cache'),
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 2475,
     "Warmup and tune kernels before cuda graph capture."),
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 767, "self.kernel_warmup()"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 791, "self.init_device_graphs()"),
    ("sglang", "0.5.13", "sglang/srt/model_executor/model_runner.py", 2487,
     '"Running FlashInfer autotune (cache reuse'),
    ("sglang", "0.5.19", "sglang/srt/model_executor/model_runner.py", 1062, "capture = capture_cuda_graphs("),
    ("sglang", "0.5.19", "sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py", 181,
     "eager_runner = EagerRunner(model_runner)"),
    ("sglang", "0.5.19", "sglang/srt/model_executor/runner/eager_runner.py", 155, "self.warmup()"),
    ("sglang", "0.5.19", "sglang/srt/model_executor/runner/base_runner.py", 255, "should_run_flashinfer_autotune("),
    ("sglang", "0.5.16", "sglang/srt/model_executor/runner/flashinfer_autotune.py", 154,
     '"Running FlashInfer autotune with cache'),
    ("sglang", "0.5.23", "sglang/srt/model_executor/runner/flashinfer_autotune.py", 304,
     '"Running FlashInfer autotune with cache'),
    ("sglang", "0.5.12", "sglang/srt/managers/hisparse_coordinator.py", 322,
     'raise RuntimeError("HiSparse alloc_device_buffer returned None")'),
    ("sglang", "0.5.12", "sglang/srt/managers/hisparse_coordinator.py", 390, "HiSparse _grow_device_buffers failed"),
    ("sglang", "0.5.12", "sglang/srt/mem_cache/hisparse_memory_pool.py", 274,
     '"Hisparse allocation failed in alloc_device_buffer"'),
    ("sglang", "0.5.12", "sglang/srt/mem_cache/hisparse_memory_pool.py", 336,
     '"Hisparse allocation failed in alloc_extend"'),
    ("sglang", "0.5.23", "sglang/srt/managers/hisparse_coordinator.py", 972,
     'raise RuntimeError("HiSparse alloc_device_buffer returned None")'),
    ("sglang", "0.5.23", "sglang/srt/managers/hisparse_coordinator.py", 1042, "HiSparse _grow_device_buffers failed"),
    ("sglang", "0.5.23", "sglang/srt/managers/hisparse_coordinator.py", 284, '"HiSparse spec failed to allocate "'),
    ("sglang", "0.5.23", "sglang/srt/mem_cache/allocator/hisparse.py", 191,
     '"Hisparse allocation failed in alloc_device_buffer"'),
    ("sglang", "0.5.23", "sglang/srt/mem_cache/allocator/hisparse.py", 252,
     '"Hisparse allocation failed in alloc_extend"'),
    ("sglang", "0.5.23", "sglang/srt/mem_cache/allocator/hisparse.py", 55,
     "self.hisparse_attn_allocator = paged_allocator_cls("),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
