"""``python -m ddlab.target --dialect vllm``: the target behind vLLM 0.34.0's API, metrics and log lines.

Contract: ``main(argv)`` runs the same engine as the SGLang dialect (the same greedy, lossless
tokens) in vLLM's order and words (docs/target.md, "vLLM dialect", cites each line): the API
server's version, non-default args and **bind** (a busy port fails before the engine,
vllm/entrypoints/launchers/launcher.py:373-380), its engine config (a bad model, length or
speculative config raises here, exit 1); the engine core's startup (a failure is ``EngineCore
failed to start.`` + traceback, then ``RuntimeError: Engine core initialization failed. ...``,
exit 1); the routes and uvicorn's start (``Application startup complete.``: ready, /health 200).
Serving: /health, /ping, /version, /v1/models, /v1/completions, /v1/chat/completions, /metrics
(``vllm_metrics``), the stats lines every ``VLLM_LOG_STATS_INTERVAL`` s. The engine core dying
while serving: its ``EngineCore encountered a fatal error.``, the API server's ``AsyncLLM
output_handler failed.`` with ``EngineDeadError``, 500 to the requests in flight, uvicorn's
shutdown, exit 1. SIGTERM / SIGINT once serving: uvicorn's graceful stop, exit 0.
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
from ddlab.target.vllm_args import non_default_args
from ddlab.target.vllm_lines import (API, CLIENT_MESSAGE, ENGINE, ENGINE_DEAD, VERSION, VllmFormatter,
                                     log_line, process)
from ddlab.target.vllm_metrics import StatsLogger, render_metrics

__all__ = ["main"]

logger = logging.getLogger("ddlab.target")

_LOGO = ("\n       \u2588     \u2588     \u2588\u2584   \u2584\u2588\n"
         " \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version {v}\n"
         "  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   {m}\n"
         "   \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\u2580\u2580\u2580\u2580 \u2580     \u2580\n")


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


def _api_config(args) -> None:
    """What the API server's ``create_engine_config`` checks and logs (raises as vLLM's)."""
    from ddlab.target.checkpoint import read_config
    from ddlab.target.log_lines import generation

    config = read_config(args.model_path)
    if args.vllm_spec_error is not None:
        raise args.vllm_spec_error
    log_line(f"Resolved architecture: {config.get('architecture', 'DdlabTinyForCausalLM')}", "model.py:761")
    derived = config["context_length"]
    asked = args.context_length
    if asked and asked > derived:
        words = generation("vllm")
        warning, error = words.longer_context(asked, derived)
        if os.environ.get(words.longer_context_env, "0").lower() not in words.truthy:
            raise ValueError(error)
        log_line(warning, "model.py:2722", level=logging.WARNING)
    log_line(f"Using max model len {asked or derived}", "model.py:2214")
    if args.speculative_draft_model_path:
        read_config(args.speculative_draft_model_path)
    log_line(f"Chunked prefill is enabled with max_num_batched_tokens={args.chunked_prefill_size}.",
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
        log_line(f"Initializing a V1 LLM engine (v{VERSION}) with config: {_engine_config_text(args)}",
             "core.py:153", ENGINE)
        state.engine = Engine(args)
        if args.cudagraph_mode == "NONE" and not args.enforce_eager:
            log_line("Skipping encoder and decoder CUDA graph capture. To enable encoder capture, ensure "
                 "`cudagraph_mm_encoder` is enabled; to enable decoder capture, ensure "
                 "`cudagraph_mode` is not `NONE`.", "model_runner.py:1149", ENGINE, logging.WARNING)
        log_line(f"init engine (profile, create kv cache, warmup model) took {time.time() - t0:.2f} s",
             "core.py:458", ENGINE)
        return True
    except Exception:
        log_line("EngineCore failed to start.", "core.py:1757", ENGINE, logging.ERROR, exc_info=True)
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


# --- the process ---------------------------------------------------------------------------

def _engine_died(state) -> None:
    """The engine core's thread died (its line is logged): the API server's output handler
    fails, the requests in flight get 500, and the watchdog stops uvicorn."""
    from ddlab.target.vllm_graphs import output_handler_traceback

    state.dead = True
    log_line(f"AsyncLLM output_handler failed.\n{output_handler_traceback(ENGINE_DEAD)}", "async_llm.py:957",
             API, logging.ERROR)
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


def main(args) -> int:
    """The server for parsed flags (``vllm_args.parse_vllm_args``, parsed before this module
    imports torch, as for ``server.main``)."""
    setup_logging(args)
    state = VllmState(args)
    pid = os.getpid()
    if os.environ.get("VLLM_DISABLE_LOG_LOGO", "0") not in ("", "0"):
        log_line(f"vLLM server version {VERSION}, serving model {args.model_path}", "startup.py:38")
    else:
        log_line(_LOGO.format(v=VERSION, m=args.model_path), "startup.py:38")
    log_line(f"non-default args: {non_default_args_of(args)}", "startup.py:96")
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
    log_line("Supported tasks: ['generate']", "entry.py:135")
    log_line(f"Starting vLLM server on http://{f'[{host}]' if ':' in host else host}:{args.port}", "entry.py:139")
    routes = _routes(state)
    log_line("Available routes are:", "launcher.py:188")
    for method, path in routes:
        log_line(f"Route: {path}, Methods: {method}", "launcher.py:197")
    uvicorn_log.info("Started server process [%d]", pid)
    uvicorn_log.info("Waiting for application startup.")
    state.http = TargetHTTPServer(sock, routes, bad_request=_bad_request,
                                  allowed=lambda method, path, auth: _allowed(method, path, auth,
                                                                              args.api_key))
    _install_signals(state)  # before the ready line: a SIGTERM right after it stops gracefully
    try:
        uvicorn_log.info("Application startup complete.")
        interval = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10") or 10)
        if not args.disable_log_stats and interval > 0:
            threading.Thread(target=StatsLogger(state, interval).run, name="stats", daemon=True).start()
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

