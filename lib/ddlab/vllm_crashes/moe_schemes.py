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

(round 105) The MoE oracles of later releases (fused_moe/oracle/*.py) ask each candidate kernel whether it takes the
deployment (``is_supported_config``: the device, the activation, the shape, and two features the user turns on,
"kernel does not support batch invariance" under ``VLLM_BATCH_INVARIANT=1`` and "kernel does not support LoRA",
0.30.0 model_executor/layers/fused_moe/modular_kernel.py:555-556, :589-592). Choosing by themselves they skip a
kernel that refuses; a backend the user named with ``--moe-backend`` they try alone and raise its refusal, "Mxfp4
MoE backend 'B12X_MXFP4' does not support the deployment configuration since kernel does not support batch
invariance." (``_return_or_raise``, oracle/mxfp4.py:431-437, :455, called for the named backend at :571, :680; the
FP8, NvFp4, Int8, WNA16 and unquantized oracles word it the same). Refused for one of those two features, it is two
settings of the user's that do not go together (``bad_argument``); refused for the device or the shape, it is not
read here.

(round 117) The MXFP4 MoE method's selector takes a backend named with ``--moe-backend`` before its own list
(``select_deepseek_v4_mxfp4_moe_backend``, oracle/mxfp4.py:600-618 (0.23.0); "flashinfer_cutlass" maps to FlashInfer
CUTLASS, :242-246) once the kernel says it takes the deployment, and the method then has no weight conversion for
it: ``convert_weight_to_mxfp4_moe_kernel_format`` ends "Unsupported mxfp4_backend for Mxfp4MoEMethod: {backend}.
Expected TRTLLM, Triton, AITER, or XPU backend." (:1528-1532 (0.23.0); :1579-1583 (0.27.1) adds emulation), run from
``process_weights_after_loading`` once the weights are read (quantization/mxfp4.py:655). 0.28.0 converts FlashInfer
CUTLASS's layouts too (:1609-1611; its message names it, :1693-1697). The checkpoint and the GPU are fine: the backend
chosen cannot run this method's weights (``kernel_config_unsupported``). A ``--moe-backend`` value the oracle has no
backend for ("moe_backend='x' is not supported for MXFP4 MoE. Expected one of [...]", :264-267) and the oracle left
with no backend ("No MXFP4 MoE backend supports the deployment configuration.", :651-653) are not read here.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "FP8_MOE_SCALES_REFUSED", "MOE_BACKEND_FEATURE_REFUSED", "MXFP4_BACKEND_UNCONVERTED"]

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

# the oracle's refusal (quoted backend or not, as each oracle words it) for a feature the user turned on
_FEATURE_REFUSED = (r"\bMoE backend '?[\w.-]+'? does not support the deployment configuration since kernel does not "
                    r"support (?:batch invariance|LoRA)\.")
MOE_BACKEND_FEATURE_REFUSED = Signature(
    "vllm_moe_backend_feature_refused", "bad_argument",
    "the MoE backend named with --moe-backend does not take batch invariance or LoRA",
    ("The MoE backend this server was told to use (`--moe-backend`) has no kernel for a feature that is on as "
     "well: batch invariance (`VLLM_BATCH_INVARIANT=1`) or LoRA (`--enable-lora`), as the message names. Drop "
     "`--moe-backend` (vLLM then picks a kernel that takes the feature), name a backend that takes it, or turn "
     "the feature off.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_FEATURE_REFUSED,), lines=(_FEATURE_REFUSED,), priority=80,
    phase="load_weights",
    sources=(("vllm 0.30.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:455"),
             ("vllm 0.30.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:433"),
             ("vllm 0.30.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:680"),
             ("vllm 0.30.0", "vllm/model_executor/layers/fused_moe/modular_kernel.py:590"),
             ("vllm 0.28.0", "vllm/model_executor/layers/fused_moe/oracle/fp8.py:304"),
             ("vllm 0.28.0", "vllm/model_executor/layers/fused_moe/modular_kernel.py:588")))

# the MXFP4 MoE method's weight conversion having no case for the chosen backend (an exception or a worker's echo)
_UNCONVERTED = r"\bUnsupported mxfp4_backend for Mxfp4MoEMethod: (?:Mxfp4MoeBackend\.)?\w+\. Expected "
MXFP4_BACKEND_UNCONVERTED = Signature(
    "vllm_mxfp4_backend_unconverted", "kernel_config_unsupported",
    "the MXFP4 MoE method has no weight conversion for the MoE backend chosen",
    ("vLLM chose an MXFP4 MoE backend (by itself, or the one `--moe-backend` names) for which this release's "
     "MXFP4 MoE method cannot lay out the experts' weights: the message names the backend and the ones it takes. "
     "Name one of those with `--moe-backend` (`flashinfer_trtllm`, `triton`, `marlin`; `aiter` on ROCm), or run a "
     "release that converts the backend (FlashInfer CUTLASS from vLLM 0.28.0).",),
    types=r"(?:\w+\.)*ValueError", patterns=(_UNCONVERTED,), lines=(_UNCONVERTED,), priority=80,
    phase="load_weights",
    sources=(("vllm 0.23.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:1530"),
             ("vllm 0.23.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:242"),
             ("vllm 0.23.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:602"),
             ("vllm 0.23.0", "vllm/model_executor/layers/quantization/mxfp4.py:655"),
             ("vllm 0.27.1", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:1581"),
             ("vllm 0.28.0", "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:1610")))

SIGNATURES: list[Signature] = [FP8_MOE_SCALES_REFUSED, MOE_BACKEND_FEATURE_REFUSED, MXFP4_BACKEND_UNCONVERTED]
