"""Slots: the scheduler running out of KV token slots or request slots while serving.

"Prefill/Decode out of memory" and "alloc_req_slots runs out of memory" say "memory" but no CUDA
allocation failed: the scheduler took in more than its pools hold (``slots_exhausted``), which
``--mem-fraction-static`` alone does not fix. Also hybrid Mamba's state slots, the retract that
found no room for one request, and the memory checks' leaks (idle and busy). Texts and
citations: docs/sglang.md section 4.1. :mod:`.memory` splices this list into its own, so the
registry's order is unchanged.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES"]


KV_EXHAUSTED = Signature(
    "kv_tokens_exhausted", "slots_exhausted", "the KV cache ran out of token slots while serving",
    ("No CUDA allocation failed: the scheduler took in more tokens than the KV pool holds. "
     "Lower `--max-running-requests` or `--chunked-prefill-size`, or give the pool more room "
     "with `--mem-fraction-static`.",),
    # 0.5.23's unpaged alloc_token_slots says it with no phase in front (allocation.py:163)
    patterns=(r"(?:(?:Prefill|Decode) o|\bO)ut of memory\. Try to lower your batch size",),
    lines=(r"(?:(?:Prefill|Decode) o|\bO)ut of memory\. Try to lower your batch size",),
    priority=74, phase="serving", fatal=True,
    by_algorithm=(
        ("eagle", "Each verify step reserves `--speculative-num-draft-tokens` KV slots per "
                  "request: fewer draft tokens need fewer."),
        ("dflash", "Each DFLASH verify step reserves a whole block of KV slots per request: a "
                   "smaller `--speculative-dflash-block-size` needs fewer."),
        ("ddtree", "Each DDTree verify step reserves budget+1 KV slots per request: a smaller "
                   "`--speculative-ddtree-budget` needs fewer.")),
    sources=(("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1006"),
             ("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1034"),
             ("0.5.10", "sglang/srt/mem_cache/common.py:285"),
             ("0.5.10", "sglang/srt/mem_cache/common.py:411"),
             ("0.5.14", "sglang/srt/mem_cache/common.py:396"),
             ("0.5.18", "sglang/srt/mem_cache/allocation.py:218"),
             ("0.5.20", "sglang/srt/mem_cache/allocation.py:231"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:163"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:239"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:613")))

# the token-slot allocators raise one thing only, the "Prefill/Decode out of memory" RuntimeError above
# (0.4.10.post2 managers/schedule_batch.py:977, :1011, :1039 in alloc_token_slots,
# alloc_paged_token_slots_extend, alloc_paged_token_slots_decode; sglang 0.5.6 mem_cache/common.py:222;
# 0.5.23 mem_cache/allocation.py:170, :246, :620, the same three functions): a traceback cut on that
# raise line still says the slots ran out. So does one cut inside the next frame's path right under a
# call of one (the call in progress: the exception left it, and nothing it calls raises on a full
# pool: evict_from_tree_cache only evicts, the allocator's alloc returns None, sglang 0.5.6
# mem_cache/allocator.py:149-150, which the function turns into that RuntimeError); a next frame that
# shows another line of the function (its evict call) is not read so
_ALLOC_CALL = r"alloc_(?:paged_)?token_slots(?:_extend|_decode)?"
KV_EXHAUSTED_CUT = Signature(
    "kv_tokens_exhausted_cut", "slots_exhausted",
    "the KV cache ran out of token slots while serving (its allocator's error cut off)",
    KV_EXHAUSTED.advice,
    patterns=KV_EXHAUSTED.patterns,
    context=(rf"(?:,| line \d+) in {_ALLOC_CALL}\s*\n\s*raise RuntimeError\("
             rf"|=\s*(?:[\w.]+\.)?{_ALLOC_CALL}\([^\n]*\n(?:[ \t]*[~^]+[ \t]*\n)?[ \t]*File \"[^\"\n]*\s*\Z",),
    priority=73, phase="serving", fatal=True, cut_ok=True, by_algorithm=KV_EXHAUSTED.by_algorithm,
    sources=(("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:977"),
             ("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1011"),
             ("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1039"),
             ("sglang 0.5.6", "sglang/srt/mem_cache/common.py:222 (alloc_token_slots' raise)"),
             ("sglang 0.5.6", "sglang/srt/mem_cache/allocator.py:150 (alloc returns None on a full pool)"),
             ("sglang 0.5.6", "sglang/srt/speculative/eagle_info.py:114 (EAGLE's verify calls it)"),
             ("0.4.10.post2", "sglang/srt/speculative/eagle_utils.py:266"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:170"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:246"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:620")))

KV_ALLOC_FAILED = Signature(
    "kv_alloc_failed", "slots_exhausted", "the KV cache's allocator found no free slots",
    ("An allocation of KV-cache token slots failed inside SGLang's cache (mem_cache), with no CUDA "
     "allocation failing: the pool was full for what the batch needed. Lower "
     "`--max-running-requests` or `--chunked-prefill-size`, or give the pool more room with "
     "`--mem-fraction-static`; with a cache integration (LMCache, HiCache) its own prefetch "
     "reserves slots too: turn it off to confirm.",),
    patterns=(r"\b[Ff]ailed to alloc(?:ate)?\b",),
    context=(r"[/\\]mem_cache[/\\][\w/\\]+\.py\", line \d+",),
    priority=60, phase="serving", fatal=True,
    sources=(("0.5.23", "sglang/srt/mem_cache/storage/lmcache/lmcache_unified_radix_cache.py:512"),
             ("0.5.23", "sglang/srt/mem_cache/embedding_cache_controller.py:592")))

REQ_SLOTS = Signature(
    "req_slots_exhausted", "slots_exhausted", "the scheduler ran out of request slots",
    ("The request-slot pool (req_to_token) is full: lower `--max-running-requests`. If the "
     "message says a leak (slots never come back after the batch drains), lowering it only "
     "delays the crash: it is an SGLang bug, report it with this log.",),
    patterns=(r"alloc_req_slots runs out of memory", r"\b\w+ memory leak detected"),
    lines=(r"alloc_req_slots runs out of memory", r"req_to_token_pool memory leak detected"),
    priority=75, phase="serving", fatal=True,
    sources=(("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:953"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:1351"),
             ("0.5.10", "sglang/srt/mem_cache/common.py:320"),
             ("0.5.10", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:261"),
             ("0.5.14", "sglang/srt/mem_cache/common.py:434"),
             ("0.5.18", "sglang/srt/mem_cache/allocation.py:265"),
             ("0.5.20", "sglang/srt/mem_cache/allocation.py:326"),
             ("0.5.23", "sglang/srt/mem_cache/allocation.py:345"),
             ("0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py:440"),
             ("0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py:453"),
             ("0.5.10", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:282"),
             ("0.4.10.post2", "sglang/srt/managers/scheduler.py:1339")))

# the scheduler's idle self-check of its pools: raise_error_or_warn raises only the leak messages
# above (0.5.10 managers/scheduler_runtime_checker_mixin.py:266, :283 in _check_req_pool and
# check_memory; 0.5.23 scheduler_components/invariant_checker.py:408-454; raise at 0.5.10
# utils/common.py:3774), strict by default (SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE, 0.5.10
# environ.py:220): a traceback cut inside that call still says a leak was found. (round 28) So does the
# ValueError it raises, its message cut ("ValueError: poo"): raise_error_or_warn raises nothing else
# (0.5.23 utils/common.py:5066), and the checks named in the context hand it only leak reports (0.5.23
# invariant_checker.py:408-454; _report_leak's "{pool_name} memory leak detected!", :453, called with "pool"
# by scheduler.py:5296)
MEMORY_CHECK_CUT = Signature(
    "memory_check_failed", "slots_exhausted",
    "the scheduler's idle memory check found the pools' accounting wrong",
    REQ_SLOTS.advice + ("The check raises only because SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE is on "
                        "(the default): setting it to 0 turns it into a warning, so the server keeps "
                        "serving while you report the leak with this log.",),
    context=(r"(?:,| line \d+) in (?:check_memory|_check_req_pool|_report_leak|_check_kv_page_invariants"
             r"|self_check_during_idle)\s*$",
             r"(?:,| line \d+) in raise_error_or_warn\s*$|^\s*raise_error_or_warn\($"),
    patterns=(r"\b(?:memory leak detected|KV double free|KV page use-after-free)\b",
              r"^ValueError\b"),
    priority=74, phase="serving", fatal=True, cut_ok=True,
    sources=(("0.5.10", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:283"),
             ("0.5.10", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:266"),
             ("0.5.10", "sglang/srt/utils/common.py:3774"),
             ("0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py:454"),
             ("0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py:453"),
             ("0.5.23", "sglang/srt/managers/scheduler.py:5296"),
             ("0.5.23", "sglang/srt/utils/common.py:5066")))

# (round 80) the scheduler's busy check: after each batch, under SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY
# (default 0, 0.5.10 environ.py:219; 0.5.23 :501), it asserts that available + evictable + protected +
# session_held + uncached tokens add up to each pool's size: "Full Pool Mem Leak Detected! [full] total=..."
# and, on a hybrid sliding-window model, "SWA Pool Mem Leak Detected! [swa] total=..." (0.5.12
# managers/scheduler_runtime_checker_mixin.py:448-449; 0.5.23 scheduler_components/invariant_checker.py:344-345,
# the message from _check_pool_invariant, :91-94), before them one "Mem Leak Detected! total_tokens=... vs
# self.max_total_num_tokens=..." (0.5.10 scheduler_runtime_checker_mixin.py:248; 0.5.4's runtime leak check under
# SGLANG_ENABLE_RUNTIME_MEM_LEAK_CHECK, :119). The AssertionError leaves the scheduler's event loop (0.5.23
# managers/scheduler.py:2057-2058, :2133-2134): the same leak the idle check reports, found while serving
BUSY_MEMORY_CHECK = Signature(
    "busy_memory_check_failed", "slots_exhausted",
    "the scheduler's memory check during serving found the pools' accounting wrong",
    ("The pool's tokens do not add up (a leak, or a count taken twice): an SGLang bug, not a pool too "
     "small, so lowering `--max-running-requests` only delays it; report it with this log.",
     "The check runs after every batch only because SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY "
     "(SGLANG_ENABLE_RUNTIME_MEM_LEAK_CHECK before 0.5.6) is set: unset it to keep serving "
     "while the leak is reported.",),
    types=r"AssertionError", patterns=(r"\b(?:(?:Full|SWA) Pool )?Mem Leak Detected!",),
    priority=74, phase="serving", fatal=True,
    sources=(("0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py:345"),
             ("0.5.23", "sglang/srt/managers/scheduler_components/invariant_checker.py:344"),
             ("0.5.23", "sglang/srt/managers/scheduler.py:2058"),
             ("0.5.12", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:449"),
             ("0.5.10", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:248"),
             ("sglang 0.5.4", "sglang/srt/managers/scheduler_runtime_checker_mixin.py:119")))

REQ_SLOTS_OLD = Signature(
    "req_slots_none", "slots_exhausted", "the request-slot pool ran out (SGLang 0.1.x: its alloc returned None)",
    REQ_SLOTS.advice,
    types=r"AttributeError", patterns=(r"'NoneType' object has no attribute 'cpu'",),
    context=(r"req_pool_indices\w* = req_pool_indices\.cpu\(\)",), priority=74, phase="serving",
    sources=(("sglang 0.1.12", "sglang/srt/memory_pool.py:20 (ReqToTokenPool.alloc returns None)"),
             ("sglang 0.1.12", "sglang/srt/managers/router/infer_batch.py:206")))

MAMBA_SLOTS = Signature(
    "mamba_slots_exhausted", "slots_exhausted", "the hybrid model's Mamba state slots ran out while serving",
    ("A hybrid (Mamba / linear-attention) model keeps a state slot per running request (two with "
     "the extra buffer for prefix caching): they ran out, no CUDA allocation failed. Give the "
     "state pool a larger share (`--mamba-full-memory-ratio`, as the message says) or run fewer "
     "requests at once (`--max-running-requests`).",),
    patterns=(r"Not enough space for mamba (?:ping pong idx|cache)", r"Can not alloc mamba cache"),
    lines=(r"Not enough space for mamba (?:ping pong idx|cache)", r"Can not alloc mamba cache"),
    priority=76, phase="serving", fatal=True,
    by_algorithm=tuple((fam, "Speculative decoding keeps extra states per request: fewer "
                        "`--speculative-num-draft-tokens` need fewer.")
                       for fam in ("eagle", "dflash", "ddtree")),
    sources=(("0.5.10", "sglang/srt/mem_cache/memory_pool.py:556"),
             ("0.5.10", "sglang/srt/mem_cache/memory_pool.py:545"),
             ("0.5.10", "sglang/srt/mem_cache/mamba_radix_cache.py:671"),
             ("0.5.14", "sglang/srt/mem_cache/memory_pool.py:779"),
             ("0.5.18", "sglang/srt/mem_cache/unified_cache/components/mamba_component.py:492"),
             ("0.5.20", "sglang/srt/mem_cache/memory_pool.py:1598"),
             ("0.5.23", "sglang/srt/mem_cache/memory_pool.py:1621"),
             ("0.5.23", "sglang/srt/mem_cache/memory_pool.py:1762"),
             ("0.5.23", "sglang/srt/mem_cache/unified_cache/components/mamba.py:221")))

RETRACT_EXHAUSTED = Signature(
    "retract_exhausted", "slots_exhausted", "the KV cache had no room even for one request after retracting",
    ("The scheduler retracted every request it could and the KV pool still has no free token "
     "slot for the last one: the pool is too small for one request of this length. Shorten the "
     "requests (`--context-length`), or give the pool more room (`--mem-fraction-static`).",),
    patterns=(r"No space left for only one request",),
    lines=(r"No space left for only one request",),
    priority=74, phase="serving", fatal=True,
    sources=(("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1437"),
             ("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1433"),
             ("0.4.10.post2", "sglang/srt/managers/schedule_batch.py:1483")))

# (round 117) HiSparse (--enable-hisparse) keeps each running request's sparse KV in a device buffer carved from a
# fixed-size paged pool (0.5.23 mem_cache/allocator/hisparse.py:55, :160-192); the pool's alloc returns None when no
# page is free, and the coordinator raises "HiSparse alloc_device_buffer returned None" (0.5.12
# managers/hisparse_coordinator.py:322; 0.5.23 :972), "HiSparse _grow_device_buffers failed (total_grow=N)" (0.5.12
# :390; 0.5.23 :1042), "HiSparse spec failed to allocate N scratch slots." (0.5.23 :284), the allocator asserts
# "Hisparse allocation failed in alloc_device_buffer" / "... in alloc_extend" (0.5.12 mem_cache/hisparse_memory_pool.py
# :274, :336; 0.5.23 mem_cache/allocator/hisparse.py:191, :252): its slots ran out, no CUDA allocation failed. A fork's
# own buffer of the same pool says it the same way (h117008: "HiSparse prefix-extend buffer alloc failed for req R
# (alloc_size=N)"); not HiSparse's configuration checks ("HiSparse spec swap is not initialized.")
_HISPARSE_ALLOC = (r"\bHi[Ss]parse\b[^\n]{0,60}?(?:\balloc\w* failed\b|\bfailed to allocate\b"
                   r"|\balloc_device_buffer returned None|_grow_device_buffers failed\b)")
HISPARSE_EXHAUSTED = Signature(
    "hisparse_buffer_exhausted", "slots_exhausted", "HiSparse's device buffer pool ran out of slots while serving",
    ("HiSparse keeps each running request's sparse KV in a device buffer taken from a fixed pool of slots: the pool "
     "had no free slot for this one (no CUDA allocation failed). Run fewer requests at once "
     "(`--max-running-requests`) or shorter ones, or give HiSparse's device pool more room; without "
     "`--enable-hisparse` the pool is not used.",),
    patterns=(_HISPARSE_ALLOC,), priority=72, phase="serving", fatal=True,
    sources=(("0.5.12", "sglang/srt/managers/hisparse_coordinator.py:322"),
             ("0.5.12", "sglang/srt/managers/hisparse_coordinator.py:390"),
             ("0.5.12", "sglang/srt/mem_cache/hisparse_memory_pool.py:274"),
             ("0.5.23", "sglang/srt/managers/hisparse_coordinator.py:972"),
             ("0.5.23", "sglang/srt/managers/hisparse_coordinator.py:1042"),
             ("0.5.23", "sglang/srt/managers/hisparse_coordinator.py:284"),
             ("0.5.23", "sglang/srt/mem_cache/allocator/hisparse.py:191"),
             ("0.5.23", "sglang/srt/mem_cache/allocator/hisparse.py:252")))

SIGNATURES = [KV_EXHAUSTED, KV_EXHAUSTED_CUT, KV_ALLOC_FAILED, REQ_SLOTS, MEMORY_CHECK_CUT, BUSY_MEMORY_CHECK,
              REQ_SLOTS_OLD, MAMBA_SLOTS, RETRACT_EXHAUSTED, HISPARSE_EXHAUSTED]
