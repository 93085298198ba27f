"""vLLM: texts of LoRA adapters, other accelerators and libraries that round 14 showed (a LoRA adapter
not found or holding a tensor vLLM cannot place, FlashInfer's fused-MoE kernels refusing a model, torch's
store timing out, LLVM aborting a JIT kernel build, vllm-ascend finding no memory for the KV cache, a CUDA
graph capture cut inside torch's capture_end, a weight's name cut by the paste; round 41: the block FP8
activation quantization refusing a layer's width; a node that never reached the rendezvous store; round 51:
Intel's oneCCL throwing in a collective; round 68: tt-metal's device timeout and trace region; round 116: the
Ascend runtime failing a device memory allocation), advice in vLLM's flags.

Cited as :mod:`.vllm` cites: ``(release, "vllm/path.py:line")`` in the wheels, a library's file
by name. Part of :mod:`.vllm`'s list, in its order.
"""

from __future__ import annotations

from dataclasses import replace

from ddlab.crashes.kinds import graphs, rendezvous, runtime
from ddlab.device_crashes import compilers, npu
from ddlab.vllm_crashes.library import CUDA_OOM, DEPENDENCY, KERNEL_COMPILE, KERNEL_CONFIG, MODEL_NOT_FOUND, \
    NCCL, UNREADABLE, V0, WEIGHT_NAME, from_texts, voiced
from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "LORA_NOT_FOUND", "LORA_WEIGHT", "LORA_TARGETS", "FLASHINFER_MOE_LLAMA4",
           "STORE_WAIT",
           "DIST_INIT_TIMEOUT", "LLVM_FATAL", "LLVM_RESOURCE_LIMIT", "ASCEND_NO_KV_MEMORY", "NPU_KERNEL_FAULT",
           "WEIGHT_NAME_CUT",
           "BINDING_ARGUMENTS",
           "XLA_RESOURCE_EXHAUSTED", "XLA_VMEM_COMPILE", "FP8_GROUP_WIDTH", "ONECCL_EXCEPTION", "TT_DISPATCH_TIMEOUT",
           "TT_TRACE_REGION", "INDUCTOR_FAILED", "FX_NODE_IN_USE", "NPU_DEVICE_OOM"]

_V0 = V0

# (round 14) a LoRA adapter's path with no adapter in it: the worker's adapter manager raises "Loading lora
# NAME failed: No adapter found for PATH" (lora/worker_manager.py:135 (0.7.3), :139 (0.11.1); the
# LoRAAdapterNotFoundError of vllm/exceptions.py:81 (0.30.0), :89 (0.33.0, 0.34.0)); an adapter is loaded
# when a request (or the server's --lora-modules at its start) names it
_LORA_NOT_FOUND = r"Loading lora \S+ failed: No adapter found for \S"
LORA_NOT_FOUND = from_texts(
    MODEL_NOT_FOUND, name="vllm_lora_not_found", title="a LoRA adapter's path holds no adapter",
    advice=("vLLM found no LoRA adapter at the path given (`--lora-modules NAME=PATH`, or a request's "
            "`lora_path`): the folder must hold adapter_config.json and the adapter's weights "
            "(adapter_model.safetensors), on the host vLLM runs on; a Hugging Face repo id must be reachable.",),
    texts=(_LORA_NOT_FOUND,),
    priority=80, running=True,
    sources=(("0.7.3", "vllm/lora/worker_manager.py:135"), ("0.30.0", "vllm/exceptions.py:81"),
             ("0.33.0", "vllm/exceptions.py:89"), ("0.34.0", "vllm/exceptions.py:89")))

# (round 14) an adapter checkpoint's tensor that is no LoRA A/B weight vLLM can place (a full lm_head or
# embedding saved by PEFT's modules_to_save): parse_fine_tuned_lora_name raises "NAME is unsupported LoRA
# weight" (lora/utils.py:117 (0.6.4.post1), :138 (0.7.3), :208 (0.30.0), :233 (0.33.0), :236 (0.34.0))
_LORA_WEIGHT = r"\S+ is unsupported LoRA weight\b"
LORA_WEIGHT = from_texts(
    UNREADABLE, name="vllm_lora_weight_unsupported", title="a LoRA adapter holds a tensor vLLM cannot place",
    advice=("The LoRA adapter holds a tensor that is not a LoRA A/B matrix of a module vLLM supports (often "
            "a full `lm_head` or `embed_tokens` saved through PEFT's `modules_to_save`): merge the adapter "
            "into the base model and serve that, or save the adapter without `modules_to_save`.",),
    texts=(_LORA_WEIGHT,),
    priority=80, running=True, phase=None,
    sources=((_V0, "vllm/lora/utils.py:117"), ("0.7.3", "vllm/lora/utils.py:138"),
             ("0.30.0", "vllm/lora/utils.py:208"), ("0.33.0", "vllm/lora/utils.py:233"),
             ("0.34.0", "vllm/lora/utils.py:236")))

# (round 83) an adapter whose modules are not the model's LoRA targets: the loader checks each module's last name
# against the model's supported LoRA modules and raises "While loading DIR, expected target modules in [...] but
# received [...]" (lora/models.py:226, :278 (0.10.1.1); lora/lora_model.py:169, :224 (0.13.0), :168 (0.14.0))
_LORA_TARGETS = r"While loading .+?, expected target modules in \[.*?\] but received \["
LORA_TARGETS = from_texts(
    UNREADABLE, name="vllm_lora_targets_unsupported", title="a LoRA adapter adapts modules vLLM cannot place",
    advice=("The LoRA adapter adapts modules that are not among this model's LoRA targets in vLLM (the message "
            "lists both: often a vision tower's or projector's layers): train the adapter on the listed target "
            "modules only, or merge it into the base model and serve that.",),
    texts=(_LORA_TARGETS,),
    priority=80, running=True, phase=None,
    sources=(("vllm 0.10.1.1", "vllm/lora/models.py:226"), ("vllm 0.10.1.1", "vllm/lora/models.py:278"),
             ("vllm 0.13.0", "vllm/lora/lora_model.py:169"), ("vllm 0.13.0", "vllm/lora/lora_model.py:224"),
             ("vllm 0.14.0", "vllm/lora/lora_model.py:168")))

# (round 14) FlashInfer's fused-MoE (FP8) kernels take only Llama 4's routing: an assertion in the layer's
# set-up (model_executor/layers/quantization/utils/flashinfer_utils.py:133 (0.11.1), where
# VLLM_USE_FLASHINFER_MOE_FP8 picks them for another model)
_FLASHINFER_MOE = r"FusedMoE flashinfer kernels are only supported for Llama4"
FLASHINFER_MOE_LLAMA4 = from_texts(
    KERNEL_CONFIG, name="vllm_flashinfer_moe_llama4", title="FlashInfer's fused-MoE kernels refuse this model",
    advice=("FlashInfer's fused-MoE kernels of this release support only Llama 4's routing: unset "
            "VLLM_USE_FLASHINFER_MOE_FP8 (or set it to 0) so vLLM's own fused-MoE kernels run, or a newer "
            "vLLM whose FlashInfer MoE path supports this model.",),
    texts=(_FLASHINFER_MOE,),
    priority=80,
    sources=(("vllm 0.11.1", "vllm/model_executor/layers/quantization/utils/flashinfer_utils.py:133"),))

# (round 14) torch's TCPStore wait timing out (SGLang's store_wait_timeout): in vLLM, a rank waiting for
# its peers while the process groups are set up (init_process_group's store barrier)
STORE_WAIT = voiced(runtime.STORE_WAIT_TIMEOUT, (
    "This rank waited on torch.distributed's store for a key another rank never wrote, until the timeout: "
    "that rank died, hung or never started (another node's vLLM, a worker that failed first). Its own log "
    "holds the first error; check that every node reaches the master address and port "
    "(`--data-parallel-address`, MASTER_ADDR / VLLM_HOST_IP) and runs the same vLLM.",))

# torch's store client gave up reaching the rendezvous store before its timeout: TCPStore's connect loop logs
# "TCP client failed to connect/validate to host H:P - timed out (try=N, timeout=Mms): ..." (C10D_ERROR) and rethrows
# the DistNetworkError, where before each retry it only warned "- retrying" (torch's TCPStore.cpp; :347 for the warning
# in torch 2.8.0, as w4505 prints it): SGLang's rendezvous signature, vLLM's advice. vLLM's workers open the default
# group on the store at --master-addr:--master-port across nodes (0.34.0 distributed/parallel_state.py:1884), at the
# data-parallel master's address with data parallelism (:1927), and rendezvous there (:1982)
DIST_INIT_TIMEOUT = voiced(rendezvous.DIST_INIT_TIMEOUT, (
    "torch.distributed could not reach the rendezvous store before its timeout: the ranks never met. Start the "
    "node that hosts the store first (node rank 0, or the data-parallel master), and check that every node "
    "passes the same `--master-addr`, `--master-port` and `--nnodes` with its own `--node-rank` (or the same "
    "`--data-parallel-address`), that this address is one every node can reach, and that no firewall blocks "
    "the port; VLLM_HOST_IP sets the address vLLM gives the other ranks, GLOO_SOCKET_IFNAME / "
    "NCCL_SOCKET_IFNAME the interface.",),
    sources=(("0.34.0", "vllm/distributed/parallel_state.py:1884"),
             ("0.34.0", "vllm/distributed/parallel_state.py:1982")),
    detail=rendezvous.DIST_INIT_TIMEOUT.detail)

# (round 14) LLVM's fatal error inside Triton's JIT compiler: SGLang's signature (compilers.py), vLLM's advice
LLVM_FATAL = voiced(
    compilers.LLVM_FATAL,
    ("LLVM, inside Triton's JIT compiler, aborted the process while it built a kernel: the kernel "
     "has no lowering for this GPU or this Triton (older GPUs such as V100, sm_70, lack layouts newer "
     "kernels use). `--enforce-eager` skips torch.compile's kernels; another attention backend "
     "(VLLM_ATTENTION_BACKEND) avoids a Triton attention kernel; a Triton / vLLM release that "
     "supports this GPU fixes it.",))

# (round 99) LLVM's AMDGPU backend refusing a Triton kernel over a hardware limit (compilers.py), vLLM's advice: on
# ROCm, V0's ROCmFlashAttention runs the Triton kernel unless VLLM_USE_TRITON_FLASH_ATTN=0, and then, on a GPU other
# than the MI series (capability 9), naive attention (attention/backends/rocm_flash_attn.py:278-295 (0.5.4))
LLVM_RESOURCE_LIMIT = voiced(
    compilers.LLVM_RESOURCE_LIMIT,
    ("LLVM's AMDGPU backend, inside Triton's JIT compiler, refused the kernel its line names (the .py file and "
     "line are the Triton kernel's source, vLLM's ROCm flash attention for triton_flash_attention.py): this build "
     "needs more stack (scratch) or registers than this GPU allows per thread, and LLVM ended the process. On "
     "ROCm, `VLLM_USE_TRITON_FLASH_ATTN=0` runs attention without the Triton kernel (CK flash attention on MI "
     "cards, a naive path on Navi / RDNA ones); another attention backend "
     "(VLLM_ATTENTION_BACKEND) avoids it too; a vLLM release whose kernel configs fit this GPU fixes it.",),
    sources=(("vllm 0.5.4", "vllm/envs.py:180"), ("vllm 0.5.4", "vllm/attention/backends/rocm_flash_attn.py:278")))

# (round 78) torch.compile's inductor wrapping whatever failed in building the compiled graph's kernels as
# InductorError: SGLang's signature (compilers.py), vLLM's advice
INDUCTOR_FAILED = voiced(
    compilers.INDUCTOR_FAILED,
    ("torch.compile's inductor could not generate or build the kernels of vLLM's compiled model graph (the "
     "inner exception after \"InductorError: \" says where). `--enforce-eager` (or `-O0`) runs without "
     "torch.compile; the torch release your vLLM was built for (its requirements pin it) avoids an inductor "
     "of another release, or one without support for this device's backend.",))

# (round 95) a graph pass of the compile (vLLM's FixFunctionalizationPass among them) erasing a node still in use:
# a pass's bug, not the kernels' build (compilers.py), read over INDUCTOR_FAILED, which wraps it
FX_NODE_IN_USE = voiced(
    compilers.FX_NODE_IN_USE,
    ("A graph pass of vLLM's torch.compile (inductor's, or vLLM's own custom passes, which rewrite its custom ops) "
     "removed a node the graph still uses: a pass's bug on this model's graph, often one a custom op enabled by "
     "hand (`--compilation-config` custom_ops) exposes, not a kernel build. `--enforce-eager` (or `-O0`) runs "
     "without torch.compile; without the custom op you enabled the pass leaves the graph as it was. Report the "
     "bug with the graph (TORCH_LOGS=\"+dynamo\").",),
    sources=(("vllm 0.9.2", "vllm/compilation/fix_functionalization.py:102 (graph.erase_node(node))"),))

# (round 14) vllm-ascend's worker logs the memory the KV cache may take after the profile run, clamped at
# zero ("Available memory: N, total memory: M", vllm_ascend/worker/worker_v1.py:182 (v0.9.2rc1), :235
# (v0.11.0rc0)); at 0 vLLM's KV cache check then refuses the start (vllm_kv_no_memory's raise). An INFO
# line: it explains the engine's failure that follows it (a raise cut from the paste)
_ASCEND_NO_KV = r"\bAvailable memory: 0, total memory: \d+"
ASCEND_NO_KV_MEMORY = Signature(
    "vllm_ascend_no_kv_memory", "kv_pool_oom", "no NPU memory is left for the KV cache (vllm-ascend)",
    ("After the weights and the profile run, nothing of the `--gpu-memory-utilization` share of the NPU's "
     "memory is left for the KV cache: raise `--gpu-memory-utilization`, lower `--max-num-batched-tokens` "
     "(the profile run's batch) or `--max-model-len`, or spread the model over more NPUs "
     "(`--tensor-parallel-size`).",),
    lines=(_ASCEND_NO_KV,), priority=29, explains=True, phase="memory_pool",
    sources=(("vllm-ascend v0.9.2rc1", "vllm_ascend/worker/worker_v1.py:182"),
             ("vllm-ascend v0.11.0rc0", "vllm_ascend/worker/worker_v1.py:235")))

# (round 14) the Ascend runtime's own fault records (SGLang's npu_kernel_fault), read in vLLM's logs too
NPU_KERNEL_FAULT = voiced(npu.NPU_KERNEL_FAULT, (
    "An NPU kernel faulted (an AI core or vector core exception): rerun with ASCEND_LAUNCH_BLOCKING=1 to "
    "find the operator and read the device's log (ASCEND_GLOBAL_LOG_LEVEL=1, ASCEND_SLOG_PRINT_TO_STDOUT=1); "
    "then `--enforce-eager`, and a vllm-ascend / CANN / torch_npu release that supports this model on this "
    "NPU.",))

# (round 14) a checkpoint tensor's KeyError cut by the paste inside the key (no closing quote) below the
# model's load_weights frames (params_dict[name]: 0.34.0 models/llama4.py:620): a name the model cannot
# place, as vllm_weight_name_unknown reads the whole key
WEIGHT_NAME_CUT = replace(WEIGHT_NAME, name="vllm_weight_name_cut", title="the checkpoint holds a tensor the model "
                          "cannot place (its name cut by the paste)",
                          patterns=(r"^KeyError: '(?:[\w-]+\.){2,}[\w-]*\s*\Z",), priority=79)

# (round 14) a compiled binding called with arguments none of its overloads takes: pybind11's dispatcher
# raises TypeError "NAME(): incompatible constructor|function arguments. The following argument types are
# supported:", the overloads numbered, then "Invoked with: " and the arguments (pybind11 2.13.6
# include/pybind11/pybind11.h:1044-1046, :1080). In a server, the Python caller (vLLM, a platform plug-in)
# was written for another build of the compiled module (torch's c10d, torch_npu's) than the one installed;
# the "Invoked with" line stands for the TypeError where the paste cut it
_BINDING_ARGS = (r"\w\(\): incompatible (?:constructor|function) arguments\. The following argument types are "
                 r"supported", r"^Invoked with: \S")
BINDING_ARGUMENTS = from_texts(
    DEPENDENCY, name="vllm_binding_arguments", title="a compiled binding refused its arguments (another build)",
    advice=("A compiled module (torch, torch_npu, a kernel package) was called with arguments none of its "
            "bindings takes: the Python code calling it was written for another release of it. Install the "
            "torch (and the platform plug-in's torch_npu / vllm-ascend) that this vLLM pins, in a fresh "
            "environment, then `pip check`.",),
    texts=_BINDING_ARGS, priority=60,
    sources=(("pybind11 2.13.6", "include/pybind11/pybind11.h:1044"),
             ("pybind11 2.13.6", "include/pybind11/pybind11.h:1080")))

# (round 14) XLA's runtime (TPU; PJRT's allocators) answering an allocation or a program's load with an absl
# status of code RESOURCE_EXHAUSTED, read through a StatusOr: "Bad StatusOr access: RESOURCE_EXHAUSTED: MSG"
# (abseil absl/status/statusor.cc, BadStatusOrAccess::InitWhat; absl/status/status.cc, StatusCodeToString);
# the accelerator's memory ran out. (gRPC's Python status prints "StatusCode.RESOURCE_EXHAUSTED": not this)
_XLA_EXHAUSTED = r"Bad StatusOr access: RESOURCE_EXHAUSTED: "
XLA_RESOURCE_EXHAUSTED = from_texts(
    CUDA_OOM, name="vllm_xla_resource_exhausted", title="the accelerator's memory ran out (XLA: RESOURCE_EXHAUSTED)",
    advice=("XLA's runtime could not reserve device memory (on TPU, HBM) for a buffer or a compiled program: the "
            "KV cache took too much of it. Lower `--gpu-memory-utilization` (on TPU it sizes the KV cache too), "
            "`--max-num-batched-tokens` or `--max-num-seqs` (fewer, smaller compiled programs), or "
            "`--max-model-len`.",),
    texts=(_XLA_EXHAUSTED,),
    priority=70,
    sources=(("abseil", "absl/status/statusor.cc (BadStatusOrAccess::InitWhat: \"Bad StatusOr access: \")"),
             ("abseil", "absl/status/status.cc (StatusCodeToString: RESOURCE_EXHAUSTED)")))

# (round 116) the Ascend runtime (CANN) failing a device memory allocation, as torch_npu's error report prints an
# ACL call's failure ("ERR00100 PTA call acl api failed", then CANN's records): "alloc device memory failed, runtime
# result = 207001" (207001 is ACL_ERROR_RT_MEMORY_ALLOCATION, "memory allocation error": torch_npu 2.5.1
# include/third_party/acl/inc/acl/error_codes/rt_error_codes.h:43; torch_npu's text for it "Failed to apply for
# memory.", csrc/core/npu/NPUErrorCodes.h:250), under CANN's "Memory_Allocation_Failure(EL0004): Failed to allocate
# memory." (no wheel holds CANN's EL table: the log's own words). Read on the runtime's line only, where it says
# device memory and that code: a host allocation, another code or another EL record is not this. Below torch_npu's
# own "NPU out of memory. ... tried to allocate" (CUDA_OOM, 60), which names the sizes where both are printed
_NPU_DEVICE_ALLOC = r"\balloc device memory failed, runtime result = 207001\b"
NPU_DEVICE_OOM = from_texts(
    CUDA_OOM, name="vllm_npu_device_oom", title="the NPU's device memory ran out (CANN: alloc device memory failed)",
    advice=("The Ascend runtime could not allocate NPU device memory (CANN 207001): the KV cache and the "
            "activations of this batch did not fit the NPU's memory. Lower `--gpu-memory-utilization` (more room "
            "outside the KV cache), `--max-num-seqs` or `--max-num-batched-tokens` (smaller batches), or "
            "`--max-model-len`; or spread the model over more NPUs (`--tensor-parallel-size`). `npu-smi info` "
            "shows what else holds the NPU's memory.",),
    texts=(_NPU_DEVICE_ALLOC,),
    priority=55,
    sources=(("torch_npu 2.5.1", "include/third_party/acl/inc/acl/error_codes/rt_error_codes.h:43 "
                                 "(ACL_ERROR_RT_MEMORY_ALLOCATION = 207001)"),
             ("torch_npu 2.5.1", "include/torch_npu/csrc/core/npu/NPUErrorCodes.h:250 (207001, \"Failed to apply "
                                 "for memory.\")")))

# (round 27) XLA's TPU compiler finding a kernel's scratch buffers too large for the chip's on-chip vector
# memory (VMEM) at compile time: error code E1001, CompileTimeScopedVmemOom, a RESOURCE_EXHAUSTED status whose
# message starts "E1001: CompileTimeScopedVmemOom:" (tensorflow/tensorflow 8832b58
# third_party/xla/xla/error/error_codes.h:88, the factory's GetErrorCodeAndName + ":\n"); XLA's page for it
# gives the message "Ran out of memory in memory space vmem while allocating on stack for ..." and what it
# means, a kernel's scoped allocations over its limit (openxla/xla 82fc6c9 docs/errors/error_1001.md:11,
# :29-38). A
# kernel that cannot be built for this chip at this shape (as Triton's "out of resource: shared memory"), not
# the device memory (HBM) the KV cache takes: above the runtime's RESOURCE_EXHAUSTED (70) that holds it
_XLA_VMEM = (r"\bE1001: CompileTimeScopedVmemOom\b", r"\bRan out of memory in memory space vmem\b")
XLA_VMEM_COMPILE = from_texts(
    KERNEL_COMPILE, name="vllm_xla_vmem_compile",
    title="XLA could not compile a TPU kernel within the chip's vector memory (VMEM)",
    advice=("XLA's TPU compiler could not fit a kernel's scratch buffers (its blocks, for this input's "
            "shape) into the chip's on-chip vector memory: a compile-time limit, not the HBM the KV cache "
            "takes, so `--gpu-memory-utilization` does not help. Smaller shapes avoid it "
            "(`--max-num-batched-tokens`, fewer or smaller images per request); otherwise the kernel needs "
            "smaller block sizes or a larger vmem limit (its vmem_limit_bytes; for all kernels, XLA's "
            "xla_tpu_scoped_vmem_limit_kib in LIBTPU_INIT_ARGS): a newer tpu-inference / vLLM TPU release, "
            "or report the shape.",),
    texts=_XLA_VMEM,
    sources=(("XLA (tensorflow/tensorflow 8832b58)", "third_party/xla/xla/error/error_codes.h:88 (E1001, "
                                                     "CompileTimeScopedVmemOom, kResourceExhausted)"),
             ("XLA (openxla/xla 82fc6c9)", "docs/errors/error_1001.md:11 (Ran out of memory in memory space "
                                           "vmem while allocating on stack for ...)")))

# (round 41) block-wise FP8 (a checkpoint's weight_block_size, 128) quantizes each layer's input in groups of
# the block's width: per_token_group_quant_fp8 asserts "the last dimension of `x` N must be divisible by
# `group_size` G" (0.9.2 layers/quantization/utils/fp8_utils.py:380-382, 0.10.2 :391, 0.34.0 :667, :792): a
# layer whose width is no multiple of the block, which this quantization kernel cannot take
_FP8_GROUP = r"the last dimension of `x` \d+ must be divisible by `group_size` \d+"
FP8_GROUP_WIDTH = from_texts(
    KERNEL_CONFIG, name="vllm_fp8_group_width", title="block FP8 quantization refuses a layer's width",
    advice=("vLLM's block-wise FP8 path quantizes a layer's input in groups of the checkpoint's block width "
            "(`weight_block_size` in its quantization_config), and this layer's width is no multiple of it "
            "(often a vision tower's MLP that the export quantized too): leave those layers unquantized in the "
            "export (its ignore / modules_to_not_convert list), export with another FP8 scheme (per-tensor or "
            "per-channel), or serve the unquantized checkpoint with `--quantization fp8` (dynamic, no blocks).",),
    texts=(_FP8_GROUP,), priority=80,
    sources=(("vllm 0.9.2", "vllm/model_executor/layers/quantization/utils/fp8_utils.py:380"),
             ("vllm 0.10.2", "vllm/model_executor/layers/quantization/utils/fp8_utils.py:391"),
             ("0.34.0", "vllm/model_executor/layers/quantization/utils/fp8_utils.py:667")))

# (round 51) on Intel GPUs vLLM's collectives are oneCCL's: the XPU platform's torch.distributed backend is
# "ccl" (0.14.0 platforms/xpu.py:32) and the XPU communicator calls torch.distributed's all_reduce and
# all_gather_into_tensor on it (distributed/device_communicators/xpu_communicator.py:40, :60). oneCCL
# reports a failure by throwing ccl::exception, whose text is "oneCCL: " and the info (oneapi-src/oneCCL
# 2304a383 include/oneapi/ccl/exception.hpp:40-45), from CCL_THROW, which writes the info as
# "FILE:LINE FUNCTION: EXCEPTION: ..." (0ab9bf9a src/common/log/log.hpp, CCL_THROW): "oneCCL:
# atl_ofi_comm.cpp:203 allgatherv: EXCEPTION: check recv failed", its transport (ATL over libfabric) failing a
# receive. The collective library's own failure, NCCL's and HCCL's twin (vllm_hccl_call_failed): nccl
_ONECCL = r"\boneCCL: [\w.-]+\.[ch]pp:\d+ \w+: EXCEPTION: \S"
ONECCL_EXCEPTION = from_texts(
    NCCL, name="vllm_oneccl_exception", title="a oneCCL collective failed (Intel GPUs' collective library)",
    advice=("oneCCL, the collective library of vLLM's ranks on Intel GPUs, threw during a collective (the "
            "file and function after 'oneCCL:' name where: atl_* is its transport, ze_* its Level Zero "
            "device-memory exchange): rerun with CCL_LOG_LEVEL=debug; check that every rank's GPU is "
            "visible (ZE_AFFINITY_MASK), the transport settings (CCL_ATL_TRANSPORT, FI_PROVIDER) and that "
            "oneCCL, the driver and the image are the releases made for each other; another rank's error, "
            "if any, is the real cause.",),
    texts=(_ONECCL,), priority=30,
    sources=(("oneCCL (oneapi-src/oneCCL 2304a383)", "include/oneapi/ccl/exception.hpp:40-45 (oneCCL: + info)"),
             ("oneCCL (oneapi-src/oneCCL 0ab9bf9a)", "src/common/log/log.hpp (CCL_THROW: FILE:LINE FUNCTION: "
                                                   "EXCEPTION: ...)"),
             ("vllm 0.14.0", "vllm/platforms/xpu.py:32 (dist_backend = \"ccl\")"),
             ("vllm 0.14.0", "vllm/distributed/device_communicators/xpu_communicator.py:60")))

# (round 68) tt-metal, the runtime of Tenstorrent's devices under vLLM (tt-inference-server): before it writes a
# command the host waits for room in the device prefetcher's fetch queue, and where the device has not consumed
# an entry within the operation timeout (TT_METAL_OPERATION_TIMEOUT_SECONDS) its handler marks the dispatch
# timed out and throws (fetch_queue_reserve_back's fetch_on_timeout: on_dispatch_timeout_detected(), then
# TT_THROW("TIMEOUT: device timeout in fetch queue wait, potential hang detected"), tenstorrent/tt-metal 1f8d16c
# tt_metal/impl/dispatch/system_memory_manager.cpp; at :669 in the build that w6811's TT_THROW names). The
# device stopped executing the commands it was given and its runtime raised: the device-fault family, as
# Ascend's AI core timeout (npu_aicore_timeout)
_TT_DISPATCH_TIMEOUT = r"\bTIMEOUT: device timeout in fetch queue wait, potential hang detected\b"
TT_DISPATCH_TIMEOUT = Signature(
    "vllm_tt_dispatch_timeout", "cuda_illegal_access",
    "a Tenstorrent device stopped taking commands (tt-metal's fetch queue timeout)",
    ("The Tenstorrent device did not consume the commands tt-metal had queued before the operation "
     "timeout (TT_METAL_OPERATION_TIMEOUT_SECONDS): a kernel on it hangs, or the chip is wedged from an "
     "earlier run. Reset the chips (`tt-smi -r`) and rerun; if it recurs, bisect from the op the "
     "traceback's ttnn call names.",),
    patterns=(_TT_DISPATCH_TIMEOUT,), lines=(_TT_DISPATCH_TIMEOUT,), priority=50, fatal=True,
    sources=(("tt-metal 1f8d16c", "tt_metal/impl/dispatch/system_memory_manager.cpp (fetch_queue_reserve_back: "
                                  "fetch_on_timeout, TT_THROW(\"TIMEOUT: device timeout in fetch queue wait, "
                                  "potential hang detected\"); :669 in the log's build)"),))

# (round 68) tt-metal's trace outgrowing its region (crashes/kinds/graphs.py), in vLLM's words
TT_TRACE_REGION = voiced(graphs.TT_TRACE_REGION, graphs.TT_TRACE_REGION.advice)

SIGNATURES: list[Signature] = [TT_DISPATCH_TIMEOUT, TT_TRACE_REGION,
                               ONECCL_EXCEPTION, XLA_VMEM_COMPILE, XLA_RESOURCE_EXHAUSTED, NPU_DEVICE_OOM,
                               LORA_NOT_FOUND, LORA_WEIGHT, LORA_TARGETS,
                               FLASHINFER_MOE_LLAMA4, STORE_WAIT, DIST_INIT_TIMEOUT, LLVM_FATAL, LLVM_RESOURCE_LIMIT,
                               ASCEND_NO_KV_MEMORY,
                               NPU_KERNEL_FAULT, WEIGHT_NAME_CUT, BINDING_ARGUMENTS, FP8_GROUP_WIDTH, INDUCTOR_FAILED,
                               FX_NODE_IN_USE]
