"""What held-out round 76 of the vLLM corpus (w7601-w7621, measured once on main at 6357a08 with its logs 1f41fbe)
showed: crashed 17/21, kind 10/21, phase 14/17. Its twelve misses were read from the source (docs/diagnosis.md,
"Held-out round 76"): ten fixed, w7613's crash fixed and its phase left, w7606 left, none of the round disputed:

- w7617, w7618, w7620 (crashed, kind): the tool-call parsers catch what parsing one response raised, log it and pass
  the response on ("Error in extracting tool call from response.", 0.11.0 entrypoints/openai/tool_parsers/
  hermes_tool_parser.py:157-161; "Error trying to handle streaming tool call.", :454-455, ``return None``), and the
  chat handler that cannot tell whether to extract answers plain ("Error in chat_completion_full_generator - cannot
  determine ...", 0.8.0 serving_chat.py:812-816): one response's request error (vllm_crashes/requests.py
  TOOL_PARSER_ERROR); the parsers' records are vLLM marks (entrypoints.py TEXT_MARKS: w7618's plugin prints them bare).
- w7601 (kind): vLLM's DeepGEMM stub "DeepGEMM backend is not available or outdated" (0.13.0 utils/deep_gemm.py:85,
  _missing): deep_gemm not installed or too old, dependency_mismatch (vllm_crashes/installs.py DEEP_GEMM_MISSING).
- w7602 (kind): the CUDA runtime's cudaErrorUnsupportedPtxVersion, "the provided PTX was compiled with an unsupported
  toolchain": kernels built by a newer toolkit than the driver runs, dependency_mismatch (installs.py PTX_TOOLCHAIN).
- w7603 (kind): "No valid attention backend found for cuda with ... Reasons: {...}" (0.13.0 platforms/cuda.py:338)
  naming a backend refused for the compute capability alone: unsupported_gpu (installs.py ATTENTION_GPU).
- w7604 (kind): a paste that starts on the last code line, ``AsyncEngineArgs(**engine_args)``, over Python 3.9's
  "TypeError: __init__() got an unexpected keyword argument": a caller of another vLLM release, dependency_mismatch
  (diagnosis/vllm_records.py with_first_code_line, installs.py ENGINE_ARGS_KEYWORD).
- w7605 (kind): the shm queue's bare ``raise TimeoutError`` (its frame line cut; vLLM's only bare raise of it,
  0.15.1 shm_broadcast.py:463, :536, :640) chained under the engine core's step: hang (engine.py QUEUE_TIMEOUT).
- w7615 (kind): torch's HIP hints ("For debugging consider passing AMD_SERIALIZE_KERNEL=3", "Compile with
  `TORCH_USE_HIP_DSA` ...", hipify's mapping, torch 2.13.0 torch/utils/hipify/cuda_to_hip_mappings.py:3423) right
  above a cut traceback: the CUDA hints' cut-message reading (library.py HIP_ERROR_CUT, explains=True).
- w7616 (phase): a traceback through from_engine_args / _init_engine is the engine being built (0.5.4
  engine/async_llm_engine.py:471, :381): no serving phase for a running-only fault there (vllm_frames.py
  ENGINE_BUILT_FRAMES).
- w7613 (crashed): 0.8's "MulitprocExecutor got fatal signal from worker processes, shutting down" (0.8.0
  v1/executor/multiproc_executor.py:49, core_client.py:269): an echo of a worker's death (engine.py ECHO_LINES); its
  phase (load_weights) left: its DEBUG lines mark no step alone.
- w7606 (crashed, kind) left: the shm queue's stall notice with requests in flight at 0 tokens/s is the corpus's hang.

vg04 (round 6) now reads unknown, its "Killed" vLLM's own kill_process_tree after the same fatal-signal records
(0.8.0 v1/engine/core_client.py:271, utils.py:1925): its kind disputed (host_oom, unknown).

Each positive test below failed at 1f41fbe (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, not_unpacked, read_log, reads, said, vllm_traceback)

_ROUND = [f"w76{n:02d}" for n in range(1, 22)]


def test_the_round_is_folded_with_its_twenty_one_logs():
    assert folded_round(VLLM_MANIFEST, 76) == _ROUND


def test_none_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled_but_for_the_two_left():
    """w7606's crashed and kind and w7613's phase left (known_misses.json)."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {"w7606": ["crashed", "kind"], "w7613": ["phase"]}


# --- w7617, w7618, w7620: a tool-call parser failing on one response -------------------------------------------------

@pytest.mark.parametrize("log_id", ["w7617", "w7618", "w7620"])
def test_the_tool_parsers_records_are_one_requests_error(log_id):
    assert said(read_log(f"{log_id}.log")) == (False, "request_error", "vllm_tool_parser_error")
    assert reads(read_log(f"{log_id}.log"))[2] == "serving"


_HERMES_HEAD = "ERROR 11-18 10:00:00 hermes_tool_parser.py:337] "


@pytest.mark.parametrize("text", [
    # 0.6.3.post1's streamed form (hermes_tool_parser.py:337), its traceback under the record's stamp
    _HERMES_HEAD + "Error trying to handle streaming tool call.\n" + vllm_traceback(
        ("vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", 240, "extract_tool_calls_streaming",
         "current_tool_call = partial_json_parser.loads(tool_call_portion or '{}', flags)"),
        exc="partial_json_parser.core.exceptions.MalformedJSON: Malformed node or string on line 1",
        head=_HERMES_HEAD),
    # 0.13.0's chat handler (serving_chat.py:1539) among answered requests
    "(APIServer pid=1) ERROR 01-10 10:00:00 [serving_chat.py:1539] Error in chat_completion_full_generator - cannot "
    "determine if tools should be extracted. Returning a standard chat completion.\n"
    '(APIServer pid=1) INFO:     10.0.0.1:4000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n',
    # a granite parser's record with the exception in its message (granite_tool_parser.py:84 (0.11.0))
    "(APIServer pid=1) ERROR 10-09 09:39:54 [granite_tool_parser.py:84] Error in extracting tool call from response "
    "Expecting value: line 1 column 1 (char 0)\n",
], ids=["streaming-0.6.3", "chat-handler-0.13.0", "granite-0.11.0"])
def test_the_same_records_in_another_form(text):
    assert said(text)[:2] == (False, "request_error")


@pytest.mark.parametrize("text", [
    # the parser's record, then the engine core dying of a CUDA OOM: the crash keeps its own kind
    "(APIServer pid=1) ERROR 10-09 09:39:54 [hermes_tool_parser.py:157] Error in extracting tool call from response.\n"
    + vllm_traceback(("vllm/v1/worker/gpu_model_runner.py", 2000, "execute_model", "model_output = self.model("),
                     exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                         "capacity of 79.19 GiB of which 1.00 GiB is free.",
                     head="(EngineCore_DP0 pid=2) ERROR 10-09 09:40:00 [core.py:708] "),
    # an app's own function of that name, no tool parser's file: its crash
    vllm_traceback(("myapp/agent.py", 40, "extract_tool_calls", "return json.loads(text)"),
                   exc="json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
                   head="(APIServer pid=1) ERROR 10-09 09:39:54 [api_server.py:100] "),
], ids=["then-a-crash", "app-function"])
def test_near_misses_are_no_tool_parser_error(text):
    assert said(text, family="vllm")[2] != "vllm_tool_parser_error"
    assert said(text, family="vllm")[0] is True


# --- w7601: vLLM's DeepGEMM stub ------------------------------------------------------------------------------------

def test_the_deep_gemm_stub_is_a_dependency_mismatch():
    assert said(read_log("w7601.log")) == (True, "dependency_mismatch", "vllm_deep_gemm_missing")


def test_the_same_stub_in_another_form():
    """0.14.0's stub (utils/deep_gemm.py:107) under an FP8 GEMM's frames, an engine core's."""
    text = vllm_traceback(
        ("vllm/utils/deep_gemm.py", 142, "fp8_gemm_nt", "return _missing(*args, **kwargs)"),
        ("vllm/utils/deep_gemm.py", 107, "_missing", "raise RuntimeError("),
        exc="RuntimeError: DeepGEMM backend is not available or outdated. Please install or update the `deep_gemm` "
            "to a newer version to enable FP8 kernels.")
    assert said(text)[:2] == (True, "dependency_mismatch")


def test_a_deep_gemm_build_failure_is_no_missing_package():
    """DeepGEMM's JIT asserting its cuobjdump run (a kernel build): kernel_compile, not the stub."""
    text = vllm_traceback(("deep_gemm/jit/compiler.py", 200, "build", "runtime = Runtime(path)"),
                          exc="RuntimeError: Assertion error (csrc/jit/kernel_runtime.hpp:48): exit_code == 0")
    assert said(text, family="vllm")[2] != "vllm_deep_gemm_missing"


# --- w7602: PTX of a newer toolkit than the driver --------------------------------------------------------------------

def test_the_ptx_toolchain_error_is_a_dependency_mismatch():
    assert said(read_log("w7602.log")) == (True, "dependency_mismatch", "vllm_ptx_toolchain")


def test_the_same_cuda_error_in_another_form():
    """torch's own RuntimeError in a worker's traceback (0.11.1 form), the runtime's hint below it."""
    text = vllm_traceback(
        ("vllm/v1/worker/gpu_model_runner.py", 3000, "_dummy_run", "outputs = self.model("),
        exc="torch.AcceleratorError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
        head="(Worker_TP0 pid=5) ERROR 10-01 10:00:00 [multiproc_executor.py:671] ")
    assert said(text)[:2] == (True, "dependency_mismatch")


@pytest.mark.parametrize("text", [
    "(Worker_TP0 pid=5) ERROR 10-01 10:00:00 [multiproc_executor.py:671] RuntimeError: CUDA error: no kernel image is "
    "available for execution on the device\n",
    "(Worker_TP0 pid=5) ERROR 10-01 10:00:00 [multiproc_executor.py:671] RuntimeError: PTX .version 8.7 does not "
    "support .target sm_120a\n",
], ids=["no-kernel-image", "ptx-target"])
def test_near_misses_are_no_ptx_toolchain(text):
    assert said(text, family="vllm")[2] != "vllm_ptx_toolchain"


# --- w7603: no attention backend for this GPU ------------------------------------------------------------------------

def test_the_selector_refusing_the_gpu_is_unsupported_gpu():
    assert said(read_log("w7603.log")) == (True, "unsupported_gpu", "vllm_attention_gpu_unsupported")


_SELECTOR = ("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=64, "
             "dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, use_mla=False, has_sink=True, "
             "use_sparse=False, use_mm_prefix=False, attn_type=decoder). Reasons: ")


def test_the_same_refusal_in_another_form():
    """0.14.0 (platforms/cuda.py:338), a sink model on a GPU whose one fitting backend is refused for it."""
    text = vllm_traceback(
        ("vllm/platforms/cuda.py", 338, "get_attn_backend_cls", "raise ValueError("),
        exc=_SELECTOR + "{FLASH_ATTN: [compute capability not supported], FLASHINFER: [sink setting not supported], "
                        "TRITON_ATTN: [sink setting not supported]}.")
    assert said(text)[:2] == (True, "unsupported_gpu")


def test_a_refusal_with_no_gpu_only_reason_is_no_unsupported_gpu():
    """Every backend refused for the model's own settings (head size, sinks): nothing another GPU would change."""
    text = vllm_traceback(
        ("vllm/platforms/cuda.py", 338, "get_attn_backend_cls", "raise ValueError("),
        exc=_SELECTOR + "{FLASH_ATTN: [head_size not supported, compute capability not supported], "
                        "TRITON_ATTN: [sink setting not supported]}.")
    assert said(text, family="vllm")[1] != "unsupported_gpu"


# --- w7604: a caller's engine arguments of another release, Python 3.9's wording ------------------------------------

def test_the_callers_engine_args_keyword_is_a_dependency_mismatch():
    assert said(read_log("w7604.log")) == (True, "dependency_mismatch", "vllm_engine_args_keyword")
    assert reads(read_log("w7604.log"))[2] == "launch"


def test_the_same_call_in_another_form():
    """The offline LLM built from a dict, the same TypeError (0.5.0 has no limit_mm_per_prompt)."""
    text = ("        llm = LLM(**llm_kwargs)\n"
            "TypeError: __init__() got an unexpected keyword argument 'limit_mm_per_prompt'\n")
    assert said(text, family="vllm")[:2] == (True, "dependency_mismatch")


@pytest.mark.parametrize("text", [
    # the caller's own class, no engine argument
    "    model = RewardModel(**model_kwargs)\nTypeError: __init__() got an unexpected keyword argument 'use_cache'\n",
    # the same lines, but a line between the code and the exception: no traceback's last frame
    "    self.model = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**engine_args))\nINFO: retrying\n"
    "TypeError: __init__() got an unexpected keyword argument 'limit_mm_per_prompt'\n",
], ids=["another-class", "not-adjacent"])
def test_near_misses_are_no_engine_args_keyword(text):
    assert said(text, family="vllm")[2] != "vllm_engine_args_keyword"


# --- w7605: the shm queue's bare TimeoutError under the engine core's step -------------------------------------------

def test_the_bare_timeout_under_the_step_is_a_hang():
    assert said(read_log("w7605.log")) == (True, "hang", "vllm_queue_timeout")


def test_the_same_chain_in_another_form():
    """0.34.0's engine core (v1/engine/core.py:1743, run_busy_loop), its batch queue's step, cut as w7605 is."""
    head = "(EngineCore_DP0 pid=7) ERROR 03-01 10:00:00 [core.py:1760] "
    text = (f"{head}    raise TimeoutError\n{head}TimeoutError\n{head}\n"
            f"{head}The above exception was the direct cause of the following exception:\n{head}\n"
            + vllm_traceback(("vllm/v1/engine/core.py", 1743, "run_engine_core", "engine_core.run_busy_loop()"),
                             ("vllm/v1/engine/core.py", 1780, "run_busy_loop", "self._process_engine_step()"),
                             ("vllm/v1/engine/core.py", 1810, "_process_engine_step",
                              "outputs, model_executed = self.step_fn()"), exc=None, head=head))
    assert said(text)[:2] == (True, "hang")


def test_a_bare_timeout_under_an_apps_frames_is_no_queue_timeout():
    text = ("    raise TimeoutError\nTimeoutError\n\nThe above exception was the direct cause of the following "
            "exception:\n\n" + vllm_traceback(("myapp/client.py", 10, "fetch", "return pool.get()"), exc=None,
                                              head=""))
    assert said(text, family="vllm")[2] != "vllm_queue_timeout"


# --- w7615: torch's HIP hints above a cut traceback ------------------------------------------------------------------

def test_the_hip_hints_above_a_cut_traceback_are_a_cut_hip_error():
    assert said(read_log("w7615.log")) == (True, "cuda_illegal_access", "vllm_hip_error_cut")


def test_the_same_hints_in_another_form():
    """The hints' first line too, a V0 worker's traceback cut under them."""
    head = "(VllmWorkerProcess pid=9) ERROR 11-29 09:36:15 [multiproc_worker_utils.py:233] "
    text = (f"{head}HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            f"below might be incorrect.\n{head}For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
            + vllm_traceback(("vllm/worker/model_runner.py", 1700, "execute_model",
                              "hidden_states = model_executable("), exc=None, head=head))
    assert said(text)[:2] == (True, "cuda_illegal_access")


def test_the_hints_under_their_message_decide_nothing():
    """V0's engine logging the HIP error's message with its hints, no traceback after (w5310's form): unknown."""
    head = "ERROR 11-29 09:36:15 engine.py:366] "
    text = (f"{head}HIP error: invalid argument\n{head}HIP kernel errors might be asynchronously reported at some "
            f"other API call, so the stacktrace below might be incorrect.\n{head}For debugging consider passing "
            f"AMD_SERIALIZE_KERNEL=3\n{head}Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n")
    assert said(text)[2] != "vllm_hip_error_cut"


# --- w7616: a fault inside the engine's construction -----------------------------------------------------------------

def test_the_nccl_error_while_the_engine_is_built_is_launch():
    assert reads(read_log("w7616.log")) == (True, "nccl", "launch")


def _nccl_under(*frames) -> str:
    return ("ERROR 09-01 10:00:00 worker_base.py:464] RuntimeError: NCCL error: unhandled system error (run with "
            "NCCL_DEBUG=INFO for details)\nProcess Process-1:\n" + vllm_traceback(*frames, exc=None, head=""))


def test_the_same_construction_in_another_form():
    """0.6.2's LLMEngine built by the offline LLM (engine/llm_engine.py from_engine_args)."""
    text = _nccl_under(("vllm/entrypoints/llm.py", 214, "__init__", "self.llm_engine = LLMEngine.from_engine_args("),
                       ("vllm/engine/llm_engine.py", 661, "from_engine_args", "engine = cls("))
    assert reads(text)[2] == "launch"


def test_a_running_fault_under_a_step_stays_serving():
    text = _nccl_under(("vllm/engine/async_llm_engine.py", 800, "engine_step", "request_outputs = await self.engine."
                                                                                  "step_async(virtual_engine)"))
    assert reads(text, family="vllm")[2] == "serving"


# --- w7613: 0.8's fatal-signal records -------------------------------------------------------------------------------

def test_the_fatal_signal_records_are_a_crash():
    assert said(read_log("w7613.log")) == (True, "unknown", "vllm_engine_dead")


def test_the_clients_record_alone_is_a_crash():
    """The engine core client's own record (0.8.0 v1/engine/core_client.py:269)."""
    text = ("CRITICAL 04-07 19:40:15 [core_client.py:269] Got fatal signal from worker processes, shutting down. "
            "See stack trace above for root cause issue.\n")
    assert said(text, family="vllm")[:2] == (True, "unknown")


def test_a_signal_notice_of_another_kind_is_no_crash():
    text = "INFO 04-07 19:40:15 [launcher.py:74] Got signal SIGTERM, shutting down gracefully.\n"
    assert said(text, family="vllm")[2] != "vllm_engine_dead"


def test_w7613s_phase_is_left():
    assert KNOWN_MISSES["vllm-real"]["w7613"] == ["phase"]


# --- w7606 left, vg04 disputed ---------------------------------------------------------------------------------------

def test_w7606s_stall_notice_keeps_the_corpus_reading():
    """ddlab's hang: requests in flight at 0 tokens/s, then the queue's stall notice (15 work logs so labelled)."""
    assert said(read_log("w7606.log")) == (True, "hang", "vllm_shm_stall")
    assert KNOWN_MISSES["vllm-real"]["w7606"] == ["crashed", "kind"]


def test_vg04s_kill_is_vllms_own():
    assert said(read_log("vg04.log"))[:2] == (True, "unknown")
    assert VLLM_MANIFEST["vg04"]["kind_disputed"] == ["host_oom", "unknown"]


# --- the rules' texts, where the releases hold them -------------------------------------------------------------------

_HERMES = "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py"
_CHAT = "vllm/entrypoints/openai/serving_chat.py"


@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.11.0", _HERMES, 157, "logger.exception("), ("0.11.0", _HERMES, 158, "Error in extracting tool call"),
    ("0.11.0", _HERMES, 454, '"Error trying to handle streaming tool call."'),
    ("0.11.0", _HERMES, 455, "return None"),
    ("0.6.3.post1", _HERMES, 108, "Error in extracting tool call from response."),
    ("0.6.3.post1", _HERMES, 337, '"Error trying to handle streaming tool call."'),
    ("0.11.0", "vllm/entrypoints/openai/tool_parsers/granite_tool_parser.py", 84, "Error in extracting tool call"),
    ("0.8.0", _CHAT, 813, '"Error in chat_completion_full_generator - cannot determine"'),
    ("0.8.5.post1", _CHAT, 1045, '"Error in chat_completion_full_generator - cannot determine"'),
    ("0.13.0", _CHAT, 1540, '"Error in chat_completion_full_generator - cannot determine"'),
    ("0.13.0", "vllm/utils/deep_gemm.py", 85, "raise RuntimeError("),
    ("0.13.0", "vllm/utils/deep_gemm.py", 86, '"DeepGEMM backend is not available or outdated. Please install or "'),
    ("0.13.0", "vllm/utils/deep_gemm.py", 299, "return _missing()"),
    ("0.13.0", "vllm/utils/deep_gemm.py", 123, "if not has_deep_gemm():"),
    ("0.14.0", "vllm/utils/deep_gemm.py", 108, '"DeepGEMM backend is not available or outdated. Please install or "'),
    ("0.13.0", "vllm/v1/executor/multiproc_executor.py", 342, "raise RuntimeError("),
    ("0.13.0", "vllm/platforms/cuda.py", 339, 'f"No valid attention backend found for {cls.device_name} "'),
    ("0.14.0", "vllm/platforms/cuda.py", 339, 'f"No valid attention backend found for {cls.device_name} "'),
    ("0.14.0", "vllm/v1/attention/backend.py", 250, 'invalid_reasons.append("compute capability not supported")'),
    ("0.13.0", "vllm/attention/backends/abstract.py", 244,
     'invalid_reasons.append("compute capability not supported")'),
    ("0.5.0", "vllm/engine/arg_utils.py", 779, "class AsyncEngineArgs(EngineArgs):"),
    ("0.6.2", "vllm/engine/arg_utils.py", 134, "limit_mm_per_prompt"),
    ("0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py", 463, "raise TimeoutError"),
    ("0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py", 536, "raise TimeoutError"),
    ("0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py", 640, "raise TimeoutError"),
    ("0.15.1", "vllm/v1/executor/multiproc_executor.py", 355, 'raise TimeoutError(f"RPC call to {method} timed out.")'),
    ("0.5.1", "vllm/engine/async_llm_engine.py", 360, "self.engine = self._init_engine(*args, **kwargs)"),
    ("0.5.1", "vllm/engine/async_llm_engine.py", 374, "def from_engine_args("),
    ("0.5.4", "vllm/engine/async_llm_engine.py", 453, "def from_engine_args("),
    ("0.5.4", "vllm/engine/async_llm_engine.py", 471, "engine = cls("),
    ("0.5.4", "vllm/engine/async_llm_engine.py", 381, "self.engine = self._init_engine(*args, **kwargs)"),
    ("0.6.2", "vllm/engine/async_llm_engine.py", 557, "def from_engine_args("),
    ("0.8.0", "vllm/v1/executor/multiproc_executor.py", 49,
     '"MulitprocExecutor got fatal signal from worker processes, "'),
    ("0.8.0", "vllm/v1/engine/core_client.py", 269, 'logger.fatal("Got fatal signal from worker processes, shutting "'),
    ("0.8.0", "vllm/v1/engine/core_client.py", 271, "kill_process_tree(os.getpid())"),
    ("0.8.0", "vllm/utils.py", 1925, "os.kill(pid, signal.SIGKILL)"),
    ("0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py", 542, "logger.info("),
], ids=lambda value: str(value).replace("/", "-")[:40] if isinstance(value, str) else None)
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)
