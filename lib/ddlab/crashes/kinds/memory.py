"""Memory: the KV pool at startup, CUDA allocations, host RAM.

Texts and citations: docs/sglang.md section 4.1. The scheduler's slots running out while
serving (``slots_exhausted``: "memory" in the text, no CUDA allocation failed) are
:mod:`.slots`, spliced into :data:`SIGNATURES` where they always stood.

The KV pool's next step moves along the levers instead of looping: a higher
``--mem-fraction-static`` (SGLang's own floor when it prints one, else +0.04) only
while that value is below :data:`FRACTION_CEILING` and was not tried already
(``Found.tried``, the current value included); then what the pool must hold
(``--context-length``, ``--max-running-requests``, halved from the values the log
shows) and the envelope search that finds the largest ones that serve.
"""

from __future__ import annotations

import math

from ddlab.crashes.kinds.graphs import more_room_for_graphs, smaller_graphs
from ddlab.crashes.kinds import slots
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES"]


def _fraction_now(found: Found) -> float | None:
    match = regex(r"mem[-_]fraction[-_]static\s*=\s*([0-9.]+)").search(found.text)
    value = float(match[1].rstrip(".")) if match else found.facts.get("mem_fraction_static")
    return float(value) if isinstance(value, (int, float)) else None


FRACTION_CEILING = 0.95  # the rest is the activations', the graphs' and the drafter's


def _kv_pool_detail(found: Found) -> str:
    return _higher_fraction(found) or _smaller_pool(found, _tried(found))


def _weights_detail(found: Found) -> str:
    tp = found.facts.get("tp_size")
    more = f"`--tp-size {tp * 2}`" if _positive(tp) else "`--tp-size 2`"
    return _higher_fraction(found) or (
        f"`--mem-fraction-static` {_listed(_tried(found))} is spent: the weights need more GPUs "
        f"({more}) or a smaller / quantized model.")


def _higher_fraction(found: Found) -> str | None:
    """A higher ``--mem-fraction-static`` worth one more start, if there is one: SGLang's
    own floor when it printed one, else the current value + 0.04 (below the ceiling, not
    tried before); with nothing known, the general direction."""
    floor = regex(r"Raise --mem-fraction-static above ([0-9.]+)").search(found.text)
    now, tried = _fraction_now(found), _tried(found)
    if floor:
        target = math.ceil((float(floor[1].rstrip(".")) + 0.005) * 100) / 100
        said = "SGLang computed the least that fits"
    elif now is not None:
        target, said = round(now + 0.04, 2), f"It is {now:g} now"
    elif not tried:
        return ("Raise `--mem-fraction-static` a little, or shrink `--context-length` / "
                "`--max-running-requests`.")
    else:
        return None
    if target <= FRACTION_CEILING and target not in tried:
        return f"{said}: try `--mem-fraction-static {target:.2f}`."
    return None


def _tried(found: Found) -> set:
    now = _fraction_now(found)
    given = {round(float(v), 2) for v in found.tried.get("mem_fraction_static", ())
             if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return given | ({round(now, 2)} if now is not None else set())


def _listed(values: set) -> str:
    return ", ".join(f"{v:g}" for v in sorted(values)) or "raised"


def _smaller_pool(found: Found, tried: set) -> str:
    """When a higher fraction is spent: what the pool holds, smaller, and the envelope."""
    head = (f"`--mem-fraction-static` {_listed(tried)} {'was' if len(tried) == 1 else 'were'} "
            f"tried and {FRACTION_CEILING} is as high as is safe: make the pool hold less instead")
    ctx, running = found.facts.get("context_length"), found.facts.get("max_running_requests")
    levers = [f"`--context-length {ctx // 2}` (now {ctx})" if _positive(ctx) else
              "a shorter `--context-length`",
              f"`--max-running-requests {max(running // 2, 1)}` (now {running})" if _positive(running)
              else "fewer `--max-running-requests`"]
    search = " ".join(f"--search {key}=..{value}" for key, value in
                      (("context_length", ctx), ("max_running_requests", running)) if _positive(value))
    envelope = (f"`ddlab envelope --host {found.host or 'HOST'} "
                f"{search or '--search context_length=4096..131072'} --fallback cuda_graph=false`")
    return (f"{head}: {' or '.join(levers)}; or let ddlab find the largest values that serve: "
            f"{envelope}.")


def _positive(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


_DRAFT_COUNTS = (
    ("eagle", "The draft model's weights and its KV pool are counted too."),
    ("dflash", "The DFLASH drafter's weights and its own KV pool are counted too."),
    ("ddtree", "The DFlash drafter's weights and its own KV pool are counted too."),
)

# (round 92) SGLang 0.1.x's router spelt it "Not enought memory. " (0.1.6 managers/router/model_runner.py:311,
# 0.1.13 :332, 0.1.16 :354, raised by init_memory_pool when the profiled token count is <= 0; 0.1.18 spells it
# right, managers/controller/model_runner.py:356): the same check, so the same kind
KV_POOL = Signature(
    "kv_pool_oom", "kv_pool_oom", "the KV cache pool does not fit",
    ("The KV cache pool does not fit next to the weights.",),
    patterns=(r"Not enought? memory\b.{0,120}?(?:mem[-_]fraction[-_]static|KV cache|memory pool)",),
    lines=(r"Not enought? memory\. Please try to increase --mem-fraction-static",
           r"max_total_tokens=\d+ is larger than the profiled value -\d+"),
    priority=70, phase="memory_pool", detail=_kv_pool_detail, by_algorithm=_DRAFT_COUNTS,
    sources=(("sglang 0.1.13", "sglang/srt/managers/router/model_runner.py:332"),
             ("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:1156"),
             ("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:1139"),
             ("0.5.10", "sglang/srt/model_executor/model_runner_kv_cache_mixin.py:57"),
             ("0.5.14", "sglang/srt/model_executor/pool_configurator.py:58"),
             ("0.5.18", "sglang/srt/model_executor/pool_configurator.py:74"),
             ("0.5.20", "sglang/srt/model_executor/pool_configurator.py:92"),
             ("0.5.23", "sglang/srt/model_executor/pool_configurator.py:96")))

KV_WEIGHTS = Signature(
    "kv_weights_fill_gpu", "kv_pool_oom", "the weights leave no GPU memory for the KV cache",
    ("The weights fill the share of GPU memory SGLang may use, so no KV cache fits.",),
    patterns=(r"Loaded weights leave no GPU memory for the KV cache",),
    lines=(r"Loaded weights leave no GPU memory for the KV cache",),
    priority=72, phase="memory_pool", detail=_weights_detail, by_algorithm=_DRAFT_COUNTS,
    sources=(("0.5.14", "sglang/srt/model_executor/model_runner_kv_cache_mixin.py:111"),
             ("0.5.18", "sglang/srt/mem_cache/kv_cache_configurator.py:1802"),
             ("0.5.20", "sglang/srt/mem_cache/kv_cache_configurator.py:2192"),
             ("0.5.23", "sglang/srt/mem_cache/kv_cache_configurator.py:3051")))

HYBRID_STATE = Signature(
    "hybrid_state_cache", "kv_pool_oom", "the hybrid (mamba / linear-attention) state cache does not fit",
    ("A hybrid model keeps a whole recurrent state per request: lower `--max-running-requests` "
     "first, then raise `--mem-fraction-static`.",),
    patterns=(r"Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache",
              r"state cache is too small to serve any requests"),
    lines=(r"Not enough GPU memory for hybrid \(mamba",
           r"Hybrid \(mamba/linear-attention\) state cache is too small"),
    priority=72, phase="memory_pool",
    by_algorithm=tuple((fam, "Speculative decoding keeps extra states per request: fewer "
                        "`--speculative-num-draft-tokens` need fewer.")
                       for fam in ("eagle", "dflash", "ddtree")),
    sources=(("0.5.14", "sglang/srt/model_executor/model_runner_kv_cache_mixin.py:209"),
             ("0.5.14", "sglang/srt/model_executor/model_runner_kv_cache_mixin.py:1004"),
             ("0.5.18", "sglang/srt/mem_cache/kv_cache_configurator.py:2118"),
             ("0.5.20", "sglang/srt/mem_cache/kv_cache_configurator.py:2524"),
             ("0.5.23", "sglang/srt/mem_cache/kv_cache_configurator.py:3394"),
             ("0.5.23", "sglang/srt/mem_cache/kv_cache_configurator.py:3154")))

SWA_POOL = Signature(
    "swa_pool", "kv_pool_oom", "the sliding-window pool leaves no room for the full KV pool",
    ("The sliding-window (SWA) pool is sized per running request and took the room the full KV "
     "pool needs: lower `--max-running-requests`, or raise `--mem-fraction-static`.",),
    patterns=(r"SWA pool cap .{0,200}?leaves no room for the full KV pool",
              r"leaves no room for real data"),
    lines=(r"SWA pool cap .{0,200}?leaves no room for the full KV pool",),
    priority=72, phase="memory_pool",
    sources=(("0.5.14", "sglang/srt/model_executor/pool_configurator.py:415"),
             ("0.5.18", "sglang/srt/model_executor/pool_configurator.py:681"),
             ("0.5.20", "sglang/srt/model_executor/pool_configurator.py:892"),
             ("0.5.23", "sglang/srt/model_executor/pool_configurator.py:1027"),
             ("0.5.23", "sglang/srt/model_executor/pool_configurator.py:1681")))


# (round 79) NCCL's device allocations: ncclCudaCalloc / ncclCudaMalloc WARN "Failed to CUDA calloc %ld bytes" (or
# "malloc", "calloc async") when the pointer is still null after cudaMalloc (or cuMem's allocation) failed; the
# calls before it (stream, capture mode) return on their own CUDACHECK first (NCCL v2.20.5-1 src/include/alloc.h:186,
# :161, :206; checks.h:13-17), and torch quotes that last WARN under "Last error:": the buffer did not fit
_NCCL_DEVICE_ALLOC = r"\bFailed to CUDA (?:calloc(?: async)?|malloc) \d+ bytes\b"
_NCCL_BUFFER = ("NCCL could not allocate its buffer on the GPU: the memory left beside the server's static pool "
                 "(weights and KV cache) is too small for NCCL's buffers, CUDA graphs and activations. Lower "
                 "`--mem-fraction-static` to leave it more.")
_OOM_BY_PHASE = {
    "launch": "The weights do not fit: free the GPU (nvidia-smi: an old server still running?), "
              "use more GPUs (`--tp-size 2`), or a smaller or quantized model; "
              "`--mem-fraction-static` does not shrink the weights.",
    "memory_pool": "The KV pool allocation ran out: lower `--mem-fraction-static` a little, or "
                   "shrink `--context-length` / `--max-running-requests`.",
    "graph_capture": "CUDA graph capture ran out: capture smaller graphs or leave them more "
                     "memory.",
    "serving": "Activations ran out while serving: lower `--mem-fraction-static`, "
               "`--max-running-requests` or `--chunked-prefill-size`.",
}
_OOM_BY_PHASE["load_weights"] = _OOM_BY_PHASE["launch"]
_OOM_BY_PHASE["ready"] = _OOM_BY_PHASE["serving"]


def _cuda_oom_detail(found: Found) -> str | None:
    if regex(_NCCL_DEVICE_ALLOC).search(found.text):
        return _NCCL_BUFFER
    said = _OOM_BY_PHASE.get(found.phase)
    if found.phase == "graph_capture":
        said = " ".join([said, smaller_graphs(found), more_room_for_graphs(found)])
    return said


# (vLLM round 23) torch's caching allocator, out of memory, builds its OutOfMemoryError's message with each
# process's use of the GPU from NVML and asserts that query succeeded (reportProcessMemoryInfo:
# TORCH_INTERNAL_ASSERT(NVML_SUCCESS == r), called only in DeviceCachingAllocator::malloc's `if
# (!block_found)` branch, after cudaMalloc returned cudaErrorMemoryAllocation: pytorch/pytorch eb42ad6
# c10/cuda/CUDACachingAllocator.cpp). Where NVML cannot list processes (a container, a MIG slice) the
# assert stands in for the OOM message: an allocation did not fit, whichever server made it
_NVML_OOM = r'\bNVML_SUCCESS == r INTERNAL ASSERT FAILED at "[^"]*CUDACachingAllocator\.cpp":\d+'
# (vLLM round 62) vLLM's cumem allocator (sleep mode) prints a failed cuMemCreate on stderr as "CUDA Error: %s at
# %s:%d" with cuGetErrorString's words, then raises the same text as RuntimeError (vllm-project/vllm 0035e224
# csrc/cumem_allocator.cpp:69 in CUDA_CHECK, create_and_map's cuMemCreate, python_create_and_map): wake_up's
# re-mapping of the weights and the KV cache found no room
_CUMEM_OOM = r"\bCUDA Error: out of memory at \S*cumem_allocator\.cpp:\d+"
# (round 76) torch_npu's workspace allocator (an op's scratch memory), its retry after emptying the caches failed:
# "NPU out of memory. NPUWorkspaceAllocator tried to allocate S(NPU d; T total capacity; F free). ..." logged at
# E and raised as OutOfMemoryError (Ascend/pytorch 9e73e70 torch_npu/csrc/core/npu/NPUWorkspaceAllocator.cpp:
# 499-508); the task queue logs it again (framework/OpParamMaker.cpp:455) and the next op raises "The Inner
# error is reported as above. The process exits for this inner error" (core/npu/NPUQueue.cpp:322)
# (round 93) and its caching allocator's "NPU out of memory. Tried to allocate S (NPU d; ...)"
# (NPUCachingAllocator.cpp:1377)
_NPU_WORKSPACE_OOM = r"\bNPU out of memory\. (?:NPUWorkspaceAllocator )?tried to allocate"
# (round 76) torch_memory_saver (SGLang's --enable-memory-saver) creating the physical memory of a region it maps
# (at allocation, or when resume re-maps the regions pause released): CURESULT_CHECK(cuMemCreate(...)) prints
# "[torch_memory_saver.cpp] CUresult error: <code> (<cuGetErrorString>)  file=... func=cu_mem_create line=N"
# and calls exit(1) (fzyzcjy/torch_memory_saver 1f01bd8, 0.0.9rc2, csrc/utils.h:28-40, :194); code 2 is
# CUDA_ERROR_OUT_OF_MEMORY: the process that printed it ended for want of GPU memory
# (round 108) From 0.0.9 cu_mem_create returns cudaErrorMemoryAllocation for cuMemCreate's out of memory, after its
# own soft line "cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an issue ...)" (0.0.9.post1, c29087a,
# csrc/utils.h:119-123): malloc hands it back to torch's allocator, which frees its cache and retries
# (csrc/core.cpp:34-37), but resume, re-mapping what pause released, checks it with CUDA_ERROR_CHECK (:172), which
# prints "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=... func=resume line=172" and calls
# exit(1) (csrc/utils.h:42-53); cudaError 2 is cudaErrorMemoryAllocation. The soft line alone ends nothing
_TMS_OOM = r"\[torch_memory_saver\.cpp\] (?:CUresult|cudaError) error: 2 \(out of memory\)"
CUDA_OOM = Signature(
    "cuda_oom", "cuda_oom", "CUDA ran out of memory",
    (),
    patterns=(r"CUDA out of memory", r"OutOfMemoryError", r"\bout of memory\b",
              r"CUBLAS_STATUS_ALLOC_FAILED", r"cudaErrorMemoryAllocation", _NVML_OOM, _NCCL_DEVICE_ALLOC),
    lines=(r"CUDA out of memory\. Tried to allocate", _NVML_OOM, _CUMEM_OOM, _NPU_WORKSPACE_OOM, _TMS_OOM),
    priority=60, detail=_cuda_oom_detail,
    by_algorithm=(("ddtree", "While serving, a large `--speculative-ddtree-budget` grows the "
                             "verify batch (budget+1 tokens per request)."),),
    sources=(("torch 2.6.0", "c10/cuda/CUDACachingAllocator.cpp:1341 (DeviceCachingAllocator::malloc: "
                             "CUDA out of memory. Tried to allocate ...; in libc10_cuda.so)"),
             ("CUDA runtime", "cudaErrorMemoryAllocation (2)"),
             ("vllm-project/vllm 0035e224", "csrc/cumem_allocator.cpp:69 (CUDA_CHECK: CUDA Error: %s at %s:%d)"),
             ("torch_npu (Ascend/pytorch 9e73e70)", "torch_npu/csrc/core/npu/NPUWorkspaceAllocator.cpp:499-508 "
                                                   "(NPU out of memory. NPUWorkspaceAllocator tried to allocate ...; "
                                                   "ASCEND_LOGE, TORCH_CHECK_WITH(OutOfMemoryError, ...)); "
                                                   "NPUCachingAllocator.cpp:1377"),
             ("torch_memory_saver 0.0.9rc2 (fzyzcjy/torch_memory_saver 1f01bd8)",
              "csrc/utils.h:28-40 (CURESULT_CHECK: CUresult error: %d (%s) ... exit(1)), :194 (cu_mem_create's "
              "cuMemCreate)"),
             ("torch_memory_saver 0.0.9.post1 (fzyzcjy/torch_memory_saver c29087a)",
              "csrc/utils.h:42-53 (CUDA_ERROR_CHECK: cudaError error: %d (%s) ... exit(1)), :119-123 (cu_mem_create: "
              "cuMemCreate's CUDA_ERROR_OUT_OF_MEMORY returned as cudaErrorMemoryAllocation); csrc/core.cpp:172 "
              "(resume: CUDA_ERROR_CHECK(cu_mem_create(...)))"),
             ("NCCL (NVIDIA/nccl v2.20.5-1)", "src/include/alloc.h:186 (ncclCudaCallocDebug: WARN(\"Failed to "
                                              "CUDA calloc %ld bytes\") when *ptr is still nullptr), :161 "
                                              "(ncclCudaMallocDebug), :206 (calloc async)"),
             ("torch (pytorch/pytorch eb42ad6)",
              "c10/cuda/CUDACachingAllocator.cpp (reportProcessMemoryInfo: TORCH_INTERNAL_ASSERT(NVML_SUCCESS "
              "== r); malloc's !block_found branch: proc_info = reportProcessMemoryInfo(device))")))

# torch's caching allocator logging a failed cudaMalloc before it decides (c10/cuda/
# CUDACachingAllocator.cpp, alloc_block, the line the log's C++ prefix names, CUDACachingAllocator.cpp:
# 3933: LOG(WARNING) "memory allocation failed with OOM on device N while trying to allocate X bytes
# (free: F, total: T)." on cudaErrorMemoryAllocation; a first attempt is forgiven, the cache freed and
# the allocation retried; a second raises OutOfMemoryError through malloc's TORCH_CHECK_WITH). A
# warning: it decides nothing alone (the retry may succeed), it explains the traceback the same process
# cuts or leaves unexplained right after it (``explains``), as torch's store warning does.
_ALLOC_OOM = r"\bmemory allocation failed with OOM on device \d+ while trying to allocate \d+ bytes"


def _alloc_detail(found: Found) -> str | None:
    sizes = regex(r"allocate (\d+) bytes \(free: (\d+), total: (\d+)\)").search(found.text)
    said = _cuda_oom_detail(found)
    if sizes is None:
        return said
    want, free, total = (int(n) / 2**30 for n in sizes.groups())
    return f"It asked for {want:.2f} GiB with {free:.2f} GiB of {total:.2f} GiB free. {said or ''}".strip()


ALLOC_OOM_WARNING = Signature(
    "allocator_oom", "cuda_oom", "CUDA ran out of memory (the caching allocator's failed allocation)",
    (),
    patterns=(_ALLOC_OOM,), lines=(_ALLOC_OOM,), priority=60, explains=True, detail=_alloc_detail,
    sources=(("torch", "c10/cuda/CUDACachingAllocator.cpp:3933 (alloc_block: LOG(WARNING) memory "
                       "allocation failed with OOM on device {} while trying to allocate {} bytes "
                       "(free: {}, total: {}).)"),
             ("CUDA runtime", "cudaErrorMemoryAllocation (2)")))

# torch's MapAllocator: "unable to mmap <size> bytes from file <name>: <strerror(errno)> (<errno>)" (pytorch/pytorch
# 0392872 aten/src/ATen/MapAllocator.cpp, MapAllocator::MapAllocator, after mmap returns MAP_FAILED); errno 12 is ENOMEM
_MMAP_ENOMEM = r"unable to mmap \d+ bytes from file <[^>\n]*>: Cannot allocate memory \(12\)"
# (vLLM round 73) Ray's memory monitor killing a worker when the node's memory crosses its threshold (the
# kill's message: "Memory on the node (...) where the task (...) was running was U / T (F), which exceeds
# the memory usage threshold of X. Ray killed this worker (ID: ...) because it was the most recently
# scheduled task ...", the exit detail of the worker and the OutOfMemoryError its caller gets, ray 2.43.0
# ray/exceptions.py:523) and the raylet's periodic summary of its kills ("N Workers (tasks / actors)
# killed due to memory pressure (OOM), M Workers crashed due to other reasons at node ...", node_manager.cc,
# the line the raylet's own log names, :3069 in this round's; N of 1 or more): the host ran out of memory,
# Ray's own OOM killer acted
_RAY_OOM_KILL = (r"which exceeds the memory usage threshold of [\d.]+\. Ray killed this worker",
                 r"\b[1-9]\d* Workers \(tasks / actors\) killed due to memory pressure \(OOM\)")

HOST_OOM = Signature(
    "host_oom", "host_oom", "the host ran out of memory (RAM or /dev/shm)",
    ("Host memory ran out, not GPU memory: `dmesg -T | grep -i oom` (or `journalctl -k`) shows "
     "the kernel's OOM killer; give the machine or container more RAM and a larger /dev/shm "
     "(docker's shm-size), or run fewer processes per host.",),
    patterns=(r"\[Errno 12\] Cannot allocate memory", r"Error while creating shared memory segment /dev/shm",
              r"/dev/shm.{0,80}No space left on device", r"No space left on device.{0,80}/dev/shm",
              r"scheduler died during initialization \(exit code: -9\)", r"crashed with exit code -9\b",
              # (round 72) torch's file mapping refused by the kernel for want of memory (ENOMEM), as a checkpoint
              # shard is mapped: safetensors' safe_open(framework="pt") maps the file through torch's MapAllocator
              _MMAP_ENOMEM, *_RAY_OOM_KILL),
    lines=(r"\[Errno 12\] Cannot allocate memory", r"Error while creating shared memory segment /dev/shm",
           # (not Ray's list of a lost worker's possible causes, "(1) the process was killed by the OOM
           # killer due to high memory usage, (2) ray stop --force was called, or (3) ...": ray-project/ray
           # src/ray/raylet/node_manager.cc, HandleClientConnectionError; round 14)
           r"Out of memory: Killed process", r"(?<!\(1\) the process was )killed by the OOM killer",
           r"crashed with exit code -9\b", r"scheduler died during initialization \(exit code: -9\)",
           *_RAY_OOM_KILL),
    priority=65,
    sources=(("0.5.10", "sglang/srt/entrypoints/engine.py:1186"),
             ("0.5.10", "sglang/srt/utils/watchdog.py:217"),
             ("0.5.23", "sglang/srt/entrypoints/engine.py:2006"),
             ("0.5.23", "sglang/srt/utils/watchdog.py:217"),
             ("Linux 6.1.176", "mm/oom_kill.c:959 (__oom_kill_process: \"%s: Killed process %d (%s) ...\", "
                               "its %s \"Out of memory\" from out_of_memory :1184)"),
             ("Linux", "errno ENOMEM (12)"),
             ("torch (pytorch/pytorch 0392872)",
              "aten/src/ATen/MapAllocator.cpp (MapAllocator::MapAllocator: unable to mmap N bytes from file <F>: "
              "strerror(errno) (errno))"),
             ("ray 2.43.0", "ray/core/src/ray/raylet/raylet (its strings \", which exceeds the memory "
                            "usage threshold of \", \". Ray killed this worker (ID: \", \" Workers (tasks "
                            "/ actors) killed due to memory pressure (OOM), \")"),
             ("ray 2.43.0", "ray/exceptions.py:523 (OutOfMemoryError: the node is running out of memory and "
                            "tasks or actors are being evicted)")))

# a process killed by SIGBUS (exit code -7) in a log that also says "[Errno 28] No space left on
# device": a page of a tmpfs mapping (/dev/shm: shared tensors, POSIX semaphores) that tmpfs could
# not back faults with SIGBUS (Linux mm/shmem.c, shmem_fault: VM_FAULT_SIGBUS on -ENOSPC);
# joblib's probe of a multiprocessing semaphore warns with the errno (joblib
# _multiprocessing_helpers.py:44); SGLang reports the child's signal as its exit code (0.5.23
# entrypoints/engine.py:2006, "scheduler died during initialization (exit code: -7)").
# Read so by :func:`ddlab.diagnosis.readings.shm_reading`; alone it matches only torch's own
# words for the same fault in a DataLoader worker (torch/csrc/DataLoader.cpp, handler_SIGBUS).
SHM_FULL = Signature(
    "shm_full", "host_oom", "a bus error while the host's shared memory (/dev/shm) was full",
    ("A process died of SIGBUS while the host's shared memory was full (No space left on device): "
     "a page of /dev/shm could not be backed. `df -h /dev/shm` shows it; give the container a "
     "larger /dev/shm (docker's `--shm-size`, or `--ipc=host`), remove stale files there, or run "
     "fewer processes per host.",),
    lines=(r"Unexpected bus error encountered in worker\. This might be caused by insufficient shared memory",),
    priority=65, fatal=True,
    sources=(("0.5.23", "sglang/srt/entrypoints/engine.py:2006"),
             ("torch 2.6.0", "torch/csrc/DataLoader.cpp:72 (handler_SIGBUS: ERROR: Unexpected bus error "
                             "encountered in worker. This might be caused by insufficient shared memory "
                             "(shm).)"),
             ("Linux 6.1.176", "mm/shmem.c:2159 (shmem_fault: return vmf_error(err), VM_FAULT_SIGBUS "
                               "when tmpfs has no space)"),
             ("joblib", "joblib/_multiprocessing_helpers.py:44 (a semaphore could not be created: "
                        "the OSError's text in a UserWarning)")))

# (round 110) SGLang's tensor-parallel memory check at distributed init: each rank compares the least free memory
# of all ranks' GPUs with its own and, below 90 % of it, raises "The memory capacity is unbalanced. Some GPUs may be
# occupied by other processes. ..." (ValueError: 0.1.17 managers/router/model_runner.py:255, 0.5.3
# model_executor/model_runner.py:718 in init_torch_distributed; RuntimeError: 0.5.9 :845, 0.5.23
# distributed/bootstrap.py:450). Another process holds memory on a GPU: the server cannot have the memory it sizes
# by; with the check turned off (SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK, 0.5.3 :712; SGLANG_ENABLE_TP_MEMORY_
# INBALANCE_CHECK=0, 0.5.9 :844, 0.5.23 :449) it is a warning, which ends nothing
_UNBALANCED = r"The memory capacity is unbalanced\. Some GPUs may be occupied by other processes"
TP_MEMORY_UNBALANCED = Signature(
    "tp_memory_unbalanced", "cuda_oom", "another process holds memory on one of the GPUs",
    ("A GPU of this server has less free memory than the others (SGLang's balance check at startup): another "
     "process holds it. Free that GPU (`nvidia-smi` or `rocm-smi` shows the process: an old server or "
     "container still running?) and start again.",),
    types=r"(?:\w+\.)*(?:ValueError|RuntimeError)", patterns=(_UNBALANCED,), priority=62, phase="launch",
    sources=(("sglang 0.1.17", "sglang/srt/managers/router/model_runner.py:255"),
             ("sglang 0.5.3", "sglang/srt/model_executor/model_runner.py:718"),
             ("sglang 0.5.9", "sglang/srt/model_executor/model_runner.py:845"),
             ("0.5.23", "sglang/srt/distributed/bootstrap.py:450")))

SIGNATURES = [KV_POOL, KV_WEIGHTS, HYBRID_STATE, SWA_POOL, *slots.SIGNATURES, CUDA_OOM, ALLOC_OOM_WARNING,
              HOST_OOM, SHM_FULL, TP_MEMORY_UNBALANCED]
