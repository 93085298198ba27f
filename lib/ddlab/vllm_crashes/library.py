"""vLLM: the libraries' crash texts (torch, NCCL, Hugging Face, transformers, Triton), advice in vLLM's words.

Both servers meet the same library texts: a CUDA OOM, an illegal memory access, an NCCL
error, a gated repo, an unknown architecture, a kernel build. Their signatures are
SGLang's (:mod:`.memory`, :mod:`.device`, :mod:`.runtime`, :mod:`.launch`, :mod:`.weights`,
:mod:`.native`, :mod:`.requests`) with the patterns kept, the sources that are SGLang's
dropped (the library's stay, vLLM's are added where vLLM writes the text) and the advice
rewritten in vLLM's flags (:func:`voiced`); each is called ``vllm_<name>``. vLLM's own warning
that its compiled ops failed to link (a dynamic linker's words inside it) is here too.
:mod:`.vllm` joins them to vLLM's own texts.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ddlab.crashes.kinds import launch, memory, models, native, packages, requests, runtime, weights
from ddlab.device_crashes import archs, compilers, device, kernels, npu, tensor_devices
from ddlab.crashes.signature import NO_LATER_FRAME, Found, Signature, regex
from ddlab.vllm_crashes import attention_backends, hub, kv_cache_dtypes, moe_schemes, processors, wna16

__all__ = ["SIGNATURES", "V0", "NO_REPO", "voiced", "from_texts"]

V0 = "0.6.4.post1"  # the V0 engine's release whose texts older pastes show
_V0 = V0

_LIBRARY = re.compile(r"^(?!\d)")  # a source that is no SGLang release


def voiced(signature: Signature, advice: tuple[str, ...], *, sources=(), **changes) -> Signature:
    """SGLang's signature for a library's text, its advice in vLLM's words."""
    kept = tuple(s for s in signature.sources if _LIBRARY.match(s[0]) and not s[0].startswith("sglang"))
    changes = {"detail": None, **changes}
    return replace(signature, name=f"vllm_{signature.name}", advice=advice, by_algorithm=(),
                   sources=kept + tuple(sources), **changes)


def from_texts(signature: Signature, *, texts: tuple[str, ...], **changes) -> Signature:
    """A signature of ``signature``'s kind, read from ``texts`` alone (on a line, or in a chain): none of
    its exception types, context or absent texts, no detail of its own unless ``changes`` gives one."""
    return replace(signature, patterns=texts, lines=texts, types=None, context=(), absent=(),
                   **{"detail": None, **changes})


_CUDA_OOM_BY_PHASE = {
    "load_weights": "The weights alone do not fit: more GPUs (`--tensor-parallel-size 2`), a "
                    "quantized checkpoint, or a smaller model.",
    "memory_pool": "The profiling run (the largest batch, `--max-num-batched-tokens`) did not "
                   "fit: lower `--max-num-batched-tokens` or `--max-num-seqs`.",
    "graph_capture": "The CUDA graphs did not fit: `--enforce-eager` confirms it; capture fewer "
                     "sizes (`--compilation-config {\"cudagraph_capture_sizes\":[1,2,4,8]}`) or "
                     "lower `--gpu-memory-utilization` to leave room outside the KV cache.",
    "serving": "A batch while serving did not fit next to the KV cache: lower "
               "`--gpu-memory-utilization` (more room for activations), `--max-num-seqs` or "
               "`--max-num-batched-tokens`.",
}


def _cuda_oom_detail(found: Found) -> str:
    return _CUDA_OOM_BY_PHASE.get(found.phase) or (
        "Where it ran out decides: weights (more GPUs: `--tensor-parallel-size 2`), graphs "
        "(`--enforce-eager`), a batch (lower `--gpu-memory-utilization` or `--max-num-seqs`).")


# (round 23) torch's allocator asserting its NVML query on the out-of-memory path: in SGLang's signature
CUDA_OOM = voiced(memory.CUDA_OOM, (), detail=_cuda_oom_detail)
HOST_OOM = voiced(memory.HOST_OOM, (
    "Host memory ran out, not GPU memory: `dmesg -T | grep -i oom`; give the machine or container "
    "more RAM and a larger /dev/shm (docker run with a larger shm size, or ipc=host).",))
ILLEGAL_ACCESS = voiced(device.ILLEGAL_ACCESS, (
    "A GPU kernel read or wrote out of bounds. Rerun with CUDA_LAUNCH_BLOCKING=1 to name the "
    "kernel, then bisect: `--enforce-eager` (no graphs, no torch.compile kernels) and another "
    "attention backend; with speculative decoding, check that the draft's context length covers "
    "`--max-model-len` and try fewer `num_speculative_tokens` in `--speculative-config`.",))
CUDA_ERROR_CUT = voiced(device.CUDA_ERROR_CUT, ILLEGAL_ACCESS.advice)
# (round 76) the same hints as ROCm's torch writes them, hipified (torch 2.13.0 torch/utils/hipify/
# cuda_to_hip_mappings.py:3423 CUDA_LAUNCH_BLOCKING=1 -> AMD_SERIALIZE_KERNEL=3, :3430 c10/cuda/CUDAException.h ->
# c10/hip/HIPException.h): they explain a traceback the same process cuts right after them (the HIP error's own
# line cut above them); alone, or under their message (a V0 engine's "HIP error: invalid argument"), they decide
# nothing
HIP_ERROR_CUT = replace(
    CUDA_ERROR_CUT, name="vllm_hip_error_cut", title="a HIP kernel error whose message line is missing",
    lines=(r"^HIP kernel errors might be asynchronously reported at some other API call",
           r"^For debugging consider passing AMD_SERIALIZE_KERNEL=3\s*$",
           r"^Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions\.\s*$"),
    explains=True, sources=CUDA_ERROR_CUT.sources + (
        ("torch 2.13.0", "torch/utils/hipify/cuda_to_hip_mappings.py:3423"),
        ("torch 2.13.0", "torch/utils/hipify/cuda_to_hip_mappings.py:3430")))
# (round 12) an Ascend NPU call returning a device fault code (vllm-ascend's torch_npu)
NPU_FAULT_CODE = voiced(npu.NPU_FAULT_CODE, (
    "An ACL call returned a fault of the NPU's own execution (a DMA hardware error, an AI core or vector "
    "core exception): an operator queued before it faulted. Rerun with ASCEND_LAUNCH_BLOCKING=1 to find "
    "it and read the device's log (ASCEND_GLOBAL_LOG_LEVEL=1, ASCEND_SLOG_PRINT_TO_STDOUT=1); then "
    "`--enforce-eager`, and a vllm-ascend / CANN / torch_npu release that supports this model on this NPU.",),
)
# (round 104) an Ascend NPU kernel run past the AI core's or vector core's timeout (507014, 507034), as vllm-ascend's
# worker reports a synchronize's code ("Worker failed with error 'ACL stream synchronize failed, error code:507034'")
NPU_AICORE_TIMEOUT = voiced(npu.NPU_AICORE_TIMEOUT, (
    "An NPU kernel did not finish before the runtime's AI core (or vector core) timeout and was killed (CANN "
    "507014, 507034): a kernel stuck or faulting without its own record. Rerun with ASCEND_LAUNCH_BLOCKING=1 to "
    "find the operator and read the device's log (ASCEND_GLOBAL_LOG_LEVEL=1, ASCEND_SLOG_PRINT_TO_STDOUT=1); "
    "then `--enforce-eager`, and a vllm-ascend / CANN / torch_npu release that supports this model on this NPU.",),
)
# (round 23) vLLM's CUTLASS scaled-mm for Blackwell (sm100, sm120) takes per-tensor / per-token / per-channel
# scales only and refuses block-scaled FP8 weights on that GPU: TORCH_CHECK(..., "Currently, block scaled
# fp8 gemm is not implemented for Blackwell") (csrc/quantization/cutlass_w8a8/scaled_mm_c3x_sm120.cu:25
# (60562b0), scaled_mm_c3x_sm100.cu (c45614b); compiled into vllm/_C, so no .py line holds it)
_BLACKWELL_BLOCK_FP8 = r"\bblock scaled fp8 gemm is not implemented for Blackwell"
# (round 27) vLLM's CUTLASS scaled-mm (W8A8; its azp and MoE forms) dispatching on the GPU's compute
# capability (get_sm_version_num) and finding no kernel compiled for it: TORCH_CHECK_NOT_IMPLEMENTED
# "No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: N"
# (0.6.3.post1 sdist csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu:147, :221 the azp form; 0.34.0
# sdist csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu:293, :482, :328 the MoE form), re-raised by
# _custom_ops' hint_on_error ("Error in calling custom op ...", 0.6.3.post1 vllm/_custom_ops.py:49)
# (round 73) and the MoE helpers' form, "No compiled get_cutlass_moe_mm_data: no cutlass_scaled_mm kernel
# for CUDA device capability: N. Required capability: 90 or 100" (vllm-project/vllm 00942ea
# csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu:315-319, get_cutlass_moe_mm_data;
# get_cutlass_pplx_moe_mm_data alike): raised where the install was built with no CUTLASS MoE kernel
# (ENABLE_CUTLASS_MOE_SM90 / _SM100 unset), whatever the GPU, so a capability the message lists as required
# is a build without this GPU's kernels
_CUTLASS_CAPABILITY = (r"\bNo compiled (?:get_)?cutlass_\w+(?:: no cutlass_\w+ kernel)? for "
                       r"(?:a compute capability less than )?CUDA device capability: \d+")
UNSUPPORTED_GPU = voiced(device.UNSUPPORTED_GPU, (
    "A kernel in this install was not built for this GPU's compute capability "
    "(`nvidia-smi --query-gpu=name,compute_cap --format=csv`): install a vLLM and PyTorch built "
    "for it, or use a supported GPU.",),
    patterns=(*device.UNSUPPORTED_GPU.patterns, _BLACKWELL_BLOCK_FP8, _CUTLASS_CAPABILITY),
    lines=(*device.UNSUPPORTED_GPU.lines, _BLACKWELL_BLOCK_FP8, _CUTLASS_CAPABILITY),
    sources=(("vllm (vllm-project/vllm 60562b0)", "csrc/quantization/cutlass_w8a8/scaled_mm_c3x_sm120.cu:25 "
                                                  "(Currently, block scaled fp8 gemm is not implemented for "
                                                  "Blackwell)"),
             ("vllm (vllm-project/vllm c45614b)", "csrc/quantization/cutlass_w8a8/scaled_mm_c3x_sm100.cu"),
             ("vLLM 0.6.3.post1 (sdist)", "csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu:147 (No "
                                          "compiled cutlass_scaled_mm for a compute capability less than "
                                          "CUDA device capability: ), :221 (_azp)"),
             ("vLLM 0.34.0 (sdist)", "csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu:293, :328, :482"),
             ("vllm (vllm-project/vllm 00942ea)",
              "csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu:315-319 (get_cutlass_moe_mm_data: No compiled "
              "get_cutlass_moe_mm_data: no cutlass_scaled_mm kernel for CUDA device capability: )"),
             ("vllm 0.6.3.post1", "vllm/_custom_ops.py:49 (hint_on_error: Error in calling custom op "
                                  "%s: %s)")))
TRITON_ARCH = voiced(archs.TRITON_ARCH, UNSUPPORTED_GPU.advice)
# (round 22) aiter (AMD's kernel library, which vLLM calls on ROCm) refuses the GPU's gfx architecture in two
# texts, both in SGLang's signature (device_crashes/archs.py): chip_info's "Unknown GPU architecture" and its
# C++ template kernels' "One of GPU archs of [...] is invalid or not supported" (the archs they were asked to
# build for, the GPU's or GPU_ARCHS; ROCm/aiter e4048607a5 csrc/cpp_itfs/utils.py:144-161). Both are the
# GPU's, not the arguments'
AITER_ARCH = voiced(archs.AITER_ARCH, (
    "AMD's kernel library (aiter) has no kernels for this GPU's gfx architecture (the message names the "
    "archs it was asked for: the GPU's, or GPU_ARCHS where it is set): run without aiter "
    "(VLLM_ROCM_USE_AITER=0, its default), or use an aiter build (and the vLLM image that ships it) that "
    "lists this architecture.",),
    sources=(("aiter (ROCm/aiter 227c47698e)", "csrc/cpp_itfs/utils.py:115-117"), ("0.34.0", "vllm/envs.py:1329")))
# (round 23) a JIT build that did not link, DeepGEMM's cuobjdump assert: in SGLang's signature
# (round 26) Triton finding no C compiler, its traceback cut on the raise line (device_crashes/compilers.py)
NO_C_COMPILER_CUT = voiced(compilers.NO_C_COMPILER_CUT, compilers.NO_C_COMPILER_CUT.advice)
# (round 51) a JIT extension's ninja build, its traceback cut on the ninja call (device_crashes/compilers.py)
NINJA_RUN_CUT = voiced(compilers.NINJA_RUN_CUT, compilers.NINJA_RUN_CUT.advice)
# (round 72) Triton's _build cut on its C compiler's call (device_crashes/compilers.py)
TRITON_BUILD_CUT = voiced(compilers.TRITON_BUILD_CUT, compilers.TRITON_BUILD_CUT.advice)


def _build_detail(found: Found) -> str | None:
    """SGLang's signature's step for the build that failed where it names no SGLang switch: FlashInfer's
    missing toolkit and a failed link are the same under vLLM; DeepGEMM's switch is SGLang's."""
    if regex(compilers.DEEPGEMM_JIT).search(found.text):
        return None
    return compilers.build_detail(found)


KERNEL_COMPILE = voiced(device.KERNEL_COMPILE, (
    "A kernel build failed (Triton, torch.compile's inductor, a JIT extension): check the CUDA "
    "toolkit matches the wheels, clear ~/.cache/vllm/torch_compile_cache and ~/.triton, and "
    "`--enforce-eager` skips torch.compile's kernels.",), detail=_build_detail)
# (round 7) Marlin's shape check (vLLM's, SGLang's copy too) and CANN's tiling check: in SGLang's signature
KERNEL_CONFIG = voiced(kernels.KERNEL_CONFIG, (
    "A kernel refuses this model's configuration on this GPU: pick another attention backend "
    "(VLLM_ATTENTION_BACKEND, or `--attention-backend` in newer releases) or a newer vLLM.",),
    sources=((_V0, "vllm/model_executor/layers/quantization/utils/marlin_utils.py:108"),
             ("0.34.0", "vllm/model_executor/layers/quantization/utils/marlin_utils.py:191")))
# (round 12) torch's "CUDA error: invalid configuration argument": a launch refused for this shape
LAUNCH_REFUSED = voiced(kernels.TORCH_LAUNCH_REFUSED, (
    "A kernel launch asked for more threads, blocks or shared memory than this GPU gives for this model "
    "or batch shape (not a memory fault): rerun with CUDA_LAUNCH_BLOCKING=1 to name the kernel, then "
    "another attention backend or quantization kernel, a smaller `--max-num-batched-tokens`, or a newer "
    "vLLM.",))
# (round 82) a kernel library's device check of a tensor it was handed, flash-attn's CHECK_DEVICE "<tensor> must be
# on CUDA" (flash_api.cpp:17), carried up by the multiprocessing executor ("Worker failed with error '...'",
# v1/executor/multiproc_executor.py:248 (0.11.0)); vLLM's ViT attention takes the upstream flash_attn where it is
# installed (attention/layer.py:414-417, :438 (0.11.0)): SGLang's signature, the advice in vLLM's flags
DEVICE_REFUSED = voiced(tensor_devices.KERNEL_DEVICE_REFUSED, (
    "A kernel library (flash-attn's varlen attention, in the vision encoder's or the model's attention) refused a "
    "tensor vLLM handed it on the CPU (\"cu_seqlens_q must be on CUDA\"). The model's attention took an installed "
    "flash-attn this vLLM release does not pair with (vLLM picks the upstream `flash_attn` for a ViT when it is "
    "installed): `pip show flash-attn vllm torch`; uninstall the upstream flash-attn or choose another attention "
    "backend (VLLM_ATTENTION_BACKEND), or a newer vLLM.",))
# (round 34) flashinfer's own check on its kernel's launch status, TVM_FFI_ICHECK(status == cudaSuccess)
# << "<Kernel> failed with error " << cudaGetErrorString(status) (flashinfer 0.6.11.post2,
# data/csrc/batch_prefill.cu:330-331; batch_decode.cu:75; rope.cu:66 writes "failed with error code"): the
# status is FLASHINFER_CUDA_CALL's on cudaFuncSetAttribute(MaxDynamicSharedMemorySize, smem_size) or
# cudaLaunchKernel (data/include/flashinfer/attention/prefill.cuh:2983, :3006, in
# BatchPrefillWithPagedKVCacheDispatched), so "invalid argument" there is the launch this head size and
# tile asked for refused (more shared memory than this GPU gives), not a fault: the kind of
# kernels.KERNEL_LAUNCH_REFUSED. Its other statuses (an illegal access, out of memory) are not this text.
_FLASHINFER_REFUSED = r"\b[A-Z]\w* failed with error(?: code)?:? invalid (?:configuration )?argument\b"
FLASHINFER_LAUNCH_REFUSED = replace(
    from_texts(kernels.KERNEL_LAUNCH_REFUSED, texts=(_FLASHINFER_REFUSED,)),
    name="vllm_flashinfer_launch_refused",
    title="flashinfer's kernel launch was refused for this shape (invalid argument)",
    advice=("flashinfer's own check found its kernel's launch refused with an invalid argument: the shared "
            "memory or grid this head size and tile ask for is more than this GPU gives (an older GPU, such "
            "as a T4, gives least), so the kernel does not support this configuration. Choose another "
            "attention backend (VLLM_ATTENTION_BACKEND=TRITON_ATTN or XFORMERS where the release has it, "
            "`--attention-backend` in newer releases) or a flashinfer release that supports this shape.",),
    sources=(("flashinfer 0.6.11.post2", "flashinfer/data/csrc/batch_prefill.cu:330 (TVM_FFI_ICHECK(status == "
                                         "cudaSuccess) << \"BatchPrefillWithPagedKVCache failed with error \")"),
             ("flashinfer 0.6.11.post2", "flashinfer/data/include/flashinfer/attention/prefill.cuh:2983, :3006 "
                                         "(cudaFuncSetAttribute, cudaLaunchKernel)"),
             ("CUDA runtime", "cudaErrorInvalidValue (1): invalid argument")))
NCCL = voiced(runtime.NCCL, (
    "NCCL failed between the ranks: rerun with NCCL_DEBUG=INFO; check the GPUs are visible "
    "(CUDA_VISIBLE_DEVICES), /dev/shm is large enough in a container (docker run with ipc=host), and P2P "
    "works (NCCL_P2P_DISABLE=1 to test); `--disable-custom-all-reduce` rules out vLLM's own "
    "all-reduce (on Ascend NPUs the collectives are HCCL's: HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT and "
    "CANN's device log). Another rank's error, if any, is the real cause.",))
# gloo's TCP transport losing its peer in a collective (runtime.GLOO_PEER_LOST: pair.cc's "Read error " + peer + ": " +
# strerror, "Connection reset by peer" when the peer's socket went away). vLLM's CPU group is gloo too (0.5.1
# distributed/parallel_state.py:148 new_group(ranks, backend="gloo")); V0's workers take each step's inputs from the
# driver over it (worker/worker_base.py:249 broadcast_tensor_dict -> parallel_state.py:390 broadcast_object), so a
# worker raises it once the driver or another rank died or its node went away. Not ``running``: the same group serves
# the start-up's collectives (its barriers), so the phase is what the log and the frames show
GLOO_PEER_LOST = voiced(runtime.GLOO_PEER_LOST, (
    "gloo's TCP transport lost another rank in the middle of a collective (vLLM shares each step's inputs among "
    "the workers over its gloo CPU group): that rank (often the driver, the API server's process) died, hung or "
    "its node became unreachable; its own log holds the first error. With no error anywhere, check the network "
    "between the nodes (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME pick the interface, VLLM_HOST_IP the address).",),
    running=False, sources=(("vllm 0.5.1", "vllm/distributed/parallel_state.py:390"),
                            ("vllm 0.5.1", "vllm/worker/worker_base.py:249")))
# (round 64) 0.4.0's NCCLCommunicator sets its comm only after the process group, the device and the broadcast of
# NCCL's unique id between the ranks (vllm/model_executor/parallel_utils/pynccl.py:212-240 (0.4.0.post1)); its
# __del__ destroys it (:260-264): the AttributeError that __del__ prints says the communicator's NCCL set-up failed
_COMM_UNSET = r"'NCCLCommunicator' object has no attribute 'comm'"
NCCL_COMM_UNSET = Signature(
    "vllm_nccl_comm_unset", "nccl", "vLLM's NCCL communicator failed before NCCL's communicator was made",
    ("The worker's NCCL set-up (the process group, then the broadcast of NCCL's unique id between the ranks) "
     "failed before `ncclCommInitRank`, and the communicator's cleanup said so. Rerun with NCCL_DEBUG=INFO "
     "to see why the ranks could not connect: across nodes check that they reach each other on the interface "
     "NCCL picks (NCCL_SOCKET_IFNAME) and run the same NCCL, CUDA driver and vLLM release.",),
    patterns=(_COMM_UNSET,), lines=(_COMM_UNSET,), priority=30, phase="launch",
    sources=(("vllm 0.4.0.post1", "vllm/model_executor/parallel_utils/pynccl.py:240"),
             ("vllm 0.4.0.post1", "vllm/model_executor/parallel_utils/pynccl.py:264")))
PORT_IN_USE = voiced(launch.PORT_IN_USE, (
    "Free the port (an old server still running? `ss -ltnp` shows who holds it) or start this "
    "one on another `--port`.",),
    sources=((_V0, "vllm/entrypoints/openai/api_server.py:579"),
             ("0.30.0", "vllm/entrypoints/launchers/launcher.py:225"),
             ("0.34.0", "vllm/entrypoints/launchers/launcher.py:354")))
# vLLM's own refusal of a model or draft it finds neither as a repo id nor as a folder (get_config; speculative.py
# reads it inside SpeculativeConfig as this signature's, not the speculative one's)
NO_REPO = r"Invalid repository ID or local directory specified: '"
MODEL_NOT_FOUND = voiced(launch.MODEL_NOT_FOUND, (
    "Check the model (and the draft's `model` in `--speculative-config`): a folder that exists "
    "on the host with config.json and weights, or a Hugging Face repo id that is cached or "
    "reachable; a gated repo needs HF_TOKEN and its license accepted.",),
    # (huggingface_hub raising for a 401 / 403 is SGLang's signature's); vLLM's own refusal when no
    # config is found at the repo id or folder (round 10: get_config's ValueError, raised from
    # whatever the lookup raised)
    patterns=launch.MODEL_NOT_FOUND.patterns + (NO_REPO,),
    lines=launch.MODEL_NOT_FOUND.lines + (rf"^(?:ValueError: )?{NO_REPO}",),
    sources=(("0.30.0", "vllm/transformers_utils/config.py:790"),
             ("0.33.0", "vllm/transformers_utils/config.py:912"),
             ("0.34.0", "vllm/transformers_utils/config.py:957")))
ARCH_UNSUPPORTED = voiced(launch.ARCH_UNSUPPORTED, (
    "This vLLM (or its transformers) does not know the model's architecture: a newer vLLM, "
    "`--trust-remote-code` for a model with its own code, or `--model-impl transformers`.",),
    sources=((_V0, "vllm/model_executor/models/registry.py:353"),
             ("0.34.0", "vllm/model_executor/models/registry.py:1329")))
MODEL_TYPE_KEY = voiced(launch.MODEL_TYPE_KEY, ARCH_UNSUPPORTED.advice)
# (round 65) transformers' config lookup finding a config.json with no model type (SGLang's signature's text)
CONFIG_WITHOUT_MODEL_TYPE = voiced(models.CONFIG_WITHOUT_MODEL_TYPE, (
    "The checkpoint's config.json has no `model_type`, so transformers cannot tell which config class reads "
    "it: add the `model_type` of its architecture to config.json (the draft's too, for the `model` in "
    "`--speculative-config`), or check that the path is the model's own folder.",))
# (round 24) vLLM hands a GGUF file to transformers for its config (get_config: kwargs["gguf_file"],
# transformers_utils/config.py:157 (0.6.4.post1)); transformers' GGUF loader refuses an architecture it
# does not map, the text SGLang's signature reads
GGUF_ARCH = voiced(models.GGUF_ARCH_UNSUPPORTED, (
    "transformers reads a GGUF file's config for vLLM and maps only the GGUF architectures its release "
    "lists: upgrade transformers to one that lists this architecture, or serve the model's original "
    "(safetensors) checkpoint instead of the GGUF file.",),
    sources=((_V0, "vllm/transformers_utils/config.py:157"),))
DEPENDENCY = voiced(packages.DEPENDENCY, (
    "Installed packages do not match this vLLM: install it in a fresh environment with the torch "
    "it pins (`pip install vllm==X` brings its own), then `pip check`.",))
# (round 9) vLLM imports its compiled ops and only warns when that fails ("Failed to import from
# vllm._C with %r", _custom_ops.py:20 (0.6.4.post1), :21 (0.7.3, 0.8.5); platforms/interface.py:382,
# cpu.py:677 (0.34.0): "Failed to import from vllm._C: %s"); the process dies later, where an op is
# first called. A dynamic linker's missing symbol in that message (glibc's "undefined symbol: ",
# elf/dl-lookup.c:806; macOS dyld's "Symbol not found: ", dyld/Loader.cpp:3175) is an extension built
# against another torch: a warning that explains a traceback cut or left unexplained right after it
_C_IMPORT = (r"Failed to import from vllm\._C\w*(?: with|:) ImportError\(.{0,400}?"
             r"(?:undefined symbol: |Symbol not found: "
             # (round 31) or a library of another torch build missing (ROCm's libtorch_hip.so under a
             # CUDA torch; glibc elf/dl-load.c: "cannot open shared object file")
             r"|libtorch\w*\.so[\w.]*: cannot open shared object file)")
C_EXTENSION_LINK = Signature(
    "vllm_c_extension_link", "dependency_mismatch", "vLLM's compiled ops were built against another torch",
    ("vLLM's compiled extension (vllm._C) does not link against the installed torch (a symbol it "
     "needs is missing): install the torch this vLLM release pins (`pip install vllm==X` brings it), or "
     "rebuild vLLM from source against the installed torch (a clean build: remove build/ and the .so "
     "files first).",),
    lines=(_C_IMPORT,), priority=30, phase="launch", explains=True,
    sources=((V0, "vllm/_custom_ops.py:20"), ("0.7.3", "vllm/_custom_ops.py:21"),
             ("0.34.0", "vllm/platforms/interface.py:382"), ("0.34.0", "vllm/platforms/cpu.py:677"),
             ("glibc 2.42.9000", "elf/dl-lookup.c:806 (undefined symbol: %s%s%s)"),
             ("0.7.3", "vllm/platforms/rocm.py:30"),
             ("glibc", "elf/dl-load.c (cannot open shared object file)"),
             ("dyld-1378", "dyld/Loader.cpp:3175 (Symbol not found: %s / Referenced from / Expected in)")))
OP_MISMATCH = voiced(packages.OP_MISMATCH, DEPENDENCY.advice)
IMPORT_ERROR = voiced(packages.IMPORT_ERROR, DEPENDENCY.advice)
# (round 32) CPython's subscript of a class: one with no __class_getitem__ raises "type 'X' is not subscriptable"
# (3.9+; 3.8 and older: "'type' object is not subscriptable"), CPython Objects/abstract.c (PyObject_GetItem).
# Builtins became generic in 3.9 (PEP 585), array.array in 3.12 (gh-98658, What's New in 3.12). Raised in a
# frame that runs a module's body (its import: a def's annotation is evaluated there), it is an installed
# package written for a newer Python than the one running it (w3207: flashinfer's `array.array[int]` hint, which
# vLLM's kernel warmup imports, under Python 3.11); in a running function it is the code's own, not read so
_MODULE_BODY = r', in <module>\s*\n' + NO_LATER_FRAME
PYTHON_TOO_OLD = Signature(
    "vllm_python_too_old", "dependency_mismatch", "an installed package needs a newer Python than the one running",
    ("A package's module, imported, subscripts a class that this Python cannot subscript (a type hint such as "
     "array.array[int], generic from Python 3.12; list[int], from 3.9): the package was written for a newer "
     "Python. Run vLLM under a Python the package supports (`python --version`; the package's Requires-Python), "
     "or install a release of the package that supports this one. vLLM imports kernel libraries (flashinfer, "
     "its fusion passes) lazily, at warmup or capture: the same install can start and fail only there.",),
    types=r"TypeError", patterns=(r"^TypeError: (?:type '[\w.]+'|'type' object) is not subscriptable\b",),
    context=(_MODULE_BODY,), priority=79, phase="launch",
    sources=(("CPython", "Objects/abstract.c (PyObject_GetItem: \"type '%.200s' is not subscriptable\")"),
             ("CPython 3.12", "Doc/whatsnew/3.12.rst (array.array supports subscripting: gh-98658)")))
UNREADABLE = voiced(weights.UNREADABLE, (
    "A checkpoint file cannot be read: a complete download (no Git LFS pointers), and a "
    "`--quantization` / `--load-format` that matches the files.",), detail=weights.shape_detail,
    sources=((_V0, "vllm/model_executor/model_loader/weight_utils.py:538"),
             ("0.30.0", "vllm/model_executor/model_loader/weight_utils.py:1254"),
             ("0.33.0", "vllm/model_executor/model_loader/weight_utils.py:1539"),
             ("0.34.0", "vllm/model_executor/model_loader/weight_utils.py:1598")))
WEIGHT_NAME = voiced(weights.WEIGHT_NAME, UNREADABLE.advice,  # a model's load_weights: params_dict[name]
                     sources=(("0.34.0", "vllm/model_executor/models/llama4.py:620"),))
# the same KeyError with no frames above it (a paste of its last line): a checkpoint tensor's name
# (round 4: a frame printed only after it, another worker's traceback below the line, is not its own)
WEIGHT_NAME_ALONE = voiced(weights.WEIGHT_NAME_ALONE, UNREADABLE.advice,
                            sources=WEIGHT_NAME.sources[-1:],
                            absent=(r'File "[^\n]*\n(?:.*\n)*?\s*KeyError: ',))
# (round 81) a folder's config.json that is not JSON, as transformers re-raises it (weights.CONFIG_NOT_JSON)
CONFIG_NOT_JSON = voiced(weights.CONFIG_NOT_JSON, (
    "The model's config.json was found but is not JSON (an empty or cut download, a Git LFS pointer): download "
    "the checkpoint again (`huggingface-cli download MODEL`, its snapshot in the cache deleted first) or fix the "
    "file, then start `vllm serve` again.",))
# (round 92) a model path naming a file transformers reads as the config (models.MODEL_PATH_IS_A_FILE): vLLM
# 0.5.5 hands a file to transformers as a GGUF only when its name ends in ".gguf" (transformers_utils/config.py:58),
# 0.6.4.post1 also by its "GGUF" magic (transformers_utils/config.py:155, utils.py:14-16)
MODEL_PATH_IS_A_FILE = voiced(models.MODEL_PATH_IS_A_FILE, (
    "The model path names a file, which transformers read as the model's config and could not decode: give the "
    "model's folder (config.json, tokenizer, weights); a GGUF file must end in `.gguf` for vLLM before 0.6 to load "
    "it as one (`ln -s FILE model.gguf`, then `vllm serve model.gguf --tokenizer <the original repo>`).",),
    sources=(("0.6.4.post1", "vllm/transformers_utils/config.py:155"),
             ("0.6.4.post1", "vllm/transformers_utils/utils.py:14")))
# (round 12) a frame of vLLM's own code in faulthandler's format ('File "...", line N in f', no comma:
# CPython Modules/faulthandler.c, dump_frame). Python's tracebacks put a comma there; faulthandler writes
# this form on a fatal signal (enable(), or PYTHONFAULTHANDLER) or when asked to dump, and vLLM asks
# only in its watchdog, which writes to a file of its own ("Call stack dump #N", utils/watch_dog.py:92,
# 0.34.0; 0.7.3 and 0.30.0 call faulthandler nowhere): in a vLLM log, the dump of a fatal signal, its
# header and exception-free end possibly cut from the paste
_DUMP_FRAME = r'^\s*File "[^"]*[/\\]vllm[/\\][^"]*\.py", line \d+ in [\w<>]+\s*$'
NATIVE = voiced(native.NATIVE_CRASH, (
    "A fatal signal with no Python exception: rerun with PYTHONFAULTHANDLER=1 and "
    "CUDA_LAUNCH_BLOCKING=1 (the dump names the thread), then with `--enforce-eager` to rule out "
    "graphs and compiled kernels.",), lines=native.NATIVE_CRASH.lines + (_DUMP_FRAME,),
    sources=(("0.34.0", "vllm/utils/watch_dog.py:92"),))
ASGI = voiced(requests.ASGI_ERROR, (
    "One request failed and the server kept serving: the traceback names what the request "
    "asked for; a body the OpenAI schema refuses, or one longer than `--max-model-len`.",))
REFUSED = voiced(requests.REQUEST_REFUSED, ASGI.advice)
SIGNATURES: list[Signature] = [
    CUDA_OOM, HOST_OOM, ILLEGAL_ACCESS, CUDA_ERROR_CUT, NPU_FAULT_CODE, NPU_AICORE_TIMEOUT, UNSUPPORTED_GPU,
    TRITON_ARCH, AITER_ARCH, KERNEL_COMPILE, KERNEL_CONFIG, *wna16.SIGNATURES, *moe_schemes.SIGNATURES,
    *kv_cache_dtypes.SIGNATURES, *attention_backends.SIGNATURES,
    *processors.SIGNATURES, LAUNCH_REFUSED, FLASHINFER_LAUNCH_REFUSED, DEVICE_REFUSED, NCCL,
    GLOO_PEER_LOST, NCCL_COMM_UNSET, PORT_IN_USE, MODEL_NOT_FOUND, *hub.SIGNATURES, ARCH_UNSUPPORTED, MODEL_TYPE_KEY,
    CONFIG_WITHOUT_MODEL_TYPE,
    GGUF_ARCH, HIP_ERROR_CUT,
    DEPENDENCY, C_EXTENSION_LINK, OP_MISMATCH, PYTHON_TOO_OLD, IMPORT_ERROR, UNREADABLE, WEIGHT_NAME, WEIGHT_NAME_ALONE,
    CONFIG_NOT_JSON, MODEL_PATH_IS_A_FILE,
    NATIVE, ASGI, REFUSED,
    NO_C_COMPILER_CUT, NINJA_RUN_CUT, TRITON_BUILD_CUT,
]
