"""What held-out round 79 of the vLLM corpus (w7901-w7921, measured once on main at 1fcf800 with its logs 3ec3beb)
showed: crashed 19/21, kind 15/21, phase 12/16. Its nine misses were read from the source (docs/diagnosis.md,
"Held-out round 79"): five fixed, four disputed, none left:

- w7901 (kind): V1's encoder budget refuses a multimodal item over the tokens per step with chunked multimodal input
  off, "Chunked MM input disabled but max_tokens_per_mm_item (N) is larger than max_num_batched_tokens (M)"
  (v1/core/encoder_cache_manager.py:302 (0.18.0)): bad_argument (vllm_crashes/entrypoints.py MM_ITEM_OVER_BUDGET).
- w7904 (kind): SamplingParams' own check (sampling_params.py:351 __post_init__, :416 _verify_args (0.11.0)) raised
  in a program that drives the engine itself, no OpenAI handler's frame in the chain: bad_argument
  (vllm_crashes/loading.py SAMPLING_PARAMS_REFUSED).
- w7907 (phase): "Estimated CUDA graph memory: N GiB total" and "CUDA graph memory profiling is disabled" are written
  in determine_available_memory (v1/worker/gpu_model_runner.py:6807, v1/worker/gpu_worker.py:517, :596 (0.27.1)):
  memory_pool (diagnosis/vllm_log.py's phase table).
- w7916 (crashed, kind): CPython's extension-module list alone, its header and end cut: a line of bare module names
  joined by ", " (Python/pylifecycle.c _Py_DumpExtensionModules) is native_crash (crashes/kinds/native.py).
- w7920 (crashed, kind): an exit status 128+N of a fatal signal N ("worker exited with exit code 136", SIGFPE, RunPod's
  console) is native_crash (crashes/kinds/native.py).
- w7918, w7919 (kind disputed: arch_unsupported, unknown): the registry's "failed to be inspected" raise (registry.py:372
  (0.7.3)) is a listed architecture whose class failed to import; ddlab reads it unknown, pydantic's wrapper included
  (vllm_crashes/archs.py ARCH_INSPECT_FAILED), as the corpus labels the bare text (vu13, w5821).
- w7911 (phase disputed: memory_pool, graph_capture): the sampler warm-up OOM with graphs' private pools allocated is
  compile_or_warm_up_model's, after capture_model (v1/worker/gpu_worker.py:459, :538 (0.13.0)).
- w7915 (phase disputed: graph_capture, memory_pool): dynamo traces the model on its first call, the profiling run
  (compilation/decorators.py:239, v1/worker/gpu_worker.py:210 (0.9.2)).

Each positive test below failed at 3ec3beb (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      not_unpacked, read_log, reads, said, vllm_traceback)

_ROUND = [f"w79{n:02d}" for n in range(1, 22)]


def test_the_round_is_folded_with_its_twenty_one_logs():
    assert folded_round(VLLM_MANIFEST, 79) == _ROUND


def test_four_of_the_round_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w7911", "w7915", "w7918", "w7919"]
    assert [VLLM_MANIFEST[i].get("kind_disputed") for i in ("w7918", "w7919")] == [["arch_unsupported", "unknown"]] * 2
    assert VLLM_MANIFEST["w7911"]["phase_disputed"] == ["memory_pool", "graph_capture"]
    assert VLLM_MANIFEST["w7915"]["phase_disputed"] == ["graph_capture", "memory_pool"]


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w7901: a multimodal item over the tokens per step ----------------------------------------------------------------

def test_the_encoder_budget_refusal_is_bad_argument():
    assert said(read_log("w7901.log")) == (True, "bad_argument", "vllm_mm_item_over_budget")


def test_the_same_budget_refusal_in_another_form():
    """0.10.0's check (v1/core/encoder_cache_manager.py:243) under the engine core's logger."""
    text = vllm_traceback(
        ("vllm/v1/core/sched/scheduler.py", 136, "__init__",
         "encoder_compute_budget, encoder_cache_size = compute_encoder_budget("),
        ("vllm/v1/core/encoder_cache_manager.py", 243, "compute_encoder_budget_multimodal", "raise ValueError("),
        exc="ValueError: Chunked MM input disabled but max_tokens_per_mm_item (4096) is larger than "
            "max_num_batched_tokens (2048). Please increase max_num_batched_tokens.")
    assert said(text, family="vllm")[:2] == (True, "bad_argument")


@pytest.mark.parametrize("text", [
    "ValueError: max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (2048)\n",  # no such text
    "INFO 01-01 00:00:00 [a.py:1] Chunked MM input enabled: max_tokens_per_mm_item 2496\n",
], ids=["other-words", "enabled"])
def test_near_misses_are_no_budget_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_mm_item_over_budget"


# --- w7904: SamplingParams refusing a caller's value ------------------------------------------------------------------

def test_the_sampling_params_refusal_is_bad_argument():
    assert said(read_log("w7904.log")) == (True, "bad_argument", "vllm_sampling_params_refused")


def test_the_same_sampling_refusal_in_another_form():
    """0.13.0's check (sampling_params.py:405) in an offline LLM.generate's caller."""
    text = vllm_traceback(
        ("myjob/rollout.py", 88, "generate", "params = SamplingParams(max_tokens=budget - len(ids))"),
        ("vllm/sampling_params.py", 330, "__post_init__", "self._verify_args()"),
        ("vllm/sampling_params.py", 405, "_verify_args",
         'raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}.")'),
        exc="ValueError: max_tokens must be at least 1, got -12.", head="")
    assert said(text, family="vllm")[:2] == (True, "bad_argument")


@pytest.mark.parametrize("text", [
    # the OpenAI server building it for one request
    vllm_traceback(("vllm/entrypoints/openai/serving_chat.py", 300, "create_chat_completion",
                    "sampling_params = request.to_sampling_params("),
                   ("vllm/sampling_params.py", 405, "_verify_args", "raise ValueError("),
                   exc="ValueError: max_tokens must be at least 1, got 0.", head=""),
    # the same words raised elsewhere
    vllm_traceback(("myjob/rollout.py", 12, "_verify_args", "raise ValueError("),
                   exc="ValueError: max_tokens must be at least 1, got 0.", head=""),
], ids=["openai-handler", "other-file"])
def test_near_misses_are_no_caller_refusal(text):
    assert said(text, family="vllm")[2] != "vllm_sampling_params_refused"


# --- w7907: the graphs' memory estimate --------------------------------------------------------------------------------

def test_the_estimate_is_memory_pool():
    assert reads(read_log("w7907.log")) == (False, None, "memory_pool")


@pytest.mark.parametrize("line", [
    "(EngineCore_DP0 pid=7) INFO 01-02 10:00:00 [gpu_model_runner.py:5687] Estimated CUDA graph memory: 1.20 GiB total",
    "(Worker_TP1 pid=9) WARNING 01-02 10:00:00 [gpu_worker.py:596] CUDA graph memory profiling is disabled "
    "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, CUDA graph memory is not accounted for",
], ids=["estimate-0.18", "disabled-notice"])
def test_the_same_lines_in_another_form(line):
    assert reads(line + "\n", family="vllm")[2] == "memory_pool"


# --- w7916: CPython's extension-module list alone ---------------------------------------------------------------------

def test_the_module_list_is_a_native_crash():
    assert said(read_log("w7916.log"))[:2] == (True, "native_crash")


def test_the_same_list_in_another_form():
    """The list's middle as CPython 3.10 writes it (numpy's and torch's extensions), one physical line."""
    text = ("numpy.core._multiarray_umath, numpy.core._multiarray_tests, numpy.linalg._umath_linalg, "
            "numpy.fft._pocketfft_internal, numpy.random._common, numpy.random.bit_generator, torch._C, "
            "torch._C._fft, torch._C._linalg, yaml._yaml, charset_normalizer.md, sentencepiece._sentencepiece\n")
    assert said(text, family="vllm")[:2] == (True, "native_crash")


@pytest.mark.parametrize("line", [
    "torch, numpy, scipy, pandas, ray, vllm, sglang, triton, xformers",           # bare names, none dotted
    "from a.b import c.d, e.f, g.h, i.j, k, l, m, n",                              # an import statement
    "['vllm.v1.engine', 'vllm.v1.worker', 'vllm.config', 'vllm.utils', 'a.b', 'c.d', 'e.f', 'g.h']",  # a repr
    "INFO 01-01 00:00:00 [a.py:1] loaded: a.b, c.d, e.f, g.h, i.j, k.l, m.n, o.p",  # a record
], ids=["undotted", "import", "repr", "record"])
def test_near_misses_are_no_module_list(line):
    assert said(line + "\n", family="vllm")[1] != "native_crash"


# --- w7920: an exit status 128+N of a fatal signal ---------------------------------------------------------------------

def test_exit_code_136_is_a_native_crash():
    assert said(read_log("w7920.log"))[:2] == (True, "native_crash")


@pytest.mark.parametrize("line", [
    "2025-07-23T16:43:22Z abc123[error]worker exited with exit code 139",  # SIGSEGV
    "Process exited with exit code 134",                                    # SIGABRT
], ids=["segv", "abrt"])
def test_the_same_status_in_another_form(line):
    assert said(line + "\n", family="vllm")[:2] == (True, "native_crash")


@pytest.mark.parametrize("line", [
    "abc123[error]worker exited with exit code 137",   # SIGKILL: from outside
    "abc123[error]worker exited with exit code 1",
    "abc123[error]worker exited with exit code 1360",
], ids=["kill", "one", "longer"])
def test_near_misses_are_no_fatal_signal(line):
    assert said(line + "\n", family="vllm")[1] != "native_crash"


# --- w7918, w7919: the registry's inspection failure, unknown (kind disputed) -----------------------------------------

def test_the_wrapped_inspection_failure_reads_as_the_bare_one():
    """pydantic's "Value error, ..." wrapper is no argument refused: unknown, as vu13's bare text."""
    assert said(read_log("w7918.log"))[:3] == (True, "unknown", "vllm_arch_inspect_failed")
    assert said(read_log("vu13.log"))[:2] == (True, "unknown")


def test_the_cut_refusal_stays_unknown():
    assert reads(read_log("w7919.log"))[:2] == (True, "unknown")


def test_an_unknown_architecture_stays_arch_unsupported():
    text = vllm_traceback(("vllm/model_executor/models/registry.py", 376, "_raise_for_unsupported", "raise ValueError("),
                          exc="ValueError: Model architectures ['FooForCausalLM'] are not supported for now. "
                              "Supported architectures: dict_keys(['LlamaForCausalLM'])", head="")
    assert said(text, family="vllm")[1] == "arch_unsupported"


# --- the rules' texts, where the releases hold them -------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.18.0", "vllm/v1/core/encoder_cache_manager.py", 302, "raise ValueError("),
    ("0.18.0", "vllm/v1/core/encoder_cache_manager.py", 303, '"Chunked MM input disabled but max_tokens_per_mm_item "'),
    ("0.10.0", "vllm/v1/core/encoder_cache_manager.py", 244, '"Chunked MM input disabled but max_tokens_per_mm_item "'),
    ("0.11.1", "vllm/v1/core/encoder_cache_manager.py", 330, '"Chunked MM input disabled but max_tokens_per_mm_item "'),
    ("0.11.0", "vllm/sampling_params.py", 351, "self._verify_args()"),
    ("0.11.0", "vllm/sampling_params.py", 417, 'f"max_tokens must be at least 1, got {self.max_tokens}.")'),
    ("0.13.0", "vllm/sampling_params.py", 405, 'raise ValueError(f"max_tokens must be at least 1, got'),
    ("0.27.1", "vllm/v1/worker/gpu_model_runner.py", 6807, '"Estimated CUDA graph memory: %.2f GiB total",'),
    ("0.27.1", "vllm/v1/worker/gpu_worker.py", 517, "self.model_runner.profile_cudagraph_memory()"),
    ("0.27.1", "vllm/v1/worker/gpu_worker.py", 596, '"CUDA graph memory profiling is disabled "'),
    ("0.7.3", "vllm/model_executor/models/registry.py", 372, "raise ValueError("),
    ("0.7.3", "vllm/model_executor/models/registry.py", 374, '"to be inspected. Please check the logs for more details.")'),
    ("0.7.3", "vllm/model_executor/models/registry.py", 420, "return self._raise_for_unsupported(architectures)"),
    ("0.7.3", "vllm/model_executor/models/registry.py", 460, "model_cls, _ = self.inspect_model_cls(architectures)"),
    ("0.13.0", "vllm/v1/worker/gpu_model_runner.py", 4308, '"CUDA out of memory occurred when warming up sampler with "'),
    ("0.13.0", "vllm/v1/worker/gpu_model_runner.py", 4481, "output = self._dummy_sampler_run(last_hidden_states)"),
    ("0.13.0", "vllm/v1/worker/gpu_worker.py", 459, "cuda_graph_memory_bytes = self.model_runner.capture_model()"),
    ("0.13.0", "vllm/v1/worker/gpu_worker.py", 538, "self.model_runner._dummy_sampler_run(hidden_states=last_hidden_states)"),
    ("0.9.2", "vllm/compilation/decorators.py", 239, "output = self.compiled_callable(*args, **kwargs)"),
    ("0.9.2", "vllm/v1/worker/gpu_worker.py", 210, "self.model_runner.profile_run()"),
], ids=lambda value: str(value).replace("/", "-")[:40] if isinstance(value, str) else None)
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)

