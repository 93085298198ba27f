"""A cooperative launch the CUDA runtime refused for its grid (``kernel_config_unsupported``, round 79).

A cooperative kernel (launched with ``cudaLaunchCooperativeKernel``, or ``cudaLaunchKernelEx`` with the
``cudaLaunchAttributeCooperative`` attribute) needs every block of its grid resident on the GPU at once: a
grid larger than the occupancy allows times the SM count is refused before it runs, with
``cudaErrorCooperativeLaunchTooLarge`` (720), "too many blocks in cooperative launch" (CUDA 12.8's
driver_types.h:932-939, as triton 3.5.0 ships it). Nothing ran and nothing faulted: the launch this configuration asked for is not one
this GPU takes, so the kind is ``kernel_config_unsupported``, as a launch refused for its grid, block or shared
memory is (:mod:`.kernels`, ``kernel_launch_refused``).

DeepEP launches its intranode and internode kernels so (csrc/kernels/launch.cuh, SETUP_LAUNCH_CONFIG sets the
cooperative attribute over ``num_sms`` blocks; LAUNCH_KERNEL checks the launch with CUDA_CHECK) and its check
throws EPException "Failed: CUDA error FILE:LINE 'TEXT'" (csrc/kernels/exception.cuh), which pybind11 raises in
Python as RuntimeError (deepseek-ai/DeepEP c18eabd: csrc/kernels/exception.cuh:18, :25-31;
csrc/kernels/launch.cuh:8-18, :29; csrc/kernels/intranode.cu:505, the dispatch's SWITCH_RANKS(
DISPATCH_LAUNCH_CASE) whose LAUNCH_KERNEL takes that line). Any other check that prints the runtime's string
(torch's "CUDA error: ...", a library's own) names the same refusal. :mod:`.device` splices this list after
:mod:`.kernels`'.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "COOPERATIVE_LAUNCH_TOO_LARGE"]

# cudaGetErrorString(cudaErrorCooperativeLaunchTooLarge), the same words as cuGetErrorString's for
# CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: in an exception's message, or on a line as a CUDA check prints it (quoted
# after DeepEP's "Failed: CUDA error FILE:LINE " or "CU error", after torch's "CUDA error: "), not in prose
_TOO_LARGE = r"\btoo many blocks in cooperative launch\b"
_TOO_LARGE_LINE = r"\bCU(?:DA)? error\b[^\n]{0,300}?[ ':]too many blocks in cooperative launch'?\s*$"
COOPERATIVE_LAUNCH_TOO_LARGE = Signature(
    "cooperative_launch_too_large", "kernel_config_unsupported",
    "a cooperative kernel's grid is larger than the GPU can hold at once",
    ("The CUDA runtime refused a cooperative kernel launch ('too many blocks in cooperative launch', "
     "cudaErrorCooperativeLaunchTooLarge): its grid asked for more blocks than this GPU can keep resident at "
     "once, so the kernel never ran (no fault). The file in the line names the kernel; DeepEP's intranode and "
     "internode kernels launch so, one block per SM they are given: give DeepEP fewer SMs (its num_sms, in the "
     "JSON of SGLang's DeepEP config), and check that nothing else holds part of the GPU (an MPS active-thread "
     "percentage, another process's green context) or that the GPU has the SM count the config was tuned on.",),
    patterns=(_TOO_LARGE,), lines=(_TOO_LARGE_LINE,), priority=81,
    sources=(("deepseek-ai/DeepEP c18eabd", "csrc/kernels/exception.cuh:18 (EPException: Failed: <name> error "
                                            "FILE:LINE '<error>'), :25-31 (CUDA_CHECK: cudaGetErrorString)"),
             ("deepseek-ai/DeepEP c18eabd", "csrc/kernels/launch.cuh:8-18 (SETUP_LAUNCH_CONFIG: "
                                            "cudaLaunchAttributeCooperative over num_sms blocks), :29 "
                                            "(LAUNCH_KERNEL: CUDA_CHECK(cudaLaunchKernelEx(...)))"),
             ("deepseek-ai/DeepEP c18eabd", "csrc/kernels/intranode.cu:505 (dispatch: "
                                            "SWITCH_RANKS(DISPATCH_LAUNCH_CASE))"),
             ("CUDA runtime (triton 3.5.0 backends/nvidia/include)", "driver_types.h:939 "
                                                                      "(cudaErrorCooperativeLaunchTooLarge = 720, "
                                                                      "the comment at :932-938)"),
             ("sglang 0.5.23", "sglang/srt/layers/moe/token_dispatcher/deepep.py:343-355 (DeepEPConfig: "
                               "num_sms from the DeepEP config's normal_dispatch)")))

SIGNATURES = [COOPERATIVE_LAUNCH_TOO_LARGE]
