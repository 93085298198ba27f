"""The target's HTTP server: SGLang's endpoints over the engine (FastAPI + uvicorn).

Contract (shapes as docs/sglang.md, section 5 "HTTP shapes", gives them):

- ``GET /health``, ``/health_generate``: 503 while starting; once ready, a
  real 1-token generation (20 s bound), then 200 with an empty body.
- ``GET /v1/models``; ``POST /generate`` (text or input_ids, one or a list;
  ``stream``: SSE ``data: {...}`` chunks with the text so far, then
  ``data: [DONE]``); ``POST /v1/completions``, ``/v1/chat/completions``
  (``openai_api``); ``GET /server_info`` and ``/get_server_info``;
  ``GET /metrics`` with ``--enable-metrics``.
- Bad requests get a 4xx JSON error and the server stays up. Only greedy
  decoding exists here: a temperature above 0 is refused, not ignored.

``main(argv)`` is ``python -m ddlab.target``: it logs what SGLang's launcher
logs first (deprecated flags, the ``server_args=`` line, in the words of
``--log-format``), binds the port (so a busy port fails at once, in uvicorn's
words), starts uvicorn, and builds the engine in a startup thread: SGLang's
startup lines, the warmup request through HTTP, then ``The server is fired up
and ready to roll!``. Any startup
or scheduler exception is logged with its traceback and the process exits 1
at once: no half-alive server answering 500s.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
import traceback

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from ddlab.target import openai_api
from ddlab.target.args import parse_command_line
from ddlab.target.engine import Engine, Req
from ddlab.target.log_lines import generation
from ddlab.target.requests import BadRequest, decode_text, make_req

__all__ = ["main", "build_app", "ServerState"]

logger = logging.getLogger("ddlab.target")
READY_LINE = "The server is fired up and ready to roll!"


class ServerState:
    def __init__(self, args):
        self.args, self.engine, self.ready = args, None, False
        self.words = generation(args.log_format)
        self.name = args.served_model_name or args.model_path
        self.created = int(time.time())
        self.loop = None

    def require_engine(self) -> Engine:
        if self.engine is None:
            raise BadRequest("The server is not ready yet (still starting); poll /health", 503)
        return self.engine

    async def run(self, req: Req):
        """Submit ``req``; yields the request after each scheduler update until finished."""
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        req.on_event = lambda r, ids: loop.call_soon_threadsafe(queue.put_nowait, r.finish_reason is not None)
        self.require_engine().submit(req)
        while True:
            done = await queue.get()
            yield req
            if done:
                return


def _result(state, req) -> dict:
    done = req.finish_reason is not None
    return {"text": decode_text(req.output_ids, done), "output_ids": list(req.output_ids),
            "meta_info": req.meta_info(state.engine.spec.block_size)}


async def _generate(state: ServerState, body: dict):
    engine = state.require_engine()
    text, ids = body.get("text"), body.get("input_ids")
    if (text is None) == (ids is None):
        raise BadRequest("give exactly one of 'text' and 'input_ids'")
    prompt = text if text is not None else ids
    batch = isinstance(prompt, list) and prompt and not isinstance(prompt[0], int)
    sp = body.get("sampling_params") or {}
    if not isinstance(sp, dict):
        raise BadRequest("sampling_params must be an object")
    if batch and body.get("stream"):
        raise BadRequest("stream=true takes one prompt, not a list")
    reqs = [make_req(engine, p, sp) for p in (prompt if batch else [prompt])]
    if body.get("stream"):
        return StreamingResponse(_sse(state, reqs[0]), media_type="text/event-stream")
    results = await asyncio.gather(*(_collect(state, r) for r in reqs))
    return JSONResponse(results if batch else results[0])


async def _collect(state, req):
    async for _ in state.run(req):
        pass
    return _result(state, req)


async def _sse(state, req):
    try:
        async for r in state.run(req):
            yield f"data: {json.dumps(_result(state, r))}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        if req.finish_reason is None:
            state.engine.abort(req)


async def _health(state: ServerState):
    if not state.ready:
        return Response(status_code=503)
    req = Req(list(b"ping"), 1)
    try:
        await asyncio.wait_for(_collect(state, req), timeout=20)
    except asyncio.TimeoutError:
        return Response(status_code=503)
    return Response(status_code=200)


def _server_info(state: ServerState) -> dict:
    eng, internal = state.engine, {}
    if eng is not None:
        m, r = eng.metrics, eng.runner
        internal = {"last_gen_throughput": m.gen_throughput,
                    "memory_usage": {"weight": round(r.weight_gb, 4), "kvcache": round(r.kv_gb, 4),
                                     "token_capacity": eng.pool.capacity_tokens,
                                     "graph": round(r.graph_mem_gb, 4)}}
        if eng.spec.algorithm and m.avg_spec_accept_length is not None:
            internal["avg_spec_accept_length"] = m.avg_spec_accept_length
    from ddlab.core.version import __version__
    return {**state.words.args_view(state.args), "version": f"ddlab-target {__version__}",
            "status": "ready" if state.ready else "starting", "internal_states": [internal]}


def _allowed(request: Request, api_key: str | None) -> bool:
    """SGLang's rule for its normal endpoints (0.5.23 sglang/srt/utils/auth.py:97-150):
    health, readiness and metrics are open; with --api-key set everything else needs
    ``Authorization: Bearer KEY``."""
    path = request.url.path
    if not api_key or request.method == "OPTIONS" or path.startswith(("/health", "/ready",
                                                                      "/metrics")):
        return True
    scheme, _, token = (request.headers.get("Authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(token.encode(), api_key.encode())


def build_app(state: ServerState) -> FastAPI:

    app = FastAPI(title="ddlab target", docs_url=None, redoc_url=None)

    @app.middleware("http")
    async def _api_key(request: Request, call_next):
        if _allowed(request, state.args.api_key):
            return await call_next(request)
        return JSONResponse({"error": "Unauthorized"}, status_code=401)

    @app.exception_handler(BadRequest)
    async def _bad(request: Request, exc: BadRequest):
        if request.url.path.startswith("/v1/"):
            return JSONResponse({"object": "error", "message": str(exc), "type": "BadRequestError",
                                 "param": None, "code": exc.status}, status_code=exc.status)
        return JSONResponse({"error": {"message": str(exc), "code": exc.status}}, status_code=exc.status)

    async def body_of(request: Request) -> dict:
        try:
            body = await request.json()
        except ValueError as e:
            raise BadRequest(f"the body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        return body

    @app.get("/health")
    @app.get("/health_generate")
    async def health():
        return await _health(state)

    app.get("/v1/models")(lambda: openai_api.models(state))
    app.get("/server_info")(lambda: _server_info(state))
    app.get("/get_server_info")(lambda: _server_info(state))

    @app.post("/generate")
    async def generate(request: Request):
        return await _generate(state, await body_of(request))

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await openai_api.completions(state, await body_of(request), chat=False)

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await openai_api.completions(state, await body_of(request), chat=True)

    @app.get("/metrics")
    async def metrics():
        if not state.args.enable_metrics or state.engine is None:
            return JSONResponse({"detail": "Not Found: start the server with --enable-metrics"}, 404)
        return PlainTextResponse(state.engine.metrics.render(state.name),
                                 media_type="text/plain; version=0.0.4")

    return app


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="[%(asctime)s] %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stderr, force=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the warmup's own request line


def die(code: int = 1) -> None:
    """Exit the whole process now (a dead scheduler must not leave the HTTP server up)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _startup(state: ServerState, server: uvicorn.Server) -> None:
    try:
        state.engine = Engine(state.args)
    except BaseException:
        logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        die(1)
    threading.Thread(target=state.engine.run_forever, args=(die,), name="scheduler", daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    if not state.args.skip_server_warmup:
        try:
            _warmup(state.args)
        except BaseException:
            logger.error(f"Initialization failed. warmup error: {traceback.format_exc()}")
            die(1)
    state.ready = True
    logger.info(READY_LINE)


def _warmup(args) -> None:
    """SGLang's warmup: one prefill-only (1-token) generation through HTTP."""
    host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    body = {"text": "The capital city of France is",
            "sampling_params": {"temperature": 0, "max_new_tokens": 1}}
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    r = httpx.post(f"http://{host}:{args.port}/generate", json=body, headers=headers, timeout=600)
    r.raise_for_status()


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        print(f"ERROR:    [Errno {e.errno}] error while attempting to bind on address "
              f"('{host}', {port}): {e.strerror.lower()}", file=sys.stderr, flush=True)
        die(1)
    return sock


def _log_launch(args, deprecations) -> None:
    """The launcher's lines, before the scheduler's: deprecated flags, notes, the server args."""
    words = generation(args.log_format)
    for line in deprecations:
        logger.warning(line)
    for line in (*words.launch_notes(args), words.server_args(args)):
        logger.info(line)


def main(argv=None, prog="python -m ddlab.target") -> int:
    args, warnings = parse_command_line(argv, prog)
    setup_logging(args.log_level)
    _log_launch(args, warnings)
    sock = _bind(args.host, args.port)
    state = ServerState(args)
    config = uvicorn.Config(build_app(state), log_level=args.log_level_http, timeout_keep_alive=5,
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    threading.Thread(target=_startup, args=(state, server), name="startup", daemon=True).start()
    server.run(sockets=[sock])
    return 0
