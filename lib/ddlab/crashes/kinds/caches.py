"""Prefix caches: a cache option the model's KV pool cannot take (round 52).

SGLang builds its hierarchical cache, ``HiRadixCache``, only under ``--enable-hierarchical-cache``: the
scheduler's cache setup picks it in the ``elif self.enable_hierarchical_cache`` branch, after the KV pool
(0.5.12 ``managers/scheduler.py:918-930``, ``init_cache_with_memory_pool``; 0.5.10 ``:779-791``). Its
constructor backs the device pool with a host pool of the same layout and knows only some pool classes:
MHA's and MLA's (and DSA's, NSA's, MSA's in later releases); for any other pool (a hybrid model's:
sliding-window, linear attention, DeepSeek V4's) it raises, "HiRadixCache only supports MHA and MLA yet"
(0.5.1 ``mem_cache/hiradix_cache.py:69`` to 0.5.10 ``:91``), "HiRadixCache only supports MHA, MLA, and NSA
(DSA) models" (0.5.11 ``:95-97``, 0.5.12 ``:98-100``), "... MHA, MLA, and DSA models" (0.5.13 ``:102``),
"... MHA, MLA, DSA, and MSA models" (0.5.15.post1 ``:109``, 0.5.19 ``:121``). It is the one refusal of the
model's pool in that module (its other raises check the storage backend's extra config). The model is
served without the option: a server option this model cannot take, ``bad_argument`` (as the corpus labels
the other options refused for a model: a037, h30005, h11019), not an architecture the install does not
know (``arch_unsupported``).
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES"]

_HIRADIX_REFUSAL = r"\bHiRadixCache only supports MHA\b"


def _pools_detail(found: Found) -> str | None:
    match = regex(r"HiRadixCache only supports (MHA[\w ,()]*)").search(found.text)
    pools = match[1].strip().removesuffix(" yet").removesuffix(" models") if match else ""
    return f"This release's HiRadixCache takes {pools} models only." if pools else None


HICACHE_POOL_UNSUPPORTED = Signature(
    "hicache_pool_unsupported", "bad_argument", "the hierarchical cache does not take this model's KV pool",
    ("`--enable-hierarchical-cache` was given for a model whose KV pool the hierarchical cache "
     "(HiRadixCache) cannot mirror in host memory: drop `--enable-hierarchical-cache` (the model is "
     "served with the device radix cache alone). The list of pools grows across releases (MSA in "
     "0.5.15.post1): check the newest release's message before upgrading for it.",),
    types=r"(?:\w+\.)*ValueError", patterns=(_HIRADIX_REFUSAL,), priority=60, phase="memory_pool",
    detail=_pools_detail,
    sources=(("sglang 0.5.1", "sglang/srt/mem_cache/hiradix_cache.py:69"),
             ("0.5.10", "sglang/srt/mem_cache/hiradix_cache.py:91"),
             ("0.5.12", "sglang/srt/mem_cache/hiradix_cache.py:99"),
             ("0.5.13", "sglang/srt/mem_cache/hiradix_cache.py:102"),
             ("0.5.19", "sglang/srt/mem_cache/hiradix_cache.py:121")))

SIGNATURES = [HICACHE_POOL_UNSUPPORTED]
