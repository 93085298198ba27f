"""vLLM: a disk, or the user's quota on it, filling up (``disk_full``), in vLLM's words.

The texts are the kernel's (ENOSPC, EDQUOT) as Python and Rust print them (:mod:`ddlab.crashes.kinds.disks`); vLLM
meets them where SGLang does: the model's download into the Hugging Face cache (vLLM round 119's w11903: hf_xet's
"Disk quota exceeded (os error 122)" under ``hf_hub_download``), a compiled kernel's cache (vLLM's torch.compile
cache, VLLM_CACHE_ROOT/torch_compile_cache: 0.34.0 vllm/envs.py:757-762, compilation/backends.py:1091), a
checkpoint written by a job beside it.
"""

from __future__ import annotations

from ddlab.crashes.kinds import disks
from ddlab.vllm_crashes.library import voiced

__all__ = ["DISK_FULL", "SIGNATURES"]

DISK_FULL = voiced(disks.DISK_FULL, (
    "A write was refused for want of disk space: free space on that file system, or move what vLLM writes there to "
    "a larger disk (downloaded weights: HF_HOME; torch.compile's cache: VLLM_CACHE_ROOT; Triton's: "
    "TRITON_CACHE_DIR), then start again.", "`--download-dir` puts the weights' download elsewhere."),
    detail=disks.disk_detail, sources=(("0.34.0", "vllm/envs.py:757"), ("0.34.0", "vllm/compilation/backends.py:1091")))

SIGNATURES = [DISK_FULL]
