"""vLLM held-out round 118 (2 logs, w11801-w11802), folded into work after its misses were read.

Measured once on main at 77b73ff3 (staged as 402cffeb): crashed 2/2, kind 0/2, phase 2/2. Both logs are kernel probes
of one benchmark repository on vLLM 0.29.0 that force a backend by flag; both kinds missed (read unknown), read against
0.29.0's source:

- w11801 (kind, fixed): ``--attention-backend=FLASH_ATTN`` on Gemma 4 26B FP8 (an L40S): as the attention layers are
  built, CUDA's get_attn_backend_cls checks the selected backend alone and raises "Selected backend
  AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: ['head_size not supported']"
  (platforms/cuda.py:427-430; v1/attention/backend.py:286; FlashAttention 2 takes heads up to 256,
  v1/attention/backends/flash_attn.py:168-175; vLLM's own choice for Gemma 4 without FA4 is TRITON_ATTN,
  model_executor/models/config.py:250-254). A backend whose kernels do not take the model's attention:
  kernel_config_unsupported as labelled (vllm_crashes/attention_backends.py ``SELECTED_ATTENTION_BACKEND_REFUSED``;
  the GPU's compute capability, another flag's KV-cache dtype, or vLLM's own "No valid attention backend found" are
  not this).
- w11802 (kind, fixed): ``--linear-backend flashinfer_cutlass`` on Qwen3-8B-FP8 (a MIG slice): the block-scaled FP8
  list is cut to FlashInfer's DeepGEMM-dynamic kernel (model_executor/kernels/linear/__init__.py:256-262, :341-355,
  :655), which needs FlashInfer's SM90 GEMM (utils/flashinfer.py:1066-1072): "Failed to find a kernel that can
  implement the ScaledMM linear layer. Reasons:" with its reason alone. The flag's choice, bad_argument as labelled
  (vllm_crashes/linear_backends.py ``FLASHINFER_FP8_ONLY``; the list vLLM's own choice prints, with the other
  kernels' reasons beside it, is not this).

The positive tests below failed at 77b73ff3 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w118{n:02d}" for n in range(1, 3)]
_CORE = "(EngineCore pid=106) ERROR 10-06 08:20:40 [core.py:1374] "
_LAYER = ("vllm/model_executor/layers/attention/attention.py", 300, "__init__", "self.attn_backend = get_attn_backend(")
_SELECT = ("vllm/v1/attention/selector.py", 202, "_cached_get_attn_backend",
           "attention_cls = current_platform.get_attn_backend_cls(")
_CUDA = ("vllm/platforms/cuda.py", 427, "get_attn_backend_cls", "raise ValueError(")
_INIT = ("vllm/model_executor/kernels/linear/__init__.py", 689, "init_fp8_linear_kernel",
         "kernel_type = choose_scaled_mm_linear_kernel(")
_CHOOSE = ("vllm/model_executor/kernels/linear/__init__.py", 665, "choose_scaled_mm_linear_kernel", "raise ValueError(")
_BLOCK_REASON = ("FlashInferFp8DeepGEMMDynamicBlockScaledKernel base is not supported due to FlashInfer block-scale "
                 "FP8 GEMM is not available..")


def _attention(exc: str) -> str:
    return vllm_traceback(_LAYER, _SELECT, _CUDA, exc=exc, head=_CORE)


def _linear(*reasons: str) -> str:
    text = vllm_traceback(_INIT, _CHOOSE, exc="ValueError: Failed to find a kernel that can implement the ScaledMM "
                          "linear layer. Reasons: ", head=_CORE)
    return text + "".join(f"{_CORE}{reason}\n" for reason in reasons)


def test_the_round_is_folded_with_its_two_logs():
    assert folded_round(VLLM_MANIFEST, 118) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w11801: the attention backend forced by flag refusing the model's head size -------------------------------------

def test_a_forced_backend_refusing_the_models_head_size_is_kernel_config_unsupported():
    assert said(read_log("w11801.log")) == (True, "kernel_config_unsupported",
                                            "vllm_selected_attention_backend_refused")
    assert reads(read_log("w11801.log")) == (True, "kernel_config_unsupported", "load_weights")


def test_the_advice_names_the_flag_and_the_reasons():
    from ddlab.diagnosis.diagnosis import diagnose
    advice = diagnose(read_log("w11801.log")).suggestion
    assert "`--attention-backend`" in advice
    assert "head_size not supported" in advice


def test_other_model_reasons_read_the_same():
    text = _attention("ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. "
                      "Reason: ['non-MLA not supported', 'attention sinks not supported']")
    assert vllm_signature(text) == "vllm_selected_attention_backend_refused"
    assert said(text)[:2] == (True, "kernel_config_unsupported")


def test_the_gpu_another_flag_or_vllms_own_choice_is_not_this():
    gpu = _attention("ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this "
                     "configuration. Reason: ['compute capability not supported']")
    assert vllm_signature(gpu) != "vllm_selected_attention_backend_refused"
    mixed = _attention("ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this "
                       "configuration. Reason: ['head_size not supported', 'kv_cache_dtype not supported']")
    assert vllm_signature(mixed) != "vllm_selected_attention_backend_refused"
    imported = _attention("ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this "
                          "configuration. Reason: [ImportError: No module named 'flashinfer']")
    assert vllm_signature(imported) != "vllm_selected_attention_backend_refused"
    auto = _attention("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size="
                      "512). Reasons: {FLASH_ATTN: [head_size not supported]}.")
    assert vllm_signature(auto) != "vllm_selected_attention_backend_refused"


# --- w11802: --linear-backend flashinfer_cutlass left the FP8 layer FlashInfer's kernel alone -----------------------

def test_the_flashinfer_kernel_alone_refusing_the_layer_is_bad_argument():
    assert said(read_log("w11802.log")) == (True, "bad_argument", "vllm_linear_backend_flashinfer_only")
    assert reads(read_log("w11802.log")) == (True, "bad_argument", "load_weights")


def test_the_per_tensor_kernel_alone_reads_the_same():
    text = _linear("FlashInferFP8ScaledMMLinearKernel requires compute capability 100 and above..")
    assert vllm_signature(text) == "vllm_linear_backend_flashinfer_only"
    assert said(text)[:2] == (True, "bad_argument")


def test_the_list_vllm_chose_with_no_flag_is_not_this():
    auto = _linear(_BLOCK_REASON, "DeepGemmFp8BlockScaledMMKernel DeepGEMM is not available..",
                   "CutlassFp8BlockScaledMMKernel requires compute capability 90 and above..")
    assert vllm_signature(auto) != "vllm_linear_backend_flashinfer_only"
    cutlass = _linear("CutlassFp8BlockScaledMMKernel requires compute capability 90 and above..")
    assert vllm_signature(cutlass) != "vllm_linear_backend_flashinfer_only"


# --- the lines the rules cite ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.29.0", "vllm/platforms/cuda.py",
     "            if invalid_reasons:\n                raise ValueError(\n"
     '                    f"Selected backend {selected_backend} is not valid for "\n'
     '                    f"this configuration. Reason: {invalid_reasons}"'),
    ("0.29.0", "vllm/v1/attention/backend.py", '            invalid_reasons.append("head_size not supported")'),
    ("0.29.0", "vllm/v1/attention/backends/flash_attn.py",
     "        if head_size <= 256:\n            return True\n        if is_fa_version_supported(4):\n"
     "            return head_size <= 512"),
    ("0.29.0", "vllm/model_executor/models/config.py",
     "        elif vllm_config.attention_config.backend is None:\n"
     "            vllm_config.attention_config.backend = AttentionBackendEnum.TRITON_ATTN"),
    ("0.29.0", "vllm/model_executor/kernels/linear/__init__.py",
     '    "flashinfer_cutlass": {\n        FlashInferFP8ScaledMMLinearKernel,\n'
     "        FlashInferFp8DeepGEMMDynamicBlockScaledKernel,"),
    ("0.29.0", "vllm/model_executor/kernels/linear/__init__.py",
     "    PlatformEnum.CUDA: [\n        FlashInferFp8DeepGEMMDynamicBlockScaledKernel,\n"
     "        DeepGemmFp8BlockScaledMMKernel,"),
    ("0.29.0", "vllm/model_executor/kernels/linear/__init__.py",
     '    platform_kernels = _resolve_backend_kernels(platform_kernels, "scaled-mm")'),
    ("0.29.0", "vllm/model_executor/kernels/linear/scaled_mm/flashinfer.py",
     '            return False, "FlashInfer block-scale FP8 GEMM is not available."'),
    ("0.29.0", "vllm/utils/flashinfer.py",
     "        has_flashinfer()\n        and current_platform.is_device_capability(90)"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
