"""The GPU itself: kernel faults, kernels with no build for this GPU, kernels that fail to build
(kernel libraries with no kernels for this GPU's architecture: :mod:`.archs`; kernels refusing a model
configuration: :mod:`.kernels`; a cooperative launch refused for its grid: :mod:`.cooperative`; a kernel run on
other dtypes than its plan was given: :mod:`.plan_dtypes`; a tensor handed to a kernel off the GPU: :mod:`.tensor_devices`; an Ascend NPU's own fault and support texts: :mod:`.npu`;
each spliced into :data:`SIGNATURES` where it stood).

An illegal memory access, a device-side assert or an unspecified launch failure is ``cuda_illegal_access``
wherever it surfaces: in a scheduler traceback, inside "Capture cuda graph failed: ...", in a graph replay, on
the C++ ``what():`` line of torch's NCCL watchdog thread, or only as the kernel's own ``IndexKernel.cu:92: ...
Assertion ... failed.`` lines. The fault is the kind; the phase (and, for a replay, the signature) says where.
CUDA reports the error at the next synchronisation, so the frame that shows it is rarely the kernel that
caused it. torch's hint lines ("CUDA kernel errors might be asynchronously reported ..." to "Compile with
`TORCH_USE_CUDA_DSA` ...", round 56) with the message line cut from a paste are the same fault
(``cuda_error_cut``, ranked below every message that names one).

A kernel that has an instance for this GPU but not for this model's
configuration (flashinfer's "Unsupported group_size" / "failed to dispatch",
flash-attn's head-dim limit, Triton's power-of-2 ``arange``) is
``kernel_config_unsupported``, not ``unsupported_gpu``; inside "Capture cuda graph
failed: ..." too (the refusal is the kind, the capture is where).
"""

from __future__ import annotations

from ddlab.crashes.kinds.graphs import EAGER_FRAMES, REPLAY_FRAMES
from ddlab.device_crashes import archs, compilers, cooperative, kernels, npu, plan_dtypes, tensor_devices
from ddlab.device_crashes import jit_dirs, moe_dispatch, npu_deepep, ocp_fp8, scale_layouts, status_checks
from ddlab.device_crashes import hip_queue, hostcall
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "CUDA_FAULT_WORDS"]

# (round 77) the CUDA driver's names for the same faults (CUDA 13.0 include/cuda.h:2837 CUDA_ERROR_ILLEGAL_ADDRESS =
# 700, :2899 CUDA_ERROR_ASSERT = 710, :2935 CUDA_ERROR_ILLEGAL_INSTRUCTION = 715, :2944 CUDA_ERROR_MISALIGNED_ADDRESS
# = 716, :2974 CUDA_ERROR_LAUNCH_FAILED = 719, "an exception occurred on the device while executing a kernel", the
# error a trap raises): a kernel library's driver check prints the name, with or without cuGetErrorString's words
# (DeepGEMM's DG_CUDA_DRIVER_CHECK: "CUDA driver error (FILE:LINE): 719 (CUDA_ERROR_LAUNCH_FAILED, unspecified
# launch failure)", sgl-project/DeepGEMM a348cd9 csrc/utils/exception.hpp:52-63; raised through tvm-ffi as
# tvm.error.InternalError), and DeepGEMM's device assert prints "Assertion failed: FILE:LINE, condition: COND"
# before its trap (sgl-deep-gemm 0.1.4 deep_gemm/include/deep_gemm/common/exception.cuh:19-20)
_DRIVER_FAULTS = r"\bCUDA_ERROR_(?:ILLEGAL_ADDRESS|ASSERT|ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|LAUNCH_FAILED)\b"
_FAULTS = (r"illegal memory access", r"device-side assert(?:ion)? triggered",
           r"unspecified launch failure", r"misaligned address",
           r"an illegal instruction was encountered", r"cudaErrorIllegalAddress", _DRIVER_FAULTS)
# the faults' own words after "CUDA error: ", as torch's check and the kernel libraries' own checks print them
CUDA_FAULT_WORDS = r"an illegal memory access|unspecified launch failure|misaligned address|an illegal instruction"
_FAULT_LINES = (rf"CUDA error: (?:{CUDA_FAULT_WORDS}|device-side assert)",
                r"\.cu:\d+: .{0,160}\bAssertion\b",
                # a kernel library's own check (FlashMLA csrc/utils.h: "CUDA error (%s:%d): %s")
                rf"CUDA error \([^()]+:\d+\): (?:{CUDA_FAULT_WORDS})",
                r"CUDA (?:driver )?error \([^()]+:\d+\): \d+ \(" + _DRIVER_FAULTS,
                # (round 84) not DG_HOST_ASSERT's check of a CUDA call's status, the same words on the host
                # (DeepGEMM 6db7e18 deep_gemm/include/deep_gemm/utils.cuh:20-28, fp8_gemm.cuh:435: a launch's
                # cudaError of any kind): it names no fault
                r"^\s*Assertion failed: [^\s,]+:\d+, condition: (?!.*==\s*cudaSuccess\b)",
                # (issue 28, vLLM's first texts) a Triton / inductor kernel's device assert (tl.device_assert,
                # inductor's index checks) as __assertfail prints it (triton 3.4.0
                # backends/nvidia/include/crt/common_functions.h:180): the kernel's .py file, not a .cu
                r"block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion .{0,200}failed")
_BISECT = ("Rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel that faults (the frame that "
           "reports it is often not the one that caused it); then bisect: {graphs_off}, another "
           "`--attention-backend`, and a newer SGLang / sgl-kernel if the kernel is theirs.")
_BY_ALGORITHM = (
    ("eagle", "EAGLE / MTP crashes of this kind are often fixed by `--speculative-eagle-topk 1` "
              "and fewer `--speculative-num-steps`, or by a draft model made for this target."),
    ("dflash", "With DFLASH, check that the drafter was trained for this target (vocabulary, block "
               "size) and try `--speculative-attention-mode decode`."),
    ("ddtree", "DDTree's verify batch holds budget+1 tokens per request: every buffer the verify "
               "path writes (captured graph buffers, KV slots) must be sized for that, not for the "
               "block size."),
)

ILLEGAL_ACCESS = Signature(
    "cuda_illegal_access", "cuda_illegal_access",
    "a CUDA kernel faulted: illegal memory access or device-side assert",
    ("A GPU kernel read or wrote out of bounds.", _BISECT),
    patterns=_FAULTS, lines=_FAULT_LINES, priority=83, by_algorithm=_BY_ALGORITHM, running=True,
    sources=(("torch 2.14.1", "c10/cuda/CUDAException.cpp:43 (c10_cuda_check_implementation)"),
             ("torch 2.14.1", "aten/src/ATen/native/cuda/IndexKernel.cu (index out of bounds assert)"),
             ("CUDA runtime", "cudaErrorIllegalAddress (700), cudaErrorAssert (710), "
                              "cudaErrorLaunchFailure (719)"),
             ("CUDA 13.0", "include/cuda.h:2974 (CUDA_ERROR_LAUNCH_FAILED = 719; :2837 CUDA_ERROR_ILLEGAL_ADDRESS = "
                           "700, :2899 CUDA_ERROR_ASSERT = 710, :2935, :2944)"),
             ("sgl-project/DeepGEMM a348cd9", "csrc/utils/exception.hpp:61 (DG_CUDA_DRIVER_CHECK: CUDA driver error "
                                              "(FILE:LINE): CODE (NAME, TEXT))"),
             ("sgl-deep-gemm 0.1.4", "deep_gemm/include/deep_gemm/common/exception.cuh:19 (DG_DEVICE_ASSERT: "
                                     "Assertion failed: %s:%d, condition: %s, then trap)")))

# cudaErrorContained (226): "an exception occurred on the device that is now contained by the
# GPU's error containment capability. Common causes are - a. Certain types of invalid accesses of
# peer GPU memory over nvlink b. Certain classes of hardware errors" (CUDA 12.9 driver_types.h:711-719);
# cudaGetErrorString's text, which torch prints as "CUDA error: <text>" (an AcceleratorError since
# torch 2.8). A kernel faulted on another GPU's memory (a custom all-reduce, an EP dispatch) or the
# GPU did: the process cannot go on (every later CUDA call returns the same error)
_CONTAINED = (r"Invalid access of peer GPU memory over nvlink or a hardware error", r"\bcudaErrorContained\b")
CONTAINED_FAULT = Signature(
    "cuda_error_contained", "cuda_illegal_access",
    "a CUDA kernel faulted on peer GPU memory over NVLink (or the GPU had a hardware error)",
    ("The GPU's error containment stopped the process (cudaErrorContained): a kernel made an invalid "
     "access to another GPU's memory over NVLink, or the GPU hit a hardware error. Check the host's "
     "kernel log for an Xid of this GPU (`dmesg | grep -i xid`) and `nvidia-smi -q -d ECC`; if the "
     "hardware is clean, the peer access is the suspect: retry with `--disable-custom-all-reduce` "
     "(and without expert-parallel all-to-all kernels), then:", _BISECT),
    patterns=_CONTAINED, lines=(r"CUDA error: Invalid access of peer GPU memory over nvlink",),
    priority=83, by_algorithm=_BY_ALGORITHM, running=True,
    sources=(("CUDA runtime 12.9.79", "nvidia/cuda_runtime/include/driver_types.h:719 (cudaErrorContained "
                                      "= 226, the comment at :711-717)"),
             ("CUDA runtime 12.9.79", "nvidia/cuda_runtime/lib/libcudart.so.12 (cudaGetErrorString: Invalid "
                                      "access of peer GPU memory over nvlink or a hardware error)"),
             ("CUDA runtime 13.5.37", "nvidia/cu13/lib/libcudart.so.13 (the same text)"),
             ("torch 2.14.1", "c10/cuda/CUDAException.cpp:43 (c10_cuda_check_implementation: CUDA error: "
                              "<cudaGetErrorString>)")))

REPLAY_FAULT = Signature(
    "replay_cuda_error", "cuda_illegal_access", "a CUDA kernel faulted in CUDA graph replay",
    ("The fault surfaced while a captured graph replayed: retry with {graphs_off}; if it goes "
     "away, the graph's buffers are smaller than what the batch writes (captured for fewer "
     "tokens per request than are sent). CUDA_LAUNCH_BLOCKING=1 names the kernel.",),
    patterns=_FAULTS, context=(REPLAY_FRAMES,), absent=(EAGER_FRAMES,), priority=84,
    phase="serving", by_algorithm=_BY_ALGORITHM,
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:776"),
             ("0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py:1141"),
             ("0.5.23", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:1981")))


# (vLLM round 80) torch inductor refusing a GPU Triton cannot compile for: GPUTooOldForTriton (torch 2.8.0
# _inductor/exc.py:133-135), raised by torch.compile's device check before it builds any kernel
_TRITON_TOO_OLD = (r"\bwhich is too old to be supported by the triton GPU compiler\b|\bTriton only supports "
                   r"devices of CUDA Capability >= [\d.]+, but your device is of CUDA capability [\d.]+")
UNSUPPORTED_GPU = Signature(
    "unsupported_gpu", "unsupported_gpu", "a kernel has no build for this GPU",
    ("A kernel in this install was not built for this GPU's compute capability "
     "(`nvidia-smi --query-gpu=name,compute_cap --format=csv`): install wheels built for it "
     "(PyTorch, sgl-kernel, flashinfer for that CUDA arch), pick another `--attention-backend` "
     "(fa3 needs sm80 to sm90), or use a supported GPU (SGLang needs sm75 or newer).",),
    patterns=(r"no kernel image is available for execution on the device",
              r"SGLang only supports sm75 and above", r"FlashAttention v3 Backend requires SM>=80",
              r"is not compatible with the current PyTorch installation",
              r"Unsupported compute capability", r"requires (?:CUDA )?compute capability",
              r"compute capability [\d.]+ or newer is required", r"cudaErrorNoKernelImageForDevice",
              compilers.TRITON_FP8_ARCH, _TRITON_TOO_OLD),
    lines=(r"no kernel image is available for execution on the device",
           r"with CUDA capability sm_\d+ is not compatible with the current PyTorch installation",
           compilers.TRITON_FP8_ARCH, _TRITON_TOO_OLD),
    priority=81,
    sources=(("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:620"),
             ("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:1432"),
             ("0.5.10", "sglang/srt/model_executor/model_runner.py:1089"),
             ("0.5.10", "sglang/srt/layers/attention/attention_registry.py:133"),
             ("0.5.23", "sglang/srt/model_executor/model_runner_components/load_model_utils.py:91"),
             ("0.5.23", "sglang/srt/layers/attention/attention_registry.py:244"),
             ("torch 2.14.1", "torch/cuda/__init__.py:489"),
             ("torch 2.8.0", "torch/_inductor/exc.py:133-135 (GPUTooOldForTriton)"),
             ("CUDA runtime", "cudaErrorNoKernelImageForDevice (209)"),
             ("triton 3.4.0", "triton/language/core.py:593 (type fp8e4nv not supported in this architecture), "
                              "triton/backends/nvidia/compiler.py:170-171 (fp8e4nv from sm89)")))

# (vLLM round 13) the runtime finding no build of a kernel for this GPU: HIP's hipErrorInvalidDeviceFunction
# ("invalid device function", ROCm CLR hipamd/src/hip_error.cpp, hipGetErrorString) and CUDA's
# cudaErrorInvalidDeviceFunction (98, CUDA runtime driver_types.h), printed by torch's check as
# "<HIP|CUDA> error: <the runtime's string>" (c10/cuda/CUDAException.cpp:43, hipified on ROCm), whichever
# server launched the kernel (SGLang runs on ROCm with its own and aiter's kernels)
_NO_DEVICE_FUNCTION = r"\b(?:HIP|CUDA) error: invalid device function\b"
NO_DEVICE_FUNCTION = Signature(
    "no_device_function", "unsupported_gpu", "a kernel has no build for this GPU (invalid device function)",
    (UNSUPPORTED_GPU.advice[0] + " On ROCm: a torch, sgl-kernel and SGLang built for this GPU's gfx target "
     "(`rocminfo | grep gfx`; PYTORCH_ROCM_ARCH when building), or HSA_OVERRIDE_GFX_VERSION to a "
     "supported target of the same family.",),
    patterns=(_NO_DEVICE_FUNCTION, r"\bhipErrorInvalidDeviceFunction\b"),
    lines=(_NO_DEVICE_FUNCTION,), priority=81,
    sources=(("ROCm CLR", "hipamd/src/hip_error.cpp (hipGetErrorString: hipErrorInvalidDeviceFunction, "
                          "\"invalid device function\")"),
             ("CUDA runtime", "driver_types.h (cudaErrorInvalidDeviceFunction = 98)"),
             ("torch 2.14.1", "c10/cuda/CUDAException.cpp:43 (\"CUDA error: \", \"HIP error: \" hipified)")))

# A compiler command that failed (subprocess's CalledProcessError text): Triton builds its
# launcher with the host's C compiler (triton/runtime/build.py:51 in 3.4.0, check_call)
_COMPILER_FAILED = r"Command '\['[^']*\b(?:gcc|g\+\+|cc|clang|nvcc)', [^\]]*\]' returned non-zero exit status \d+"
KERNEL_COMPILE = Signature(
    "kernel_compile", "kernel_compile", "a kernel failed to build (Triton / flashinfer / nvcc JIT)",
    ("A just-in-time kernel build failed: read the compiler's first error. A missing CUDA header "
     "(cuda_fp8.h ...) means the CUDA toolkit on PATH is older than the one the wheels expect: "
     "install a matching toolkit or point CUDA_HOME at it, then clear the JIT caches "
     "(~/.cache/flashinfer, ~/.triton/cache). Triton's 'out of resource: shared memory' means "
     "the kernel's tiles do not fit this GPU: another `--attention-backend` avoids that kernel.",),
    patterns=(r"out of resource: shared memory", r"\bOutOfResources\b", r"Error building extension",
              r"ninja: build stopped", r"compilation terminated", r"triton\.compiler\.errors\.\w+",
              r"\bnvcc fatal\b", r"ptxas (?:fatal|error)",
              r"fatal error: [\w./-]+\.(?:h|hpp|cuh): No such file or directory",
              r"ninja exited with status \d+", r"Ninja build failed",
              r"CalledProcessError: Command '\['ninja'",
              # Triton's make_cubin runs ptxas as a subprocess (check=True): its failure is the
              # JIT build's (triton/backends/nvidia/compiler.py:424 in 3.4, as the frame prints)
              r"CalledProcessError: Command '\['[^']*\bptxas'",
              # also inside SGLang's "Ignore import error when loading sglang.srt.models.X"
              _COMPILER_FAILED,
              # a JIT build with no ninja (or nvcc) on PATH
              r"Ninja is required to load C\+\+ extensions",
              r"No such file or directory: '(?:[^']*/)?(?:ninja|nvcc)'",
              *compilers.BUILD_FAILED),
    lines=(r"^compilation terminated\.$",
           # Triton's OutOfResources printed alone (a paste cut above its traceback)
           r"^(?:triton\.runtime\.errors\.)?OutOfResources: out of resource: ", r"fatal error: [\w./-]+\.(?:h|hpp|cuh): No such file or directory",
           r"ninja: build stopped: subcommand failed", r"\bnvcc fatal\b",
           _COMPILER_FAILED,
           r"Error building extension '", *compilers.BUILD_FAILED),
    # Triton's CompilationError of a kernel whose fp8 type this GPU lacks is the GPU's (UNSUPPORTED_GPU); (vLLM round
    # 90) one caused by tl.arange refusing a range that is no power of 2 is the kernel refusing the caller's sizes
    # (compilers.ARANGE_NOT_POW2): kernels.py KERNEL_CONFIG's
    absent=(compilers.TRITON_FP8_ARCH, compilers.ARANGE_NOT_POW2),
    priority=82, detail=compilers.build_detail,
    sources=(("triton 3.8.0", "triton/runtime/errors.py:22"),
             ("torch 2.14.1", "torch/utils/cpp_extension.py:2558"),
             ("gcc / nvcc", "compilation terminated."),
             ("triton 3.4", "triton/backends/nvidia/compiler.py:424 (make_cubin: subprocess.run(ptxas_cmd, "
                            "check=True ...))"),
             ("triton 3.4.0", "triton/runtime/build.py:51 (_build: subprocess.check_call(cc_cmd))"),
             ("torch 2.13.0", "torch/utils/cpp_extension.py:2562 (Ninja is required ...), :2860 "
                              "(command = ['ninja', '-v'], run by subprocess)"),
             ("apache-tvm-ffi 0.1.15", "tvm_ffi/cpp/extension.py:665 (ninja exited with status N)"),
             ("flashinfer 0.7.4", "flashinfer/jit/cpp_ext.py:411 (run_ninja: Ninja build failed)"),
             ("flashinfer-python 0.6.11.post2", "flashinfer/jit/cpp_ext.py:61-63 (get_cuda_path: Could not find "
                                               "nvcc and default cuda_home=... doesn't exist)"),
             ("triton 3.2.0", "triton/runtime/build.py:32 (Failed to find C compiler. Please specify via CC ...)"),
             ("triton 3.4.0", "triton/runtime/build.py:33 (the same, or triton.knobs.build.impl), :48 (cc_cmd += "
                              "-l<lib>), :51"),
             ("triton 3.4.0", "triton/backends/nvidia/driver.py:17 (libraries = ['cuda'])"),
             ("gcc", "gcc/collect-utils.c do_wait (\"%s returned %d exit status\")"),
             ("binutils", "gold/fileread.cc (cannot find -l%s)"),
             ("DeepGEMM (deepseek-ai/DeepGEMM bcd598f)",
              "csrc/jit/kernel_runtime.hpp:45 (DG_HOST_ASSERT(exit_code == 0) after cuobjdump -symbols)"),
             ("DeepGEMM (deepseek-ai/DeepGEMM 1e7740d)",
              "csrc/utils/exception.hpp (DGException: <name> error (<file>:<line>): <cond>)"),
             ("0.5.23", "sglang/srt/layers/deep_gemm_wrapper/compile_utils.py:39")))

# (round 16) A traceback cut inside a Triton backend's compile step, on the line that runs the backend's
# own compiler as a subprocess: Triton's compile lowers the kernel stage by stage (triton-ascend 3.2.0
# triton/compiler/compiler.py:310, next_module = compile_ir(module, metadata)) and the last stages run
# an external compiler with check=True (triton-ascend 3.2.0 triton/backends/ascend/compiler.py:549,
# linalg_to_bin_enable_npu_compile_A2_A3: subprocess.run(cmd_list, capture_output=True, check=True),
# bishengir-compile; the nvidia backend's make_cubin runs ptxas the same way, triton 3.4
# backends/nvidia/compiler.py:424): an exception leaving that call is the compiler's failure, a JIT
# build that failed, even where the paste is cut before the CalledProcessError and its stderr
_TRITON_COMPILE = r'triton[/\\]compiler[/\\]compiler\.py", line \d+, in compile\s*$'
_BACKEND_SUBPROCESS = (r'triton[/\\]backends[/\\]\w+[/\\]compiler\.py", line \d+, in \w+[ \t]*\n'
                       r'[ \t]*(?:[\w.]+\s*=\s*)?subprocess\.(?:run|check_call|check_output)\([^\n]*'
                       r'(?:\n[ \t]*[~^]+[ \t]*)?\s*\Z')
KERNEL_COMPILE_CUT = Signature(
    "kernel_compile_cut", "kernel_compile",
    "a Triton kernel failed to build (cut while the backend's compiler ran)",
    ("A Triton kernel's just-in-time build failed while the backend ran its own compiler "
     "(ptxas on NVIDIA GPUs, bishengir-compile on Ascend NPUs); the paste is cut before the "
     "compiler's error. Get the whole log for the CalledProcessError and the compiler's stderr: "
     "a compiler older than the Triton build expects (the CUDA toolkit's ptxas, the CANN toolkit "
     "for triton-ascend) is the usual cause; install a matching toolkit, clear ~/.triton/cache, "
     "or pick an `--attention-backend` that avoids the Triton kernel.",),
    patterns=(r"\bCalledProcessError\b",), context=(_TRITON_COMPILE, _BACKEND_SUBPROCESS),
    priority=80, fatal=True, cut_ok=True,
    sources=(("triton-ascend 3.2.0", "triton/compiler/compiler.py:310 (compile: compile_ir(module, metadata))"),
             ("triton-ascend 3.2.0", "triton/backends/ascend/compiler.py:549 (linalg_to_bin_enable_npu_compile_A2_A3: "
                                     "subprocess.run(cmd_list, capture_output=True, check=True))"),
             ("triton 3.4", "triton/backends/nvidia/compiler.py:424 (make_cubin: subprocess.run(ptxas_cmd, "
                            "check=True ...))")))

CUDA_ERROR_CUT = Signature(
    "cuda_error_cut", "cuda_illegal_access", "a CUDA kernel error whose message line is missing",
    ("torch reported an asynchronous CUDA error (its hint lines are here, the 'CUDA error: ...' "
     "line above them is cut from the paste): most often an illegal memory access or a "
     "device-side assert. Get the whole log for the message, then:", _BISECT),
    lines=(r"^CUDA kernel errors might be asynchronously reported at some other API call",
           r"^Exception raised from c10_cuda_check_implementation at \S*CUDAException\.cpp:\d+",
           r"^Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions\.\s*$"),  # their last
    # (vLLM round 106) not under their own "invalid argument" line: torch's check printed them below every error it
    # reported (pytorch 98fb6fe c10/cuda/CUDAMiscFunctions.cpp:7-18; d545da4 CUDAException.cpp:31-33), later only
    # below a kernel's fault (0ac83ae CUDAMiscFunctions.cpp:46-53); cudaErrorInvalidValue is a call's own argument
    # refused by that call, and a logger writing the exception's str() puts its line above them
    under=(r"\bCUDA error: invalid argument\s*$",),
    priority=50, running=True, by_algorithm=_BY_ALGORITHM,
    sources=(("torch 2.14.1", "c10/cuda/CUDAException.cpp:43 (c10_cuda_check_implementation: its hints)"),
             ("vllm 0.6.4.post1", "vllm/worker/model_runner_base.py:143 (V0's warning logging such a message)")))


# the CUDA driver writes a GPU core dump when a kernel hits an exception, if the environment
# asks it to (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1); the hint to set the progress variable is
# printed only when it is unset, which SGLang's own dump helper never leaves it (0.5.23
# debug_utils/cuda_coredump.py:60 sets CUDA_COREDUMP_SHOW_PROGRESS=1 for its user-triggered dumps)
COREDUMP_ON_EXCEPTION = Signature(
    "gpu_exception_coredump", "cuda_illegal_access", "a GPU exception made the CUDA driver write a core dump",
    ("The CUDA driver started a GPU core dump, which it does when a kernel faults (illegal "
     "address, device-side assert): open the dump with `cuda-gdb` (`target cudacore FILE`) to see "
     "the kernel.", _BISECT),
    lines=(r"^Starting GPU coredump generation, set the CUDA_COREDUMP_SHOW_PROGRESS environment variable",),
    priority=50, running=True, by_algorithm=_BY_ALGORITHM,
    sources=(("CUDA driver", "GPU core dump on exception (CUDA_ENABLE_COREDUMP_ON_EXCEPTION): Starting GPU "
                             "coredump generation, set the CUDA_COREDUMP_SHOW_PROGRESS environment variable "
                             "to 1 to enable more detailed output"),
             ("0.5.23", "sglang/srt/debug_utils/cuda_coredump.py:60")))

# an AMD GPU's page fault: the amdgpu kernel driver's report in the host's kernel log (dmesg), one
# record per fault ("[gfxhub0] no-retry page fault (src_id:0 ring:0 vmid:8 pasid:32770)", " for process
# python3 pid N ...", "VM_L2_PROTECTION_FAULT_STATUS:0x00341051", its fields; a fault the driver
# recovered is not printed), or ROCr's own line in the process's stderr before it aborts: a kernel
# read or wrote an address not mapped for it, ROCm's illegal memory access
AMD_GPU_PAGE_FAULT = Signature(
    "amd_gpu_page_fault", "cuda_illegal_access", "an AMD GPU kernel faulted: a page fault on the GPU",
    ("A kernel on the AMD GPU read or wrote an address not mapped for it (the amdgpu driver's page "
     "fault report in the host's kernel log, `dmesg`, names the process; ROCr then aborts it with "
     "'Memory access fault by GPU node-N'): rerun with HIP_LAUNCH_BLOCKING=1 (or "
     "AMD_SERIALIZE_KERNEL=3) to find the kernel that faults, then bisect: {graphs_off}, another "
     "`--attention-backend`, and a newer ROCm / aiter / SGLang if the kernel is theirs.",),
    lines=(r"\b(?:GC|MM)?VM_L2_PROTECTION_FAULT_STATUS:0x[0-9a-f]+",
           r"\] (?:retry |no-retry )?page fault \(src_id:\d+ ring:\d+ vmid:\d+",
           r"\bMemory access fault by GPU node-\d+",
           # the HIP runtime's queue callback: a kernel raised a hardware exception (a memory
           # fault among them) and the queue aborts, then the process (CLR rocdevice.cpp)
           r"aborting with error : HSA_STATUS_ERROR_(?:EXCEPTION|MEMORY_APERTURE_VIOLATION|MEMORY_FAULT)\b"),
    priority=50, running=True, by_algorithm=_BY_ALGORITHM,
    sources=(("Linux (gregkh/linux 11747c5)",
              "drivers/gpu/drm/amd/amdgpu/gmc_v9_0.c (gmc_v9_0_process_interrupt: [%s] %s page fault "
              "(src_id:%u ring:%u vmid:%u pasid:%u), VM_L2_PROTECTION_FAULT_STATUS:0x%08X)"),
             ("ROCR-Runtime", "src/core/runtime/runtime.cpp (VMFaultHandler: Memory access fault by GPU "
                              "node-%u (Agent handle: %p) on address %p%s. Reason: %s.)"),
             ("ROCm CLR", "rocclr/device/rocm/rocdevice.cpp (Device::callbackQueue: Callback: Queue %p "
                          "aborting with error : %s code: 0x%x, then abort())")))

# an NVIDIA GPU's fault as the kernel driver reports it in the host's kernel log (dmesg, journalctl -k):
# "NVRM: Xid (PCI:0000:10:00): 31, pid=N, name=python3, channel 0x..., intr 00000000. MMU Fault: ENGINE
# GRAPHICS GPC1 GPCCLIENT_T1_11 faulted @ 0x7f0b_27600000. Fault is of type FAULT_PDE
# ACCESS_TYPE_VIRT_READ". Xid 31 is ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT (open-gpu-kernel-modules
# src/common/sdk/nvidia/inc/nverror.h): a GPU memory page fault, an engine read or wrote an address not
# mapped for the channel (kern_gmmu_gv100.c, kgmmuServiceMmuFault_GV100, sets that notifier and resets
# the channel; the process sees cudaErrorIllegalAddress); Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION) with an
# SM exception ("Graphics SM Warp Exception ...: Out Of Range Address", "Illegal Instruction ...",
# "Misaligned ...") is a kernel's own out-of-range or illegal access. NVIDIA's Xid catalogue: both
# "typically application-level bugs". The line names the process (pid, name); a fault only a running
# process meets.
_XID_FAULT = (r"\bNVRM: Xid \(PCI:[0-9a-f:.]+\): 31, ",  # older drivers print "Ch 00000010, intr ..." only
              r"\bNVRM: Xid \(PCI:[0-9a-f:.]+\): 13,.{0,120}?\bGraphics SM (?:Warp|Global) Exception\b"
              r".{0,120}?(?:Out Of Range|Illegal|Misaligned)")
NVIDIA_XID_FAULT = Signature(
    "nvidia_xid_fault", "cuda_illegal_access", "an NVIDIA GPU kernel faulted: the driver's Xid (page fault)",
    ("The NVIDIA driver reported a GPU fault of the process (Xid 31: a kernel read or wrote an address "
     "not mapped for it, a page fault; Xid 13 with an SM exception: an out-of-range or illegal access): "
     "the process's own log shows it as an illegal memory access. Check that the pid in the line is "
     "the server's.", _BISECT),
    lines=_XID_FAULT, priority=50, running=True, by_algorithm=_BY_ALGORITHM,
    sources=(("open-gpu-kernel-modules", "src/common/sdk/nvidia/inc/nverror.h "
                                         "(ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT: Xid 31; "
                                         "ROBUST_CHANNEL_GR_EXCEPTION: Xid 13)"),
             ("open-gpu-kernel-modules", "src/nvidia/src/kernel/gpu/mmu/arch/volta/kern_gmmu_gv100.c "
                                         "(kgmmuServiceMmuFault_GV100)"),
             ("NVIDIA Xid catalogue", "docs.nvidia.com/deploy/xid-errors (31: GPU memory page fault; "
                                      "13: Graphics Engine Exception)")))


def _bounds_detail(found: Found) -> str | None:
    if match := regex(r"at dim\[(-?\d+)\]: assert\((-?\d+) < (\d+)\)").search(found.text):
        return (f"Index {match[2]} was used on a dimension of size {match[3]} (dim {match[1]}): one past "
                "its end or more.")
    return None


# cutex (the PyCUDA kernels SGLang's first EAGLE tree builder compiled, sglang 0.4.2
# speculative/build_eagle_tree.py:10 with boundscheck=True at :78) checks each tensor index in
# the kernel and prints when it is out of range; the kernel goes on with the index
KERNEL_BOUNDS_CHECK = Signature(
    "kernel_bounds_check", "cuda_illegal_access",
    "a kernel's bounds check caught an out-of-range tensor index",
    ("A GPU kernel indexed a tensor past its end (its bounds check printed this; the access itself "
     "still happened, so what the kernel wrote is not to be trusted and a fault may follow).", _BISECT),
    lines=(r"^Out Of Bound Tensor access detected at dim\[-?\d+\]",),
    priority=83, running=True, by_algorithm=_BY_ALGORITHM, detail=_bounds_detail,
    sources=(("cutex 0.3.9", "cutex/include/PyCUDATensorAccessor.cuh:5 (_CUTEX_MEMCHECK_IMPL_: Out Of Bound "
                             "Tensor access detected at dim[D]: assert(I < N), a printf)"),
             ("sglang 0.4.2", "sglang/srt/speculative/build_eagle_tree.py:10 (cutex.SourceModule, "
                              "boundscheck=True at :78)")))

SIGNATURES = [ILLEGAL_ACCESS, CONTAINED_FAULT, REPLAY_FAULT, UNSUPPORTED_GPU, NO_DEVICE_FUNCTION, *archs.SIGNATURES,
              KERNEL_COMPILE, KERNEL_COMPILE_CUT, *compilers.SIGNATURES, *kernels.SIGNATURES,
              *moe_dispatch.SIGNATURES,  # (round 97)
              *npu_deepep.SIGNATURES,  # (round 101)
              *jit_dirs.SIGNATURES,  # (round 98)
              *cooperative.SIGNATURES,  # (round 79)
              *status_checks.SIGNATURES,  # (round 89)
              *scale_layouts.SIGNATURES,  # (round 90)
              *ocp_fp8.SIGNATURES,  # (round 91)
              *hostcall.SIGNATURES,  # (round 119)
              *hip_queue.SIGNATURES,  # (round 122)
              *plan_dtypes.SIGNATURES,  # (round 81)
              *tensor_devices.SIGNATURES,  # (vLLM round 82)
              CUDA_ERROR_CUT, COREDUMP_ON_EXCEPTION, npu.NPU_KERNEL_FAULT,
              AMD_GPU_PAGE_FAULT, NVIDIA_XID_FAULT, KERNEL_BOUNDS_CHECK, npu.ASCENDC_ASSERT,
              npu.NPU_SOC_UNSUPPORTED, npu.NPU_GRAPH_UPDATE, npu.NPU_GRAPH_UPDATE_RAISED, npu.NPU_CAPTURE,
              npu.NPU_AICORE_TIMEOUT,  # (round 33)
              npu.NPU_FAULT_CODE]  # (round 66)
