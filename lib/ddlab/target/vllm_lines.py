"""vLLM 0.34.0's log lines, metric names and crash texts: the words of ``--dialect vllm``.

Contract: ``VLLM`` is a ``Generation`` (``log_lines``) whose lines are vLLM's:
every line it returns is a :class:`VLine`, a ``str`` that carries the vLLM
source it was copied from (``file.py:N``, the line of the ``logger`` call in
the 0.34.0 wheel: docs/target.md "vLLM dialect" lists each, tests/target/vllm_sources.py
tables them) and the process
that logs it (``APIServer`` or ``EngineCore_DP0``). :class:`VllmFormatter`
writes a record as vLLM's ``NewLineFormatter`` does (vllm/logger.py:28-33,
vllm/logging_utils/formatter.py:12-76 (0.34.0))::

    (EngineCore_DP0 pid=N) INFO 12-03 13:20:01 [core.py:153] Initializing a V1 LLM engine ...

with every further line of a message (a traceback too) behind ``\\r\\n`` and the
same prefix. A line the target says that vLLM has no words for (the CPU
device's static buffers) carries the target's own file and line. Lines vLLM
does not print (SGLang's per-batch lines, its memory-pool lines) are None.
Where vLLM's words would lie the target's truth wins: the pid is the one
process's (both prefixes: the target is one process), the KV pool's device is
``CPU`` on CPU (vLLM's own name for a CPU pool, kv_cache_utils.py:1152-1154),
the version is ``0.34.0+ddlab``.

Kept free of torch: ``python -m ddlab.target`` imports it on its start path.
"""

from __future__ import annotations

import logging
import threading
import time

from ddlab.target.log_lines import DIALECTS, Generation

__all__ = ["VLine", "VLLM", "VllmWords", "VllmFormatter", "API", "ENGINE", "VERSION", "RELEASE",
           "ENGINE_DEAD", "CLIENT_MESSAGE", "KV_HINT", "line", "log_line"]

RELEASE = "0.34.0"
VERSION = f"{RELEASE}+ddlab"  # PEP 440: vLLM 0.34.0's words, spoken by ddlab's target
API, ENGINE = "APIServer", "EngineCore_DP0"
# vllm/v1/engine/exceptions.py:19-22 (0.34.0)
ENGINE_DEAD = "EngineCore encountered an issue. See stack trace (above) for the root cause."
CLIENT_MESSAGE = "The server had an error while processing your request."
# _more_kv_cache_memory_hint without the extensible KV cache (vllm/v1/core/kv_cache_planning.py:92-96)
KV_HINT = ("Try increasing `gpu_memory_utilization` when initializing the engine (this flag also "
           "controls CPU memory reservation on the CPU backend, despite its name).")
_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


class VLine(str):
    """A message and the vLLM source line (``file.py:N``) and process that log it."""

    src: str
    proc: str | None

    def __new__(cls, text: str, src: str, proc: str | None = None):
        obj = super().__new__(cls, text)
        obj.src, obj.proc = src, proc
        return obj


def line(text: str, src: str, proc: str | None = None) -> VLine:
    return VLine(text, src, proc)


def log_line(text: str, src: str, proc: str | None = API, level: int = logging.INFO, exc_info=None) -> None:
    """Log ``text`` as vLLM's ``src`` (``file.py:N``) logs it, from process ``proc``."""
    logging.getLogger("ddlab.target").log(level, VLine(text, src, proc), exc_info=exc_info)


class _Process(threading.local):
    """Which vLLM process a line without its own belongs to: the scheduler thread is the
    engine core's; the main thread switches while it builds the engine (vllm_server)."""

    name = API


process = _Process()


class VllmFormatter(logging.Formatter):
    """vLLM's ``NewLineFormatter`` at INFO (``fileinfo`` = the file's name; DEBUG would show
    a shortened path, formatter.py:18-72), the date as ``%m-%d %H:%M:%S`` (logger.py:33)."""

    def format(self, record):
        msg = record.getMessage()
        src = getattr(record.msg, "src", None) or f"{record.filename}:{record.lineno}"
        proc = getattr(record.msg, "proc", None) or (
            ENGINE if record.threadName == "scheduler" else process.name)
        stamp = time.strftime("%m-%d %H:%M:%S", self.converter(record.created))
        prefix = f"({proc} pid={record.process}) {record.levelname} {stamp} [{src}] "
        text = prefix + msg
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text.replace("\n", "\r\n" + prefix)


def _gib(nbytes: float) -> str:
    """vLLM's ``format_gib`` (vllm/utils/mem_utils.py): GiB to two decimals."""
    return f"{round(nbytes / (1 << 30), 2)}"


class VllmWords(Generation):
    """vLLM 0.34.0's words for the startup and serving the target shares with SGLang's."""

    name = "vllm"
    dialect = "vllm"
    graph_runner = "VllmGraphRunner"  # vllm_graphs: the inputs copied as vLLM copies them
    capture_failed_msg = ""
    model_info_path = "/v1/models"
    sigterm_stops_server = True

    # --- the launcher's part (vLLM's API server logs these, or nothing) -----------------

    def server_args(self, args) -> str:
        return ""

    def attention_note(self):
        return None

    def speculative_notes(self, args):
        return []

    def deprecated(self, option, replacement):
        return None

    def entrypoint_warning(self, module, entrypoint):
        return None

    def kill_tree(self, pid, include_parent):
        return None

    def prefill_graph_disabled(self):
        return None

    def draft_runner_ready(self, algorithm):
        return None

    def draft_runner(self, algorithm, block_size, drafter_arch):
        return None

    # --- the engine core's startup --------------------------------------------------------

    def init_begin(self):
        return []

    def init_end(self, device, gpu_id, elapsed_s, used_gb):
        return []

    def load_begin(self, avail_gb: float):
        return None

    def load_end(self, elapsed_s, arch, dtype, avail_gb, used_gb):
        """DefaultModelLoader's line (vllm/model_executor/model_loader/default_loader.py:543)."""
        return line(f"Loading weights took {elapsed_s:.2f} seconds", "default_loader.py:543", ENGINE)

    def model_loaded(self, used_gib_bytes: float, elapsed_s: float):
        """The model runner's (vllm/v1/worker/gpu/model_runner.py:441)."""
        return line(f"Model loading took {_gib(used_gib_bytes)} GiB memory and {elapsed_s:.6f} seconds",
                    "model_runner.py:441", ENGINE)

    def kv_allocated(self, dtype, tokens, k_gb, v_gb):
        return None

    def memory_pool_end(self, avail_gb: float):
        return None

    def kv_available(self, nbytes: int):
        """vllm/v1/worker/gpu_worker.py:795."""
        return line(f"Available KV cache memory: {_gib(nbytes)} GiB", "gpu_worker.py:795", ENGINE)

    def kv_capacity(self, device: str, tokens: int, max_model_len: int, concurrency: float):
        """vllm/v1/core/kv_cache_utils.py:1168 (the pool's device: ``GPU`` on CUDA, else its
        type upper-cased, :1152-1154)."""
        pools = "GPU" if device == "cuda" else device.upper()
        return line(f"{pools} KV cache size: {tokens:,} tokens, Maximum concurrency for "
                    f"{max_model_len:,} tokens per request: {concurrency:.2f}x",
                    "kv_cache_utils.py:1168", ENGINE)

    def kv_pool_error(self, rest_bytes: int, needed_bytes: int, max_model_len: int,
                      estimated_max_len: int) -> Exception:
        """``_check_enough_kv_cache_memory`` (vllm/v1/core/kv_cache_planning.py:99-130)."""
        if rest_bytes <= 0:
            return ValueError(f"No available memory for the cache blocks. {KV_HINT} {_DOCS}")
        estimated = (f"Based on the available memory, the estimated maximum model length is "
                     f"{estimated_max_len}. " if estimated_max_len > 0 else "")
        return ValueError(
            f"To serve at least one request with the model's max seq len ({max_model_len}), "
            f"({_gib(needed_bytes)} GiB KV cache is needed, which is larger than the available KV "
            f"cache memory ({_gib(rest_bytes)} GiB). {estimated}{KV_HINT} Decreasing "
            f"`max_model_len` also reduces what is needed. {_DOCS}")

    def capture_begin(self, role, speculative, tokens_per_req, backend, avail_gb):
        return None  # vLLM shows tqdm bars here, not a log line

    def capture_end(self, role, speculative, bs, elapsed_s, used_gb, avail_gb):
        """``capture_model`` (vllm/v1/worker/gpu/model_runner.py:1216); the draft's capture
        is inside it (``self.speculator.capture()``, :1194): no line of its own."""
        if role == "draft":
            return None
        return line(f"Graph capturing finished in {elapsed_s:.0f} secs, took {used_gb:.2f} GiB",
                    "model_runner.py:1216", ENGINE)

    def capture_error(self, need_bytes: int, avail_bytes: int, total_bytes: int) -> Exception:
        """vLLM does not wrap a failed capture: the allocator's error reaches the engine core's
        ``EngineCore failed to start.`` as it is (torch's CUDA caching allocator's words)."""
        import torch  # the engine has it loaded by now

        return torch.OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {need_bytes / (1 << 30):.2f} GiB. GPU 0 has a "
            f"total capacity of {total_bytes / (1 << 30):.2f} GiB of which "
            f"{max(avail_bytes, 0) / (1 << 30):.2f} GiB is free.")

    def cpu_static_buffers(self, bs_list, tokens):
        return (f"CPU device: static buffers allocated for bs {bs_list} x {tokens} tokens/req; "
                "the forward runs from them without CUDA graph capture")

    def max_total(self, **figures):
        return None

    def longer_context(self, asked: int, derived: int) -> tuple[str, str]:
        """``_get_and_verify_max_len`` (vllm/config/model.py): a longer ``--max-model-len`` than
        the model's is refused unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."""
        msg = (f"User-specified max_model_len ({asked}) is greater than the derived max_model_len "
               f"(max_position_embeddings={derived} or model_max_length=None in model's config.json).")
        return (f"{msg} VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the "
                "model uses relative position encoding (RoPE), positions exceeding derived_max_model_len "
                "lead to nan. If the model uses absolute position encoding, positions exceeding "
                "derived_max_model_len will cause a CUDA array out-of-bounds error.",
                f"{msg} To allow overriding this maximum, set the env var "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
                "extreme caution. If the model uses relative position encoding (RoPE), positions "
                "exceeding derived_max_model_len lead to nan. If the model uses absolute position "
                "encoding, positions exceeding derived_max_model_len will cause a CUDA array "
                "out-of-bounds error.")

    longer_context_env = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
    longer_context_default = "0"
    truthy = ("1", "true")

    def log_scheduler_crash(self, logger, formatted_traceback: str) -> None:
        """``run_engine_core``'s handler (vllm/v1/engine/core.py:1759 (0.34.0)), with the
        traceback under the same prefix: vLLM's frames for a failed graph input copy
        (vllm_graphs), else the target's own."""
        import sys

        from ddlab.target.vllm_graphs import engine_core_traceback

        said = engine_core_traceback(sys.exc_info()[1])
        if said is None:
            logger.exception(line("EngineCore encountered a fatal error.", "core.py:1759", ENGINE))
        else:
            logger.error(line(f"EngineCore encountered a fatal error.\n{said}", "core.py:1759", ENGINE))

    # --- serving: vLLM logs no per-batch lines (its stats logger does, every interval) ---

    def prefill(self, *a):
        return None

    def decode(self, *a):
        return None


VLLM = DIALECTS["vllm"] = VllmWords()
