"""What held-out round 54 of the vLLM corpus (w5401-w5419, measured once at 0ea5b67 with its logs f9cd1a6)
showed: crashed 19/19, kind 19/19, phase 11/13. Its two misses were read from the source (docs/diagnosis.md,
"Held-out round 54"):

- w5404: an engine core's "EngineCore failed to start." traceback, quoted, each line's process tag followed by
  the text "ESC[0;0m": vLLM's RESET colour code (``RESET = '\\033[0;0m'``, written after the tag ``(EngineCore_DP0
  pid=N)``: 0.10.2 utils/__init__.py:174, :3395) whose ESC byte the paste spelt as the word. The reader stripped
  ANSI colours written with the byte, "#033[" or "^[[" but not "ESC[", so the tag was no tag and the frames
  (cut at ``_initialize_kv_caches``, the KV cache's set-up: v1/engine/core.py:158-211 (0.10.1.1)) were not read.
  Fixed: "ESC[<params>m" is an ANSI colour too (diagnosis/logtext.py ``_ANSI_RE``): memory_pool.
- w5414: verl's rollout server, a TP worker's "WorkerProc hit an exception." and its traceback worker_busy_loop
  ``output = func(*args, **kwargs)`` -> verl's ``update_weights_from_ipc`` (cut). The busy loop runs each RPC
  the executor broadcasts (0.20.2 v1/executor/multiproc_executor.py:957, the record :962); it starts only once
  the worker is built (:611 init_device, :619 load_model, :861 the loop), and vLLM's start-up then sends it only
  a few steps (v1/executor/abstract.py:123-125, :147, :150, :207, :293; v1/engine/core.py:270). Any other
  method (a worker extension's, v1/worker/worker_base.py:253-259) comes from a running engine or its user's
  collective_rpc. Fixed: that frame pair is a serving frame (diagnosis/vllm_frames.py ``_AFTER_START_RPC``).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, folded_round, not_unpacked,
                      read_log, reads, vllm_traceback)

_ROUND = [f"w54{n:02d}" for n in range(1, 20)]


def test_the_round_is_folded_with_its_nineteen_logs():
    assert folded_round(VLLM_MANIFEST, 54) == _ROUND


def test_each_log_reads_as_labelled():
    """Crashed and kind as labelled, the phase where the log shows it; no miss of the round is left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w5404: vLLM's colour code with its ESC byte spelt "ESC" --------------------------------------------------

_KV = [("vllm/v1/engine/core.py", 703, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
       ("vllm/v1/engine/core.py", 90, "__init__", "self._initialize_kv_caches(vllm_config)")]


def test_the_kv_caches_frames_under_a_spelt_colour_are_the_memory_pool():
    """The corpus log: '> (EngineCore_DP0 pid=35109)ESC[0;0m ERROR ... [v1/engine/core.py:712]' on each line,
    cut at the frame line of _initialize_kv_caches."""
    assert reads(read_log("w5404.log")) == (True, "unknown", "memory_pool")


def test_the_same_colours_spelt_in_another_form():
    """Both of the tag's colours spelt (CYAN '\\033[1;36m' before it, 0.10.2 utils/__init__.py:173), the
    traceback cut inside the profiling run; it reads as the same lines with the ESC byte itself."""
    frames = _KV + [("vllm/v1/engine/core.py", 183, "_initialize_kv_caches",
                     "self.model_executor.determine_available_memory())")]
    spelt = vllm_traceback(*frames, exc=None, head="ESC[1;36m(EngineCore_DP0 pid=7)ESC[0;0m ERROR 09-17 05:40:55 "
                                                   "[core.py:718] ")
    raw = spelt.replace("ESC[", "\x1b[")
    assert reads(spelt) == reads(raw) == (True, "unknown", "memory_pool")


def test_a_spelt_colour_before_a_serving_frame_or_an_esc_word_is_not_the_memory_pool():
    """The same tag over a traceback of the busy loop reads serving; 'ESC[' inside a word, or not closed by
    an SGR's 'm', is kept as text."""
    serving = vllm_traceback(("vllm/v1/engine/core.py", 780, "run_busy_loop", "self._process_engine_step()"),
                             ("vllm/v1/engine/core.py", 805, "_process_engine_step", "outputs = self.step_fn()"),
                             exc=None, head="(EngineCore_DP0 pid=7)ESC[0;0m ERROR 09-17 05:40:55 [core.py:718] ")
    assert reads(serving)[2] == "serving"
    from ddlab.diagnosis.logtext import split_lines
    kept = [ln.msg for ln in split_lines("KEY_ESC[0m pressed\nESC[0] is the first escape\n")]
    assert kept == ["KEY_ESC[0m pressed", "ESC[0] is the first escape"]


# --- w5414: an RPC a running engine sent, failed in a worker's busy loop --------------------------------------

_WORKER = "(Worker_TP0 pid=5) ERROR 11-03 10:00:00 [multiproc_executor.py:654] "
_LOOP = ("vllm/v1/executor/multiproc_executor.py", 649, "worker_busy_loop", "output = func(*args, **kwargs)")


def _failed(method: tuple[str, int, str, str] | None, exc: str | None = None) -> str:
    frames = (_LOOP, method) if method else (_LOOP,)
    return _WORKER + "WorkerProc hit an exception.\n" + vllm_traceback(*frames, exc=exc, head=_WORKER)


def test_a_weight_update_rpc_failed_in_the_busy_loop_is_serving():
    """The corpus log: Ray-deduplicated lines, worker_busy_loop -> verl's update_weights_from_ipc (cut)."""
    assert reads(read_log("w5414.log")) == (True, "unknown", "serving")


def test_the_same_rpc_failure_in_another_form():
    """0.10.2's lines (the loop :649, the record :654), a worker extension's method that raised."""
    text = _failed(("my_rl/worker_extension.py", 40, "update_weights", "param.data.copy_(weight)"),
                   exc="RuntimeError: The size of tensor a (4096) must match the size of tensor b (2048)")
    assert reads(text) == (True, "unknown", "serving")


@pytest.mark.parametrize(("method", "phase"), [
    (("vllm/v1/worker/gpu_worker.py", 290, "determine_available_memory", "self.model_runner.profile_run()"),
     "memory_pool"),
    (("vllm/v1/worker/gpu_worker.py", 380, "get_kv_cache_spec", "return self.model_runner.get_kv_cache_spec()"),
     "launch"),
    (("vllm/v1/worker/gpu_worker.py", 420, "get_supported_tasks", "return self.model_runner.get_supported_tasks()"),
     "launch"),
    (None, "launch"),
    (("torch/utils/_contextlib.py", 124, "decorate_context", "return func(*args, **kwargs)"), "launch"),
])
def test_the_same_record_during_start_up_is_not_serving(method, phase):
    """The same record over a method vLLM's own start-up sends (the profiling run, the KV cache spec, the
    supported tasks), cut before the method's frame, or over torch's decorator frame that hides the method's name
    (``@torch.inference_mode()``: decorate_context, torch 2.13.0 utils/_contextlib.py:124; vq19, w5102), is no
    serving frame."""
    assert reads(_failed(method))[2] == phase


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.10.1.1", "vllm/v1/engine/core.py", 158, "def _initialize_kv_caches("),
    ("0.10.1.1", "vllm/v1/engine/core.py", 211, "self.model_executor.initialize_from_config(kv_cache_configs)"),
    ("0.10.2", "vllm/utils/__init__.py", 173, "CYAN = '\\033[1;36m'"),
    ("0.10.2", "vllm/utils/__init__.py", 174, "RESET = '\\033[0;0m'"),
    ("0.10.2", "vllm/utils/__init__.py", 3395, 'prefix = f"{CYAN}({worker_name} pid={pid}){RESET} "'),
    ("0.10.2", "vllm/v1/executor/multiproc_executor.py", 649, "output = func(*args, **kwargs)"),
    ("0.10.2", "vllm/v1/executor/multiproc_executor.py", 654, 'logger.exception("WorkerProc hit an exception.")'),
    ("0.20.2", "vllm/v1/executor/multiproc_executor.py", 611, "self.worker.init_device()"),
    ("0.20.2", "vllm/v1/executor/multiproc_executor.py", 619, "self.worker.load_model()"),
    ("0.20.2", "vllm/v1/executor/multiproc_executor.py", 861, "worker.worker_busy_loop()"),
    ("0.20.2", "vllm/v1/executor/multiproc_executor.py", 957, "output = func(*args, **kwargs)"),
    ("0.20.2", "vllm/v1/executor/multiproc_executor.py", 962, 'logger.exception("WorkerProc hit an exception.")'),
    ("0.20.2", "vllm/v1/executor/abstract.py", 123, 'self.collective_rpc("initialize_from_config"'),
    ("0.20.2", "vllm/v1/executor/abstract.py", 125, '"compile_or_warm_up_model"'),
    ("0.20.2", "vllm/v1/executor/abstract.py", 147, 'return self.collective_rpc("determine_available_memory")'),
    ("0.20.2", "vllm/v1/executor/abstract.py", 150, 'return self.collective_rpc("get_kv_cache_spec")'),
    ("0.20.2", "vllm/v1/executor/abstract.py", 207, 'self.collective_rpc("get_kv_connector_handshake_metadata")'),
    ("0.20.2", "vllm/v1/executor/abstract.py", 293, 'self.collective_rpc("get_supported_tasks")'),
    ("0.20.2", "vllm/v1/engine/core.py", 270, 'self.collective_rpc("update_max_model_len"'),
    ("0.20.2", "vllm/v1/worker/worker_base.py", 253, "if parallel_config.worker_extension_cls:"),
    ("0.34.0", "vllm/v1/executor/multiproc_executor.py", 1211, "output = func(*args, **kwargs)"),
    ("0.34.0", "vllm/v1/executor/multiproc_executor.py", 1223, 'logger.exception("WorkerProc hit an exception.")'),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules cite."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]
