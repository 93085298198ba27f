"""What held-out round 52 of the vLLM corpus (w5201-w5222, measured once at 641442f with its logs 27e3805)
showed: crashed 22/22, kind 19/22, phase 12/12. Its three misses were read from the source (docs/diagnosis.md,
"Held-out round 52"):

- w5212: a V0 worker's traceback cut on ``self.model_runner.capture_model(self.gpu_cache)`` at torch's
  ``decorate_context`` frame. V0's capture_model is ``@torch.inference_mode()`` (0.5.1
  worker/model_runner.py:909-910, 0.6.4.post1 :1385-1386), and the decorator's frame only enters the mode and
  calls it (torch 2.13.0 utils/_contextlib.py:121-124): the traceback is cut inside the capture. Fixed: a capture
  frame of ``vllm_capture_cut`` (vllm_crashes/graphs.py ``_CAPTURE_FRAMES``), cuda_graph_capture, as the cut
  captures va11, ve10 and w5119 read.
- w5213: Ray's "Error executing method 'initialize_cache'" over a traceback cut at initialize_cache's
  ``self._init_cache_engine()``. initialize_cache checks the cache's size first and allocates it after (0.8.0
  worker/worker.py:291, :307-308, the release the frames fit; 0.6.4.post1 :268, :276-277): past the check the
  wrapper's line says only which method raised. Fixed: ``vllm_initialize_cache_failed`` yields there to the cut
  traceback's own reading, else ``vllm_worker_method_failed`` (diagnosis/vllm_diagnosis.py ``_PAST_SIZE_CHECK``):
  unknown.
- w5201: V0's MQLLMEngine dying on "AssertionError('Logits Processors are not supported in multi-step
  decoding')", the multi-step runner's assert while serving (0.6.2 worker/multi_step_model_runner.py:686-688):
  a feature combination refused, no argument refused; ddlab's one feature-combination kind is speculative
  decoding's. Kind disputed (bad_argument labelled, unknown read).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, not_unpacked, read_log, reads, vllm_signature, vllm_traceback,
                      wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w52{n:02d}" for n in range(1, 23)]


def test_the_round_is_folded_with_its_twenty_two_logs():
    round52 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 52)
    assert round52 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round52)


def test_each_log_reads_as_labelled_but_w5201():
    """Crashed and kind as labelled, the phase where the log shows it (w5212, w5213 since their rules); w5201
    reads unknown, its label disputed."""
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        if log_id == "w5201":
            assert log["kind_disputed"] == ["bad_argument", "unknown"] and "multi_step_model_runner.py" in \
                log["second_look"]
            assert got == (True, "unknown", "serving")
            continue
        kind = got[1] if got[0] or got[1] == "request_error" else None
        assert got[0] == log["crashed"], (log_id, got)
        assert kind == log["kind"], (log_id, got)
        if log["phase_in_log"]:
            assert got[2] == log["phase"], (log_id, got)


# --- w5212: cut on V0's call of capture_model, at torch's decorator ------------------------------------------

_MP = "(VllmWorkerProcess pid=77) ERROR 11-02 10:00:00 multiproc_worker_utils.py:233] "
_TORCH_DECORATOR = ("torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)")


def test_a_cut_at_capture_models_decorator_is_the_capture():
    """The corpus log: _run_worker_process -> initialize_cache -> _warm_up_model ->
    ``self.model_runner.capture_model(self.gpu_cache)`` -> torch's decorate_context, cut there."""
    text = read_log("w5212.log")
    assert reads(text) == (True, "cuda_graph_capture", "graph_capture")
    assert vllm_signature(text) == "vllm_capture_cut"


def test_the_same_cut_in_another_form():
    """The engine's own runner (no worker prefix, a newer torch's line), the call spelt with kv_caches."""
    text = vllm_traceback(
        ("vllm/engine/llm_engine.py", 470, "_initialize_kv_caches",
         "self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
        ("vllm/worker/worker.py", 277, "_warm_up_model", "self.model_runner.capture_model(kv_caches)"),
        ("torch/utils/_contextlib.py", 124, "decorate_context", "return func(*args, **kwargs)"),
        exc=None, head="ERROR 11-02 10:00:00 engine.py:366] ")
    assert reads(text)[:2] == (True, "cuda_graph_capture")


def test_the_decorator_below_another_call_is_not_the_capture():
    """profile_run is ``@torch.inference_mode()`` too: a cut at its decorator is no capture; nor is a whole
    out-of-memory below the capture call (cuda_oom)."""
    text = vllm_traceback(
        ("vllm/worker/worker.py", 180, "determine_num_available_blocks", "self.model_runner.profile_run()"),
        _TORCH_DECORATOR, exc=None, head=_MP)
    assert reads(text)[1] != "cuda_graph_capture"
    oom = vllm_traceback(
        ("vllm/worker/worker.py", 230, "_warm_up_model", "self.model_runner.capture_model(self.gpu_cache)"),
        _TORCH_DECORATOR, exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
        head=_MP)
    assert reads(oom)[1] == "cuda_oom"


# --- w5213: initialize_cache's frame past its size check ----------------------------------------------------

_RAY = "(RayWorkerWrapper pid=4242) ERROR 03-18 08:32:47 [worker_base.py:620] "
_WRAPPED = (_RAY + "Error executing method 'initialize_cache'. This might cause deadlock in distributed "
            "execution.\n")
_RPC = (("vllm/worker/worker_base.py", 612, "execute_method", "return run_method(self, method, args, kwargs)"),
        ("vllm/utils.py", 2216, "run_method", "return func(*args, **kwargs)"))


def test_a_method_past_the_size_check_is_no_kv_pool_reading():
    """The corpus log: the wrapper's line, then execute_method -> run_method -> initialize_cache on
    ``self._init_cache_engine()``, cut there."""
    text = read_log("w5213.log")
    assert reads(text) == (True, "unknown", "memory_pool")
    assert vllm_signature(text) == "vllm_worker_method_failed"


def test_the_same_in_another_form():
    """The warm-up call, cut below it; cut inside capture_model it reads as the capture's cut traceback."""
    warm = ("vllm/worker/worker.py", 308, "initialize_cache", "self._warm_up_model()")
    text = _WRAPPED + vllm_traceback(*_RPC, warm, exc=None, head=_RAY)
    assert reads(text)[:2] == (True, "unknown")
    inside = _WRAPPED + vllm_traceback(
        *_RPC, warm, ("vllm/worker/worker.py", 350, "_warm_up_model", "self.model_runner.capture_model(self.gpu_cache)"),
        _TORCH_DECORATOR, ("vllm/worker/model_runner.py", 1500, "capture_model", "graph_runner.capture(**capture_inputs)"),
        exc=None, head=_RAY)
    assert reads(inside) == (True, "cuda_graph_capture", "graph_capture")


def test_the_size_check_itself_and_the_bare_line_keep_the_kv_pool_reading():
    """Cut on ``raise_if_cache_size_invalid(`` (as vo27, w5202) or the wrapper's line with nothing below (vb04):
    kv_pool_oom, as before."""
    check = _WRAPPED + vllm_traceback(
        *_RPC, ("vllm/worker/worker.py", 291, "initialize_cache", "raise_if_cache_size_invalid("), exc=None, head=_RAY)
    assert reads(check)[:2] == (True, "kv_pool_oom")
    assert reads(_WRAPPED)[:2] == (True, "kv_pool_oom")
    for log_id in ("vb04", "vo27", "w5202"):
        assert vllm_signature(read_log(f"{log_id}.log")) == "vllm_initialize_cache_failed", log_id


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.6.2", "vllm/worker/multi_step_model_runner.py", "Logits Processors are not supported in multi-step decoding"),
    ("0.8.0", "vllm/worker/worker.py", "def raise_if_cache_size_invalid("),
])


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.5.1", "vllm/worker/model_runner.py", 909, "@torch.inference_mode()"),
    ("0.5.1", "vllm/worker/model_runner.py", 910, "def capture_model("),
    ("0.5.1", "vllm/worker/worker.py", 214, "self._warm_up_model()"),
    ("0.5.1", "vllm/worker/worker.py", 230, "self.model_runner.capture_model(self.gpu_cache)"),
    ("0.6.4.post1", "vllm/worker/model_runner.py", 1385, "@torch.inference_mode()"),
    ("0.6.4.post1", "vllm/worker/model_runner.py", 1386, "def capture_model("),
    ("0.6.4.post1", "vllm/worker/worker.py", 268, "raise_if_cache_size_invalid("),
    ("0.6.4.post1", "vllm/worker/worker.py", 276, "self._init_cache_engine()"),
    ("0.6.4.post1", "vllm/worker/worker.py", 277, "self._warm_up_model()"),
    ("0.8.0", "vllm/worker/worker.py", 291, "raise_if_cache_size_invalid("),
    ("0.8.0", "vllm/worker/worker.py", 307, "self._init_cache_engine()"),
    ("0.8.0", "vllm/worker/worker.py", 308, "self._warm_up_model()"),
    ("0.8.0", "vllm/worker/worker_base.py", 612, "return run_method(self, method, args, kwargs)"),
    ("0.8.0", "vllm/worker/worker_base.py", 620, "logger.exception(msg)"),
    ("0.8.0", "vllm/utils.py", 2216, "return func(*args, **kwargs)"),
    ("0.6.2", "vllm/worker/multi_step_model_runner.py", 686, "if seq_group.sampling_params.logits_processors:"),
    ("0.6.2", "vllm/worker/multi_step_model_runner.py", 688,
     '"Logits Processors are not supported in multi-step decoding")'),
    ("0.6.2", "vllm/engine/multiprocessing/engine.py", 155, "self.run_engine_loop()"),
    ("0.6.2", "vllm/engine/multiprocessing/engine.py", 157, "logger.exception(repr(e))"),
    ("0.6.2", "vllm/engine/multiprocessing/engine.py", 218, "request_outputs = self.engine_step()"),
    ("0.6.3.post1", "vllm/worker/multi_step_model_runner.py", 819,
     "# Reminder: Please update docs/source/serving/compatibility_matrix.rst"),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules and the dispute cite."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]


def test_torchs_decorator_only_enters_the_mode_and_calls():
    """torch 2.13.0's decorate_context (the installed torch, where it is that release)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        pytest.skip("torch is not installed here")
    if not importlib.metadata.version("torch").startswith("2.13.0"):
        pytest.skip("the lines are torch 2.13.0's")
    lines = (Path(spec.origin).parent / "utils" / "_contextlib.py").read_text().splitlines()
    assert "def decorate_context(*args, **kwargs):" in lines[120]
    assert "with ctx_factory():" in lines[122]
    assert "return func(*args, **kwargs)" in lines[123]
