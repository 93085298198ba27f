"""HIP's runtime refusing to dispatch a kernel that needs hostcall on a platform without PCIe atomics
(``unsupported_gpu``, round 119).

A HIP kernel whose code object asks for a hostcall buffer (the device calling the host: printf, device malloc,
a host function; ROCm clr rocm-6.2.2 rocclr/device/devhostcall.cpp:78, :85, :92) gets one written into its hidden
arguments when it is dispatched, and only where the device reports PCIe atomics; otherwise the runtime logs
"Pcie atomics not enabled, hostcall not supported" and gives up the dispatch (rocclr/device/rocm/rocvirtual.cpp:3064,
:3075 in submitKernelInternal; pcie_atomics_ is the system link's atomic support, rocdevice.cpp:237-244), logs
"AQL dispatch failed!" (:3411, :3432) and the launch returns hipErrorIllegalState (hipamd/src/hip_module.cpp:420-422),
"the operation cannot be performed in the present state" (hip_error.cpp:295-296). Both lines are LogError, printed
from AMD_LOG_LEVEL=1 (rocclr/utils/debug.hpp:38, :234).
The check is at the AQL dispatch: a launch on a capturing stream is recorded into the graph and returns before it
(STREAM_CAPTURE, hipamd/src/hip_internal.hpp:231-237, hip_module.cpp:441), so the kernel ran eagerly, whatever phase
the log is in; graphs off only moves it to the next place that kernel runs. The platform (a virtual function or a
passthrough VM, a root port or BIOS without PCIe AtomicOps), not the model or the arguments, cannot run the kernel:
read as ``unsupported_gpu``, as vLLM's UVA missing on its platform is (:mod:`ddlab.vllm_crashes.backends`). The
runtime's own line says it; "AQL dispatch failed!" or hipErrorIllegalState alone name no cause and read as before.
:mod:`.device` splices this list after :mod:`.ocp_fp8`'.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "HOSTCALL_UNSUPPORTED"]

_HOSTCALL = r"\bPcie atomics not enabled, hostcall not supported\b"
HOSTCALL_UNSUPPORTED = Signature(
    "hip_hostcall_unsupported", "unsupported_gpu",
    "HIP cannot dispatch a kernel that needs hostcall: the platform has no PCIe atomics",
    ("The HIP runtime refused to dispatch a kernel that uses hostcall (the device calling the host: printf, "
     "device malloc) because this GPU reports no PCIe atomics to the host (\"Pcie atomics not enabled, hostcall "
     "not supported\", then \"AQL dispatch failed!\" and hipErrorIllegalState). The platform is the cause, not the "
     "model or the graph: a virtual function or passthrough VM, or a root port or BIOS without PCIe AtomicOps. Run "
     "on a host whose GPUs have PCIe atomics, or keep the kernels that need hostcall out (AMD_LOG_LEVEL=3 logs each "
     "kernel's ShaderName before its dispatch). CUDA graphs off is no fix: the launch that failed was a dispatch, "
     "not a capture (a capturing stream records launches), and the kernel is dispatched again where it next runs.",),
    patterns=(_HOSTCALL,), lines=(_HOSTCALL,), priority=81,
    sources=(("ROCm clr rocm-6.2.2", "rocclr/device/rocm/rocvirtual.cpp:3075 (submitKernelInternal, the hidden "
                                     "hostcall buffer: LogError(\"Pcie atomics not enabled, hostcall not "
                                     "supported\"); return false)"),
             ("ROCm clr rocm-6.2.2", "rocclr/device/rocm/rocvirtual.cpp:3411 (LogError(\"AQL dispatch failed!\"))"),
             ("ROCm clr rocm-6.2.2", "hipamd/src/hip_module.cpp:422 (CL_INVALID_OPERATION -> hipErrorIllegalState)"),
             ("ROCm clr rocm-6.2.2", "hipamd/src/hip_internal.hpp:231-237 (STREAM_CAPTURE: a capturing stream "
                                     "records the launch, no dispatch)"),
             ("ROCm clr rocm-6.2.2", "rocclr/device/devhostcall.cpp:85, :92 (hostcall's printf and device "
                                     "malloc services)"),
             ("ROCm clr rocm-6.2.2", "rocclr/device/rocm/rocvirtual.cpp:3028 (ShaderName at LOG_INFO, 3)")))

SIGNATURES = [HOSTCALL_UNSUPPORTED]
