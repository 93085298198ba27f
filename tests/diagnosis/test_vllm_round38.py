"""What held-out round 38 of the vLLM corpus (w3801-w3809, measured once at c6af5e8 with its logs 6217a9a)
showed: one miss (crashed 9/9, kind 8/9, phase 3/3), read again after the fold.

- w3803 (fixed): a V1 start (vLLM 0.19.1) of the hybrid Qwen3.6-27B with LMCache's KV connector
  (``--kv-transfer-config``), which turns vLLM's hybrid KV cache manager off (0.19.1 config/vllm.py:1227-1243,
  its warning at :1232-1233); sizing the KV cache, ``get_kv_cache_groups`` tries to turn the model's mixed
  KV cache specs into one type and cannot ("ValueError: Hybrid KV cache manager is disabled but failed to
  convert the KV cache specs to one unified type.", 0.19.1 v1/core/kv_cache_utils.py:1216-1219; 0.9.1 :920,
  0.10.2 :1090, 0.23.0 :1425-1428; from 0.27.1 "Failed to promote local KV cache specs to one unified type.",
  0.30.0 kv_cache_utils.py:1880, 0.34.0 kv_cache_planning.py:854): a configuration this model cannot take,
  ``bad_argument`` at memory_pool (vllm_crashes/signatures.py, HYBRID_KV_UNIFY).

The tests pin the reading: the corpus log, the text written from the source in another form (the newer
release's words, an engine core's traceback), and near misses that must not read the same way (the
manager's warning alone in a healthy start; that warning before another refusal). The source checks skip
where the wheels are not unpacked (CI).
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_UTILS = "vllm/v1/core/kv_cache_utils.py"
_WARNING = ("(EngineCore_DP0 pid=386) WARNING 04-29 18:34:40 [kv_cache_utils.py:1172] Hybrid KV cache manager is "
            "disabled for this hybrid model, This means we do not enable any optimizations for saving KV cache "
            "memory (e.g., dropping the KV cache outside the sliding window). The compute of layers like sliding "
            "window is still saved.\n")

test_each_rules_text_is_vllms_own = wheel_text_test([
    # w3803: the refusal, release by release, and what turns the manager off
    ("0.9.1", _UTILS, 'raise ValueError("Hybrid KV cache manager is disabled but failed to "'),
    ("0.10.2", _UTILS, '"convert the KV cache specs to one unified type.")'),
    ("0.19.1", _UTILS, '"Hybrid KV cache manager is disabled but failed to "'),
    ("0.19.1", _UTILS, "if vllm_config.scheduler_config.disable_hybrid_kv_cache_manager:\n"
                       "        unify_hybrid_kv_cache_specs(kv_cache_spec)"),
    ("0.19.1", "vllm/config/vllm.py", '"Turning off hybrid kv cache manager because "'),
    ("0.19.1", "vllm/config/vllm.py", "# NOTE(Kuntai): turn HMA off for connector unless specifically enabled."),
    ("0.19.1", "vllm/v1/worker/gpu_model_runner.py",
     "kv_cache_groups = get_kv_cache_groups(self.vllm_config, kv_cache_spec)"),
    ("0.23.0", _UTILS, '"convert the KV cache specs to one unified type."'),
    ("0.30.0", _UTILS, 'raise ValueError("Failed to promote local KV cache specs to one unified type.")'),
    ("0.34.0", "vllm/v1/core/kv_cache_planning.py",
     'raise ValueError("Failed to promote local KV cache specs to one unified type.")'),
    # the near miss: the warning that the manager is off, logged before the specs are unified
    ("0.19.1", _UTILS, '"Hybrid KV cache manager is disabled for this hybrid model, "'),
])

_ENGINE_FRAMES = (
    ("vllm/v1/engine/core.py", 145, "__init__", "kv_cache_config = self._initialize_kv_caches(vllm_config)"),
    ("vllm/v1/engine/core.py", 319, "_initialize_kv_caches", "kv_cache_configs = get_kv_cache_configs("),
    (_UTILS, 2687, "get_kv_cache_configs",
     "global_kv_cache_groups = get_kv_cache_groups(vllm_config, merged_kv_cache_specs)"),
    (_UTILS, 2267, "get_kv_cache_groups", "unify_hybrid_kv_cache_specs(kv_cache_spec)"),
    (_UTILS, 1940, "unify_hybrid_kv_cache_specs",
     "kv_cache_spec.update(_promote_local_kv_cache_specs(kv_cache_spec))"),
    (_UTILS, 1880, "_promote_local_kv_cache_specs",
     'raise ValueError("Failed to promote local KV cache specs to one unified type.")'),
)
_ENGINE_HEAD = "(EngineCore pid=412) ERROR 12-03 10:00:00 [core.py:1100] "


def test_the_hybrid_managers_refusal_is_bad_argument_at_memory_pool():
    """w3803 (the worker's traceback, then the engine core's RuntimeError naming it)."""
    log = read_log("w3803.log")
    assert reads(log) == (True, "bad_argument", "memory_pool")
    assert vllm_signature(log) == "vllm_hybrid_kv_unify"


def test_the_newer_releases_words_in_an_engine_cores_traceback_read_the_same():
    """0.30.0's text ("Failed to promote local KV cache specs ...") at the end of an engine core's traceback
    from _initialize_kv_caches, after the manager's warning; and the older text as one stamped line alone."""
    newer = _WARNING + vllm_traceback(
        *_ENGINE_FRAMES, exc="ValueError: Failed to promote local KV cache specs to one unified type.",
        head=_ENGINE_HEAD)
    assert reads(newer) == (True, "bad_argument", "memory_pool")
    assert vllm_signature(newer) == "vllm_hybrid_kv_unify"
    bare = ("(APIServer pid=45) (EngineCore_DP0 pid=386) ERROR 04-29 18:34:40 [core.py:1100] ValueError: Hybrid "
            "KV cache manager is disabled but failed to convert the KV cache specs to one unified type.\n")
    assert reads(bare)[:2] == (True, "bad_argument")


def test_the_managers_warning_alone_or_before_another_refusal_is_not_this():
    """The warning is logged whenever the manager is off for a hybrid model, also where its specs unify (a
    sliding-window model then starts): no crash alone; before the KV cache's own memory check it stays that
    check's kv_pool_oom."""
    healthy = (_WARNING + "(EngineCore_DP0 pid=386) INFO 04-29 18:34:41 [kv_cache_utils.py:1291] GPU KV cache "
               "size: 317,136 tokens\n(APIServer pid=45) INFO 04-29 18:35:02 [api_server.py:1520] Starting vLLM "
               "API server 0 on http://0.0.0.0:8000\n(APIServer pid=45) INFO:     Application startup complete.\n")
    assert reads(healthy)[:2] == (False, None)
    other = _WARNING + ("(EngineCore_DP0 pid=386) ERROR 04-29 18:34:41 [core.py:1100] ValueError: No available "
                        "memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
                        "the engine.\n")
    assert reads(other)[:2] == (True, "kv_pool_oom")
    assert vllm_signature(other) != "vllm_hybrid_kv_unify"


def test_the_rounds_other_logs_read_as_labelled():
    """w3801 (no memory for the KV cache on the CPU backend), w3802 (--max-model-len above the model's), and
    the six healthy runs (w3805 ends inside a progress bar; w3809 stops on an asked-for abort with a 0 s
    timeout)."""
    assert reads(read_log("w3801.log")) == (True, "kv_pool_oom", "memory_pool")
    assert reads(read_log("w3802.log")) == (True, "bad_argument", "launch")
    for name in ("w3804.log", "w3805.log", "w3806.log", "w3807.log", "w3808.log", "w3809.log"):
        assert reads(read_log(name))[:2] == (False, None), name
