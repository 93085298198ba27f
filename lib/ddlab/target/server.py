"""The target's HTTP server: SGLang's endpoints over the engine (served by
:mod:`ddlab.target.http_server`).

Contract (shapes as docs/sglang.md, section 5 "HTTP shapes", gives them):

- ``GET /health``, ``/health_generate``: 503 while starting; once ready, a
  real 1-token generation (20 s bound), then 200 with an empty body.
- ``GET /v1/models``; ``POST /generate`` (text or input_ids, one or a list;
  ``stream``: SSE ``data: {...}`` chunks with the text so far, then
  ``data: [DONE]``); ``POST /v1/completions``, ``/v1/chat/completions``
  (``openai_api``); ``GET /server_info`` and ``/get_server_info``;
  ``GET /metrics`` with ``--enable-metrics``.
- Bad requests get a 4xx JSON error and the server stays up; an unknown path is
  404 and a known path asked with the wrong method 405, in FastAPI's words
  (``{"detail": "Not Found"}``), as SGLang answers. Only greedy decoding exists
  here: a temperature above 0 is refused, not ignored.
- HTTP/1.1 with keep-alive; a stream is sent chunked; a client that goes away
  mid-stream aborts its request (``http_server``).

``main(argv)`` is ``python -m ddlab.target``: it logs what SGLang's launcher
logs first (deprecated flags, the ``server_args=`` line, in the words of
``--log-format``), binds the port (so a busy port fails at once, in uvicorn's
words), starts serving, and builds the engine in a startup thread: SGLang's
startup lines, the warmup request through HTTP, then ``The server is fired up
and ready to roll!``. Any startup or scheduler exception is logged with its
traceback and the process exits 1 at once: no half-alive server answering 500s.
SIGTERM and SIGINT stop serving, then end the process by that signal, as uvicorn
does. With ``--log-level-http info`` (or debug) it prints uvicorn's start-up and
access lines, which SGLang's logs carry.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import queue
import secrets
import signal
import socket
import sys
import threading
import time
import traceback

from ddlab.target import openai_api
from ddlab.target.args import parse_command_line
from ddlab.target.engine import Engine, Req
from ddlab.target.http_server import TargetHTTPServer
from ddlab.target.log_lines import generation
from ddlab.target.requests import BadRequest, Reply, decode_text, json_reply, make_req, stream_reply

__all__ = ["main", "ServerState"]

logger = logging.getLogger("ddlab.target")
READY_LINE = "The server is fired up and ready to roll!"


class ServerState:
    def __init__(self, args):
        self.args, self.engine, self.ready = args, None, False
        self.words = generation(args.log_format)
        self.name = args.served_model_name or args.model_path
        self.created = int(time.time())

    def require_engine(self) -> Engine:
        if self.engine is None:
            raise BadRequest("The server is not ready yet (still starting); poll /health", 503)
        return self.engine

    def submit(self, *reqs: Req) -> list[queue.SimpleQueue]:
        """Hand ``reqs`` to the scheduler in one step; a queue each, which gets one item
        per scheduler update of its request (True with the last one, when it finished)."""
        engine, queues = self.require_engine(), []
        for req in reqs:
            updates: queue.SimpleQueue = queue.SimpleQueue()
            req.on_event = lambda r, ids, updates=updates: updates.put(r.finish_reason is not None)
            queues.append(updates)
        engine.submit_all(reqs)
        return queues

    def run(self, req: Req, timeout_s: float | None = None):
        """Submit ``req``; yields it after each scheduler update until finished. Past
        ``timeout_s`` it is aborted and ``TimeoutError`` raised."""
        yield from self.follow(req, self.submit(req)[0], timeout_s)

    def follow(self, req: Req, updates: queue.SimpleQueue, timeout_s: float | None = None):
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                done = updates.get(timeout=None if deadline is None
                                   else max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.engine.abort(req)
                raise TimeoutError(f"request {req.rid}: no answer within {timeout_s:g} s") from None
            yield req
            if done:
                return


def _result(state, req) -> dict:
    done = req.finish_reason is not None
    return {"text": decode_text(req.output_ids, done), "output_ids": list(req.output_ids),
            "meta_info": req.meta_info(state.engine.spec.block_size)}


def _generate(state: ServerState, body: dict) -> Reply:
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
        return stream_reply(_sse(state, reqs[0]))
    for req, updates in zip(reqs, state.submit(*reqs)):  # all in at once: one batch
        for _ in state.follow(req, updates):
            pass
    results = [_result(state, req) for req in reqs]
    return json_reply(results if batch else results[0])


def _sse(state, req):
    try:
        for r in state.run(req):
            yield f"data: {json.dumps(_result(state, r))}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        if req.finish_reason is None:
            state.engine.abort(req)


def _health(state: ServerState) -> Reply:
    if not state.ready:
        return Reply(status=503)
    try:
        for _ in state.run(Req(list(b"ping"), 1), timeout_s=20):
            pass
    except TimeoutError:
        return Reply(status=503)
    return Reply(status=200)


def _server_info(state: ServerState) -> Reply:
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
    return json_reply({**state.words.args_view(state.args), "version": f"ddlab-target {__version__}",
                       "status": "ready" if state.ready else "starting",
                       "internal_states": [internal]})


def _metrics(state: ServerState) -> Reply:
    if not state.args.enable_metrics or state.engine is None:
        return json_reply({"detail": "Not Found: start the server with --enable-metrics"}, 404)
    return Reply(body=state.engine.metrics.render(state.name).encode(),
                 content_type="text/plain; version=0.0.4; charset=utf-8")


def _allowed(method: str, path: str, authorization: str | None, api_key: str | None) -> bool:
    """SGLang's rule for its normal endpoints (0.5.23 sglang/srt/utils/auth.py:97-150):
    health, readiness and metrics are open; with --api-key set everything else needs
    ``Authorization: Bearer KEY``."""
    if not api_key or method == "OPTIONS" or path.startswith(("/health", "/ready", "/metrics")):
        return True
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(token.encode(), api_key.encode())


def _routes(state: ServerState) -> dict:
    """(method, path) -> handler(body) -> Reply; POST handlers get the JSON body."""
    return {
        ("GET", "/health"): lambda _: _health(state),
        ("GET", "/health_generate"): lambda _: _health(state),
        ("GET", "/v1/models"): lambda _: json_reply(openai_api.models(state)),
        ("GET", "/server_info"): lambda _: _server_info(state),
        ("GET", "/get_server_info"): lambda _: _server_info(state),
        ("GET", "/metrics"): lambda _: _metrics(state),
        ("POST", "/generate"): lambda body: _generate(state, body),
        ("POST", "/v1/completions"): lambda body: openai_api.completions(state, body, chat=False),
        ("POST", "/v1/chat/completions"): lambda body: openai_api.completions(state, body, chat=True),
    }


def _bad_request(path: str, exc: BadRequest) -> Reply:
    if path.startswith("/v1/"):
        return json_reply({"object": "error", "message": str(exc), "type": "BadRequestError",
                           "param": None, "code": exc.status}, exc.status)
    return json_reply({"error": {"message": str(exc), "code": exc.status}}, exc.status)


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="[%(asctime)s] %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stderr, force=True)


def die(code: int = 1) -> None:
    """Exit the whole process now (a dead scheduler must not leave the HTTP server up)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _startup(state: ServerState) -> None:
    try:
        state.engine = Engine(state.args)
    except BaseException:
        logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        die(1)
    threading.Thread(target=state.engine.run_forever, args=(die,), name="scheduler", daemon=True).start()
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
    body = json.dumps({"text": "The capital city of France is",
                       "sampling_params": {"temperature": 0, "max_new_tokens": 1}})
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = f"Bearer {args.api_key}"
    conn = http.client.HTTPConnection(host.strip("[]"), args.port, timeout=600)
    try:
        conn.request("POST", "/generate", body=body, headers=headers)
        reply = conn.getresponse()
        text = reply.read().decode("utf-8", errors="replace")
    finally:
        conn.close()
    if reply.status != 200:
        raise RuntimeError(f"warmup: POST /generate answered {reply.status}: {text[:500]}")


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
    server = TargetHTTPServer(
        sock, _routes(state), log_level_http=args.log_level_http,
        allowed=lambda method, path, auth: _allowed(method, path, auth, args.api_key),
        bad_request=_bad_request)
    stopped_by = _stop_on_signals()
    try:
        if server.access_log:  # uvicorn's start-up lines, as SGLang's logs carry them
            url = f"http://{args.host}:{args.port}"
            for line in (f"Started server process [{os.getpid()}]", "Waiting for application startup.",
                         "Application startup complete.",
                         f"Uvicorn running on {url} (Press CTRL+C to quit)"):
                print(f"INFO:     {line}", file=sys.stderr, flush=True)
        threading.Thread(target=_startup, args=(state,), name="startup", daemon=True).start()
        server.serve_forever(poll_interval=0.5)
    except _Stopped:
        pass
    finally:
        server.server_close()
    if stopped_by:  # ended by the signal, as uvicorn ends (it raises the signal it caught again)
        logging.shutdown()
        signal.signal(stopped_by[0], signal.SIG_DFL)
        signal.raise_signal(stopped_by[0])
    return 0


class _Stopped(Exception):
    """Raised in the main thread by SIGTERM / SIGINT: serving ends at once."""


def _stop_on_signals() -> list:
    """SIGTERM / SIGINT: stop serving at once (the handler raises :class:`_Stopped` in
    the main thread, which serves; ``server.shutdown()`` would wait for the serving
    loop's next poll, half a second, at each of the hundreds of stops a sweep or the
    test suite makes); the list returned gets the signal. Only the main thread may set
    handlers; elsewhere the defaults stay."""
    caught: list = []

    def stop(signum, frame):
        if not caught:
            caught.append(signum)
            raise _Stopped
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, stop)
    return caught
