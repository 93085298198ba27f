"""``python -m ddlab.target --dialect vllm``: the target behind vLLM 0.34.0's API, metrics and log lines.

Contract. ``main(argv)`` runs the engine (the same engine as the SGLang dialect: the same
tokens, greedy and lossless) in vLLM's order, each line in vLLM's words (``vllm_lines``;
the file:line of each is beside it):

1. API server: the version and model (vllm/entrypoints/common/startup.py:38: the logo, or
   ``vLLM server version X, serving model M`` with VLLM_DISABLE_LOG_LOGO=1), ``non-default
   args: {...}`` (startup.py:96), then the **bind** (``setup_server``,
   vllm/entrypoints/launchers/launcher.py:373-380: before the engine, so a taken port fails at
   once: ``OSError: [Errno 98] Address already in use``, exit 1), then the engine config:
   ``Resolved architecture: ...`` (vllm/config/model.py:761), ``Using max model len N``
   (model.py:2214), ``Chunked prefill is enabled with max_num_batched_tokens=N.``
   (vllm/config/scheduler.py:354); a bad model, context or speculative config raises here
   (a traceback, exit 1).
2. Engine core: ``Initializing a V1 LLM engine (vX) with config: ...`` (vllm/v1/engine/core.py:153),
   ``Loading weights took X seconds`` (default_loader.py:543) per model, ``Model loading took X
   GiB memory and Y seconds`` (vllm/v1/worker/gpu/model_runner.py:441), ``Available KV cache
   memory: X GiB`` (vllm/v1/worker/gpu_worker.py:795), ``GPU KV cache size: N tokens, Maximum
   concurrency for L tokens per request: X.XXx`` (vllm/v1/core/kv_cache_utils.py:1168), ``Graph
   capturing finished in X secs, took Y GiB`` (model_runner.py:1216; none with
   ``--enforce-eager``; ``cudagraph_mode: NONE`` logs capture_model's warning, :1149), ``init
   engine (profile, create kv cache, warmup model) took X s`` (core.py:458). A failure is
   ``EngineCore failed to start.`` with its traceback (core.py:1757), then the API server's
   ``RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s):
   {'EngineCore_DP0': 1}`` (vllm/v1/engine/utils.py:1477-1486), exit 1.
3. API server: ``Supported tasks: ['generate']`` (vllm/entrypoints/launchers/api_server/entry.py:135),
   ``Starting vLLM server on http://H:P`` (entry.py:139), ``Available routes are:`` and a
   ``Route: P, Methods: M`` per route (launcher.py:188, :197), then uvicorn's start lines in
   uvicorn's own format (vLLM gives uvicorn no log config by default,
   vllm/entrypoints/launchers/utils/server_utils.py:32-69): ``INFO:     Application startup
   complete.`` is the ready line; ``/health`` answers 200 from then on.

Serving: ``GET /health`` (200; 503 once the engine is dead: vllm/entrypoints/serve/instrumentator/
health.py:22-33), ``/ping``, ``/version``, ``/v1/models``, ``POST /v1/completions``,
``/v1/chat/completions``, ``GET /metrics`` (always on, as vLLM's: vLLM's Prometheus names,
``vllm_metrics``). Every ``VLLM_LOG_STATS_INTERVAL`` seconds (10, vLLM's default,
vllm/envs.py:925-928) unless ``--disable-log-stats``: ``Engine 000: Avg prompt throughput: ...``
(vllm/v1/metrics/loggers.py:335) and, with speculation, ``SpecDecoding metrics: ...``
(vllm/v1/spec_decode/metrics.py:120); an idle interval logs nothing (loggers.py:280: DEBUG).

The engine core dying while serving (a fault: ``--debug-drop-verify-field positions``):
``EngineCore encountered a fatal error.`` + traceback (core.py:1759), ``AsyncLLM output_handler
failed.`` + ``vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See
stack trace (above) for the root cause.`` (vllm/v1/engine/async_llm.py:957,
exceptions.py:19-22), the requests in flight answered 500 with ``The server had an error while
processing your request.`` (vllm/entrypoints/serve/exception_handling/error_response.py:68-72),
then uvicorn's shutdown (the watchdog's ``should_exit``, launcher.py:326-338) and exit 1.
SIGTERM/SIGINT once serving: uvicorn's graceful stop, exit 0.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import traceback

from ddlab.target import openai_api
from ddlab.target.http_server import TargetHTTPServer, access_log, uvicorn_log, _UvicornFormatter
from ddlab.target.lifecycle import Stop
from ddlab.target.requests import BadRequest, Reply, json_reply
from ddlab.target.server import ServerState, _allowed, _bind
from ddlab.target.vllm_args import non_default_args, parse_vllm_args
from ddlab.target.vllm_lines import (API, CLIENT_MESSAGE, ENGINE, ENGINE_DEAD, VERSION, VllmFormatter,
                                     line, process)

__all__ = ["main", "EngineDeadError", "render_metrics"]

logger = logging.getLogger("ddlab.target")

_LOGO = ("\n       \u2588     \u2588     \u2588\u2584   \u2584\u2588\n"
         " \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version {v}\n"
         "  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   {m}\n"
         "   \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\u2580\u2580\u2580\u2580 \u2580     \u2580\n")


class EngineDeadError(Exception):
    """vLLM's ``EngineDeadError`` (vllm/v1/engine/exceptions.py:12-28), named as a traceback
    names it, so that the log reads as vLLM's."""


EngineDeadError.__module__ = "vllm.v1.engine.exceptions"


class VllmState(ServerState):
    def __init__(self, args):
        super().__init__(args)
        self.dead = False
        self.http = None


def setup_logging(args) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(VllmFormatter())
    logging.basicConfig(level="INFO", handlers=[handler], force=True)
    uv = logging.StreamHandler(sys.stderr)  # uvicorn's default format: no time, no prefix
    uv.setFormatter(_UvicornFormatter("%(levelprefix)s %(message)s"))
    level = "WARNING" if args.uvicorn_log_level in ("critical", "error", "warning") else "INFO"
    for log in (uvicorn_log, access_log):
        log.handlers[:] = [uv]
        log.setLevel(level)
        log.propagate = False
    if args.disable_uvicorn_access_log:
        access_log.setLevel("WARNING")


def _log(text, src, proc=API, level=logging.INFO, exc_info=None):
    logger.log(level, line(text, src, proc), exc_info=exc_info)


def _api_config(args) -> None:
    """What the API server's ``create_engine_config`` checks and logs (raises as vLLM's)."""
    from ddlab.target.checkpoint import read_config
    from ddlab.target.log_lines import generation

    config = read_config(args.model_path)
    if getattr(args, "vllm_spec_error", None) is not None:
        raise args.vllm_spec_error
    _log(f"Resolved architecture: {config.get('architecture', 'DdlabTinyForCausalLM')}", "model.py:761")
    derived = config["context_length"]
    asked = args.context_length
    if asked and asked > derived:
        words = generation("vllm")
        warning, error = words.longer_context(asked, derived)
        if os.environ.get(words.longer_context_env, "0").lower() not in words.truthy:
            raise ValueError(error)
        _log(warning, "model.py:2722", level=logging.WARNING)
    _log(f"Using max model len {asked or derived}", "model.py:2214")
    if args.speculative_draft_model_path:
        read_config(args.speculative_draft_model_path)
    _log(f"Chunked prefill is enabled with max_num_batched_tokens={args.chunked_prefill_size}.",
         "scheduler.py:354")


def _engine_config_text(args) -> str:
    """``VllmConfig.__str__``'s leading fields (vllm/config/vllm.py:2890-2925), the target's values."""
    spec = None
    if args.spec_method:
        model = None if args.spec_method == "ngram" else (args.speculative_draft_model_path or
                                                          "ddlab-tiny-drafter")
        spec = (f"SpeculativeConfig(method={args.spec_method!r}, model={model!r}, "
                f"num_spec_tokens={args.num_speculative_tokens})")
    mode = "NONE" if args.disable_cuda_graph else (args.cudagraph_mode or "FULL_AND_PIECEWISE")
    return (f"model={args.model_path!r}, speculative_config={spec}, tokenizer={args.model_path!r}, "
            f"dtype=torch.float32, max_seq_len={args.context_length or 320}, "
            f"tensor_parallel_size=1, enforce_eager={args.enforce_eager}, device_config={args.device}, "
            f"seed={args.random_seed}, served_model_name={args.served_model_name or args.model_path}, "
            f"enable_prefix_caching=False, enable_chunked_prefill=True, "
            f"compilation_config={{'cudagraph_mode': <CUDAGraphMode.{mode}>, "
            f"'cudagraph_capture_sizes': {args.cuda_graph_bs_decode or [1, 2, 4, 8]}}}")


def _start_engine(state) -> bool:
    from ddlab.target.engine import Engine

    args, t0 = state.args, time.time()
    process.name = ENGINE
    try:
        _log(f"Initializing a V1 LLM engine (v{VERSION}) with config: {_engine_config_text(args)}",
             "core.py:153", ENGINE)
        state.engine = Engine(args)
        if args.cudagraph_mode == "NONE" and not args.enforce_eager:
            _log("Skipping encoder and decoder CUDA graph capture. To enable encoder capture, ensure "
                 "`cudagraph_mm_encoder` is enabled; to enable decoder capture, ensure "
                 "`cudagraph_mode` is not `NONE`.", "model_runner.py:1149", ENGINE, logging.WARNING)
        _log(f"init engine (profile, create kv cache, warmup model) took {time.time() - t0:.2f} s",
             "core.py:458", ENGINE)
        return True
    except Exception:
        _log("EngineCore failed to start.", "core.py:1757", ENGINE, logging.ERROR, exc_info=True)
        return False
    finally:
        process.name = API


def _routes(state) -> dict:
    def guarded(handler):
        def run(body):
            if state.dead:
                raise _Dead()
            reply = handler(body)
            if state.dead:
                raise _Dead()
            return reply
        return run

    return {
        ("GET", "/health"): lambda _: Reply(status=503 if state.dead else 200),
        ("GET", "/ping"): lambda _: Reply(status=503 if state.dead else 200),
        ("POST", "/ping"): lambda _: Reply(status=503 if state.dead else 200),
        ("GET", "/version"): lambda _: json_reply({"version": VERSION}),
        ("GET", "/v1/models"): lambda _: json_reply(_models(state)),
        ("GET", "/metrics"): lambda _: Reply(body=render_metrics(state).encode(),
                                             content_type="text/plain; version=0.0.4; charset=utf-8"),
        ("POST", "/v1/completions"): guarded(lambda body: openai_api.completions(state, body, chat=False)),
        ("POST", "/v1/chat/completions"): guarded(
            lambda body: openai_api.completions(state, body, chat=True)),
    }


class _Dead(BadRequest):
    def __init__(self):
        super().__init__(CLIENT_MESSAGE, 500)


def _models(state) -> dict:
    ctx = state.engine.context_len if state.engine else None
    return {"object": "list", "data": [{
        "id": state.name, "object": "model", "created": state.created, "owned_by": "vllm",
        "root": state.args.model_path, "parent": None, "max_model_len": ctx,
        "permission": [{"id": f"modelperm-{state.created:x}", "object": "model_permission",
                        "created": state.created, "allow_create_engine": False,
                        "allow_sampling": True, "allow_logprobs": True, "allow_search_indices": False,
                        "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                        "group": None, "is_blocking": False}]}]}


def _bad_request(path: str, exc: BadRequest) -> Reply:
    """vLLM's ``ErrorResponse`` (vllm/entrypoints/serve/exception_handling/error_response.py:14-72)."""
    kind = "InternalServerError" if exc.status >= 500 else "BadRequestError"
    return json_reply({"error": {"message": str(exc), "type": kind, "param": None, "code": exc.status}},
                      exc.status)


# --- metrics -------------------------------------------------------------------------------

def render_metrics(state) -> str:
    """Prometheus text under vLLM 0.34.0's names (vllm/v1/metrics/loggers.py:499-961,
    vllm/v1/spec_decode/metrics.py:229-258), labels ``model_name`` and ``engine``, counters with
    prometheus_client's ``_total``."""
    eng, name = state.engine, state.name
    lab = f'model_name="{name}",engine="0"'
    out = []

    def metric(mname, kind, doc, samples):
        out.extend([f"# HELP {mname} {doc}", f"# TYPE {mname} {kind}"])
        out.extend(f"{mname}{{{lab}{extra}}} {float(v)}" for extra, v in samples)

    if eng is None:
        return ""
    m, k = eng.metrics, eng.spec.num_draft_slots
    metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
           [("", m.num_running)])
    metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           [("", m.num_queue)])
    metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
           [("", m.token_usage)])
    metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
           [("", m.prompt_tokens)])
    metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           [("", m.generation_tokens)])
    metric("vllm:request_success_total", "counter", "Count of successfully processed requests.",
           [(f',finished_reason="{r}"', m.finished_by_reason.get(r, 0))
            for r in ("stop", "length", "abort", "error", "repetition")])
    if state.args.spec_method:
        metric("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.",
               [("", m.num_drafts)])
        metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
               [("", m.num_draft_tokens)])
        metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
               [("", m.num_accepted_tokens)])
        per_pos = m.accepted_per_pos + [0] * (k - len(m.accepted_per_pos))
        metric("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
               "Accepted tokens per draft position.",
               [(f',position="{p}"', per_pos[p]) for p in range(k)])
    for mname, h, doc in (("vllm:time_to_first_token_seconds", m.ttft, "Histogram of time to first token in seconds."),
                          ("vllm:inter_token_latency_seconds", m.itl, "Histogram of inter-token latency in seconds."),
                          ("vllm:e2e_request_latency_seconds", m.e2e, "Histogram of e2e request latency in seconds.")):
        out.extend([f"# HELP {mname} {doc}", f"# TYPE {mname} histogram"])
        out.extend(h.lines(mname, lab))
    return "\n".join(out) + "\n"


class _StatsLogger:
    """vLLM's ``LoggingStatLogger`` (vllm/v1/metrics/loggers.py:113-346) and
    ``SpecDecodingLogging`` (vllm/v1/spec_decode/metrics.py:52-135), over the engine's counters."""

    def __init__(self, state, interval_s: float):
        self.state, self.interval_s = state, interval_s
        self.last = self._snapshot()
        self.last_t = time.monotonic()
        self.last_throughputs = (0.0, 0.0)

    def _snapshot(self):
        m = self.state.engine.metrics
        return (m.prompt_tokens, m.generation_tokens, m.num_drafts, m.num_draft_tokens,
                m.num_accepted_tokens, list(m.accepted_per_pos))

    def run(self):
        while not self.state.dead:
            time.sleep(self.interval_s)
            self.log()

    def log(self):
        eng, now, snap = self.state.engine, time.monotonic(), self._snapshot()
        dt = max(now - self.last_t, 1e-9)
        prompt_tp, gen_tp = (snap[0] - self.last[0]) / dt, (snap[1] - self.last[1]) / dt
        idle = not any((prompt_tp, gen_tp, *self.last_throughputs))
        drafts, drafted, accepted = (snap[i] - self.last[i] for i in (2, 3, 4))
        per_pos = [a - (self.last[5][i] if i < len(self.last[5]) else 0) for i, a in enumerate(snap[5])]
        self.last, self.last_t, self.last_throughputs = snap, now, (prompt_tp, gen_tp)
        if idle:
            return  # loggers.py:280: an idle engine logs at DEBUG
        device = "GPU" if eng.runner.device.type == "cuda" else eng.runner.device.type.upper()
        _log(f"Engine 000: Avg prompt throughput: {prompt_tp:.1f} tokens/s, Avg generation throughput: "
             f"{gen_tp:.1f} tokens/s, Running: {len(eng.running)} reqs, Waiting: {len(eng.waiting)} reqs, "
             f"{device} KV cache usage: {eng.metrics.token_usage * 100:.1f}%", "loggers.py:335")
        if drafts:
            k = eng.spec.num_draft_slots
            rates = ", ".join(f"{(per_pos[i] if i < len(per_pos) else 0) / drafts:.3f}" for i in range(k))
            rate = f"{accepted / drafted * 100:.1f}" if drafted else "nan"
            _log(f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
                 f"Accepted throughput: {accepted / dt:.2f} tokens/s, Drafted throughput: "
                 f"{drafted / dt:.2f} tokens/s, Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
                 f"Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {rate}%",
                 "metrics.py:120")


# --- the process ---------------------------------------------------------------------------

def _engine_died(state) -> None:
    """The engine core's thread died (its line is logged): the API server's output handler
    fails, the requests in flight get 500, and the watchdog stops uvicorn."""
    state.dead = True
    try:
        raise EngineDeadError(ENGINE_DEAD)
    except EngineDeadError:
        _log("AsyncLLM output_handler failed.", "async_llm.py:957", API, logging.ERROR, exc_info=True)
    eng = state.engine
    with eng.cond:
        reqs = [*eng.waiting, *eng.running]
    for req in reqs:
        if req.finish_reason is None:
            req.finish_reason = {"type": "abort", "message": CLIENT_MESSAGE}
            if req.on_event:
                req.on_event(req, [])

    def stop():
        time.sleep(0.3)  # the 500s go out first (the handler returns before the server stops)
        if state.http is not None:
            state.http.shutdown()
    threading.Thread(target=stop, name="watchdog", daemon=True).start()


def main(argv=None, prog="python -m ddlab.target --dialect vllm") -> int:
    args = parse_vllm_args(argv, prog)
    setup_logging(args)
    state = VllmState(args)
    pid = os.getpid()
    if os.environ.get("VLLM_DISABLE_LOG_LOGO", "0") not in ("", "0"):
        _log(f"vLLM server version {VERSION}, serving model {args.model_path}", "startup.py:38")
    else:
        _log(_LOGO.format(v=VERSION, m=args.model_path), "startup.py:38")
    _log(f"non-default args: {non_default_args_of(args)}", "startup.py:96")
    try:
        sock = _bind(args.host, args.port)
    except OSError as e:  # setup_server's bind, before the engine (launcher.py:373-380)
        traceback.print_exception(OSError(e.errno, os.strerror(e.errno)))
        return 1
    try:
        _api_config(args)
    except Exception:
        traceback.print_exc()
        return 1
    if not _start_engine(state):
        try:
            raise RuntimeError("Engine core initialization failed. See root cause above. "
                               "Failed core proc(s): {'EngineCore_DP0': 1}")
        except RuntimeError:
            traceback.print_exc()
        return 1
    state.ready = True
    threading.Thread(target=state.engine.run_forever, args=(lambda: _engine_died(state),),
                     name="scheduler", daemon=True).start()
    host = args.host or "0.0.0.0"
    _log("Supported tasks: ['generate']", "entry.py:135")
    _log(f"Starting vLLM server on http://{f'[{host}]' if ':' in host else host}:{args.port}", "entry.py:139")
    routes = _routes(state)
    _log("Available routes are:", "launcher.py:188")
    for method, path in routes:
        _log(f"Route: {path}, Methods: {method}", "launcher.py:197")
    uvicorn_log.info("Started server process [%d]", pid)
    uvicorn_log.info("Waiting for application startup.")
    state.http = TargetHTTPServer(sock, routes, bad_request=_bad_request,
                                  allowed=lambda method, path, auth: _allowed(method, path, auth,
                                                                              args.api_key))
    uvicorn_log.info("Application startup complete.")
    interval = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10") or 10)
    if not args.disable_log_stats and interval > 0:
        threading.Thread(target=_StatsLogger(state, interval).run, name="stats", daemon=True).start()
    _install_signals(state)
    try:
        state.http.serve_forever(poll_interval=0.5)
    except Stop:
        _uvicorn_stop(state, pid)
        return 0
    _uvicorn_stop(state, pid)  # the watchdog stopped it: the engine is dead
    return 1


def non_default_args_of(args) -> dict:
    import argparse

    return non_default_args(argparse.Namespace(**args.vllm))


def _uvicorn_stop(state, pid) -> None:
    uvicorn_log.info("Shutting down")
    state.http.server_close()
    uvicorn_log.info("Waiting for application shutdown.")
    uvicorn_log.info("Application shutdown complete.")
    uvicorn_log.info("Finished server process [%d]", pid)
    logging.shutdown()


def _install_signals(state) -> None:
    """uvicorn's handlers once serving: SIGTERM / SIGINT stop it gracefully (exit 0)."""
    def stop(signum, frame):
        if getattr(state, "stopping", False):
            return
        state.stopping = True
        raise Stop(signum, drain=False)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, stop)

