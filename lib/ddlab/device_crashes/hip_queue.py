"""The HIP runtime aborting a queue because it could not allocate a kernel's scratch memory (``cuda_oom``, round 122).

A kernel whose waves need more scratch (private memory: spilled registers, a stack) than its queue holds traps to the
runtime, which grows the queue's scratch from the GPU's memory (ROCR-Runtime c7785a6
runtime/hsa-runtime/core/runtime/amd_aql_queue.cpp:1167-1168, HandleInsufficientScratch :925). Where it cannot fit even
one wave (:1091) the handler promotes the trap to HSA_STATUS_ERROR_OUT_OF_RESOURCES ("Out of scratch - promote error",
:1170-1173) and hands it to the queue's error callback (:1227-1228); the exception handler's own table maps no queue
error to that status (:1250-1288, QueueErrors), so in the callback it is the scratch that did not fit. HIP's callback
prints "Callback: Queue %p Aborting with error : %s Code: 0x%x Available Free mem : %zu MB", the memory it finds free,
for that status alone, then aborts the process (ROCm clr f9f995c rocclr/device/rocm/rocdevice.cpp:2981-3003, the same
line in rocvirtual.cpp:2889; the status's words are hsa_status_string's, core/runtime/hsa.cpp:2621-2625, 0x1008 in
runtime/hsa-runtime/inc/hsa.h:170). The GPU's memory ran out under a running kernel: ``cuda_oom``, ranked above the
peers' collective timeouts that follow it (``nccl``); the other statuses of the same callback (a kernel's memory fault)
stay :data:`~ddlab.device_crashes.device.AMD_GPU_PAGE_FAULT`'s. :mod:`.device` splices this list after
:mod:`.hostcall`'s.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "HIP_QUEUE_OUT_OF_SCRATCH"]

_OUT_OF_RESOURCES = r"\bAborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES\b"


def _free_detail(found: Found) -> str | None:
    if free := regex(r"Available Free mem : (\d+) MB").search(found.text):
        return f"The runtime found {free[1]} MB of the GPU's memory free when it gave up."
    return None


HIP_QUEUE_OUT_OF_SCRATCH = Signature(
    "hip_queue_out_of_scratch", "cuda_oom",
    "the HIP runtime could not allocate a kernel's scratch memory: the GPU's memory ran out",
    ("A kernel on the AMD GPU needed more scratch memory (per-wave private memory: spilled registers, a stack) "
     "than its queue held, and the HIP runtime could not allocate it from the GPU's memory, so it aborted the "
     "process (\"Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES\", then 'Fatal Python error: Aborted'). "
     "The server's memory pool leaves too little of the GPU free: lower `--mem-fraction-static` so the runtime has "
     "room for the kernels' scratch. Collective timeouts of the other ranks after it are its consequence: the "
     "rank that aborted never joined the collective.",),
    lines=(_OUT_OF_RESOURCES,), priority=60, fatal=True, running=True, detail=_free_detail,
    sources=(("ROCR-Runtime c7785a6", "runtime/hsa-runtime/core/runtime/amd_aql_queue.cpp:1167-1173 "
                                      "(DynamicQueueEventsHandler: insufficient scratch, 'Out of scratch - promote "
                                      "error', HSA_STATUS_ERROR_OUT_OF_RESOURCES), :1091 (not even one wave fits), "
                                      ":1227-1228 (errors_callback_)"),
             ("ROCR-Runtime c7785a6", "runtime/hsa-runtime/inc/hsa.h:170 (HSA_STATUS_ERROR_OUT_OF_RESOURCES = "
                                      "0x1008)"),
             ("ROCm clr f9f995c", "rocclr/device/rocm/rocdevice.cpp:2981-3003 (callbackQueue: Callback: Queue %p "
                                  "Aborting with error : %s Code: 0x%x Available Free mem : %zu MB, then "
                                  "abort())")))

SIGNATURES = [HIP_QUEUE_OUT_OF_SCRATCH]
