"""Held-out round 76 (issue 24): SGLang Diffusion's sampling params, two allocators' OOM texts, the router's probes.

Round 76 (h76001-h76008; excerpts of SGLang, Ascend/sglang and sglang-jax threads) was measured once on main at
25048cb (with the round's logs, 5241279): crashed 5/8, kind 5/8, phase 4/6. docs/diagnosis.md, "Held-out round 76",
tells the round. All four misses were ddlab's:

- h76001, SGLang Diffusion's `sglang generate` printing one request's "Sampling params:" record, cut: Req.log writes
  it as the pipeline's forward begins on a request (0.5.7 multimodal_gen/runtime/pipelines_core/schedule_batch.py:248,
  :265; composed_pipeline_base.py:330), then "Running pipeline stages: [...]" (:334). Both lines mark a paste begun
  mid-serving (diagnosis/serving_lines.py), as a client's cache flush does.
- h76004, torch_memory_saver's "[torch_memory_saver.cpp] CUresult error: 2 (out of memory) ... func=cu_mem_create":
  its CURESULT_CHECK prints that and calls exit(1) (torch_memory_saver 0.0.9rc2, fzyzcjy/torch_memory_saver 1f01bd8
  csrc/utils.h:28-40, :194): cuda_oom (crashes/kinds/memory.py). verl's "Async request to resume_memory_occupation
  timed out (attempt N)" (volcengine/verl 3122631 verl/workers/rollout/sglang_rollout/http_server_engine.py:704) is
  a client's request to a server that is up: serving.
- h76005, torch_npu's "NPU out of memory. NPUWorkspaceAllocator tried to allocate ..." alone: logged and raised as
  OutOfMemoryError (Ascend/pytorch 9e73e70 torch_npu/csrc/core/npu/NPUWorkspaceAllocator.cpp:499-508): cuda_oom.
- h76006, sgl-router's DEBUG "Worker URL health check failed: Connection failed ..." while its gRPC workers start:
  its wait_for_healthy_workers loop retries each probe and fails only at its timeout ("Workers failed to become
  healthy after Ns"). health_check now takes only SGLang's own capitalised "Health check failed" (0.5.10
  entrypoints/http_server.py:542), not the router's lower-case probes (crashes/kinds/runtime.py).
Each positive test here fails on 5241279.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_in_library_wheel, \
    assert_reads_as_labelled, disputed, folded_round, reads, said

_IDS = folded_round(REAL_MANIFEST, 76)


def test_round76_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h760{n:02d}" for n in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h76001", None),
    ("h76004", "cuda_oom"),
    ("h76005", "cuda_oom"),
    ("h76006", None),
], ids=lambda v: str(v))
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h76001: SGLang Diffusion's record of one request's sampling params --------------------------------------------

_RECORD = ("                       width: 1024\n                      height: 1024\n                  num_frames: 1\n"
           "                      prompt: a cat\n")


# the same lines in other forms, written from the source: 0.5.7's default format (logging_utils.py:31-34, "LEVEL
# mm-dd hh:mm:ss [file: line] msg") at schedule_batch.py:265, the record bare, the stages line alone (:334)
@pytest.mark.parametrize("text", [
    "INFO 01-09 15:15:49 [schedule_batch.py: 265] Sampling params:\n" + _RECORD,
    "Sampling params:\n" + _RECORD,
    "[01-09 15:15:49] Running pipeline stages: ['input_validation_stage', 'text_encoding_stage', "
    "'denoising_stage', 'decoding_stage']\n",
], ids=["default-format", "bare", "stages"])
def test_a_diffusion_requests_sampling_params_are_serving(text):
    assert reads(text) == (False, None, "serving")


# near misses: "Sampling params:" with a value after it (no diffusion record), vLLM's request line with its
# SamplingParams, the words in prose
@pytest.mark.parametrize("text", [
    "Sampling params: temperature=0.7, top_p=0.9\n",
    "INFO 12-03 10:00:00 [logger.py:39] Received request cmpl-1: prompt: 'hi', params: SamplingParams(n=1)\n",
    "which sampling params does sglang generate print for the pipeline stages?\n",
], ids=["valued", "vllm-request", "prose"])
def test_other_sampling_params_texts_are_not_serving(text):
    assert reads(text)[2] != "serving"


# --- h76004: torch_memory_saver's cuMemCreate out of memory; verl's request timing out -------------------------

_TMS = ("[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h func=cu_mem_create "
        "line=194\n")


# the same text in other forms, written from the source (utils.h:28-40: "CUresult error: " << code << " (" << text
# << ") " << " file=" ...): the line bare, under Ray's actor prefix with its "[repeated Nx across cluster]", another
# build's line number
@pytest.mark.parametrize("text", [
    _TMS,
    "(SGLangHttpServer pid=250976) " + _TMS.rstrip("\n") + " [repeated 7x across cluster]\n",
    _TMS.replace("line=194", "line=201"),
], ids=["bare", "ray-repeated", "other-line"])
def test_torch_memory_savers_cumemcreate_oom_is_cuda_oom(text):
    assert said(text) == (True, "cuda_oom", "cuda_oom")


# near misses: 0.0.9's later form, which returns cudaErrorMemoryAllocation for torch's allocator to retry (5d48a5f
# utils.h:195-197: "may not be an issue"), another CUresult error (not out of memory), the words in prose
@pytest.mark.parametrize("text", [
    "[torch_memory_saver.cpp] cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an issue e.g. torch allocator will "
    "free cache and retry)\n",
    "[torch_memory_saver.cpp] CUresult error: 1 (invalid argument)  file=csrc/utils.h func=cu_mem_set_access line=209\n",
    "does torch_memory_saver print CUresult error 2 when cu_mem_create runs short?\n",
], ids=["retried", "other-error", "prose"])
def test_other_torch_memory_saver_texts_are_not_cuda_oom(text):
    assert said(text)[1:] != ("cuda_oom", "cuda_oom")


def test_verls_request_timing_out_after_the_oom_is_serving():
    text = _TMS + "(WorkerDict pid=209740) WARNING:2025-11-28 16:00:45,396:Async request to resume_memory_occupation " \
                  "timed out (attempt 1)\n"
    assert reads(text) == (True, "cuda_oom", "serving")


def test_verls_connection_error_is_no_serving():
    # http_server_engine.py:706: the server not (yet) accepting connections
    text = "WARNING:2025-11-28 16:00:45,396:Connection error for resume_memory_occupation (attempt 1)\n"
    assert reads(text)[2] != "serving"


# --- h76005: torch_npu's workspace allocator out of memory ---------------------------------------------------------

_NPU_WS = ("NPU out of memory. NPUWorkspaceAllocator tried to allocate 180.00 MiB(NPU 1; 60.96 GiB total capacity; "
           "86.81 MiB free). If you want to reduce memory usage, take a try to set the environment variable "
           "TASK_QUEUE_ENABLE=1.\n")


# the same text in other forms, written from the source (NPUWorkspaceAllocator.cpp:499-506): the message bare, under
# another build's c10 prefix (compiler_depend.ts), a GiB-sized request on another rank
@pytest.mark.parametrize("text", [
    _NPU_WS,
    "[rank0]:[E107 02:38:42.269390205 compiler_depend.ts:444] " + _NPU_WS,
    "[rank7]:[E615 22:00:29.320155898 compiler_depend.ts:444] " + _NPU_WS.replace("180.00 MiB(NPU 1",
                                                                                  "1.89 GiB(NPU 7"),
], ids=["bare", "compiler-depend", "gib"])
def test_the_npu_workspace_allocators_oom_is_cuda_oom(text):
    assert said(text) == (True, "cuda_oom", "cuda_oom")


# near misses: the allocator's INFO line on emptying its cache (NPUWorkspaceAllocator.cpp, empty_cache), the
# environment variable in prose, the allocator named in a question
@pytest.mark.parametrize("text", [
    "[INFO] PTA(1692557,python):2026-01-07-02:38:40.123.456 [NPUWorkspaceAllocator.cpp:300]"
    "NPUWorkspaceAllocator empty_cache in main_thread.\n",
    "setting TASK_QUEUE_ENABLE=1 did not reduce memory usage\n",
    "how much memory does NPUWorkspaceAllocator try to allocate per op?\n",
], ids=["empty-cache", "env-prose", "question"])
def test_other_npu_workspace_texts_are_not_cuda_oom(text):
    assert said(text)[1] != "cuda_oom"


# --- h76006: sgl-router's retried health probes --------------------------------------------------------------------

_ROUTER = "2025-10-07 23:31:33 DEBUG sglang_router_rs::core::worker_manager: src/core/worker_manager.rs:1031: "


# the router's probe failing in other forms: another worker over HTTP, sgl-router 0.2.2's HTTP probe (src/core/
# worker.rs:616) and its status answer (:820): a probe retried, no crash
@pytest.mark.parametrize("text", [
    _ROUTER + "Worker http://10.0.0.2:30000 health check failed: Connection failed for worker "
              "http://10.0.0.2:30000: error sending request\n",
    "2025-12-01 10:00:00 WARN sglang_router_rs::core::worker: src/core/worker.rs:616: HTTP health check failed for "
    "http://10.0.0.2:30000: reqwest::Error { kind: Request }\n",
    "2025-12-01 10:00:00 WARN sglang_router_rs::core::worker: src/core/worker.rs:820: Worker http://10.0.0.2:30000 "
    "health check failed with status: 503 Service Unavailable\n",
], ids=["http-worker", "http-probe", "status"])
def test_the_routers_failed_probes_are_no_crash(text):
    assert said(text) == (False, None, None)


def test_sglangs_own_health_check_failure_stays_health_check():
    text = ("[2025-10-07 23:31:33] Health check failed. Server couldn't get a response from detokenizer for last "
            "20 seconds. tic start time: 23:31:13. last_heartbeat time: 23:30:50\n")
    assert said(text) == (True, "health_check", "health_check")


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.5.7", "sglang/multimodal_gen/runtime/pipelines_core/schedule_batch.py", 248, 'debug_str = f"""Sampling params:'),
    ("0.5.7", "sglang/multimodal_gen/runtime/pipelines_core/schedule_batch.py", 265, "logger.info(debug_str)"),
    ("0.5.7", "sglang/multimodal_gen/runtime/pipelines_core/composed_pipeline_base.py", 330,
     "batch.log(server_args=server_args)"),
    ("0.5.7", "sglang/multimodal_gen/runtime/pipelines_core/composed_pipeline_base.py", 334,
     '"Running pipeline stages: %s",'),
    ("0.5.13", "sglang/multimodal_gen/runtime/pipelines_core/schedule_batch.py", 382, 'debug_str = f"""Sampling params:'),
    ("0.5.10", "sglang/srt/entrypoints/http_server.py", 542, 'f"Health check failed. Server couldn\'t get a response'),
], ids=lambda v: str(v))
def test_each_cited_sglang_line_is_in_its_wheel(release, path, line, text):
    assert_at_line("sglang", release, path, line, text)


@pytest.mark.parametrize(("path", "text"), [
    ("src/core/worker.rs", '"HTTP health check failed for {}: {err:?}",'),
    ("src/core/worker.rs", '"Worker {} health check failed with status: {}",'),
], ids=["http-probe", "status"])
def test_the_routers_probe_texts_are_its_own(path, text):
    assert_in_library_wheel("sglang-router", "0.2.2", path, text)
