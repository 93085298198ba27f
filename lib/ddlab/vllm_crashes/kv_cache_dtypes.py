"""``--kv-cache-dtype`` naming the model's own precision, refused by the KV-cache write kernel (vLLM round 117).

``--kv-cache-dtype`` takes "auto", "float16", "bfloat16" and the FP8 names (``CacheDType``, config/cache.py:14-23
(0.18.0)), but its help says of "bfloat16": "Some models (namely DeepSeekV3.2) default to fp8, set to bfloat16 to use
bfloat16 instead, this is an invalid option for models that do not default to fp8." (:53-55 (0.18.0); :115-117
(0.30.0)). FlashAttention's backend lets the name through (``supports_kv_cache_dtype``, v1/attention/backends/
flash_attn.py:167-172 (0.18.0)) and hands the string to the cache write (``reshape_and_cache_flash(...,
self.kv_cache_dtype, ...)``, :819-825; _custom_ops.py:2583-2593), whose kernel dispatches on "auto" and the FP8 names
alone and otherwise fails "Unsupported data type of kv cache: " with the name (``DISPATCH_BY_KV_CACHE_DTYPE``,
csrc/quantization/fp8/nvidia/quant_utils.cuh at vllm-project/vllm 03476e5c; the kernel is compiled, so no wheel holds
the words). The first forward that writes the cache (the warm-up's dummy run) stops on it: the flag's value, invalid
for this model as the help says (``bad_argument``); "auto" keeps the model's own precision. Another name in that
message (an FP8 or MLA cache type the kernel was not built for), or its "Unsupported input type of kv cache" (the
tensor's dtype, not the flag), is not read here.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "KV_CACHE_DTYPE_NATIVE_NAME"]

# the kernel's refusal of a native float name, in the exception or a worker's echo of it
_NATIVE_NAME = r"\bUnsupported data type of kv cache: (?:bfloat16|float16)\b"

KV_CACHE_DTYPE_NATIVE_NAME = Signature(
    "vllm_kv_cache_dtype_native_name", "bad_argument",
    "--kv-cache-dtype names the model's own precision, which the KV-cache write kernel does not take",
    ("`--kv-cache-dtype bfloat16` is meant for models whose KV cache defaults to FP8 (vLLM's help: 'an invalid "
     "option for models that do not default to fp8'), and the cache write kernel takes only `auto` or an FP8 type, "
     "not a native name (`bfloat16`, `float16`). Drop the flag or pass `--kv-cache-dtype auto` to keep the model's "
     "precision, or `fp8` to halve the cache.",),
    types=r"(?:\w+\.)*RuntimeError", patterns=(_NATIVE_NAME,), lines=(_NATIVE_NAME,), priority=80,
    sources=(("vllm 0.18.0", "vllm/config/cache.py:53 (set to bfloat16 ... an invalid option for models that do not "
                             "default to fp8)"),
             ("vllm 0.18.0", "vllm/v1/attention/backends/flash_attn.py:172 (supports_kv_cache_dtype)"),
             ("vllm 0.18.0", "vllm/v1/attention/backends/flash_attn.py:825 (reshape_and_cache_flash(..., "
                             "self.kv_cache_dtype, ...))"),
             ("vllm-project/vllm 03476e5c", "csrc/quantization/fp8/nvidia/quant_utils.cuh "
                                            "(DISPATCH_BY_KV_CACHE_DTYPE: Unsupported data type of kv cache: )")))

SIGNATURES = [KV_CACHE_DTYPE_NATIVE_NAME]
