"""A ``--quantization`` the checkpoint's own quantization config refuses (``bad_argument``, round 98).

The model config checks the launch's ``quantization`` against the ``quant_method`` of the checkpoint's
``quantization_config``, after each method may claim the checkpoint (AWQ-Marlin claims an AWQ checkpoint only where
its bits, group size and zero point fit Marlin on this GPU, vllm 0.5.5 awq_marlin.py:80-97, :110-129), and raises
"Quantization method specified in the model config (awq) does not match the quantization method specified in the
`quantization` argument (awq_marlin)." where they differ: vLLM's ModelConfig, which SGLang 0.3.x builds in its
model runner (vllm 0.5.5 config.py:270-300; sglang 0.3.4 model_executor/model_runner.py:234-236
``VllmModelConfig(..., quantization=self.server_args.quantization``), and SGLang's own copy from 0.4
(0.4.5 configs/model_config.py:298-303, 0.5.5.post3 :705-710). The argument the server was given, refused against
the model: ``bad_argument``; the phase is where the check ran. Only the check's sentence."""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["QUANT_ARG_MISMATCH", "SIGNATURES"]

_MISMATCH = (r"Quantization method specified in the model config \(([\w-]*)\) does not match the quantization "
             r"method specified in the `quantization` argument \(([\w-]+)\)")
QUANT_ARG_MISMATCH = Signature(
    "quant_arg_mismatch", "bad_argument", "--quantization is not the checkpoint's quantization method",
    ("The `--quantization` given is not the method the checkpoint's `quantization_config` names, and that method "
     "did not take the checkpoint over (a Marlin variant takes an AWQ / GPTQ checkpoint only where its bits, "
     "group size and zero point and this GPU fit Marlin). Launch without `--quantization` and let the config "
     "choose, or pass the config's own method (the first name in the message).",),
    types=r"ValueError", patterns=(_MISMATCH,), priority=79,
    sources=(("vllm 0.5.5", "vllm/config.py:296-300 (raise ValueError(\"Quantization method specified in the model "
                            "config ...\")), :284-290 (override_quantization_method)"),
             ("vllm 0.5.5", "vllm/model_executor/layers/quantization/awq_marlin.py:80-97, :110-129"),
             ("sglang 0.3.4", "sglang/srt/model_executor/model_runner.py:234-236 (VllmModelConfig(..., "
                              "quantization=self.server_args.quantization)"),
             ("sglang 0.4.5", "sglang/srt/configs/model_config.py:298-303"),
             ("sglang 0.5.5.post3", "sglang/srt/configs/model_config.py:705-710")))

SIGNATURES = [QUANT_ARG_MISMATCH]
