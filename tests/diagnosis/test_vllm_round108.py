"""vLLM held-out round 108 (5 logs, w10801-w10805), folded into work after its misses were read.

Measured once on main at ea249f9a (staged as 9d3ab180): crashed 5/5, kind 4/5, phase 2/4. Two logs missed, read
against the source of the releases their logs show (and the vllm-ascend release of that plug-in's patch):

- w10801 (kind, fixed): a vLLM source build with vllm-ascend; building the scheduler, vllm-ascend's patched
  get_kv_cache_coordinator calls vLLM's own (kept as _orig_get_kv_cache_coordinator) with max_num_batched_tokens
  (vllm_ascend 0.23.0 patch/platform/patch_kv_cache_coordinator.py:37, :490, :500), the keyword vLLM 0.23.0 declares
  (v1/core/kv_cache_coordinator.py:692) and 0.27.1 renamed max_in_flight_tokens (:854): "TypeError:
  get_kv_cache_coordinator() got an unexpected keyword argument 'max_num_batched_tokens'", raised at the plug-in's
  call. A module function's argument error names it bare, a method's names its class; round 41's rule read only the
  latter: dependency_mismatch (vllm_crashes/ascend.py ``PLUGIN_CALL_MISMATCH``).
- w10801 (phase disputed, memory_pool -> ready): the engine core sizes and allocates the KV cache, warms the model up
  and logs "init engine (profile, create kv cache, warmup model) took" in _initialize_kv_caches (0.27.1
  v1/engine/core.py:143, :356); only then does it build the scheduler (:160), whose KVCacheManager
  (v1/core/sched/scheduler.py:276) builds the coordinator (v1/core/kv_cache_manager.py:151). The pool was made; the
  step that failed is the engine core's last start-up step, ready, as round 89's w8905 (a KeyError in the same
  Scheduler(...) after capture) is disputed to.
- w10805 (phase disputed, ready -> serving): after uvicorn's "Application startup complete." the server answers a
  client's GET /v1/models with 200 (entrypoints/openai/models/api_router.py:20 (0.28.0, 0.30.0); uvicorn writes the
  access line as it sends the app's answer, uvicorn 0.54.0 protocols/http/httptools_impl.py:482): a request served.
  ddlab reads an answered GET /v1/... as serving (round 2's vg07: "A GET still marks the server as serving"), and the
  corpus's labels agree (vg20, w6417, w7708, w10202: not crashed, GET /v1/models their only request, serving).

The positive test below failed at ea249f9a (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w108{n:02d}" for n in range(1, 6)]
_PATCH = "vllm-workspace/vllm-ascend/vllm_ascend/patch/platform/patch_kv_cache_coordinator.py"


def test_the_round_is_folded_with_its_five_logs():
    assert folded_round(VLLM_MANIFEST, 108) == _ROUND


def test_two_phases_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w10801", "w10805"]
    assert VLLM_MANIFEST["w10801"]["phase_disputed"] == ["memory_pool", "ready"]
    assert VLLM_MANIFEST["w10805"]["phase_disputed"] == ["ready", "serving"]
    assert not any(VLLM_MANIFEST[log_id].get("kind_disputed") for log_id in _ROUND)


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w10801: vllm-ascend's patch calling vLLM's module function with another release's keyword ----------------------

def test_the_plugin_calling_vllms_function_with_another_releases_keyword_is_a_mismatch():
    assert said(read_log("w10801.log")) == (True, "dependency_mismatch", "vllm_ascend_call_mismatch")


def test_the_same_type_error_raised_in_vllms_own_frame_is_not_the_plugin():
    text = read_log("w10801.log").replace(_PATCH, "vllm-workspace/vllm/vllm/v1/core/kv_cache_coordinator.py")
    assert _PATCH not in text
    assert said(text)[2] != "vllm_ascend_call_mismatch"


def test_a_bare_functions_argument_error_reads_as_a_methods_does():
    call = ("vllm_ascend/patch/platform/patch_kv_cache_coordinator.py", 500, "get_kv_cache_coordinator",
            "return _orig_get_kv_cache_coordinator(**orig_kwargs)")
    text = vllm_traceback(call, exc="TypeError: get_kv_cache_coordinator() got an unexpected keyword argument "
                                    "'max_num_batched_tokens'")
    assert vllm_signature(text) == "vllm_ascend_call_mismatch"
    other = vllm_traceback(call, exc="TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'")
    assert vllm_signature(other) != "vllm_ascend_call_mismatch"


# --- w10801, w10805: disputed, ddlab's reading kept ------------------------------------------------------------------

def test_the_scheduler_built_after_the_kv_cache_reads_ready():
    assert reads(read_log("w10801.log")) == (True, "dependency_mismatch", "ready")


def test_a_served_get_of_the_models_reads_serving_and_a_health_probe_alone_does_not():
    text = read_log("w10805.log")
    assert reads(text) == (False, None, "serving")
    probe = "\n".join(line for line in text.splitlines() if '"GET /v1/models' not in line) + "\n"
    assert '"GET /health HTTP/1.1" 200' in probe
    assert reads(probe) == (False, None, "ready")


# --- the lines the rule and the disputes cite ------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.23.0", "vllm/v1/core/kv_cache_coordinator.py", "    max_num_batched_tokens: int,\n    use_eagle: bool,"),
    ("0.27.1", "vllm/v1/core/kv_cache_coordinator.py", "    max_in_flight_tokens: int,\n    use_eagle: bool,"),
    ("0.27.1", "vllm/v1/engine/core.py", "kv_cache_config = self._initialize_kv_caches(vllm_config)"),
    ("0.27.1", "vllm/v1/engine/core.py", '"init engine (profile, create kv cache, warmup model) took %.2f s",'),
    ("0.27.1", "vllm/v1/engine/core.py", "self.scheduler: SchedulerInterface = Scheduler("),
    ("0.27.1", "vllm/v1/core/sched/scheduler.py", "self.kv_cache_manager = KVCacheManager("),
    ("0.27.1", "vllm/v1/core/kv_cache_manager.py", "self.coordinator = get_kv_cache_coordinator("),
    ("0.28.0", "vllm/entrypoints/openai/models/api_router.py", '@router.get("/v1/models")'),
    ("0.30.0", "vllm/entrypoints/openai/models/api_router.py", '@router.get("/v1/models")'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize(("package", "release", "path", "text"), [
    ("vllm-ascend", "0.23.0", "vllm_ascend/patch/platform/patch_kv_cache_coordinator.py",
     "_orig_get_kv_cache_coordinator = vllm.v1.core.kv_cache_coordinator.get_kv_cache_coordinator"),
    ("vllm-ascend", "0.23.0", "vllm_ascend/patch/platform/patch_kv_cache_coordinator.py",
     "        return _orig_get_kv_cache_coordinator(**orig_kwargs)"),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/httptools_impl.py", "            if self.access_log:"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_the_libraries_own(package, release, path, text):
    assert_in_library_wheel(package, release, path, text)
