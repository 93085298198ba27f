"""Held-out round 52 (issue 24): the hierarchical cache refusing a model's KV pool, read by a rule from SGLang's source.

Round 52 (h52001-h52005; excerpts of issue threads and a pull request) was measured once on main at 70261c4 (with
the round's logs, 1f5ca9e: crashed 5/5, kind 4/5, phase 4/4); docs/diagnosis.md, "Held-out round 52", explains the
one miss. h52001 is a DeepSeek V4 launch with --enable-hierarchical-cache whose scheduler builds HiRadixCache after
the pool (0.5.12 managers/scheduler.py:918-930) and whose constructor raises "HiRadixCache only supports MHA, MLA,
and NSA (DSA) models" for a pool class it cannot mirror in host memory (0.5.12 mem_cache/hiradix_cache.py:98-100):
an option this model cannot take, bad_argument, hicache_pool_unsupported (crashes/kinds/caches.py), with advice
that names the flag to drop. A rule's test reads the corpus log, a text written from the same source in another
form (0.5.10's wording and frames) and near misses that must not read the same way; the positive tests fail on
70261c4. A text cited from a wheel is checked there where it is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, real, reads, said

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 52}

_HIRADIX = "sglang/srt/mem_cache/hiradix_cache.py"
_SCHEDULER = "sglang/srt/managers/scheduler.py"
_SITE = "/usr/local/lib/python3.12/dist-packages/"


def test_round52_is_folded_into_work_with_no_label_disputed():
    assert sorted(_ROUND) == [f"h5200{i}" for i in range(1, 6)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("kind_disputed") or log.get("phase_disputed") for log in _ROUND.values())


# --- h52001: HiRadixCache refusing the model's KV pool --------------------------------------------------------------

def test_the_hierarchical_caches_refusal_reads_as_labelled():
    assert_reads_as_labelled("h52001", "hicache_pool_unsupported")
    found = real("h52001")
    assert "drop `--enable-hierarchical-cache`" in found.suggestion
    assert "takes MHA, MLA, and NSA (DSA) models only" in found.suggestion


def _hicache_launch(exc: str) -> str:
    """0.5.10's chain: "Scheduler hit an exception" (scheduler.py:3620) over Scheduler.__init__ (:391), the cache
    setup's HiRadixCache (:791) and the constructor's raise (hiradix_cache.py:91)."""
    at = _SITE + _SCHEDULER
    return ("[2026-01-10 08:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{at}", line 3600, in run_scheduler_process\n    scheduler = Scheduler(\n'
            f'  File "{at}", line 391, in __init__\n    self.init_cache_with_memory_pool()\n'
            f'  File "{at}", line 791, in init_cache_with_memory_pool\n    self.tree_cache = HiRadixCache(\n'
            f'  File "{_SITE + _HIRADIX}", line 91, in __init__\n'
            '    raise ValueError(f"HiRadixCache only supports MHA and MLA yet")\n'
            f"{exc}\n"
            "[2026-01-10 08:00:00] Received sigquit from a child process. It usually means the child failed.\n")


def test_the_older_wording_reads_the_same():
    text = _hicache_launch("ValueError: HiRadixCache only supports MHA and MLA yet")
    assert said(text) == (True, "bad_argument", "hicache_pool_unsupported")
    assert reads(text) == (True, "bad_argument", "memory_pool")


def test_the_newest_wording_on_a_line_of_its_own_reads_the_same():
    # 0.5.19's text (hiradix_cache.py:121), the exception line alone after a stamped header
    text = ("[2026-08-01 09:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
            "ValueError: HiRadixCache only supports MHA, MLA, DSA, and MSA models\n")
    assert said(text)[1:] == ("bad_argument", "hicache_pool_unsupported")


def test_the_hierarchical_caches_config_checks_are_not_this_refusal():
    # the same module's other raises check the storage backend's extra config (0.5.12 hiradix_cache.py:567, :593-612)
    text = _hicache_launch("ValueError: prefetch_threshold must be int, got str")
    assert said(text)[2] != "hicache_pool_unsupported"
    # radix_cache_cpp's assert on kv cache events is another option pair, not the model's pool (0.5.12 :47)
    text = _hicache_launch("AssertionError: HiRadixCache does not support kv cache events yet")
    assert said(text)[2] != "hicache_pool_unsupported"


def test_hiradix_cache_refuses_the_pool_only_under_the_flag():
    assert_at_line("sglang", "0.5.12", _HIRADIX, 98, "raise ValueError(")
    assert_at_line("sglang", "0.5.12", _HIRADIX, 99, '"HiRadixCache only supports MHA, MLA, and NSA (DSA) models"')
    assert_at_line("sglang", "0.5.12", _SCHEDULER, 4025, "scheduler = Scheduler(")
    assert_at_line("sglang", "0.5.12", _SCHEDULER, 444, "self.init_cache_with_memory_pool()")
    assert_at_line("sglang", "0.5.12", _SCHEDULER, 918, "elif self.enable_hierarchical_cache:")
    assert_at_line("sglang", "0.5.12", _SCHEDULER, 930, "self.tree_cache = HiRadixCache(")
    assert_at_line("sglang", "0.5.10", _SCHEDULER, 779, "elif self.enable_hierarchical_cache:")
    assert_at_line("sglang", "0.5.10", _SCHEDULER, 791, "self.tree_cache = HiRadixCache(")
    assert_at_line("sglang", "0.5.10", _HIRADIX, 91, 'raise ValueError(f"HiRadixCache only supports MHA and MLA yet")')
    assert_at_line("sglang", "0.5.1", _HIRADIX, 69, 'raise ValueError(f"HiRadixCache only supports MHA and MLA yet")')
    assert_at_line("sglang", "0.5.13", _HIRADIX, 102, 'raise ValueError("HiRadixCache only supports MHA, MLA, and DSA models")')
    assert_at_line("sglang", "0.5.19", _HIRADIX, 121,
                   'raise ValueError("HiRadixCache only supports MHA, MLA, DSA, and MSA models")')
