"""The rules that held-out round 31 of the vLLM corpus (w3101-w3116, measured once at 8542697 with its logs
7da5c09) showed missing: an output handler's EngineDeadError raised after the operator's SIGTERM began the API
server's shutdown (w3110: a stop asked for, no crash); a device fault in the engine core followed by the API
server's last metrics line (w3115: that line averages the interval before the engine died, so it does not show
the fault carried past); a compiled extension whose import misses another torch build's library (w3111: ROCm's
libtorch_hip.so, a CUDA torch); V0's copy of a block table wider than the captured graphs' buffer (w3103).

Each rule is general and cited from vLLM's source (its wheels): the log that showed it is one case, a text
written from the source in another form is the other, and a text beside it that the rule must not take is a
third. The source checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_LAUNCHER = "vllm/entrypoints/launchers/launcher.py"
_BACKEND_UTILS = "vllm/attention/backends/utils.py"
_COPY = "input_block_tables[i, :len(block_table)] = block_table"
test_each_rules_text_is_vllms_own = wheel_text_test([
    # the API server's SIGINT/SIGTERM handler and its notice
    ("0.34.0", _LAUNCHER, 'logger.info_once("[shutdown] API server: shutdown triggered")'),
    ("0.34.0", _LAUNCHER, "loop.add_signal_handler(signal.SIGTERM, signal_handler)"),
    ("0.30.0", _LAUNCHER, 'logger.info_once("[shutdown] API server: shutdown triggered")'),
    ("0.34.0", "vllm/v1/engine/async_llm.py", 'logger.exception("AsyncLLM output_handler failed.")'),
    # the metrics line's throughput: tokens over the time since the last line
    ("0.34.0", "vllm/v1/metrics/loggers.py", "delta_time = now - self.last_log_time"),
    ("0.34.0", "vllm/v1/metrics/loggers.py", '"Avg prompt throughput: %.1f tokens/s",'),
    # the compiled ops' import, only warned about (ROCm's platform module, the ops module)
    ("0.7.3", "vllm/platforms/rocm.py", 'logger.warning("Failed to import from vllm._C with %r", e)'),
    ("0.7.3", "vllm/_custom_ops.py", 'logger.warning("Failed to import from vllm._C with %r", e)'),
    # V0's copy of a graphed batch's block tables into the captured graphs' buffer, and its size
    ("0.6.4.post1", _BACKEND_UTILS, _COPY),
    ("0.6.4.post1", _BACKEND_UTILS, "input_block_tables = self.runner.graph_block_tables[:batch_size]"),
    ("0.6.4.post1", "vllm/worker/model_runner.py",
     "return (self.max_seq_len_to_capture + block_size - 1) // block_size"),
])

_API = "(APIServer pid=7) "
_CORE = "(EngineCore_DP0 pid=8) "
_READY = _API + "INFO 08-21 10:00:00 [launcher.py:60] Application startup complete.\n"
_METRICS = (_API + "INFO 08-21 10:20:00 [loggers.py:283] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
            "Avg generation throughput: 100.2 tokens/s, Running: 0 reqs, Waiting: 0 reqs\n")
_STOP = _API + "INFO 08-21 10:24:34 [launcher.py:256] [shutdown] API server: shutdown triggered\n"
_HANDLER = "".join(_API + "ERROR 08-21 10:24:34 [async_llm.py:957] " + line + "\n" for line in (
    "AsyncLLM output_handler failed.", "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 913, in output_handler',
    "    outputs = await engine_core.get_output_async()",
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
    "the root cause."))
_FAULT = "".join(_CORE + "ERROR 08-21 10:20:00 [core.py:1000] " + line + "\n" for line in (
    "EngineCore encountered a fatal error.", "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 198, in get_output',
    "    self.async_copy_ready_event.synchronize()",
    "torch.AcceleratorError: CUDA error: device-side assert triggered"))


def test_a_dead_engine_reported_after_the_asked_for_stop_is_no_crash():
    assert reads(read_log("w3110.log"))[:2] == (False, None)
    assert reads(_READY + _METRICS + _STOP + _HANDLER, "vllm")[:2] == (False, None)
    # near miss: the same handler's failure with no stop asked is the engine's death
    assert reads(_READY + _METRICS + _HANDLER, "vllm")[0] is True
    assert vllm_signature(_READY + _METRICS + _HANDLER) == "vllm_engine_dead"
    # near miss: a fault before the stop is still the crash
    assert reads(_READY + _FAULT + _HANDLER + _STOP, "vllm")[:2] == (True, "cuda_illegal_access")


def test_a_metrics_line_after_the_engine_died_carries_no_fault_past():
    assert reads(read_log("w3115.log")) == (True, "cuda_illegal_access", "serving")
    assert vllm_signature(read_log("w3115.log")) == "vllm_cuda_illegal_access"
    assert reads(_READY + _FAULT + _HANDLER + _METRICS, "vllm")[:2] == (True, "cuda_illegal_access")
    # near miss: a fault no dead engine's echo follows, and tokens move after it: carried past
    caught = "".join(line + "\n" for line in _FAULT.splitlines()[1:])
    assert reads(_READY + caught + _METRICS, "vllm")[:2] == (False, None)


_TORCH_HIP = ("WARNING 02-28 20:57:36 _custom_ops.py:21] Failed to import from vllm._C with ImportError('"
              "libtorch_hip.so: cannot open shared object file: No such file or directory')\n")


def test_a_compiled_extension_missing_another_torch_builds_library_is_a_dependency_mismatch():
    assert reads(read_log("w3111.log")) == (True, "dependency_mismatch", "launch")
    assert vllm_signature(read_log("w3111.log")) == "vllm_c_extension_link"
    refused = "RuntimeError: Tried to instantiate class '_C.ScalarType', but it does not exist!\n"
    assert vllm_signature(_TORCH_HIP + refused) == "vllm_c_extension_link"
    # near miss: the driver's own library missing is no torch build's (no GPU driver installed)
    no_driver = _TORCH_HIP.replace("libtorch_hip.so", "libcuda.so.1")
    assert vllm_signature(no_driver + refused) != "vllm_c_extension_link"


_BUILD = [("vllm/worker/model_runner.py", 867, "build", "attn_metadata = self.attn_metadata_builder.build("),
          (_BACKEND_UTILS, 233, "build", _COPY)]


def test_a_block_table_wider_than_the_graphs_buffer_is_a_graph_replay_while_serving():
    assert reads(read_log("w3103.log")) == (True, "cuda_graph_replay", "serving")
    logged = vllm_traceback(*_BUILD, exc="ValueError: could not broadcast input array from shape (1100,) "
                            "into shape (1024,)")
    assert vllm_signature(logged) == "vllm_graph_block_tables"
    # near miss: the same broadcast error in another copy is not the graphs' buffer
    other = logged.replace(_COPY, "block_tables[i, :len(block_table)] = block_table")
    assert vllm_signature(other) != "vllm_graph_block_tables"
