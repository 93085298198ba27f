"""A kernel library's MoE dispatch with no kernel instance for this configuration (``kernel_config_unsupported``,
round 97).

aiter's two-stage CK MoE (AMD's kernel library) picks its stage-1 and stage-2 GEMMs from a heuristic table its
build generated for the dtypes, activation, quantization and block size it knows; a configuration the table has
no entry for ends in ``TORCH_CHECK(false, "Unsupported kernel config for moe heuristic dispatch")``, a block size
it has none for in "Unsupported block_m value for moe heuristic dispatch: N" (ROCm/aiter e4048607a5
csrc/ck_gemm_moe_2stages_codegen/gen_instances.py:66-70 heuristic_dispatch_end; the block_m checks of its
per-dtype templates, :116, :172, :231), raised in Python as RuntimeError from ``ck_moe_stage1`` / ``ck_moe_stage2``
(aiter/ops/moe_op.py:587 ck_moe_stage1_fwd). SGLang's ROCm images call it through aiter's ``fused_moe`` (0.5.5.post2
sglang/srt/layers/quantization/quark/quark_moe.py:210): the kernel library refusing this model's MoE
configuration, not a fault. Only aiter's own sentences; :mod:`.device` splices this list after :mod:`.kernels`'.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["AITER_MOE_DISPATCH", "SIGNATURES"]

_NO_INSTANCE = r"Unsupported (?:kernel config|block_m value) for moe heuristic dispatch\b"
AITER_MOE_DISPATCH = Signature(
    "aiter_moe_dispatch_unsupported", "kernel_config_unsupported",
    "aiter's MoE kernel has no instance for this configuration",
    ("aiter's two-stage CK MoE kernel (AMD's kernel library, which SGLang's ROCm builds call for fused MoE) found no "
     "kernel in its heuristic table for this layer's configuration (activation and weight dtypes, quantization, "
     "activation function, block size): the MoE configuration is not one this aiter build has a kernel for. "
     "`pip show aiter` (or the image's aiter commit) says which is installed: use an image whose aiter has the "
     "instance, or a checkpoint quantized the way the kernel takes.",
     "Each GPU's expert shape picks the kernel: another `--tp-size` or `--ep-size` may find one.",
     "Where the MoE layer's quantization offers another runner, `--moe-runner-backend` picks it."),
    patterns=(_NO_INSTANCE,), lines=(rf"^(?:RuntimeError: )?{_NO_INSTANCE}",), priority=81,
    sources=(("aiter (ROCm/aiter e4048607a5)", "csrc/ck_gemm_moe_2stages_codegen/gen_instances.py:66-70 "
                                               "(heuristic_dispatch_end: TORCH_CHECK(false, \"Unsupported kernel "
                                               "config for moe heuristic dispatch\"))"),
             ("aiter (ROCm/aiter e4048607a5)", "aiter/ops/moe_op.py:587 (ck_moe_stage1_fwd)"),
             ("sglang 0.5.5.post2", "sglang/srt/layers/quantization/quark/quark_moe.py:210 (output = fused_moe()")))

SIGNATURES = [AITER_MOE_DISPATCH]
