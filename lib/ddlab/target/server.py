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

``main(argv)`` is ``python -m ddlab.target``, in SGLang 0.5.23's order (0.4's
with ``--log-format 0.4``): the launcher's lines and checks (``launcher``: a bad
model path, a too-long context, an unknown algorithm fail there, before
``server_args=``), the scheduler's startup lines (the engine, built here: its
failure is ``Scheduler hit an exception: <traceback>`` and the launcher's
SIGQUIT handling, ``lifecycle``), then uvicorn's start (its lines, the warmup
thread, the bind: a taken port fails only now, as SGLang's does), the warmup
(``GET /model_info``, one generation), ``The server is fired up and ready to
roll!``. A scheduler that dies later takes the whole process down the same
way (no half-alive server answering 500s); SIGTERM drains and exits as
SGLang's does (``lifecycle``). uvicorn's lines are at ``--log-level-http``
(``warning`` here: the start and access lines are off unless it is ``info``;
SGLang's default, unset, follows ``--log-level``, so they are on there).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import queue
import secrets
import socket
import sys
import threading
import time
import traceback

from ddlab.target import launcher, openai_api
from ddlab.target.engine import Engine, Req
from ddlab.target.http_server import TargetHTTPServer, uvicorn_log, uvicorn_loggers
from ddlab.target.lifecycle import Lifecycle, Stop
from ddlab.target.log_lines import generation
from ddlab.target.requests import BadRequest, Reply, decode_text, json_reply, make_req, stream_reply

__all__ = ["main", "ServerState"]

logger = logging.getLogger("ddlab.target")
READY_LINE = "The server is fired up and ready to roll!"


class ServerState:
    def __init__(self, args):
        self.args, self.engine, self.ready = args, None, False
        self.words = generation(args.log_format)
        self.life = Lifecycle(self.words)
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
    state.life.begin_running()  # the tokenizer manager's first request installs its handlers
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


def _model_info(state: ServerState) -> Reply:
    """The warmup's first request (0.5.23 http_server.py:812-848)."""
    engine = state.require_engine()
    cfg = engine.runner.target.cfg
    return json_reply({"model_path": state.args.model_path, "served_model_name": state.name,
                       "tokenizer_path": state.args.model_path, "is_generation": True,
                       "preferred_sampling_params": None, "weight_version": "default",
                       "has_image_understanding": False, "has_audio_understanding": False,
                       "model_type": "ddlab-tiny", "architectures": [cfg.architecture]})


def _deprecated_endpoint(state: ServerState, old: str, new: str, answer):
    """0.5.23's older endpoint names warn, then answer as the new one (http_server.py:802-809,
    :851-857); 0.4's are its own."""
    if state.words.name != "0.4":
        logger.warning(f"Endpoint '{old}' is deprecated and will be removed in a future version. "
                       f"Please use '{new}' instead.")
    return answer()


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
        ("GET", "/get_server_info"): lambda _: _deprecated_endpoint(
            state, "/get_server_info", "/server_info", lambda: _server_info(state)),
        ("GET", "/model_info"): lambda _: _model_info(state),
        ("GET", "/get_model_info"): lambda _: _deprecated_endpoint(
            state, "/get_model_info", "/model_info", lambda: _model_info(state)),
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


def setup_logging(level: str, level_http: str) -> None:
    logging.basicConfig(level=level.upper(), format="[%(asctime)s] %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stderr, force=True)
    uvicorn_loggers(level_http)


def _wait_and_warmup(state: ServerState) -> None:
    """The launcher's warmup thread (0.5.23 http_server.py:2572-2600): the warmup, then
    "ready to roll"; a failed warmup ends the process (``kill_process_tree``)."""
    if not state.args.skip_server_warmup:
        try:
            _warmup(state.args, state.words)
        except Exception:
            logger.error(f"Initialization failed. warmup error: {traceback.format_exc()}")
            state.life.kill_tree(include_parent=True)
            return
    logger.info(READY_LINE)
    state.ready = True


WARMUP_TRIES, WARMUP_PAUSE_S = 120, 0.05  # SGLang: 120 tries 1 s apart; the target starts in 2 s, not minutes


def _warmup(args, words) -> None:
    """SGLang's warmup (0.5.23 http_server.py:2360-2470): ``GET /model_info`` until it
    answers (SGLang: 120 tries, 1 s apart; here 50 ms apart), then one generation through
    HTTP. Here the generation is 1 token (prefill only: SGLang's asks 8), so that a fault
    the target injects into decoding meets the first real request, not the warmup."""
    host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host.strip("[]")
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = f"Bearer {args.api_key}"
    for tries_left in range(WARMUP_TRIES - 1, -1, -1):
        time.sleep(WARMUP_PAUSE_S)
        try:
            status, text = _request(host, args.port, "GET", words.model_info_path, None, headers, 5)
            assert status == 200, f"res=<Response [{status}]>, res.text={text!r}"
            break
        except (AssertionError, OSError):
            if not tries_left:
                raise
    body = json.dumps({"text": "The capital city of France is",
                       "sampling_params": {"temperature": 0, "max_new_tokens": 1}})
    status, text = _request(host, args.port, "POST", "/generate", body, headers, 600)
    assert status == 200, text


def _request(host, port, method, path, body, headers, timeout_s) -> tuple[int, str]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        return reply.status, reply.read().decode("utf-8", errors="replace")
    finally:
        conn.close()


def _log_launch(args, deprecations) -> None:
    """The launcher's lines before its checks: the deprecated flags (argparse's actions
    log them while parsing)."""
    for line in deprecations:
        logger.warning(line)


def _bind(host: str, port: int) -> socket.socket:
    """uvicorn's bind (``loop.create_server``): asyncio's OSError when the port is taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    address = (host.strip("[]"), port)
    try:
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"error while attempting to bind on address {address!r}: "
                               f"{e.strerror.lower()}") from None
    return sock


def main(args, warnings) -> int:
    """The server for parsed flags (``args.parse_command_line``; :func:`ddlab.target.main`
    parses them before this module imports torch: a refused flag costs no second of it)."""
    setup_logging(args.log_level, args.log_level_http)
    state = ServerState(args)
    state.life.install()
    _log_launch(args, warnings)
    try:
        launcher.resolve(args, state.words)
    except Exception:  # the launcher's finally, then the traceback (launch_server.py:83-86)
        state.life.kill_tree(include_parent=False)
        traceback.print_exc()
        return 1
    logger.info(state.words.server_args(args))
    try:
        state.engine = Engine(args)
    except BaseException:
        logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        state.life.child_failed()
    threading.Thread(target=state.engine.run_forever, args=(lambda: state.life.child_failed(),),
                     name="scheduler", daemon=True).start()
    return _serve(state)


def _serve(state: ServerState) -> int:
    """uvicorn's run after the engine is up (0.5.23 http_server.py:2990-3005; uvicorn 0.54
    ``Server._serve`` and ``startup``): its start lines, the lifespan (which starts the
    warmup thread, http_server.py:449-454), the bind (a taken port fails here, after the
    whole startup), then serving until a signal."""
    args, life, pid = state.args, state.life, os.getpid()
    uvicorn_log.info("Started server process [%d]", pid)
    uvicorn_log.info("Waiting for application startup.")
    warmup = threading.Thread(target=_wait_and_warmup, args=(state,), name="warmup", daemon=True)
    warmup.start()
    uvicorn_log.info("Application startup complete.")
    try:
        sock = _bind(args.host, args.port)
    except OSError as e:  # uvicorn: the error, the lifespan's shutdown (joins the warmup), exit 1
        uvicorn_log.error(e)
        uvicorn_log.info("Waiting for application shutdown.")
        warmup.join()
        uvicorn_log.info("Application shutdown complete.")
        life.kill_tree(include_parent=False)  # launch_server.py's finally
        return 1
    server = TargetHTTPServer(
        sock, _routes(state), bad_request=_bad_request,
        allowed=lambda method, path, auth: _allowed(method, path, auth, args.api_key))
    host = "0.0.0.0" if not args.host else args.host
    uvicorn_log.info(f"Uvicorn running on http://{f'[{host}]' if ':' in host else host}:{args.port} "
                     "(Press CTRL+C to quit)")
    life.http_up = True
    try:
        server.serve_forever(poll_interval=0.5)
    except Stop as stop:
        if stop.drain:
            return life.drain(server, state.engine.in_flight)
        life.uvicorn_stop(server)
        life.exit_by(stop.signum)
    return 0
