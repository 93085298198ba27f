"""The target's HTTP/1.1 transport: the standard library's threading server.

Contract: :class:`TargetHTTPServer` serves a listening socket it is given, one
thread per connection, keep-alive (an idle connection is closed after
``KEEP_ALIVE_S``, as uvicorn's ``timeout_keep_alive``). Each request goes to
``routes[(method, path)]`` (a POST's handler gets the JSON body) and its
:class:`~ddlab.target.requests.Reply` is sent whole or, for a stream, chunked; a
client that leaves mid-stream closes the stream's generator (its clean-up aborts the
request). ``allowed(method, path, authorization)`` may refuse a request first (401);
a :class:`~ddlab.target.requests.BadRequest` becomes ``bad_request(path, exc)``; an
unknown path is 404 and a known path with another method 405, in FastAPI's words
(``{"detail": "Not Found"}``), as SGLang answers; any other exception is a 500 and
uvicorn's ``Exception in ASGI application`` with its traceback; a client that
resets its connection is, as for uvicorn, no error and leaves no line. Each
request gets uvicorn's access line at INFO. :func:`uvicorn_loggers` sets up
uvicorn's two loggers (``uvicorn.error``: its lifecycle lines; ``uvicorn.access``)
in the format SGLang gives them (0.5.23 ``sglang/srt/utils/common.py:3509-3519``:
``[%(asctime)s] %(levelprefix)s %(message)s``), at ``--log-level-http``.

Why not FastAPI + uvicorn, as SGLang itself: importing them (with pydantic,
starlette, anyio) cost a fifth of a start of the target on a 2-core machine: 1.45 s
of CPU from exec to "ready to roll" with them, 1.11 s without (medians of 12 starts
each, alternated, idle VM, 2026-12-01), and ddlab starts the target hundreds of times
in its test suite. What a client sees is the same.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from ddlab.target.requests import BadRequest, Reply, json_reply

__all__ = ["TargetHTTPServer", "KEEP_ALIVE_S", "uvicorn_loggers"]

KEEP_ALIVE_S = 5.0
uvicorn_log = logging.getLogger("uvicorn.error")  # uvicorn's lifecycle and error lines
access_log = logging.getLogger("uvicorn.access")


class _UvicornFormatter(logging.Formatter):
    """uvicorn's ``levelprefix`` (``INFO:`` padded to 9: uvicorn/logging.py) in SGLang's format."""

    def formatMessage(self, record):  # noqa: N802 (logging's name)
        record.levelprefix = f"{record.levelname}:".ljust(9)
        return super().formatMessage(record)


def uvicorn_loggers(level: str) -> None:
    """uvicorn's loggers as SGLang configures them, at ``level`` (``--log-level-http``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_UvicornFormatter("[%(asctime)s] %(levelprefix)s %(message)s",
                                           datefmt="%Y-%m-%d %H:%M:%S"))
    for log in (uvicorn_log, access_log):
        log.handlers[:] = [handler]
        log.setLevel(level.upper())
        log.propagate = False


def _json_body(raw: bytes) -> dict:
    try:
        body = json.loads(raw)
    except ValueError as e:
        raise BadRequest(f"the body is not valid JSON: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


class _Handler(BaseHTTPRequestHandler):
    """One connection: requests read, routed and answered in turn."""

    protocol_version = "HTTP/1.1"
    server_version = "ddlab-target"
    sys_version = ""
    timeout = KEEP_ALIVE_S
    server: TargetHTTPServer

    def do_GET(self):  # noqa: N802 (http.server's names)
        self._serve("GET")

    def do_POST(self):  # noqa: N802
        self._serve("POST")

    def do_OPTIONS(self):  # noqa: N802
        self._serve("OPTIONS")

    def _serve(self, method: str) -> None:
        path = urlsplit(self.path).path
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(self._reply(method, path, raw))

    def _reply(self, method: str, path: str, raw: bytes) -> Reply:
        server = self.server
        if not server.allowed(method, path, self.headers.get("Authorization")):
            return json_reply({"error": "Unauthorized"}, 401)
        handler = server.routes.get((method, path))
        if handler is None:
            known = any(p == path for _, p in server.routes)
            return json_reply({"detail": "Method Not Allowed" if known else "Not Found"},
                              405 if known else 404)
        try:
            return handler(_json_body(raw) if method == "POST" else None)
        except BadRequest as exc:
            return server.bad_request(path, exc)
        except Exception:  # uvicorn's words and a 500; the server stays up
            uvicorn_log.error("Exception in ASGI application\n", exc_info=True)
            return Reply(status=500, body=b"Internal Server Error", content_type="text/plain")

    def _answer(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        if reply.chunks is None:
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for text in reply.chunks:
                data = text.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away: closing the stream aborts its request
            self.close_connection = True
        finally:
            reply.chunks.close()

    def log_request(self, code="-", size="-") -> None:
        if access_log.isEnabledFor(logging.INFO):
            status = int(code) if str(code).isdigit() else 0
            host, port = self.client_address[:2]
            access_log.info(f'{host}:{port} - "{self.requestline}" {code} '
                            f'{http.client.responses.get(status, "")}')

    def log_message(self, format, *args) -> None:  # noqa: A002 (http.server's signature)
        uvicorn_log.debug(format, *args)


class TargetHTTPServer(ThreadingHTTPServer):
    """``sock`` (bound, not yet listening) served; listening once constructed, so a
    client may connect before :meth:`serve_forever` runs (the warmup does)."""

    daemon_threads = True
    # listen()'s backlog: socketserver's 5 reset connections when 16 clients connect at
    # once (a workload sweep's level); uvicorn's default, which SGLang serves with, is 2048
    # (uvicorn 0.54.0 config.py:233)
    request_queue_size = 2048

    def __init__(self, sock: socket.socket, routes: dict, *, allowed, bad_request):
        super().__init__(sock.getsockname()[:2], _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.server_activate()
        self.routes, self.allowed, self.bad_request = routes, allowed, bad_request

    def handle_error(self, request, client_address) -> None:
        """A client that resets its connection (a pool closed, a bench interrupted) is
        no error of the server's: uvicorn logs nothing then, and neither does this
        (socketserver's default prints a traceback, which would sit in the journal
        beside a real crash's). Anything else gets its traceback, as before."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
