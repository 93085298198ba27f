"""Kernels refusing a model configuration on a GPU they otherwise support (``kernel_config_unsupported``).

flashinfer's "Unsupported group_size" / "failed to dispatch", flash-attn's head-dim limit, Triton's
power-of-2 ``arange`` and head-dim asserts, a kernel library's tvm-ffi check, its dtype check of a
tensor, its own CUDA check finding a launch refused, an Ascend NPU's runtime refusing a launch's block
count, an sgl-kernel-npu op's tiling check, an aiter op's check, DeepEP's check of a dispatch's token count:
the refusal is the kind, inside "Capture cuda graph failed: ..." too (the capture is where).
:mod:`.device` splices this list into its own.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES"]


# (vLLM round 7) Marlin's kernels check each weight's per-rank shape before they repack it
# (verify_marlin_supports_shape, SGLang's copy of vLLM's: 0.4.10.post2
# layers/quantization/marlin_utils.py:151, :161, :170; 0.5.23 :169, :179, :188; vLLM's :108 (0.6.4.post1),
# :191 (0.34.0)). An Ascend operator's tiling step checks the shapes it is handed on the host, and CANN's
# error manager appends the check's function and file to the record it reports (metadef error_manager.cc
# ReportInnerErrorMessage: "[FUNC:%s][FILE:%s][LINE:%u]"; vllm-ascend's log: "...[FUNC:
# CheckFAISeqlenDataInTND][FILE:fused_infer_attention_score_tiling.cpp]" under "aclnn... failed, error
# code is 561002"): the operator refusing this configuration
_MARLIN_SHAPE = (r"Weight (?:in|out)put_size_per_partition = \d+ is not divisible by\s+"
                 r"(?:min_thread_[nk]|group_size)\b")
# (round 30) SGLang's JIT Marlin kernels (MoE, dense) check the same on the host with host::RuntimeCheck,
# which throws "Runtime check failed at FILE:LINE: " and the message (0.5.13 jit_kernel/include/sgl_kernel/
# utils.h:86; "Failed at" in 0.5.23, kernels/jit/include/sgl_kernel/utils.h:79): a slice that does not
# divide into the scales' groups or the thread tile (0.5.13 csrc/gemm/marlin_moe/moe_wna16_marlin.cuh:959,
# :963, :627, :701, :702; 0.5.23 kernels/jit/csrc/gemm/marlin_moe/moe_wna16_marlin.cuh:1033)
_JIT_MARLIN_SHAPE = (r"(?:Runtime check failed|Failed) at \S*marlin\w*\.cuh:\d+: (?:size|prob)_[nk] = \d+,? "
                     r"is not divisible by (?:b_scales\.size\(1\)|num_groups|group_blocks|thread_[nk]) = \d+")
_JIT_MARLIN_ADVICE = ("Marlin's MoE kernel takes an expert weight only where each GPU's slice of it "
                      "(size_k: the experts' intermediate size over `--tp-size`) divides into its scale "
                      "groups and thread tile: a `--tp-size` that keeps that slice a multiple of the group "
                      "size, or `--ep-size` (whole experts per GPU, not slices of each).")
_CANN_TILING = r"\[FUNC:\w+\]\[FILE:\w+_tiling\.cpp\]"
_MARLIN_ADVICE = ("Marlin's kernels take a quantized weight only where each GPU's slice of it is a "
                  "multiple of their thread tile (min_thread_n 64, min_thread_k 128) and of the group "
                  "size: a smaller `--tp-size` (larger slices), or a kernel without that rule "
                  "(`--quantization gptq`, as the message says).")
_CANN_ADVICE = ("An Ascend operator's tiling check (CANN, on the host, before the kernel) refused the "
                "shapes it was handed: the record's [FUNC:...][FILE:..._tiling.cpp] names the check and "
                "the operator (fused_infer_attention_score: the fused attention). The shapes are the "
                "caller's (the attention backend, a speculative step's batch): bisect with {graphs_off} and "
                "without speculative decoding, then a CANN / torch_npu / SGLang release whose operator "
                "takes this layout.")


def _config_detail(found: Found) -> str | None:
    if regex(_JIT_MARLIN_SHAPE).search(found.text):
        return _JIT_MARLIN_ADVICE
    if regex(_MARLIN_SHAPE).search(found.text):
        return _MARLIN_ADVICE
    if regex(_CANN_TILING).search(found.text):
        return _CANN_ADVICE
    said = regex(r"(?:Unsupported|failed to dispatch)\s+(\w+(?:\s*\w+)?)[: ]+\s*(\S+)").search(found.text)
    if regex(r"arange's range must be a power of 2").search(found.text):
        return ("A Triton kernel sizes a block by a count that is not a power of 2: with speculative "
                "decoding that is usually the draft-token count (`--speculative-num-draft-tokens`): "
                "try a power of 2.")
    if said:
        return f"The kernel refused {said[1].replace(chr(10), '').replace(' ', '')} = {said[2]}."
    return None


KERNEL_CONFIG = Signature(
    "kernel_config_unsupported", "kernel_config_unsupported",
    "an attention kernel does not support this model configuration",
    ("A kernel refused this model's configuration (GQA group size, head dim, page size, dtype) "
     "on a GPU it otherwise supports: pick another `--attention-backend` (triton is the most "
     "general), or a newer kernel library (flashinfer / sgl-kernel) that has an instance for it "
     "(`pip show flashinfer-python sgl-kernel` says which are installed).",),
    patterns=(r"Unsupported (?:group_size|head_dim|num_mma_q|max_mma_kv|cta_tile_q|mask_mode|ROPE_DIM"
              r"|pos_encoding_mode|aligned_vec_size)\b",
              r"failed to dispatch\b",
              r"only supports head dimension at most \d+",
              r"Number of heads in key/value must divide number of heads in query",
              r"arange's range must be a power of 2",
              # flashinfer's prefill: no tile configuration is valid for this head dim / dtype
              r"Invalid configuration : NUM_MMA_Q=\d+",
              # (vLLM round 24) a Marlin GEMM (dense or MoE) found no thread tile for this shape in the
              # GPU's shared memory
              r"Invalid thread config: thread_m_blocks = -?\d+", _MARLIN_SHAPE, _CANN_TILING,
              _JIT_MARLIN_SHAPE),
    lines=(r"Invalid configuration : NUM_MMA_Q=\d+",
           # kerutils (FlashMLA's host code): cuTensorMapEncodeTiled refused the tensor it was handed
           r"^Failed to create tensormap\s*$", rf"^(?:ValueError: )?{_MARLIN_SHAPE}", _CANN_TILING),
    # above the capture wrapper (80) that often carries it: the refusal is the kind, the capture where
    priority=81, detail=_config_detail,
    sources=(("flashinfer 0.7.4", "include/flashinfer/utils.cuh:166 (Unsupported group_size)"),
             ("flashinfer 0.7.4", "include/flashinfer/utils.cuh:224 (Unsupported head_dim)"),
             ("flashinfer 0.7.4", "csrc/tvm_ffi_utils.h:92 (failed to dispatch data type)"),
             ("flashinfer 0.0.4", "python/csrc/pytorch_extension_utils.h:105 (failed to dispatch group_size)"),
             ("flash-attn 2.8.3 (v2.8.3)", "csrc/flash_attn/flash_api.cpp:393 (mha_fwd: only supports head "
                                           "dimension at most 256), :604, :830, :1046, :1269"),
             ("triton 3.1.0", "triton/language/semantic.py:512 (arange: arange's range must be a power "
                              "of 2)"),
             ("flashinfer 0.2.5 (v0.2.5)", "include/flashinfer/attention/prefill.cuh:1575 "
                                           "(SinglePrefillWithKVCacheDispatched, KTraits::IsInvalid(): "
                                           "Invalid configuration : NUM_MMA_Q=... please create an issue), "
                                           ":2295, :2398"),
             ("sglang 0.5.23", "sglang/kernels/jit/csrc/deep_select/vendor/3rdparty/kerutils/include/kerutils/"
                               "host/host.h:169 (Failed to create tensormap, then KU_ASSERT(false): :42)"),
             ("vLLM 0.34.0 (sdist)",
              "csrc/moe/marlin_moe_wna16/ops.cu:338 (marlin_mm: STD_TORCH_CHECK(is_valid_config(...), "
              "\"Invalid thread config: thread_m_blocks = \", ...)); the dense marlin has the same check, "
              "csrc/quantization/marlin/marlin.cu:360"),
             ("0.4.10.post2", "sglang/srt/layers/quantization/marlin_utils.py:151"),
             ("0.5.23", "sglang/srt/layers/quantization/marlin_utils.py:169"),
             ("sglang 0.5.13", "sglang/jit_kernel/csrc/gemm/marlin_moe/moe_wna16_marlin.cuh:963 "
                               "(RuntimeCheck: jit_kernel/include/sgl_kernel/utils.h:86)"),
             ("CANN metadef (hicann/metadef 9a3f9ae)",
              "error_manager/error_manager.cc (ReportInnerErrorMessage: [FUNC:%s][FILE:%s][LINE:%u] after "
              "the message)")))

# A kernel library's host code checking the tensors it was handed before it launches (flashinfer's
# launchers through tvm-ffi: TVM_FFI_ICHECK_EQ(gemm1_weights.dtype(), dl_float8_e4m3fn) << "FP8 block
# scale MoE: gemm1_weights must be fp8.", flashinfer 0.7.4 data/csrc/trtllm_fused_moe_kernel_launcher.cu:
# 6110-6111); a failed check raises InternalError "Check failed: x op y (a vs. b) : message" or "Check
# failed: (cond) is false: message" (apache-tvm-ffi 0.1.15 include/tvm/ffi/error.h:466-473, :485-492):
# the kernel refuses this configuration (a dtype, a shape, a token count). A paste cut right after
# "Check" is the same text. Below the replay plan's reading (73): a plan step that refuses a batch
# inside graph replay is the graph's batch, not the model's configuration.
# (round 21, 73) SGLang's JIT kernels check their tensors through tvm-ffi too: TensorMatcher's verify() rethrows
# the size, dtype or device check that failed as "Tensor match failed for Tensor<shape>[...] at FILE:LINE\n- Root
# cause: ..." (0.5.23 sglang/kernels/jit/include/sgl_kernel/tensor.h:541-550; :231 "Size mismatch"; 0.5.16 :534),
# an InternalError (apache-tvm-ffi 0.1.15 include/tvm/ffi/function.h:87); a paste may break the line after "for"
_TVM_CHECK = r"InternalError: (?:Check(?: failed: | not null: |\s*$)|Tensor match failed for\s+Tensor<)"


def _check_detail(found: Found) -> str | None:
    said = r"Check failed: (?P<expr>.+?) \((?P<got>[^()]*?) vs\. (?P<want>[^()]*?)\) ?:\s*(?P<msg>[^\n]*)"
    if match := regex(said).search(found.text):
        why = f": {match['msg'].strip().rstrip('.')}" if match["msg"].strip() else ""
        return f"The kernel's check {match['expr']} failed ({match['got']} vs. {match['want']}){why}."
    if match := regex(r"Tensor match failed for\s+Tensor<[^>]*>.*?\n- Root cause: ([^\n]+)").search(found.text):
        return f"The kernel's tensor check failed: {match[1].strip()}."
    return None


KERNEL_CHECK = Signature(
    "kernel_check_failed", "kernel_config_unsupported",
    "a kernel library's check refused the tensors it was given",
    ("A kernel library's host code checked the inputs it was handed (a dtype, a shape, a count) and "
     "refused them before launching: this model's configuration (its weights' dtype or quantization, "
     "its head or token counts, the speculative step's token count) is not one that kernel takes. "
     "Choose a backend whose kernel takes it for that layer (`--attention-backend`).",
     "For a MoE layer, `--moe-runner-backend` picks its kernel.",
     "Or install a kernel library that takes it (`pip show flashinfer-python sgl-kernel` says which are "
     "installed), or a checkpoint quantized the way the kernel expects."),
    types=r"(?:\w+\.)*InternalError", patterns=(_TVM_CHECK,), priority=72, detail=_check_detail,
    sources=(("apache-tvm-ffi 0.1.15", "include/tvm/ffi/error.h:466-473 (TVM_FFI_CHECK_BINARY_OP / "
                                       "TVM_FFI_CHECK: Check failed: x op y (a vs. b) : , Check failed: "
                                       "(cond) is false: ), :481-483 (Check not null: ), :485-492 "
                                       "(TVM_FFI_ICHECK*: InternalError)"),
             ("flashinfer 0.7.4", "data/csrc/trtllm_fused_moe_kernel_launcher.cu:6110-6111 (FP8 block "
                                  "scale MoE: gemm1_weights must be fp8.)"),
             ("sglang 0.5.23", "sglang/kernels/jit/include/sgl_kernel/tensor.h:546-548 (Tensor match failed "
                               "for Tensor<...> at FILE:LINE, - Root cause: ), :231 (Size mismatch for NAME: "
                               "expected N but got M)"),
             ("sglang 0.5.16", "sglang/jit_kernel/include/sgl_kernel/tensor.h:333-340, :534-536")))

# A kernel library's Python wrapper checking a tensor's dtype before it launches: flashinfer raises
# ValueError(f"{name} must have dtype {allowed}, got {tensor.dtype}") (flashinfer 0.7.4
# flashinfer/gdn_prefill.py:1811-1815 in chunk_gated_delta_rule, its allowed list
# _format_dtype_list(_STATE_DTYPES), :61, which older releases kept to float32;
# flashinfer/mamba/selective_state_update.py:285; flashinfer/cudnn/prefill.py:2356): the tensor SGLang
# handed it is in a dtype this kernel does not take. "got torch.X" is a tensor's dtype printed, so
# a kernel's input, not a setting's value.
_DTYPE_REFUSED = r"\b\w+ must have dtype (?:torch\.)?\w+(?:(?:,| or|, or) (?:torch\.)?\w+)*, got torch\.\w+"
KERNEL_DTYPE_REFUSED = Signature(
    "kernel_dtype_refused", "kernel_config_unsupported",
    "a kernel library refused the dtype of a tensor it was handed",
    ("A kernel library's wrapper checked a tensor's dtype and refused it before launching: this "
     "model's configuration (the dtype SGLang keeps that state or cache in) is not one the kernel "
     "takes. Choose a backend that does not use that kernel for the layer (`--attention-backend`; "
     "for a hybrid linear-attention model its own backend flag), or a kernel library release that "
     "takes the dtype (`pip show flashinfer-python sgl-kernel` says which are installed).",),
    types=r"(?:\w+\.)*(?:ValueError|TypeError)", patterns=(_DTYPE_REFUSED,), priority=70,
    sources=(("flashinfer 0.7.4", "flashinfer/gdn_prefill.py:1811-1815 (state_checkpoints must have dtype "
                                  "{allowed}, got {dtype})"),
             ("flashinfer 0.7.4", "flashinfer/mamba/selective_state_update.py:285 (rand_seed must have "
                                  "dtype int64, got {dtype})"),
             ("flashinfer 0.7.4", "flashinfer/cudnn/prefill.py:2356 (lse must have dtype torch.float32, "
                                  "got {dtype})")))

# A kernel library's own CUDA check on its launch (FlashMLA csrc/utils.h CHECK_CUDA: fprintf(stderr,
# "CUDA error (%s:%d): %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); exit(1), and
# CHECK_CUDA_KERNEL_LAUNCH() on cudaGetLastError()): "invalid argument" (cudaErrorInvalidValue) or
# "invalid configuration argument" (cudaErrorInvalidConfiguration) is the launch this shape asked for
# refused (FlashMLA's decode scheduling-metadata kernel sizes its dynamic shared memory by the batch,
# sizeof(int) * (b*3+1), then cudaFuncSetAttribute(MaxDynamicSharedMemorySize) and the launch:
# csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu, run_get_decoding_sched_meta_kernel),
# not a fault; the process exits there. The same check's fault messages are an illegal access.
_LAUNCH_REFUSED = r"\bCUDA error \([^()]+\.(?:cu|cuh|h|cc|cpp):\d+\): invalid (?:configuration )?argument\s*$"
KERNEL_LAUNCH_REFUSED = Signature(
    "kernel_launch_refused", "kernel_config_unsupported",
    "a kernel library's launch was refused for this shape (invalid argument)",
    ("A kernel library's own CUDA check found its launch refused with an invalid argument: the launch "
     "configuration it computed for this batch or model shape (grid, block, shared memory) is not one "
     "the GPU takes, so the kernel does not support this configuration. The file in the line names the "
     "kernel: choose a backend that does not use it (`--attention-backend`), keep the batch within what "
     "it takes (`--max-running-requests`), or install a newer release of that library.",),
    lines=(_LAUNCH_REFUSED,), priority=81, fatal=True,
    sources=(("FlashMLA 9241ae3", "csrc/utils.h:9 (CHECK_CUDA: CUDA error (%s:%d): %s, then exit(1) :10; "
                                  "CHECK_CUDA_KERNEL_LAUNCH :14)"),
             ("FlashMLA 9241ae3", "csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu:113 "
                                  "(run_get_decoding_sched_meta_kernel)"),
             ("CUDA runtime", "cudaErrorInvalidValue (1): invalid argument; cudaErrorInvalidConfiguration "
                              "(9): invalid configuration argument")))

# torch's own CUDA check (c10_cuda_check_implementation: "CUDA error: " and cudaGetErrorString, its hint
# lines below) with cudaErrorInvalidConfiguration (9), "invalid configuration argument": "a kernel launch
# is requesting resources that can never be satisfied by the current device. Requesting more shared
# memory per block than the device supports will trigger this error, as will requesting too many threads
# or blocks" (CUDA 12.9 driver_types.h:267-274): the launch this shape asked for, refused, not a fault
# (round 12). "invalid argument" (cudaErrorInvalidValue) is left alone here: torch's check reports it for
# any API call handed a bad value, not only a launch.
_TORCH_LAUNCH_REFUSED = r"\bCUDA error: invalid configuration argument\s*$"
TORCH_LAUNCH_REFUSED = Signature(
    "cuda_launch_config_refused", "kernel_config_unsupported",
    "a kernel launch asked for more than the GPU takes (invalid configuration argument)",
    ("torch's CUDA check found a kernel launch refused with cudaErrorInvalidConfiguration: the grid, "
     "block or shared memory it asked for this batch or model shape is more than this GPU can give, so "
     "the kernel does not support this configuration (not a memory fault). Rerun with "
     "CUDA_LAUNCH_BLOCKING=1 to see which kernel, then choose a backend that does not use it, keep the "
     "batch smaller, or install a release that supports this shape.",),
    patterns=(_TORCH_LAUNCH_REFUSED,), lines=(_TORCH_LAUNCH_REFUSED,), priority=81,
    sources=(("torch 2.14.1", "c10/cuda/CUDAException.cpp:43 (c10_cuda_check_implementation: CUDA error: "
                              "<cudaGetErrorString>)"),
             ("CUDA runtime 12.9.79", "nvidia/cuda_runtime/include/driver_types.h:274 "
                                      "(cudaErrorInvalidConfiguration = 9, the comment at :267-273)")))

# SGLang's Triton attention kernels check the head dim they were written for ("# shape
# constraints": ``assert Lk in {16, 32, 64, 128, 256, 576}``, 0.4.10.post2
# layers/attention/triton_ops/double_sparsity_attention.py:575, and in 0.2.x's triton kernels):
# the AssertionError carries no message, its code line (or a paste's quote of it) says what
_HEAD_DIM_ASSERT = r"\bassert L[qkv]\w* in \{\d+(?:, ?\d+)*\}"


def _head_dim_detail(found: Found) -> str | None:
    sizes = regex(_HEAD_DIM_ASSERT).search(found.chain_text or found.text)
    got = regex(r"where L[qkv]\w* = (\d+)").search(found.chain_text or found.text)
    said = f"The kernel takes head dims {sizes[0].split(' in ', 1)[1]}" if sizes else None
    return (f"{said}; the model's is {got[1]}." if got else f"{said}.") if said else None


TRITON_HEAD_DIM = Signature(
    "triton_head_dim", "kernel_config_unsupported", "a Triton attention kernel does not take this head dim",
    ("SGLang's Triton attention kernel was not written for this model's head dim: pick another "
     "`--attention-backend` that has it (flashinfer, fa3), or a newer SGLang whose Triton kernels take it.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(r".",), context=(_HEAD_DIM_ASSERT,), priority=81,
    detail=_head_dim_detail,
    sources=(("0.4.10.post2", "sglang/srt/layers/attention/triton_ops/double_sparsity_attention.py:575"),))

# (round 18) an Ascend NPU's runtime refusing a kernel launch for its block count: a launch's coreDim
# (the blocks it asks for) is a uint16 in the task's descriptor, and rtKernelLaunch refuses more with
# EE1001 ("The argument is invalid.Reason: coreDim=N can't be greater than UINT16_MAX.": CANN runtime,
# hicann/runtime d8beaaf src/runtime/feature/src/api_impl/api_error.cc:692, KernelLaunch; newer
# releases word it as EE1003, "... failed because value N for parameter coreDim is invalid. Expected
# value: less than or equal to 65535.", 681ef76 src/runtime/api/impl/api_error.cc:1072-1075 and
# src/dfx/error_manager/error_code.json:446-447). triton-ascend launches a kernel with gridX * gridY *
# gridZ blocks (triton-ascend 3.2.0 triton/backends/ascend/driver.py:742, rtKernelLaunch at :697): a
# grid this shape made too large for the NPU, the launch configuration refused (as CUDA's invalid
# configuration argument is), not a fault. triton-ascend 3.2.0 checks the grid itself before it
# launches (triton/runtime/jit.py:689-690: "grid should be less than 65536! You can try \"export
# TRITON_ALL_BLOCKS_PARALLEL=1\" ...", unless that variable folds the grid onto the cores)
_NPU_BLOCKS = (r"\bcoreDim=\d+ can't be greater than UINT16_MAX\b",
               r"\bfailed because value \d+ for parameter coreDim is invalid\. Expected value: less than or equal to 65535",
               r"\bgrid should be less than 65536! You can try \"export TRITON_ALL_BLOCKS_PARALLEL=1\"")


def _npu_blocks_detail(found: Found) -> str | None:
    blocks = regex(r"coreDim=(\d+)|value (\d+) for parameter coreDim").search(found.text)
    op = regex(r"current working operator name is (\w+)").search(found.chain_text or found.text)
    said = f"The launch asked for {blocks[1] or blocks[2]} blocks (at most 65535)" if blocks else None
    return f"{said}, operator {op[1]}." if said and op else f"{said}." if said else None


NPU_LAUNCH_REFUSED = Signature(
    "npu_launch_blocks_refused", "kernel_config_unsupported",
    "an Ascend NPU kernel launch asked for more blocks than the runtime takes (coreDim > 65535)",
    ("The NPU's runtime refused a kernel launch whose block count (coreDim) is over 65535: a Triton "
     "kernel's grid (its blocks multiplied) grew past that for this batch or model shape, so the "
     "kernel does not support this configuration on the NPU. The operator's name is in torch_npu's "
     "line ('current working operator name is ...'): a triton-ascend that folds the grid onto the "
     "physical cores (TRITON_ALL_BLOCKS_PARALLEL=1), a backend that avoids that kernel, fewer "
     "concurrent requests or shorter batches (`--max-running-requests`, `--chunked-prefill-size`), "
     "or a release whose kernel sizes its grid for the NPU.",),
    patterns=_NPU_BLOCKS, lines=_NPU_BLOCKS, priority=81, detail=_npu_blocks_detail,
    sources=(("Ascend CANN runtime (hicann/runtime d8beaaf)", "src/runtime/feature/src/api_impl/api_error.cc:692 "
                                                             "(KernelLaunch: coreDim=%u can't be greater than "
                                                             "UINT16_MAX.)"),
             ("Ascend CANN runtime (hicann/runtime 681ef76)", "src/runtime/api/impl/api_error.cc:1072-1075, "
                                                             "src/dfx/error_manager/error_code.json:446-447 (EE1003)"),
             ("triton-ascend 3.2.0", "triton/backends/ascend/driver.py:742 (blockNum = gridX * gridY * gridZ), "
                                     ":697 (rtKernelLaunch)"),
             ("triton-ascend 3.2.0", "triton/runtime/jit.py:689-690 (grid should be less than 65536!)")))

# (round 39) sgl-kernel-npu's DeepEP ops (fused_deep_moe: SGLang's `--moe-a2a-backend ascend_fuseep`, 0.5.7
# layers/moe/token_dispatcher/fuseep.py:72; 0.5.23 hardware_backend/npu/moe/fuseep.py:47) check the shapes
# they are handed on the host, in their tiling step, and print a refusal with the op's name, "[ERROR][%s] "
# and the message (csrc/deepep/ops/op_host/error_log.h:22-27, OP_LOGE): "batchSize(bs) must <= %d."
# (MAX_BATCH_SIZE 256), then "CheckData failed." (fused_deep_moe_tiling.cpp:157, :350 at b2360967); the
# op returns GRAPH_FAILED and the caller's forward raises: the op does not take this configuration
_NPU_TILING = (r"^\[ERROR\]\[[A-Z]\w+\] (?:\w+(?:\(\w+\))? (?:must [<>]?=? ?\d+|is invalid\b)"
               r"|(?:CheckData|Tiling check param|Check tensor shape|Check attr) failed\.$)")


def _npu_tiling_detail(found: Found) -> str | None:
    said = regex(r"\[ERROR\]\[(\w+)\] (\w+)(?:\((\w+)\))? must <=? ?(\d+)\.").search(found.text)
    if not said:
        return None
    limit = f"The op {said[1]} takes {said[3] or said[2]} <= {said[4]}"
    if said[3] == "bs" or said[2].lower() == "batchsize":
        return (f"{limit} tokens per rank in one call: a `--chunked-prefill-size` of at most {said[4]} "
                f"per rank, or another `--moe-a2a-backend` for the prefill.")
    return f"{limit}."


NPU_TILING_REFUSED = Signature(
    "npu_op_tiling_refused", "kernel_config_unsupported",
    "an Ascend op of sgl-kernel-npu refused the shapes it was handed (its tiling check)",
    ("An Ascend op of sgl-kernel-npu (DeepEP's MoE ops: fused_deep_moe, dispatch, combine) checks the "
     "shapes it is handed on the host before its kernel runs, and refused this batch: the '[ERROR][op]' "
     "line before 'CheckData failed.' names the limit. Keep each call within it (fewer tokens per rank: "
     "`--chunked-prefill-size`, `--max-running-requests`), or use an sgl-kernel-npu release whose op "
     "takes this shape.",),
    lines=(_NPU_TILING,), priority=81, running=True, detail=_npu_tiling_detail,
    sources=(("sgl-kernel-npu b2360967", "csrc/deepep/ops/op_host/error_log.h:22-27 (OP_LOGE: [ERROR][%s] )"),
             ("sgl-kernel-npu b2360967", "csrc/deepep/ops/op_host/fused_deep_moe_tiling.cpp:157 (batchSize(bs) "
                                         "must <= %d.), :350 (CheckData failed.), :75 (MAX_BATCH_SIZE = 256)"),
             ("sglang 0.5.7", "sglang/srt/layers/moe/token_dispatcher/fuseep.py:72")))

# (round 55) aiter's op interfaces (csrc/py_itfs_cu, csrc/py_itfs_ck: each op's C++ entry, such as the MLA decode's
# mla_decode_stage1_asm_fwd) check the tensors and settings they are handed with AITER_CHECK, whose check_fail
# writes "[AITER] FILE:LINE " and the message to stderr, then aborts ("Fatal Python error: Aborted" below it), or
# throws where the ctypes binding asked it to (ROCm/aiter b0fd63cd9d csrc/include/aiter_hip_common.h:43-63,
# AITER_CHECK :66-71; csrc/py_itfs_cu/asm_mla.cu:226-227 "fp8 Q requires q_scale and kv_scale"; HEAD e404860
# :818-819); the binding raises the thrown text as RuntimeError(f"{fc_name} failed: {err_msg}")
# (aiter/jit/core.py:1401). Those files' checks refuse a dtype, a shape, a head count, a kernel for this
# shape ("not find kernel", "cannot get heuristic kernel"): the op does not take this configuration. The same
# prefix on a HIP call's failure ("fail to call ... ---> [HIP error](...)": HIP_CALL, aiter_check_fatal :35-39)
# is a fault, and the checks outside the op interfaces (a code object that does not load, AITER_ASM_DIR unset:
# aiter_hip_common.h:188, :344, :367) an install's: neither is this.
_AITER_OP_CHECK = r"\[AITER\] (?:\S*/)?py_itfs_c[uk]/\w+\.(?:cu|cpp):\d+ (?!fail to call )\S"


def _aiter_check_detail(found: Found) -> str | None:
    said = regex(r"\[AITER\] \S*?(\w+\.(?:cu|cpp)):\d+ (?:(\w+) ?: ?)?([^\n]+)").search(found.text)
    if not said:
        return None
    where = f"{said[2]} ({said[1]})" if said[2] else said[1]
    return f"aiter's op {where} refused its inputs: {said[3].strip().rstrip('.')}."


AITER_OP_CHECK = Signature(
    "aiter_op_check_failed", "kernel_config_unsupported",
    "an aiter op's check refused the inputs it was handed",
    ("An op of aiter (AMD's kernel library) checked the tensors and settings it was handed (a dtype, a scale, a "
     "head count, a shape it has a kernel for) and refused them before launching: "
     "this configuration is not one that op takes. The '[AITER] ...py_itfs_cu/FILE:LINE' line names the op "
     "and what it wanted. Run without the setting that leads there (an fp8 `--kv-cache-dtype`, a quantized "
     "checkpoint), or choose a backend that does not call that op for the layer (`--attention-backend`), or "
     "use an image whose aiter and SGLang agree on it.",),
    patterns=(_AITER_OP_CHECK,), lines=(rf"^{_AITER_OP_CHECK}",), priority=81, detail=_aiter_check_detail,
    sources=(("aiter (ROCm/aiter b0fd63cd9d)", "csrc/include/aiter_hip_common.h:43-63 (check_fail: [AITER] "
                                               "FILE:LINE message to stderr, then throw or std::abort()), "
                                               ":66-71 (AITER_CHECK)"),
             ("aiter (ROCm/aiter b0fd63cd9d)", "csrc/py_itfs_cu/asm_mla.cu:226-227 (mla_decode_stage1_asm_fwd: "
                                               "fp8 Q requires q_scale and kv_scale)"),
             ("aiter (ROCm/aiter b0fd63cd9d)", "aiter/jit/core.py:1401 (RuntimeError: {fc_name} failed: "
                                               "{err_msg})")))

# (round 69) DeepEP's host check of a low-latency dispatch's (or combine's) token count against the buffer's
# num_max_dispatch_tokens_per_rank throws EPException "Failed: Assertion error FILE:LINE 'cond'" (v1.2.1
# csrc/deep_ep.cpp:1105, :1228; csrc/kernels/exception.cuh:18, :50; :1233 in 92a14cc); SGLang sizes the buffer from
# SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK. Only the "<=" checks: an "==" is a caller's shape mismatch
_DEEPEP_TOKENS = (r"Failed: Assertion error \S*\.(?:cpp|hpp|cu|cuh):\d+ '[^'\n]*\.size\(0\) <= "
                  r"num_max_dispatch_tokens_per_rank'")
DEEPEP_DISPATCH_TOKENS = Signature(
    "deepep_dispatch_tokens", "kernel_config_unsupported", "DeepEP refused a dispatch larger than its buffer",
    ("DeepEP's low-latency dispatch (or combine) was handed more tokens on one rank than its buffer was built for "
     "(num_max_dispatch_tokens_per_rank). SGLang sizes it from SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK "
     "(default 128, at most 1024): raise it to the largest batch one rank runs (`--cuda-graph-max-bs`, a warmup "
     "or autotune batch, a decode batch), or lower those batches to fit.",),
    patterns=(_DEEPEP_TOKENS,), lines=(rf"^(?:RuntimeError: )?{_DEEPEP_TOKENS}",), priority=81,
    sources=(("DeepEP v1.2.1", "csrc/deep_ep.cpp:1105 (low_latency_dispatch), :1228 (low_latency_combine); "
                               "csrc/kernels/exception.cuh:18, :50 (EP_HOST_ASSERT)"),
             ("DeepEP 92a14cc", "csrc/deep_ep.cpp:1233 (low_latency_dispatch)"),
             ("0.4.10.post2", "sglang/srt/layers/moe/token_dispatcher/deepep.py:257"),
             ("sglang 0.5.6", "sglang/srt/layers/moe/token_dispatcher/deepep.py:311-316 (default 128, at most 1024)"),
             ("0.5.10", "sglang/srt/environ.py:392")))

# (TORCH_LAUNCH_REFUSED is read in vLLM's logs only, :mod:`ddlab.vllm_crashes.library`: no SGLang fixture shows it yet)
SIGNATURES = [KERNEL_CONFIG, KERNEL_CHECK, KERNEL_DTYPE_REFUSED, KERNEL_LAUNCH_REFUSED, TRITON_HEAD_DIM,
              NPU_LAUNCH_REFUSED, NPU_TILING_REFUSED, AITER_OP_CHECK, DEEPEP_DISPATCH_TOKENS]
