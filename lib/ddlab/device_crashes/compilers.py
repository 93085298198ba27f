"""Kernel compilers that abort the process or refuse a kernel they built (``kernel_compile``).

Triton lowers a kernel through its MLIR passes and the LLVM it links, in the server's own
process, and its release builds keep C++ ``assert`` on: a failed one prints glibc's line
("PROG: FILE:LINE: FUNCTION: Assertion `EXPR' failed.") and calls abort(), so the process
dies with no Python exception. The kernel's build failed: ``kernel_compile``, the
assertion's own text says what the compiler could not lower; so does LLVM's fatal error, and
Triton's own texts for a build whose MLIR passes failed, whose PTX ptxas refused, or whose binary
the driver would not load. One is ``kernel_config_unsupported``: the launch Triton's launcher
checks, refused with an invalid argument (:data:`TRITON_LAUNCH_REFUSED`). :mod:`.device` splices
this list into its own, after the builds that fail with an exception.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "LLVM_FATAL", "LLVM_RESOURCE_LIMIT", "PTXAS_ERROR", "TRITON_INVALID_IMAGE",
           "TRITON_LAUNCH_REFUSED", "TRITON_PASS_FAILED", "LINK_FAILED", "DEEPGEMM_JIT", "FLASHINFER_NO_TOOLKIT",
           "NINJA_RUN_CUT", "INDUCTOR_FAILED", "ARANGE_NOT_POW2", "build_detail"]

# (vLLM round 26) Triton lowering a kernel that uses an fp8 type this GPU's architecture lacks: to_ir raises
# ValueError(f'type {self} not supported in this architecture. The supported fp8 dtypes are {...}') (triton
# 3.2.0 language/core.py:495, 3.4.0 :593, 3.5.0 :574); the NVIDIA backend adds fp8e4nv only from sm89
# (backends/nvidia/compiler.py:149 (3.2.0), :170-171 (3.4.0)), so an A100 (sm80) has e5 and e4b15 alone
# (vLLM round 61) older Triton checks the same in its cast instead: assert builder.options.allow_fp8e4nv,
# "fp8e4nv data type is not supported on CUDA arch < 89" (triton 3.0.0 language/semantic.py:759), the option set
# from the GPU's capability (backends/nvidia/compiler.py:111, capability >= 89)
TRITON_FP8_ARCH = (r"\btype fp8\w+ not supported in this architecture\b"
                   r"|\bfp8e4nv data type is not supported on CUDA arch < 89\b")
# (vLLM round 90) tl.arange refuses a range that is not a power of 2 (triton 3.3.0 language/semantic.py:623; 3.1.0
# :512), and the code generator wraps it as the kernel's CompilationError "from e" (code_generator.py:1261 (3.3.0)):
# the sizes the caller handed the kernel, not a failed build (kernels.py KERNEL_CONFIG reads the refusal)
ARANGE_NOT_POW2 = r"arange's range must be a power of 2"
# (vLLM round 26) Triton builds its driver's C helpers (cuda_utils) the first time a kernel runs and looks for
# a C compiler: CC, else gcc or clang on PATH (triton 3.2.0 runtime/build.py:32 "Failed to find C compiler.
# Please specify via CC environment variable.", 3.4.0 :33 and 3.5.0 :32 add "or set triton.knobs.build.impl.")
NO_C_COMPILER = r"\bFailed to find C compiler\b"
# (vLLM round 23) a JIT build's link step: Triton builds its launcher with the C compiler, linking -lcuda
# (triton 3.4.0 runtime/build.py:47-51, backends/nvidia/driver.py:17 libraries = ['cuda']); the linker's
# "cannot find -l<lib>" (binutils gold/fileread.cc, ld's ldfile.c) and gcc's collect2 "ld returned N exit
# status" (gcc/collect-utils.c do_wait) are a build that did not link. DeepGEMM's JIT runtime runs the
# toolkit's cuobjdump on each kernel it built and asserts it exited 0 (DeepGEMM bcd598f
# csrc/jit/kernel_runtime.hpp:44-45 DG_HOST_ASSERT(exit_code == 0), printed by DGException as "Assertion
# error (<file>:<line>): exit_code == 0", csrc/utils/exception.hpp); SGLang runs DeepGEMM's JIT kernels
# for FP8 GEMMs (0.5.23 layers/deep_gemm_wrapper/compile_utils.py:39, entrypoint.py), as vLLM does
LINK_FAILED = (r"^collect2: (?:fatal )?error: ld returned \d+ exit status",
               r"^(?:\S*/)?(?:[\w.]+-)*ld(?:\.\w+)?: cannot find -l\w+")
DEEPGEMM_JIT = r"Assertion error \([^()]*jit[/\\]kernel_runtime\.hpp:\d+\): exit_code == 0"
# (vLLM round 36) FlashInfer JIT-builds a kernel module the first time it is used (gen_*_module().build_and_load():
# write_ninja -> generate_ninja_build_for_op -> get_cuda_path) and looks for the CUDA toolkit: CUDA_HOME or
# CUDA_PATH, else the folder above `which nvcc`, else /usr/local/cuda, and raises where that is missing too
# (flashinfer-python 0.6.11.post2 flashinfer/jit/cpp_ext.py:48-64, the raise :61-63, f"... {cuda_home=} ...",
# called at :247): no toolkit, no build
FLASHINFER_NO_TOOLKIT = r"\bCould not find nvcc and default cuda_home='[^'\n]*' doesn't exist"
# (vLLM round 68) Triton's CompilationError reads "at LINE:COL:" and then up to 12 lines of the kernel's source
# down to the failing one and a caret (triton 3.4.0 compiler/errors.py:16-25, message at :25; 3.0.0 and 3.5.0
# alike): a wrapper that re-raises its str (RuntimeError(error)) loses the class name, not the message. The
# excerpt is a Triton kernel's where a line of it calls triton.language (tl.load, tl.arange ...)
TRITON_MESSAGE = r"(?:^|\n|: )at \d+:\d+:[ \t]*(?:\n[^\n]*){0,11}?\n[^\n]*\btl\.\w+\("
# (vLLM round 68) hipRTC (HIP's runtime compiler) finds the GPU's ISA itself where no --offload-arch is given
# (transformOptions -> findIsa) and, where it cannot (libamdhip64.so does not load, or lacks hipGetDevice),
# writes "Error: Please provide architecture for which code is to be generated." into the program's build log
# and the compile fails (ROCm/clr f9f995c hipamd/src/hiprtc/hiprtcInternal.cpp:67, :82-85, :99-102, :302)
HIPRTC_NO_ARCH = r"\bError: Please provide architecture for which code is to be generated\b"
BUILD_FAILED = (NO_C_COMPILER, *LINK_FAILED, DEEPGEMM_JIT,
                FLASHINFER_NO_TOOLKIT, TRITON_MESSAGE, HIPRTC_NO_ARCH)  # a kernel build's own failures (KERNEL_COMPILE)


def build_detail(found: Found) -> str | None:
    """What a failed link, DeepGEMM's JIT assert or FlashInfer's missing toolkit says to do
    (:mod:`.device`'s kernel_compile)."""
    if regex(FLASHINFER_NO_TOOLKIT).search(found.text):
        return ("FlashInfer builds its kernels (sampling, attention) with nvcc the first time they run and "
                "found no CUDA toolkit: neither CUDA_HOME / CUDA_PATH, nor nvcc on PATH, nor /usr/local/cuda. "
                "Install the toolkit of the CUDA your torch was built for and point CUDA_HOME at it, or "
                "install FlashInfer's prebuilt kernels (flashinfer-jit-cache) so nothing is built.")
    if regex(DEEPGEMM_JIT).search(found.text):
        return ("DeepGEMM's JIT ran the CUDA toolkit's cuobjdump on a kernel it had just built, and it "
                "failed: DeepGEMM needs the full toolkit of the CUDA its wheels were built for (CUDA_HOME "
                "with bin/nvcc and bin/cuobjdump). `SGLANG_ENABLE_JIT_DEEPGEMM=0` "
                "(`SGL_ENABLE_JIT_DEEPGEMM=0` in releases before the rename) takes the FP8 GEMMs off "
                "DeepGEMM.")
    missing = regex(r"cannot find -l(\w+)").search(found.text)
    if missing or regex(f"(?m){LINK_FAILED[0]}").search(found.text):
        said = f"found no lib{missing[1]}.so" if missing else "failed (the linker's line says what it missed)"
        return (f"The build's link step {said}: a missing `-lcuda` is the driver's libcuda.so (in a "
                "container the NVIDIA runtime mounts it; `ldconfig -p | grep libcuda` shows whether the "
                "linker sees it, and the toolkit's lib64/stubs holds a libcuda.so to link against where "
                "only libcuda.so.1 is installed).")
    return None


# (round 18) glibc's assertion line, its function (or its file) Triton's, MLIR's or LLVM's: the
# function's signature names their namespaces (mlir::triton::getCvtOrder(mlir::Attribute, ...)), the
# file their source trees (Triton's lib/Analysis, lib/Conversion, lib/Dialect, lib/Target; triton 2.3.1
# triton/_C/libtriton.so holds "/project/lib/Analysis/Allocation.cpp" and the assertion text of
# getCvtOrder, "mma -> mma layout conversion is only supported on Ampere"). A device-side assert of a
# CUDA kernel (".cu:N: ... Assertion") is a kernel's fault, :mod:`.device`, not this
_COMPILER_ASSERT = (r"^(?=.{0,1600}?(?:\b(?:mlir|llvm)::|[/\\]lib[/\\](?:Analysis|Conversion|Dialect|Target)[/\\]))"
                    r"(?:\S+: )?\S+\.(?:cpp|cc|h|hpp|inc):\d+: .{0,800}Assertion `.{1,800}' failed\.\s*$")


def _assert_detail(found: Found) -> str | None:
    said = regex(r"Assertion `.*?\"([^\"]{8,200})\"'? failed").search(found.text)
    where = regex(r"(\w+(?:::\w+)+)\(").search(found.text)
    if said:
        return f"The compiler asserted: \"{said[1]}\"" + (f" (in {where[1]})." if where else ".")
    return f"The compiler asserted in {where[1]}." if where else None


TRITON_COMPILER_ASSERT = Signature(
    "compiler_assert", "kernel_compile", "Triton's compiler aborted on an assertion while building a kernel",
    ("Triton's compiler (its MLIR passes, or the LLVM it links) hit an assertion while building a kernel "
     "and aborted the process: the kernel, as this Triton lowers it, has no form for this GPU (the "
     "assertion's text names what, often a layout an older or newer architecture lacks). Install the "
     "Triton release your torch and SGLang pin, or a newer one whose compiler handles this GPU; clear "
     "~/.triton/cache; pick an `--attention-backend` that avoids the Triton kernel, or drop "
     "`--enable-torch-compile` if the kernel is torch.compile's.",),
    lines=(_COMPILER_ASSERT,), priority=80, fatal=True, detail=_assert_detail,
    sources=(("glibc 2.39 (glibc-2.39)", "assert/assert.c:103 (__assert_fail: \"%s%s%s:%u: %s%sAssertion "
                                         "`%s' failed.\\n%n\", then abort() :94)"),
             ("triton 2.3.1", "triton/_C/libtriton.so (\"/project/lib/Analysis/Allocation.cpp\"; "
                              "\"!(srcMmaLayout && dstMmaLayout && !srcMmaLayout.isAmpere()) && "
                              "\\\"mma -> mma layout conversion is only supported on Ampere\\\"\")")))

_OFF_TRITON = ("pick an `--attention-backend` that avoids the Triton kernel, or drop "
               "`--enable-torch-compile` if the kernel is torch.compile's")

# (vLLM round 14) LLVM's fatal error handler (llvm/lib/Support/ErrorHandling.cpp, report_fatal_error:
# "LLVM ERROR: " and the reason, then the process exits): in a serving process LLVM runs inside Triton's
# JIT compiler (its MLIR lowering of a kernel to LLVM IR and PTX), so the line is a kernel build that
# killed the process, whichever server ran the kernel
_LLVM_FATAL = r"^LLVM ERROR: \S"
LLVM_FATAL = Signature(
    "llvm_fatal", "kernel_compile", "LLVM aborted a JIT kernel build (Triton)",
    ("LLVM, inside Triton's JIT compiler, aborted the process while it built a kernel: the kernel has "
     "no lowering for this GPU or this Triton (older GPUs such as V100, sm_70, lack layouts newer "
     f"kernels use): {_OFF_TRITON}; a Triton / SGLang release that supports this GPU fixes it.",),
    patterns=(_LLVM_FATAL,), lines=(_LLVM_FATAL,), priority=60, fatal=True, running=True,
    sources=(("LLVM", "llvm/lib/Support/ErrorHandling.cpp (report_fatal_error: \"LLVM ERROR: \")"),
             ("triton 3.4.0", "triton/_C/libtriton.so (Triton's lowering links LLVM)")))

# (vLLM round 99) LLVM's AMDGPU backend refusing a kernel over a hardware limit: getSIProgramInfo diagnoses a scratch
# size over the limit per work-item as DS_Error (DiagnosticInfoStackSize; "addressable scalar registers", "user
# SGPRs", "local memory" are DiagnosticInfoResourceLimit's too), printed "<location>: <resource> (N) exceeds limit (M)
# in function '<name>'"; with no handler installed LLVMContext::diagnose writes "error: " before it and calls exit(1)
# (llvm/llvm-project 00ce9bbb llvm/lib/Target/AMDGPU/AMDGPUAsmPrinter.cpp, llvm/lib/IR/LLVMContext.cpp): Triton's ROCm
# build of a kernel (its location a .py line) that ended the process. LLVM's warning of the same words (clang's
# -Wframe-larger-than, DS_Warning) is no error and is not read
_LLVM_RESOURCE = (r"^\W{0,3}error: \S+\.py:\d+:\d+: (?:stack frame size|(?:addressable )?scalar registers|user SGPRs"
                  r"|local memory) \(\d+\) exceeds limit \(\d+\) in function '")
LLVM_RESOURCE_LIMIT = Signature(
    "llvm_resource_limit", "kernel_compile", "LLVM's AMDGPU backend refused a Triton kernel over a hardware limit",
    ("LLVM's AMDGPU backend, inside Triton's JIT compiler, refused the kernel its line names (the .py file and line "
     "are the Triton kernel's source): this build of it needs more stack (scratch) or registers than this GPU "
     "allows per thread, and LLVM ended the process. The kernel's block sizes do not suit this GPU (on ROCm, "
     f"Navi / RDNA cards often): {_OFF_TRITON}; a Triton release whose kernel configs fit this GPU fixes it.",),
    patterns=(_LLVM_RESOURCE,), lines=(_LLVM_RESOURCE,), priority=60, fatal=True, running=True,
    sources=(("LLVM (llvm/llvm-project 00ce9bbb)", "llvm/lib/Target/AMDGPU/AMDGPUAsmPrinter.cpp (getSIProgramInfo: "
                                                   "ScratchSize > MaxScratchPerWorkitem, DiagnosticInfoStackSize "
                                                   "DS_Error)"),
             ("LLVM (llvm/llvm-project 00ce9bbb)", "llvm/lib/IR/LLVMContext.cpp (LLVMContext::diagnose: \"error: \", "
                                                   "then exit(1) for DS_Error)"),
             ("vllm 0.5.0.post1", "vllm/attention/ops/triton_flash_attention.py (the attn_fwd kernel)")))

# (vLLM round 13) ptxas' own diagnostic ("ptxas FILE.ptx, line N; error   : MESSAGE"), which Triton's
# make_cubin puts in the error it raises when ptxas refuses the PTX it generated ("`ptxas` stderr:" then
# ptxas' output, triton/backends/nvidia/compiler.py, make_cubin): a JIT kernel build failing
_PTXAS_ERROR = r"\bptxas \S+\.ptx, line \d+; error\s*: "
PTXAS_ERROR = Signature(
    "ptxas_error", "kernel_compile", "ptxas refused a kernel's PTX (Triton's build)",
    ("ptxas refused the PTX of a kernel Triton built (its line names the instruction or feature): the "
     "ptxas Triton runs (its own, or TRITON_PTXAS_PATH's) or this Triton does not support this GPU's "
     "architecture. Install the Triton your torch and SGLang pin, clear ~/.triton/cache, or "
     f"{_OFF_TRITON}.",),
    patterns=(_PTXAS_ERROR,), lines=(_PTXAS_ERROR,), priority=82,
    sources=(("triton 3.4", "triton/backends/nvidia/compiler.py:424 (make_cubin: ptxas run, its "
                            "stderr in the error raised)"),
             ("CUDA toolkit", "ptxas (FILE, line N; error   : MESSAGE)")))

# (vLLM round 18) Triton's CUDA driver glue raises RuntimeError("Triton Error [CUDA]: " +
# cuGetErrorString(code)) (triton 3.4.0 backends/nvidia/driver.c:12, gpuAssert); loading a kernel it just
# compiled (loadBinary: cuModuleLoadData, :118) answers CUDA_ERROR_INVALID_IMAGE, "device kernel image is
# invalid" (CUDA 13.0 include/cuda.h:2612-2615): the driver cannot load the binary Triton's toolchain built
# (a ptxas newer than the driver, a stale cache). Only Triton's own prefix: a prebuilt kernel's is another
# story
_TRITON_IMAGE = r"Triton Error \[CUDA\]: device kernel image is invalid"
TRITON_INVALID_IMAGE = Signature(
    "triton_invalid_image", "kernel_compile",
    "the CUDA driver refused a kernel Triton built (device kernel image is invalid)",
    ("The CUDA driver refused the binary of a kernel Triton had just compiled: the ptxas Triton used targets "
     "a newer CUDA than the driver (`nvidia-smi` shows the driver's CUDA; TRITON_PTXAS_PATH can point at the "
     "system toolkit's ptxas), or a cache from another install is reused: clear ~/.triton/cache (and "
     f"torch.compile's, /tmp/torchinductor_<user>), or {_OFF_TRITON}.",),
    patterns=(_TRITON_IMAGE,), lines=(_TRITON_IMAGE,), priority=82,
    sources=(("triton 3.4.0", "triton/backends/nvidia/driver.c:12 (gpuAssert: \"Triton Error [CUDA]: \")"),
             ("triton 3.4.0", "triton/backends/nvidia/driver.c:118 (loadBinary: cuModuleLoadData)"),
             ("CUDA 13.0", "include/cuda.h:2612 (CUDA_ERROR_INVALID_IMAGE = 200: the device kernel image is "
                           "invalid)")))

# (round 72) Triton's generated launcher checks its launch with the same glue: "Triton Error [HIP]:  Code: %d,
# Messsage: %s" on ROCm (triton 3.4.0 backends/amd/driver.py:381-384, the HIP_CHECK of hipModuleLaunchKernel
# :395-399; 3.0.0 :262-265, :276), "Triton Error [CUDA]: " and the error's string on CUDA (3.4.0
# backends/nvidia/driver.py:268, cuLaunchKernelEx :362). Code 1, "invalid argument" (hipErrorInvalidValue,
# CUDA_ERROR_INVALID_VALUE), is the launch refusing the grid, block or shared memory it was given: the
# pointer check's own invalid value becomes "Pointer argument (at N) cannot be accessed" (amd :435-438,
# nvidia :399-401) and nothing else the launcher checks takes an argument of the kernel's. The loader's
# check (amd driver.c:105, its loadBinary :169-170) prints the same text, so a traceback through
# _init_handles/load_binary is not read
_TRITON_LAUNCH = r"Triton Error \[(?:HIP\]:\s+Code: 1, Messsage|CUDA\]): invalid argument\s*$"
TRITON_LAUNCH_REFUSED = Signature(
    "triton_launch_refused", "kernel_config_unsupported",
    "a Triton kernel's launch was refused (invalid argument)",
    ("The GPU runtime refused the launch of a Triton kernel with an invalid argument: the grid, block size "
     "or shared memory its launch asked for this shape is not one this GPU takes (the frames above "
     "Triton's name the kernel). Choose a backend that does not use it, keep the batch or shape within "
     "what it takes, or install a release of the kernel's library (or of Triton) that supports this "
     "GPU's configuration.",),
    types=r"RuntimeError", patterns=(_TRITON_LAUNCH,), absent=(r"in _init_handles|in load_binary",),
    priority=81,
    sources=(("triton 3.4.0", "triton/backends/amd/driver.py:384 (gpuAssert: \"%s Code: %d, Messsage: %s\")"),
             ("triton 3.4.0", "triton/backends/amd/driver.py:399 (HIP_CHECK(hipModuleLaunchKernel(...)))"),
             ("triton 3.0.0", "triton/backends/amd/driver.py:276 (HIP_CHECK(hipModuleLaunchKernel(...)))"),
             ("triton 3.4.0", "triton/backends/nvidia/driver.py:362 (CUDA_CHECK(cuLaunchKernelEx...))")))

# (vLLM round 18) Triton lowers a kernel through MLIR pass pipelines and its binding throws
# std::runtime_error("PassManager::run failed") when one fails (triton python/src/ir.cc, the text in triton
# 3.4.0 triton/_C/libtriton.so and triton-ascend 3.2.0's): a Triton kernel's build failed (inductor wraps it
# as "InductorError: RuntimeError: PassManager::run failed"). What the GPU is, the text does not say
_PASS_FAILED = r"RuntimeError: PassManager::run failed\b"
TRITON_PASS_FAILED = Signature(
    "triton_pass_failed", "kernel_compile",
    "a Triton kernel's MLIR pass pipeline failed (PassManager::run failed)",
    ("Triton could not lower a kernel for this GPU: its MLIR passes failed. MLIR's diagnostics above it "
     "(\"error: Failures have been detected while processing an MLIR pass pipeline\", the failing pass) say "
     "which; a GPU that this Triton's backend does not support, or a Triton of another release than the "
     "torch expects, are the usual causes: install the Triton your torch and SGLang pin, or "
     f"{_OFF_TRITON}.",),
    patterns=(_PASS_FAILED,), lines=(_PASS_FAILED,), priority=82,
    sources=(("triton 3.4.0", "triton/_C/libtriton.so (PassManager::run failed; python/src/ir.cc)"),
             ("triton-ascend 3.2.0", "triton/_C/libtriton.so (PassManager::run failed)")))


# (vLLM round 26) a traceback cut on the raise line of Triton's _build, the one raise there: no C compiler to
# build the driver's C helpers with (CC unset, neither gcc nor clang on PATH; triton 3.2.0 runtime/build.py:32
# prints the message on the raise line, 3.4.0 :32-33 and 3.5.0 :31-32 on the next one)
_NO_C_COMPILER_RAISE = (r'triton[/\\]runtime[/\\]build\.py", line \d+, in _build[ \t]*\n'
                        r'[ \t]*raise RuntimeError\((?:[ \t]*"Failed to find C compiler[^\n]*)?'
                        r'(?:\n[ \t]*"Failed to find C compiler[^\n]*)?\s*\Z')
NO_C_COMPILER_CUT = Signature(
    "triton_no_c_compiler_cut", "kernel_compile",
    "Triton found no C compiler to build its helpers with (cut)",
    ("Triton builds small C modules (its driver's helpers, each kernel's launcher) with the host's C "
     "compiler the first time a kernel runs, and found none: CC is unset and neither gcc nor clang is on "
     "PATH. Install one (`apt-get install build-essential`, or gcc in the image) or point CC at it; the "
     "paste is cut on Triton's raise line.",),
    patterns=(NO_C_COMPILER,), context=(_NO_C_COMPILER_RAISE,), priority=80, fatal=True,
    cut_ok=True,
    sources=(("triton 3.2.0", "triton/runtime/build.py:32 (_build: raise RuntimeError(\"Failed to find C "
                              "compiler. Please specify via CC environment variable.\"))"),
             ("triton 3.4.0", "triton/runtime/build.py:32-33 (the raise, its message on the next line)"),
             ("triton 3.5.0", "triton/runtime/build.py:31-32")))

# (vLLM round 51) a traceback cut on the ninja call of a JIT extension build: torch's _run_ninja_build and
# FlashInfer's run_ninja run `ninja -v` with subprocess.run(..., check=True) inside a try whose only handler
# is for CalledProcessError, re-raised as "Error building extension" / "Ninja build failed." from it (torch
# 2.13.0 utils/cpp_extension.py:2893, :2899, :2901; flashinfer-python 0.5.0 and 0.5.3 jit/cpp_ext.py:287,
# :292, :295-299). A chain's cause is printed first, from the frame of that try down: a traceback that
# starts (or ends) on that call, only subprocess's own frames below it, is the ninja build failing, the
# paste cut before the CalledProcessError. (Another subprocess.run in the same files, cpp_ext.py:49's
# `which nvcc` in get_cuda_path, is no ninja run.)
_NINJA_RUN = (r'(?:torch[/\\]utils[/\\]cpp_extension\.py", line \d+, in _run_ninja_build'
              r'|flashinfer[/\\]jit[/\\]cpp_ext\.py", line \d+, in run_ninja)[ \t]*\n'
              r'[ \t]*subprocess\.run\([ \t]*(?:\n[ \t]*[~^]+[ \t]*)?'
              r'(?:\n[ \t]*File "[^"\n]*[/\\]subprocess\.py", line \d+, in \w+[ \t]*'
              r'(?:\n[ \t]*(?!File ")\S[^\n]*)?(?:\n[ \t]*[~^]+[ \t]*)?)*\s*\Z')
NINJA_RUN_CUT = Signature(
    "ninja_run_cut", "kernel_compile", "a JIT extension's ninja build failed (cut at the ninja call)",
    ("A just-in-time kernel build (torch's C++ extension builder, FlashInfer's JIT) ran ninja and it "
     "failed; the paste is cut before the CalledProcessError and the compiler's errors. Get the whole "
     "log for nvcc's first error: a CUDA toolkit older than the one the wheels expect (or none, or "
     "no ninja) is the usual cause; install a matching toolkit or point CUDA_HOME at it, then clear "
     "the JIT caches (~/.cache/flashinfer, ~/.cache/torch_extensions).",),
    patterns=(r"\bCalledProcessError\b",), context=(_NINJA_RUN,), priority=80, fatal=True, cut_ok=True,
    sources=(("torch 2.13.0", "torch/utils/cpp_extension.py:2893 (_run_ninja_build: subprocess.run(command, "
                              "..., check=True), the handler :2901)"),
             ("flashinfer-python 0.5.0", "flashinfer/jit/cpp_ext.py:287 (run_ninja: subprocess.run(command, ..., "
                                         "check=True), :295-299 Ninja build failed.)"),
             ("flashinfer-python 0.5.3", "flashinfer/jit/cpp_ext.py:287")))

# (vLLM round 72) a traceback cut on the compiler call of Triton's _build: the first kernel launch initializes Triton's
# driver, whose NVIDIA backend compiles its C helper (driver.c, as cuda_utils) with the host C compiler
# (backends/nvidia/driver.py CudaUtils.__init__ -> compile_module_from_src -> runtime/build.py _build, ``ret =
# subprocess.check_call(cc_cmd)``, triton 3.4.0 runtime/build.py:51; each kernel's launcher is built the same way);
# check_call raises CalledProcessError when the compiler exits non-zero: the build failed, its error cut
_CC_CALL = (r'triton[/\\]runtime[/\\]build\.py", line \d+, in _build[ \t]*\n'
            r'[ \t]*(?:[\w.]+\s*=\s*)?subprocess\.(?:run|check_call|check_output)\([^\n]*(?:\n[ \t]*[~^]+[ \t]*)?\s*\Z')
TRITON_BUILD_CUT = Signature(
    "triton_build_cut", "kernel_compile", "Triton's C helper failed to build (cut at the C compiler's call)",
    ("Triton builds small C modules (its driver's helpers, each kernel's launcher) with the host's C "
     "compiler the first time a kernel runs, and the compiler failed; the paste is cut before the "
     "CalledProcessError and the compiler's errors. Get the whole log for them: missing Python headers "
     "(python3-dev) or no libcuda.so to link against are the usual causes; install them or point CC at a "
     "working compiler, then clear ~/.triton/cache.",),
    patterns=(r"\bCalledProcessError\b",), context=(_CC_CALL,), priority=80, fatal=True, cut_ok=True,
    sources=(("triton 3.4.0", "triton/runtime/build.py:51 (_build: ret = subprocess.check_call(cc_cmd))"),
             ("triton 3.4.0", "triton/backends/nvidia/driver.py:17 (libraries = ['cuda'])")))

# (vLLM round 78) torch.compile's inductor turns a captured FX graph into kernels (lowering, scheduling, the code of
# its Triton or C++ kernels and their build) in fx_codegen_and_compile, and wraps any exception raised there as
# InductorError (torch 2.8.0 _inductor/compile_fx.py:923, class at _inductor/exc.py:140; its message "Inner: text"):
# the compile of the model's kernels failed. What the inner exception names more closely (a Triton pass, an OOM, a
# CUDA fault) is read by those signatures first; an inner one none reads (inductor's own assert, as the scheduler's
# "raise AssertionError(f\"{type(self)=}\")" for a combo kernel on a backend without them, scheduler.py:4747) is this
_INDUCTOR_ERROR = r"(?:\w+\.)*InductorError"
INDUCTOR_FAILED = Signature(
    "inductor_compile_failed", "kernel_compile", "torch.compile's inductor failed to build the model's kernels",
    ("torch.compile's inductor could not generate or build the kernels of the compiled model graph (the inner "
     "exception after \"InductorError: \" says where). Run without it (vLLM: `--enforce-eager` or "
     "`-O0`/`--compilation-config '{\"level\": 0}'`; SGLang: without `--enable-torch-compile`), or install the "
     "torch release the server pins: an inductor of another release, or one that does not support this "
     "device's backend, is the usual cause.",),
    types=_INDUCTOR_ERROR, patterns=(r".",), priority=30,
    sources=(("torch 2.8.0", "torch/_inductor/compile_fx.py:923 (raise InductorError(e, currentframe()))"),
             ("torch 2.8.0", "torch/_inductor/exc.py:140 (class InductorError(BackendCompilerFailed))"),
             ("torch 2.8.0", "torch/_inductor/scheduler.py:4747 (raise AssertionError(f\"{type(self)=}\"))")))

# (vLLM round 95) an FX graph pass that removes a node other nodes still use: torch.fx's Graph.erase_node refuses it,
# "Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in the graph: {to_erase.users}!"
# (torch 2.8.0 fx/graph.py:1149-1154), raised inside inductor's compile of the graph (post-grad passes, vLLM's own
# custom passes among them: FixFunctionalizationPass stages rotary_embedding's getitem users for erase_node, vllm
# 0.9.2 compilation/fix_functionalization.py:41-58, :100-102), so InductorError wraps it. No kernel was generated or
# built: a pass's bug in the graph it rewrote, not the kernels' compile (INDUCTOR_FAILED), kind unknown
FX_NODE_IN_USE = Signature(
    "fx_pass_erased_used_node", "unknown", "a torch.compile graph pass removed a node the graph still uses",
    ("A graph pass of torch.compile (inductor's, or one the server adds, as vLLM's custom passes) tried to remove "
     "a node that other nodes still use: a bug of that pass on this model's graph (often one a custom op enabled "
     "by hand exposes), not a kernel build. Run without torch.compile (vLLM: `--enforce-eager` or `-O0`; SGLang: "
     "without `--enable-torch-compile`) or without the custom op you enabled, and report the pass's bug with the "
     "graph (TORCH_LOGS=\"+dynamo\").",),
    types=r"(?:\w+\.)*(?:InductorError|RuntimeError)",
    patterns=(r"Tried to erase Node \S+ but it still had \d+ users in the graph",), priority=40,
    sources=(("torch 2.8.0", "torch/fx/graph.py:1150 (Graph.erase_node: raise RuntimeError(\"Tried to erase Node"),))

# (NINJA_RUN_CUT is vLLM's alone for now, vllm_crashes/library.py: no SGLang log or fixture shows the cut yet; so is
# INDUCTOR_FAILED and FX_NODE_IN_USE, vllm_crashes/adapters.py)
# (LLVM_RESOURCE_LIMIT too, vllm_crashes/adapters.py: vLLM round 99's ROCm log; no SGLang log or fixture shows it yet)
SIGNATURES = [TRITON_COMPILER_ASSERT, LLVM_FATAL, PTXAS_ERROR, TRITON_INVALID_IMAGE, TRITON_LAUNCH_REFUSED,
              TRITON_PASS_FAILED, NO_C_COMPILER_CUT, TRITON_BUILD_CUT]
