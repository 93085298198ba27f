"""What held-out round 36 of the vLLM corpus (w3601-w3613, measured once at 4027080 with its logs 09c2dac)
showed: four misses, read again after the fold.

- w3610 (fixed): a V1 start (vLLM 0.23.0, V2 model runner, FlashInfer's top-k/top-p sampler) whose warm-up
  after graph capture asks FlashInfer to JIT-build its sampling module; FlashInfer finds no CUDA toolkit
  ("RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist",
  flashinfer-python 0.6.11.post2 flashinfer/jit/cpp_ext.py:61-63): a kernel build that cannot run,
  ``kernel_compile`` (device_crashes/compilers.py, FLASHINFER_NO_TOOLKIT in KERNEL_COMPILE).
- w3608 (fixed): vLLM 0.7.3 has no Gemma 4, falls back to its Transformers backend, which cannot shard a
  model without a tensor-parallel plan over TP=2 ("Trying to run tensor parallelization but the model does
  not support it yet!", 0.7.3 model_executor/models/transformers.py:185-189; later releases' words too):
  ``arch_unsupported`` at load_weights (vllm_crashes/loading.py, FALLBACK_NO_TP).
- w3605 (kind disputed, as w3506): a start stopped by SIGTERM (the API server's own handler, vllm 0.21.0
  entrypoints/openai/api_server.py:576-581) while it read the Hugging Face Hub's answer: not crashed.
- w3611 (phase disputed, kind left a miss): the shell's bare "Killed" of an idle server 53 minutes after
  "Application startup complete." and three answered requests: ddlab's serving is the corpus's phase for a
  death after uvicorn's start; its host_oom (the documented reading of a bare kill) stays, a miss.

The tests pin each reading: the corpus log, a text written from the source in another form, and a near
miss that must not read the same way. The source checks skip where the wheels are not unpacked (CI).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_at_line, library_text_test, read_log, reads, vllm_signature,
                      vllm_traceback, wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_TF = "vllm/model_executor/models/transformers.py"
_TF_BASE = "vllm/model_executor/models/transformers/base.py"
_API = "vllm/entrypoints/openai/api_server.py"

test_each_rules_text_is_vllms_own = wheel_text_test([
    # w3608: the fallback, and the Transformers backend's refusal of TP without a plan, release by release
    ("0.7.3", "vllm/model_executor/model_loader/utils.py",
     '"%s has no vLLM implementation, falling back to Transformers "'),
    ("0.7.3", _TF, '"Trying to run tensor parallelization but the model does not "'),
    ("0.10.0", _TF, 'f"{type(self.model)} does not support tensor parallel yet!")'),
    ("0.20.0", _TF_BASE, 'f"{type(self.model)} does not support tensor parallel. {tip}"'),
    # ... and from 0.27.1 only a warning (the near miss)
    ("0.27.1", _TF_BASE, '"%s does not define a tensor parallel plan. The Transformers modeling "'),
    # w3610: the V2 runner's warm-up after capture samples once, through FlashInfer's sampler
    ("0.23.0", "vllm/v1/worker/gpu_worker.py",
     "warmup_kernels(self.model_runner, self.execute_model, self.sample_tokens)"),
    ("0.23.0", "vllm/v1/sample/ops/topk_topp_sampler.py",
     "next_token_ids = flashinfer.sampling.top_k_top_p_sampling_from_logits("),
    # w3605: the API server's SIGTERM handler; vLLM's own kills are SIGKILLs of its children
    ("0.21.0", _API, "# Interrupt server on sigterm while initializing"),
    ("0.21.0", _API, 'raise KeyboardInterrupt("terminated")'),
    ("0.21.0", "vllm/utils/system_utils.py", "os.kill(child.pid, signal.SIGKILL)"),
    # w3611: vLLM 0.10.1.1 kills only its child processes (v1/utils.py shutdown -> kill_process_tree)
    ("0.10.1.1", "vllm/v1/utils.py", "kill_process_tree(pid)"),
])

_CPP_EXT = "flashinfer/jit/cpp_ext.py"
test_each_rules_library_text_is_in_its_wheel = library_text_test([
    ("flashinfer-python", "0.6.11.post2", _CPP_EXT,
     'f"Could not find nvcc and default {cuda_home=} doesn\'t exist"'),
])


@pytest.mark.parametrize(("line", "text"), [
    (61, "raise RuntimeError("),
    (62, 'f"Could not find nvcc and default {cuda_home=} doesn\'t exist"'),
    (247, "cuda_home = get_cuda_path()"),
])
def test_the_cited_flashinfer_lines(line, text):
    """w3610's frames are flashinfer-python 0.6.11.post2's: cpp_ext.py:61 raise, :247 the call."""
    assert_at_line("flashinfer-python", "0.6.11.post2", _CPP_EXT, line, text)


@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.7.3", _TF, 187, "raise ValueError("),
    ("0.7.3", _TF, 188, '"Trying to run tensor parallelization but the model does not "'),
    ("0.21.0", _API, 579, 'raise KeyboardInterrupt("terminated")'),
    ("0.21.0", _API, 733, "uvloop.run(run_server(args))"),
])
def test_the_cited_vllm_lines(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(f"{source} not unpacked here")
    assert text in source.read_text().splitlines()[line - 1], (source, line)


# --- w3610: FlashInfer's JIT build finds no CUDA toolkit -----------------------------------------

_NO_TOOLKIT = "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist"


def test_flashinfer_finding_no_toolkit_is_a_kernel_build_that_failed():
    """w3610: the sampler's warm-up after graph capture dies in FlashInfer's get_cuda_path."""
    log = read_log("w3610.log")
    assert reads(log) == (True, "kernel_compile", "graph_capture")
    assert vllm_signature(log) == "vllm_kernel_compile"


def test_the_same_refusal_in_another_module_and_another_form():
    """Another form: FlashInfer's attention module built at load (another path for cuda_home, set by no
    variable), as vLLM's engine core logs it; and the message alone, read as SGLang's (the base
    signature)."""
    text = vllm_traceback(
        ("vllm/v1/attention/backends/flashinfer.py", 600, "build", "self._workspace = plan(...)"),
        ("flashinfer/jit/core.py", 316, "build_and_load", "self.build(verbose, need_lock=False)"),
        ("flashinfer/jit/cpp_ext.py", 247, "generate_ninja_build_for_op", "cuda_home = get_cuda_path()"),
        ("flashinfer/jit/cpp_ext.py", 61, "get_cuda_path", "raise RuntimeError("),
        exc="RuntimeError: Could not find nvcc and default cuda_home='/opt/cuda' doesn't exist")
    assert vllm_signature(text) == "vllm_kernel_compile"
    assert reads(text, family="vllm")[:2] == (True, "kernel_compile")
    assert reads(_NO_TOOLKIT + "\n", family="sglang")[:2] == (True, "kernel_compile")


def test_the_toolkit_missing_where_vllm_survives_it_is_no_crash():
    """The near miss: w3610's own WARNING traceback (vLLM's DeepGEMM import asserting on cuda_home) is
    survived: the same start up to graph capture, then the server comes up."""
    log = read_log("w3610.log")
    start = log.split("EngineCore failed to start.")[0].rsplit("\n", 1)[0] + "\n"
    assert "_find_cuda_home" in start and "Graph capturing finished" in start
    up = start + "(APIServer pid=1551523) INFO:     Application startup complete.\r\n"
    assert reads(up)[:2] == (False, None)


def test_the_advice_names_the_builds_own_step_in_vllms_words():
    """(lead, after the round) vLLM's kernel_compile kept SGLang's specific step out: FlashInfer's missing
    toolkit (w3610) and a failed link (vy09) now name theirs; DeepGEMM's JIT assert names SGLang's switch
    (SGLANG_ENABLE_JIT_DEEPGEMM), so under vLLM it still gets the generic advice alone."""
    assert "flashinfer-jit-cache" in diagnose(read_log("w3610.log")).suggestion
    assert "libcuda.so" in diagnose(read_log("vy09.log")).suggestion
    deepgemm = vllm_traceback(
        ("vllm/model_executor/layers/quantization/utils/fp8_utils.py", 200, "apply", "return deep_gemm(...)"),
        exc="RuntimeError: Assertion error (/root/.cache/deep_gemm/jit/kernel_runtime.hpp:50): exit_code == 0")
    found = diagnose(deepgemm, family="vllm")
    assert found.kind == "kernel_compile" and "SGLANG" not in found.suggestion, found.suggestion


# --- w3608: the Transformers fallback cannot shard the architecture --------------------------------

def test_the_transformers_fallback_refusing_tensor_parallel_is_arch_unsupported():
    """w3608: vLLM 0.7.3's fallback for Gemma4ForConditionalGeneration, TP=2, raises in load_model."""
    log = read_log("w3608.log")
    assert reads(log) == (True, "arch_unsupported", "load_weights")
    assert vllm_signature(log) == "vllm_transformers_fallback_no_tp"


@pytest.mark.parametrize("exc", [
    # 0.8.5.post1-0.10.0 (transformers.py:235-236, :547-548)
    "ValueError: <class 'transformers.models.gemma3.modeling_gemma3.Gemma3Model'> does not support "
    "tensor parallel yet!",
    # 0.11.1-0.20.0 (transformers/base.py:266-272, :478-484), the tip for a hub model
    "ValueError: <class 'transformers_modules.org.model.modeling_x.XModel'> does not support tensor "
    "parallel. Please open a discussion at https://huggingface.co/org/model/discussions/new to request "
    "support for this feature. See https://docs.vllm.ai/en/latest/models/supported_models.html"
    "#writing-custom-models for instructions on how to add support yourself.",
], ids=["0.10.0", "0.20.0"])
def test_later_releases_words_read_the_same(exc):
    text = vllm_traceback(
        ("vllm/model_executor/model_loader/utils.py", 64, "initialize_model",
         "return model_class(vllm_config=vllm_config, prefix=prefix)"),
        ("vllm/model_executor/models/transformers/base.py", 483, "recursive_replace", "raise ValueError("),
        exc=exc)
    assert vllm_signature(text) == "vllm_transformers_fallback_no_tp"
    assert reads(text, family="vllm")[:2] == (True, "arch_unsupported")


def test_the_fallback_that_only_warns_is_no_crash():
    """The near miss: from 0.27.1 the backend warns that the model defines no tensor-parallel plan and
    shards what it can (transformers/base.py:440-451); a start that goes on to serve did not crash."""
    text = "\n".join([
        "INFO 12-03 10:00:00 [utils.py:100] non-default args: {'model': 'org/model', 'tensor_parallel_size': 2}",
        "(Worker_TP0 pid=10) WARNING 12-03 10:00:05 [base.py:444] <class 'transformers.models.x.modeling_x."
        "XModel'> does not define a tensor parallel plan. The Transformers modeling backend will shard the "
        "model the best it can during graph fusion and replicate the rest. This may be suboptimal or fail "
        "if the model does not fuse cleanly.",
        "(APIServer pid=1) INFO:     Application startup complete.", ""])
    assert reads(text, family="vllm")[:2] == (False, None)


# --- w3605: a start stopped by SIGTERM while it waited on the Hub -----------------------------------

def test_a_sigterm_while_reading_the_hub_is_a_stop():
    """w3605: vLLM 0.21.0's SIGTERM handler raises inside an SSL read of the hub's answer: not crashed
    (the label's kind disputed, as w3506's)."""
    log = read_log("w3605.log")
    assert reads(log) == (False, None, "launch")
    entry = _MANIFEST["w3605"]
    assert entry["kind_disputed"] == ["unknown", None] and "api_server.py:576-581" in entry["second_look"]


def test_the_hub_refusing_in_the_same_start_is_still_a_crash():
    """The near miss: the same start where the hub lookup fails (transformers' own words) is a crash,
    model_not_found at launch."""
    lines = read_log("w3605.log").split("\n")
    cut = next(n for n, line in enumerate(lines) if "hf_api.py" in line)
    failed = "\n".join(lines[:cut] + [
        "(APIServer pid=8410) OSError: We couldn't connect to 'https://huggingface.co' to load the files, "
        "and couldn't find them in the cached files.\r", ""])
    assert reads(failed) == (True, "model_not_found", "launch")


# --- w3611: a bare kill of an idle server ---------------------------------------------------------

def test_a_bare_kill_after_the_server_came_up_reads_serving():
    """w3611: the shell's "Killed" after "Application startup complete." and three answered requests:
    host_oom (ddlab's documented reading of a bare kill; the label's unknown left a miss), serving (the
    label's ready disputed)."""
    log = read_log("w3611.log")
    assert reads(log) == (True, "host_oom", "serving")
    entry = _MANIFEST["w3611"]
    assert entry["phase_disputed"] == ["ready", "serving"] and "kind_disputed" not in entry
