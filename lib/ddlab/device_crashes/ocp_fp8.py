"""Triton's AMD backend with no lowering for an OCP fp8 type on this GPU (``unsupported_gpu``, round 91).

CDNA3 GPUs (MI300X, MI300A, MI325X: gfx942) have fp8 only in the FNUZ formats (f8E4M3FNUZ, f8E5M2FNUZ):
the OCP formats torch calls float8_e4m3fn / float8_e5m2 came with CDNA4 (gfx950). Triton's AMD backend of
early 2025 (the ROCm builds SGLang 0.4.5's docker ships) lowers ``tt.fp_to_fp`` by converters chosen for
the GPU's ISA family and, where it has none for the pair, emits MLIR's error "Unsupported conversion from
'<src>' to '<dst>'" and fails the op's legalization ("failed to legalize operation 'tt.fp_to_fp'"), so
the pass pipeline fails and Python sees only ``RuntimeError: PassManager::run failed`` (triton
backends/amd/compiler.py make_llir, pm.run). That release's own C++ line is not cited here (its source
was not at hand); later Triton emulates OCP fp8 in software on CDNA3 (triton-lang/triton 01d980f
third_party/amd/lib/TritonAMDGPUToLLVM/ConvertFpCastOpToLLVM.cpp, CvtFp8E4M3ToFp16: hardware paths only
for CDNA4 and GFX1250, ``Fp8E4M3fnToFp16SW`` otherwise). SGLang 0.4.5's EP MoE keeps an fp8 checkpoint's
float8_e4m3fn weights on ROCm too (layers/moe/ep_moe/layer.py:191; the kernel's tl.dot on them at kernels.py:606):
the kernel asked this GPU for an fp8 type it lacks, read as Triton's NVIDIA-side "type fp8e4nv not
supported in this architecture" is (:data:`ddlab.device_crashes.compilers.TRITON_FP8_ARCH`):
``unsupported_gpu``. The MLIR diagnostic is printed on stderr before the traceback, so the rule reads the
log's line (its phase is the traceback's after the block: :mod:`ddlab.diagnosis.phase`); the quoted type
name ends at the quote, so the FNUZ types this GPU has do not read this way. :mod:`.device` splices this
list after :mod:`.scale_layouts`'.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "OCP_FP8_UNLOWERED"]

OCP_FP8_UNLOWERED = Signature(
    "triton_ocp_fp8_unlowered", "unsupported_gpu",
    "Triton has no conversion for an OCP fp8 type on this GPU",
    ("Triton could not lower a conversion from an OCP fp8 type (f8E4M3FN / f8E5M2, torch's float8_e4m3fn / "
     "float8_e5m2) on this GPU: AMD CDNA3 GPUs (MI300X, gfx942) have fp8 only in the FNUZ formats. Quantize to "
     "or convert the checkpoint's fp8 weights to float8_e4m3fnuz on ROCm, upgrade Triton (later releases "
     "emulate OCP fp8 on CDNA3) or SGLang, or serve the model in bf16.",),
    lines=(r"\berror: Unsupported conversion from 'f8E(?:4M3FN|5M2)' to '\w+'",), priority=83,
    sources=(("triton-lang/triton 01d980f", "third_party/amd/lib/TritonAMDGPUToLLVM/ConvertFpCastOpToLLVM.cpp "
                                            "(CvtFp8E4M3ToFp16: OCP fp8 in hardware on CDNA4/GFX1250 only)"),
             ("sglang 0.4.5", "sglang/srt/layers/moe/ep_moe/kernels.py:606 (grouped_gemm_triton_kernel's tl.dot "
                              "on fp8 tiles)"),
             ("sglang 0.4.5", "sglang/srt/layers/moe/ep_moe/layer.py:191 (fp8_dtype float8_e4m3fn, also on ROCm)")))

SIGNATURES = [OCP_FP8_UNLOWERED]
