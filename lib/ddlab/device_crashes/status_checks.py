"""A kernel library's status check reporting its launch refused (``kernel_config_unsupported``, round 89).

flashinfer's norm kernels (and sgl-kernel's builds of them) check the ``cudaError_t`` their launch returned
and raise "<Op> failed with error code " followed by ``cudaGetErrorString(status)`` (flashinfer 0.5.0
data/csrc/norm.cu:47-48 RMSNorm, :71-72 QKRMSNorm, :104-105 FusedAddRMSNorm; pybind11 / tvm-ffi raise it in
Python as RuntimeError). With cudaErrorInvalidConfiguration's text, "invalid configuration argument", the
launch this batch or model shape asked for (grid, block, shared memory) was refused before it ran, as torch's
"CUDA error: invalid configuration argument" is (:mod:`.kernels`, ``kernel_launch_refused``): not a fault.
Other texts after "failed with error code" keep the reading they have (a fault text stays a fault).
:mod:`.device` splices this list after :mod:`.cooperative`'s.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "STATUS_LAUNCH_REFUSED"]

_REFUSED = r"\b\w+ failed with error code invalid configuration argument\s*$"
STATUS_LAUNCH_REFUSED = Signature(
    "status_launch_refused", "kernel_config_unsupported",
    "a kernel library's launch was refused for this shape (invalid configuration argument)",
    ("A kernel library's own status check found its launch refused with cudaErrorInvalidConfiguration "
     "('<Op> failed with error code invalid configuration argument'): the grid, block or shared memory the "
     "kernel asked for this batch or model shape (an empty batch included) is not one the GPU takes, so the "
     "kernel does not support this configuration (not a memory fault). The op named in the line is the "
     "kernel: install a newer release of its library (sgl-kernel, flashinfer), keep the batch within what it "
     "takes, or choose a backend that does not use it.",),
    patterns=(_REFUSED,), lines=(_REFUSED,), priority=81,
    sources=(("flashinfer 0.5.0", "flashinfer/data/csrc/norm.cu:47-48 (RMSNorm failed with error code "
                                  "<cudaGetErrorString(status)>), :71-72, :104-105"),
             ("CUDA runtime 12.9.79", "nvidia/cuda_runtime/include/driver_types.h:274 "
                                      "(cudaErrorInvalidConfiguration = 9, the comment at :267-273)")))

SIGNATURES = [STATUS_LAUNCH_REFUSED]
