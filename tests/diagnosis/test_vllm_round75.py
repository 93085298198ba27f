"""What held-out round 75 of the vLLM corpus (w7501-w7525, measured once on main at 601ca24 with its logs f289b58)
showed: crashed 25/25, kind 24/25, phase 20/24. Its four misses were read from the source (docs/diagnosis.md,
"Held-out round 75"): all four were ddlab's to fix, none disputed, none left:

- w7508 (phase): the GPU worker's reports after capture, "CUDA graph pool memory: 0.14 GiB (actual), 0.2 GiB
  (estimated), ..." (0.27.1 v1/worker/gpu_worker.py:726) and "Free memory on device (23.15/23.56 GiB) on startup.
  Desired GPU memory utilization is ..." (:789), both written by compile_or_warm_up_model right after capture_model
  (:717): markers of graph_capture (diagnosis/vllm_capture_lines.py CAPTURE_STEP).
- w7515 (phase): trl's vllm-serve builds vLLM's LLM() in a child of its own FastAPI app, so uvicorn's "Started server
  process" came first; the child's traceback runs through EngineArgs.create_engine_config (0.9.1
  engine/arg_utils.py:1018), which vLLM's own server calls before it starts uvicorn (entrypoints/openai/
  api_server.py:177, :1343, :1351): the uvicorn lines are not this engine's ready, launch
  (diagnosis/vllm_frames.py CONFIG_FRAMES, read in vllm_diagnosis.py _crash_phase).
- w7517 (phase): vLLM's process tag coloured CYAN/RESET ("\\033[0;36m", "\\033[0;0m", 0.14.0
  utils/system_utils.py:25-26, :181) with its ESC, "[" and "0;" lost ("36m(EngineCore_DP0 pid=820)0m ") is peeled
  as Ray's tag (diagnosis/viewer_prefixes.py RAY_TAG); then the unquantized MoE method's notice "FlashInfer CUTLASS
  MoE is available for EP but not enabled" (0.11.0 model_executor/layers/fused_moe/layer.py:327, in
  UnquantizedFusedMoEMethod.__init__, which FusedMoE.__init__ builds, :1103) marks load_weights
  (diagnosis/vllm_model_lines.py MODEL_BUILD).
- w7523 (kind, phase): V0's scheduler warning "Input prompt (36893 tokens) is too long and exceeds limit of 1000"
  (0.6.3.post1 core/scheduler.py:895-902): that request is ignored (FINISHED_IGNORED) and the scheduler goes on, a
  request's error while serving (vllm_crashes/requests.py REQUEST_TOO_LONG), and the line is a vLLM mark
  (vllm_crashes/entrypoints.py TEXT_MARKS), so the one quoted line is read as vLLM's.

Each positive test below failed at f289b58 (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      not_unpacked, read_log, reads, said, vllm_traceback)

from ddlab.diagnosis.vllm_log import vllm_lines

_ROUND = [f"w75{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 75) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    """Crashed, kind and phase as labelled; none left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w7508: the GPU worker's reports right after capture_model -------------------------------------------------------

_POOL_LINE = ("(EngineCore pid=3) INFO 12-03 10:00:00 [gpu_worker.py:708] Available KV cache memory: 10.5 GiB\n")


def test_the_reports_after_capture_are_graph_capture():
    assert reads(read_log("w7508.log")) == (False, None, "graph_capture")


@pytest.mark.parametrize("text", [
    # 0.34.0's pool report (gpu_worker.py:1112), after the KV cache was sized
    _POOL_LINE + "(EngineCore pid=3) INFO 12-03 10:00:09 [gpu_worker.py:1112] CUDA graph pool memory: 1.21 GiB "
    "(actual), 1.1 GiB (estimated), difference: 0.11 GiB (9.1%).\n",
    # 0.18.0's summary at DEBUG (gpu_worker.py:680), one worker's, alone
    "(Worker_TP0 pid=9) DEBUG 03-01 08:00:00 [gpu_worker.py:680] Free memory on device (75.0/79.19 GiB) on startup. "
    "Desired GPU memory utilization is (0.9, 71.27 GiB). Actual usage is 15.25 GiB for consumed memory (weights + "
    "non-torch), 1.66 GiB for peak activation, and 0.5 GiB for CUDAGraph memory.\n",
], ids=["pool-0.34.0", "summary-0.18.0"])
def test_the_same_reports_in_another_form(text):
    assert reads(text)[2] == "graph_capture"


@pytest.mark.parametrize(("text", "phase"), [
    # the startup check that refuses too little free memory (0.14.0 v1/worker/utils.py:264): before any capture
    ("(EngineCore_DP0 pid=7) ValueError: Free memory on device cuda:0 (13.33/15.47 GiB) on startup is less than "
     "desired GPU memory utilization (0.9, 13.92 GiB). Decrease GPU memory utilization or reduce GPU memory used by "
     "other processes.\n", "launch"),
    # the graphs' memory profiled while the KV cache is sized (round 57), not captured
    (_POOL_LINE + "(EngineCore pid=3) INFO 12-03 10:00:01 [gpu_model_runner.py:5876] Profiling CUDA graph memory: "
     "PIECEWISE=51 (largest=512), FULL=35 (largest=256)\n", "memory_pool"),
], ids=["startup-check", "profiling"])
def test_near_misses_are_no_graph_capture(text, phase):
    assert reads(text, family="vllm")[2] == phase


# --- w7515: a traceback through the engine's config, under another app's uvicorn -------------------------------------

_UVICORN = "INFO:     Started server process [544]\nINFO:     Waiting for application startup.\n"
_CONFIG = ("vllm/engine/arg_utils.py", 1369, "create_engine_config", "model_config = self.create_model_config()")


def test_the_engines_config_under_another_apps_uvicorn_is_launch():
    assert reads(read_log("w7515.log")) == (True, "unknown", "launch")


def test_the_same_config_in_another_form():
    """0.14.0's V1 AsyncLLM building its config (v1/engine/async_llm.py:230, arg_utils.py:1369) under an app's
    uvicorn, its exception a pydantic error."""
    text = _UVICORN + vllm_traceback(
        ("vllm/v1/engine/async_llm.py", 230, "from_engine_args",
         "vllm_config = engine_args.create_engine_config(usage_context)"), _CONFIG,
        exc="pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig", head="")
    assert reads(text)[2] == "launch"


@pytest.mark.parametrize("frames", [
    # the engine being built past its config: the worker loading the weights
    (("vllm/v1/worker/gpu_worker.py", 212, "load_model", "self.model_runner.load_model()"),),
    # a traceback of the app's own, no config frame
    (("trl/scripts/vllm_serve.py", 497, "generate", "all_outputs = [connection.recv() for connection in conns]"),),
], ids=["load-model", "app-route"])
def test_near_misses_are_no_launch(frames):
    text = _UVICORN + "INFO:     Application startup complete.\n" + vllm_traceback(
        *frames, exc="RuntimeError: boom", head="")
    assert reads(text, family="vllm")[2] != "launch"


# --- w7517: vLLM's coloured tag pasted bare, and the MoE method's notice ----------------------------------------------

_NOTICE = ("FlashInfer CUTLASS MoE is available for EP but not enabled, consider setting "
           "VLLM_USE_FLASHINFER_MOE_FP16=1 to enable it.")


def test_the_moe_notice_under_mangled_tags_is_load_weights():
    assert reads(read_log("w7517.log")) == (True, "unknown", "load_weights")


def test_the_mangled_tags_are_peeled():
    text = ("0;36m(EngineCore_DP0 pid=42)0;0m INFO 01-08 09:17:04 [core.py:93] Initializing a V1 LLM engine\n"
            "36m(EngineCore_DP0 pid=42)(RayWorkerWrapper pid=77) INFO 01-08 09:17:05 [gpu_model_runner.py:2634] "
            "Starting to load model Qwen/Qwen3-30B-A3B...\n")
    assert [ln.msg for ln in vllm_lines(text)] == ["Initializing a V1 LLM engine",
                                                    "Starting to load model Qwen/Qwen3-30B-A3B..."]


def test_the_same_notice_in_another_form():
    """0.14.0's notice (unquantized_fused_moe_method.py:84), tags intact, then the engine core's failure cut."""
    text = (f"(EngineCore_DP0 pid=9) INFO 01-08 09:17:04 [unquantized_fused_moe_method.py:84] {_NOTICE}\n"
            "(EngineCore_DP0 pid=9) ERROR 01-08 09:17:07 [core.py:708] EngineCore failed to start.\n"
            + vllm_traceback(("vllm/v1/engine/core.py", 699, "run_engine_core",
                              "engine_core = EngineCoreProc(*args, **kwargs)"),
                             exc=None, head="(EngineCore_DP0 pid=9) ERROR 01-08 09:17:07 [core.py:708] "))
    assert reads(text)[2] == "load_weights"


@pytest.mark.parametrize(("text", "phase"), [
    # the notice after the KV cache was sized (a drafter's MoE layer): the phase does not go back
    (_POOL_LINE + f"(EngineCore pid=3) INFO 12-03 10:00:02 [layer.py:327] {_NOTICE}\n", "memory_pool"),
    # a colour's remnant inside a line, not before it: no tag peeled, no marker
    ("INFO 01-08 09:17:04 [core.py:1] waited 36m(EngineCore_DP0 pid=820) for the workers\n", "launch"),
], ids=["after-the-pool", "remnant-inside"])
def test_near_misses_are_no_load_weights(text, phase):
    assert reads(text, family="vllm")[2] == phase


# --- w7523: V0's scheduler ignoring one prompt too long --------------------------------------------------------------

def test_the_ignored_prompt_is_a_request_error_while_serving():
    assert said(read_log("w7523.log")) == (False, "request_error", "vllm_request_refused")
    assert reads(read_log("w7523.log"))[2] == "serving"


@pytest.mark.parametrize("text", [
    # 0.6.3.post1's block-manager form (scheduler.py:915-917), with its stamp
    "WARNING 11-18 10:00:00 scheduler.py:915] Input prompt (40000 tokens) + lookahead slots (0) is too long and "
    "exceeds the capacity of block_manager\n",
    # 0.5.0's limit form (scheduler.py:669-671) among a serving engine's lines
    "INFO 06-20 10:00:00 metrics.py:341] Avg prompt throughput: 120.5 tokens/s, Avg generation throughput: 30.1 "
    "tokens/s, Running: 1 reqs\nWARNING 06-20 10:00:05 scheduler.py:669] Input prompt (9040 tokens) is too long and "
    "exceeds limit of 4096\n",
], ids=["block-manager-0.6.3", "limit-0.5.0"])
def test_the_same_warning_in_another_form(text):
    assert said(text)[:2] == (False, "request_error")


@pytest.mark.parametrize("text", [
    # SGLang's own check truncates the input (0.5.23 srt/managers/tokenizer_manager.py:1341-1343): not vLLM's
    "[2026-01-01 10:00:00] The input (36893 tokens) is longer than the model's context length (1000 tokens). "
    "Truncating the input.\n",
    # the warning before the engine died of a CUDA OOM: the crash keeps its own kind
    "WARNING 11-18 10:00:00 scheduler.py:896] Input prompt (36893 tokens) is too long and exceeds limit of 1000\n"
    + vllm_traceback(("vllm/worker/model_runner.py", 1700, "execute_model", "hidden_states = model_executable("),
                     exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                         "capacity of 79.19 GiB of which 1.00 GiB is free.",
                     head="ERROR 11-18 10:00:01 engine.py:135] "),
], ids=["sglang-truncates", "then-a-crash"])
def test_near_misses_are_no_refused_request(text):
    assert said(text)[1:] != ("request_error", "vllm_request_refused")


# --- the rules' texts, where the releases hold them -------------------------------------------------------------------

_GPU_WORKER = "vllm/v1/worker/gpu_worker.py"
_CAPTURE = "cuda_graph_memory_bytes = self.model_runner.capture_model()"
_POOL_TEXT = '"CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), "'


@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.11.0", _GPU_WORKER, 344, _CAPTURE), ("0.11.0", _GPU_WORKER, 393, "logger.debug(msg)"),
    ("0.14.0", _GPU_WORKER, 455, _CAPTURE), ("0.14.0", _GPU_WORKER, 511, "logger.debug(msg)"),
    ("0.18.0", _GPU_WORKER, 608, _CAPTURE), ("0.18.0", _GPU_WORKER, 618, _POOL_TEXT),
    ("0.18.0", _GPU_WORKER, 680, "logger.debug(msg)"),
    ("0.27.1", _GPU_WORKER, 717, _CAPTURE), ("0.27.1", _GPU_WORKER, 727, _POOL_TEXT),
    ("0.27.1", _GPU_WORKER, 770, 'GiB) on startup. "'), ("0.27.1", _GPU_WORKER, 789, "logger.info(msg)"),
    ("0.34.0", _GPU_WORKER, 1103, _CAPTURE), ("0.34.0", _GPU_WORKER, 1113, _POOL_TEXT),
    ("0.34.0", _GPU_WORKER, 1175, "logger.info(msg)"),
    ("0.9.1", "vllm/engine/arg_utils.py", 997, "def create_engine_config("),
    ("0.9.1", "vllm/engine/arg_utils.py", 1018, "model_config = self.create_model_config()"),
    ("0.9.1", "vllm/engine/llm_engine.py", 494, "vllm_config = engine_args.create_engine_config(usage_context)"),
    ("0.9.1", "vllm/entrypoints/llm.py", 243, "self.llm_engine = LLMEngine.from_engine_args("),
    ("0.9.1", "vllm/entrypoints/openai/api_server.py", 162, "async def build_async_engine_client_from_engine_args("),
    ("0.9.1", "vllm/entrypoints/openai/api_server.py", 177, "engine_args.create_engine_config("),
    ("0.9.1", "vllm/entrypoints/openai/api_server.py", 1343, "async with build_async_engine_client(args"),
    ("0.9.1", "vllm/entrypoints/openai/api_server.py", 1351, "await serve_http("),
    ("0.34.0", "vllm/engine/arg_utils.py", 2313, "model_config = self.create_model_config()"),
    ("0.34.0", "vllm/entrypoints/launchers/api_server/entry.py", 82, "engine_args.create_engine_config("),
    ("0.14.0", "vllm/utils/system_utils.py", 25, 'CYAN = "\\033[0;36m"'),
    ("0.14.0", "vllm/utils/system_utils.py", 26, 'RESET = "\\033[0;0m"'),
    ("0.14.0", "vllm/utils/system_utils.py", 181, 'prefix = f"{CYAN}({worker_name} pid={pid}){RESET} "'),
    ("0.11.0", "vllm/model_executor/layers/fused_moe/layer.py", 291, "class UnquantizedFusedMoEMethod("),
    ("0.11.0", "vllm/model_executor/layers/fused_moe/layer.py", 328, '"FlashInfer CUTLASS MoE is available for EP"'),
    ("0.11.0", "vllm/model_executor/layers/fused_moe/layer.py", 1103, "UnquantizedFusedMoEMethod(moe)"),
    ("0.13.0", "vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py", 90,
     '"FlashInfer CUTLASS MoE is available for EP"'),
    ("0.14.0", "vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py", 85,
     '"FlashInfer CUTLASS MoE is available for EP"'),
    ("0.15.1", "vllm/model_executor/layers/fused_moe/oracle/unquantized.py", 83,
     '"FlashInfer CUTLASS MoE is available for EP"'),
    ("0.15.1", "vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py", 56,
     "self.unquantized_backend = select_unquantized_moe_backend("),
    ("0.6.3.post1", "vllm/core/scheduler.py", 896, '"Input prompt (%d tokens) is too long"'),
    ("0.6.3.post1", "vllm/core/scheduler.py", 897, '" and exceeds limit of %d"'),
    ("0.6.3.post1", "vllm/core/scheduler.py", 899, "seq.status = SequenceStatus.FINISHED_IGNORED"),
    ("0.6.3.post1", "vllm/core/scheduler.py", 902, "continue"),
    ("0.6.3.post1", "vllm/core/scheduler.py", 916, '"Input prompt (%d tokens) + lookahead slots (%d) is "'),
    ("0.6.3.post1", "vllm/engine/llm_engine.py", 1189, "for seq_group in scheduler_outputs.ignored_seq_groups:"),
    ("0.5.0", "vllm/core/scheduler.py", 670, '"Input prompt (%d tokens) is too long"'),
    ("0.6.4.post1", "vllm/core/scheduler.py", 895, '"Input prompt (%d tokens) is too long"'),
    ("0.6.4.post1", "vllm/core/scheduler.py", 915, '"Input prompt (%d tokens) + lookahead slots (%d) is "'),
    ("0.7.3", "vllm/core/scheduler.py", 1092, '"Input prompt (%d tokens) is too long"'),
    ("0.5.0", "vllm/core/scheduler.py", 684, '"Input prompt (%d tokens) is too long"'),
], ids=lambda value: str(value).replace("/", "-")[:40] if isinstance(value, str) else None)
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)


@pytest.mark.parametrize(("release", "line", "function"), [
    ("0.11.0", 393, "compile_or_warm_up_model"), ("0.14.0", 511, "compile_or_warm_up_model"),
    ("0.18.0", 680, "compile_or_warm_up_model"), ("0.27.1", 789, "compile_or_warm_up_model"),
    ("0.34.0", 1175, "compile_or_warm_up_model"), ("0.27.1", 727, "compile_or_warm_up_model"),
], ids=["summary-0.11.0", "summary-0.14.0", "summary-0.18.0", "summary-0.27.1", "summary-0.34.0", "pool-0.27.1"])
def test_the_reports_are_written_in_the_warm_up_after_capture(release, line, function):
    """The last def above each report is compile_or_warm_up_model (0.34.0: _compile_or_warm_up_model), and
    capture_model is called above it there."""
    source = VLLM_WHEELS / release / _GPU_WORKER
    if not source.exists():
        pytest.skip(not_unpacked(source))
    above = source.read_text().splitlines()[:line]
    start = max(i for i, ln in enumerate(above) if ln.lstrip().startswith("def "))
    assert above[start].strip().startswith((f"def {function}(", f"def _{function}("))  # 0.34.0: _compile_or_...
    assert any(_CAPTURE in ln for ln in above[start:])
