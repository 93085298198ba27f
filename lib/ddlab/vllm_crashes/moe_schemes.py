"""A quantization method's fused-MoE path refusing the checkpoint's scale scheme (``kernel_config_unsupported``,
vLLM round 90).

vLLM picks the experts' method from the checkpoint's quantization config when it builds each FusedMoE layer
(model_executor/layers/fused_moe/layer.py, ``quant_config.get_quant_method``). compressed-tensors' FP8 W8A8 MoE
method is the one left where no other fits (on compute capability 9.0 exactly, a CUTLASS method takes channel-wise
weights with per-token activations first, :55-57, :274-281; not on ROCm's MI300X), and it accepts only per-tensor
scales for weights and activations: "For FP8 Fused MoE layers, only per-tensor scales for weights and activations
are supported. Found {weight_quant}, {input_quant}" (0.8.3 model_executor/layers/quantization/compressed_tensors/
compressed_tensors_moe.py:76-82); Quark's FP8 MoE method says the same of its qscheme (quantization/quark/
quark_moe.py:55-60 (0.8.3)). The checkpoint is readable and the GPU supported: this MoE kernel path has no case for
the checkpoint's scale layout (channel-wise weights, per-token activations), refused while the model is built.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "FP8_MOE_SCALES_REFUSED"]

# the refusal's fixed words (both methods), in the exception, a worker's echo of it or a log line
_PER_TENSOR_ONLY = (r"\bFor FP8 Fused MoE layers, only per-tensor scales for weights and activations are "
                    r"supported\b")
FP8_MOE_SCALES_REFUSED = Signature(
    "vllm_fp8_moe_scales_refused", "kernel_config_unsupported",
    "the FP8 fused-MoE method refuses the checkpoint's scale layout (per-tensor only)",
    ("vLLM's FP8 fused-MoE method for this checkpoint's quantization format (compressed-tensors or Quark) takes "
     "only per-tensor scales, and the checkpoint's experts are quantized otherwise (the 'Found ...' part names "
     "the weights' and activations' strategies: channel, token). Use a checkpoint of the model whose experts are "
     "quantized per tensor, or a GPU and release whose FP8 MoE path takes this layout (vLLM 0.8.3 runs "
     "channel-wise weights with per-token dynamic activations through its CUTLASS MoE method on compute "
     "capability 9.0 alone: H100 / H200), or the unquantized model.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_PER_TENSOR_ONLY,), lines=(_PER_TENSOR_ONLY,), priority=80,
    phase="load_weights",
    sources=(("vllm 0.8.3", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py:80"),
             ("vllm 0.8.3", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py:55"),
             ("vllm 0.8.3", "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py:278"),
             ("vllm 0.8.3", "vllm/model_executor/layers/quantization/quark/quark_moe.py:58")))

SIGNATURES: list[Signature] = [FP8_MOE_SCALES_REFUSED]
