"""The vLLM dialect's graph inputs and its engine core's death, in vLLM 0.34.0's frames.

Contract: :class:`VllmGraphRunner` is the SGLang dialect's runner with one change: the
inputs of symbolic (batch) size, ``input_ids`` and ``positions``, reach the static buffers
through :meth:`~VllmGraphRunner.copy_and_call`, whose statements are those of vLLM's
compiler-managed CUDA graph input buffers (``copy_and_call``,
vllm/compilation/backends.py:83-98 (0.34.0)): a None input fails there as it would in vLLM
(``'NoneType' object has no attribute 'shape'``, :87), one larger than the buffer at the copy
(:94), whatever ``--debug-drop-verify-mode``. The attention metadata is still ``fill_from``'s
(a None skipped: wrong tokens; or, with ``raise``, the target's own frames).

:func:`engine_core_traceback` writes such a failure as vLLM's engine core prints it: the
frames of 0.34.0's serving path (``FRAMES``, each ``vllm/path.py:line`` and its code there;
the stdlib's, torch's and the model's own frames between them left out), then the target's
own exception line; ``None`` for any other failure (the caller keeps the target's frames).
:func:`output_handler_traceback` is the API server's ``EngineDeadError`` (raised ``from None``).
Why this copy: vLLM 0.34.0 copies a replay's inputs in Python only there (``CUDAGraphWrapper``
copies nothing, vllm/compilation/cuda_graph.py:160-166; a FULL graph's inputs are written by the
model runner's kernels); so the frames are a PIECEWISE step's with ``cudagraph_copy_inputs``,
whatever ``cudagraph_mode`` the target was given (the target's choice).
"""

from __future__ import annotations

import sysconfig
import traceback

from ddlab.target.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner

__all__ = ["VllmGraphRunner", "FRAMES", "API_FRAMES", "engine_core_traceback", "output_handler_traceback"]

# (path in the 0.34.0 wheel, line, function, the code at that line): run_engine_core's busy loop
# down to a PIECEWISE step's model call (v1/worker/gpu/model_runner.py:2159) and the copy
FRAMES = (
    ("vllm/v1/engine/core.py", 1743, "run_engine_core", "engine_core.run_busy_loop()"),
    ("vllm/v1/engine/core.py", 1802, "run_busy_loop", "self._process_engine_step()"),
    ("vllm/v1/engine/core.py", 1860, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
    ("vllm/v1/engine/core.py", 724, "step",
     "future = self.model_executor.execute_model(scheduler_output, non_block=True)"),
    ("vllm/v1/executor/uniproc_executor.py", 131, "execute_model", "output.result()"),
    ("vllm/v1/executor/uniproc_executor.py", 109, "collective_rpc",
     "result = run_method(self.driver_worker, method, args, kwargs)"),
    ("vllm/v1/serial_utils.py", 508, "run_method", "return func(*args, **kwargs)"),
    ("vllm/v1/worker/worker_base.py", 410, "execute_model", "return self.worker.execute_model(scheduler_output)"),
    ("vllm/v1/worker/gpu_worker.py", 1475, "execute_model", "output = self.model_runner.execute_model("),
    ("vllm/v1/worker/gpu/model_runner.py", 2159, "execute_model",
     "model_output = self.cudagraph_manager.run_pw_graph("),
    ("vllm/v1/worker/gpu/cudagraph_utils.py", 630, "run_pw_graph", "return model(**model_inputs)"),
    ("vllm/compilation/decorators.py", 551, "__call__", "return self.aot_compiled_fn(self, *args, **kwargs)"),
    ("vllm/compilation/caching.py", 250, "__call__", "return self.optimized_call(*args, **kwargs)"),
)
# copy_and_call's two statements that can fail, and their lines (vllm/compilation/backends.py)
COPY_LINES = {"runtime_shape = runtime_tensor.shape[0]": 87, "static_tensor.copy_(runtime_tensor)": 94}
# the API server's output handler (vllm/v1/engine/async_llm.py:894, v1/engine/core_client.py:1310)
API_FRAMES = (
    ("vllm/v1/engine/async_llm.py", 894, "output_handler", "outputs = await engine_core.get_output_async()"),
    ("vllm/v1/engine/core_client.py", 1310, "get_output_async", "raise self._format_exception(outputs) from None"),
)


class VllmGraphRunner(DecodeCudaGraphRunner):
    """SGLang's static-buffer runner, the model inputs copied as vLLM's ``copy_and_call``."""

    FIELDS = tuple(f for f in DecodeCudaGraphRunner.FIELDS if f not in ("input_ids", "positions"))

    def load_batch(self, forward_batch):
        self._pad(forward_batch)
        self.fill_from(forward_batch)
        self.buffers.custom_mask[:self.raw_bs].copy_(forward_batch.custom_mask)

    def execute(self, forward_batch):
        self.load_batch(forward_batch)
        return self.copy_and_call(forward_batch.input_ids, forward_batch.positions)

    def copy_and_call(self, *args):
        for input_buffer, runtime_tensor in zip((self.buffers.input_ids, self.buffers.positions), args):
            runtime_shape = runtime_tensor.shape[0]
            static_tensor = input_buffer[:runtime_shape]
            static_tensor.copy_(runtime_tensor)
        return self._run()


def _render(frames, last: str) -> str:
    site = sysconfig.get_paths()["purelib"]
    lines = ["Traceback (most recent call last):"]
    for path, no, func, code in frames:
        lines += [f'  File "{site}/{path}", line {no}, in {func}', f"    {code}"]
    return "\n".join([*lines, last])


def engine_core_traceback(exc: BaseException) -> str | None:
    """``exc`` raised in :meth:`VllmGraphRunner.copy_and_call`, in vLLM's frames; else None."""
    inner = traceback.extract_tb(exc.__traceback__)[-1]
    if inner.name != "copy_and_call" or inner.line not in COPY_LINES:
        return None
    copy = ("vllm/compilation/backends.py", COPY_LINES[inner.line], "copy_and_call", inner.line)
    return _render((*FRAMES, copy), "".join(traceback.format_exception_only(exc)).rstrip())


def output_handler_traceback(message: str) -> str:
    return _render(API_FRAMES, f"vllm.v1.engine.exceptions.EngineDeadError: {message}")
