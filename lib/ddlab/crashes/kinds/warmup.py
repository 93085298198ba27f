"""The warmup: the one request SGLang's launcher sends its own server before it says ready.

The launcher posts a short generation to the server's own address and waits for it
(``_wait_and_warmup``, ``_execute_server_warmup``); a timeout, an error status or a refused connection
there is ``health_check`` in the ``ready`` phase: the server started, its first request did not come
back. :mod:`.runtime` splices these into its own list where they stood, so the registry's order is
unchanged.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["WARMUP_FAILED", "WARMUP_READ_TIMEOUT", "WARMUP_STATUS_CUT", "WARMUP_ERROR_BODY", "HARNESS_START_TIMEOUT"]

WARMUP_FAILED = Signature(
    "warmup_failed", "health_check", "the server did not answer its warmup request",
    ("The server started but did not answer its own warmup request (a timeout, or an error "
     "status from something in between): if it timed out, the first generation hangs (dump "
     "the scheduler's stack with `py-spy dump --pid PID`); a 502 usually comes from an HTTP "
     "proxy in the environment (set no_proxy=127.0.0.1,localhost).",),
    patterns=(r"Read timed out|ReadTimeout|TimeoutError|timed out",
              r"res=<Response \[\d+\]>|status_code == 200", r"ConnectionError|Connection refused",
              r"JSONDecodeError|Expecting value: line \d+ column \d+",
              # SGLang Diffusion's server waits for its own /health (0.5.13) or /liveness (0.5.23)
              # before its warmup, then aborts the startup
              r"HTTP server did not become (?:ready|live) at \S+"),
    context=(r"_wait_and_warmup|_execute_server_warmup|Initialization failed\. warmup error"
             r"|_run_server_warmup_after_http_\w+|_wait_until_http_(?:ready|live)",),
    # a warmup traceback cut before its exception line is still the warmup failing (an echo)
    priority=15, phase="ready", echo=True, cut_ok=True,
    sources=(("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:1086"),
             ("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:1005"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2388"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2494"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2533"),
             ("0.5.23", "sglang/multimodal_gen/runtime/entrypoints/http_server.py:101"),
             ("0.5.23", "sglang/multimodal_gen/runtime/entrypoints/http_server.py:124")))

# (round 25) the warmup's own read timing out, with no warmup frame or header left in the paste: the
# launcher posts its one request to the server's own address (server_args.url(): host:port, 0.4.4.post1
# server_args.py:1025-1029; 0.5.23 :458-466 turns 0.0.0.0 into 127.0.0.1) with timeout=600 (0.4.4.post1
# entrypoints/http_server.py:727, logged at :734; 0.4.10.post2 :1041; 0.5.23 :2498, the default), and
# urllib3 words the read timeout "HTTPConnectionPool(host=H, port=P): Read timed out. (read timeout=600)"
# (urllib3 1.26.5 connectionpool.py:336-337, the pool's name exceptions.py:25 and connectionpool.py:83;
# requests' ReadTimeout keeps that text). Only a local host and the warmup's 600 s
_SELF_READ_TIMEOUT = (r"HTTPS?ConnectionPool\(host='(?:0\.0\.0\.0|127\.0\.0\.1|localhost|::1)', port=\d+\): "
                      r"Read timed out\. \(read timeout=600(?:\.0)?\)")
WARMUP_READ_TIMEOUT = Signature(
    "warmup_read_timeout", "health_check", "the server did not answer its warmup request in 600 s",
    WARMUP_FAILED.advice, patterns=(_SELF_READ_TIMEOUT,),
    # below warmup_failed (15): where the warmup's frames are there, that one names it
    priority=14, phase="ready", echo=True,
    sources=(("sglang 0.4.4.post1", "sglang/srt/entrypoints/http_server.py:727"),
             ("sglang 0.4.4.post1", "sglang/srt/entrypoints/http_server.py:734"),
             ("sglang 0.4.4.post1", "sglang/srt/server_args.py:1029"),
             ("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:1041"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2498"),
             ("0.5.23", "sglang/srt/server_args.py:463"),
             ("urllib3 1.26.5", "urllib3/connectionpool.py:336"),
             ("urllib3 1.26.5", "urllib3/exceptions.py:25")))

# the warmup's traceback cut right after its status check: that line raises only for a
# response that is not 200 (the message with the status is what the paste lost)
WARMUP_STATUS_CUT = Signature(
    "warmup_status_cut", "health_check", "the warmup request got an error status (its message is cut)",
    WARMUP_FAILED.advice, patterns=(r"res=<Response \[\d+\]>",), types=r"AssertionError",
    context=(r", in (?:_wait_and_warmup|_execute_server_warmup)\s*$",
             r"^\s*assert res\.status_code == 200\b"),
    # above warmup_failed (15), which a cut warmup traceback also matches: this one says more
    priority=16, phase="ready", echo=True, cut_ok=True,
    sources=(("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:1086"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2376")))

# (round 59) From 0.5.5.post3 the warmup's status check carries only the answer's body (0.5.5.post3
# entrypoints/http_server.py:1521 `assert res.status_code == 200, f"{res.text}"`; 0.5.7 :1566, 0.5.23
# :2501), so the AssertionError is the server's own error answer: the OpenAI handlers' ErrorResponse
# ({"object":"error","message":...}, openai/protocol.py:73 in 0.5.7), "Internal server error: " and the
# exception's text for anything they did not expect (0.5.5.post3 openai/serving_base.py:128, 0.5.7 :143,
# 0.5.23 :139; the handler logged "Error in request:" with its traceback first, :126 / :141), or
# /generate's {"error": {"message": ...}} (0.5.7 entrypoints/http_server.py:1462). The warmup request
# failing is what the log shows; the body says why, and its text is the server's, not a proxy's
_ERROR_BODY = r'\{\s*"(?:object"\s*:\s*"error"\s*,\s*"message|error"\s*:\s*\{\s*"message)"\s*:'
_BODY_MESSAGE = r'"message"\s*:\s*"((?:[^"\\]|\\.){1,300})'
# torch_npu's own words for an Ascend op that refused its call
_NPU_OP = r"NPU function error: call (aclnn\w+) failed, error code is (\d+)"


def _body_detail(found: Found) -> str | None:
    said = regex(_BODY_MESSAGE).search(found.text)
    if not said:
        return None
    message = said[1].split("\\n")[0].strip()
    where = ("" if not regex(r"Internal server error:").search(message) else
             " The server raised it while handling the request: its \"Error in request:\" traceback, "
             "logged just before the error status, names where.")
    op = regex(_NPU_OP).search(found.text)
    if op:
        where += (f" The error is torch_npu's: the Ascend op {op[1]} refused its call (error code "
                  f"{op[2]}), and the CANN record after it in the body says what it refused; a handler "
                  "catches only what its own process raised (the HTTP server's: the request's "
                  "preprocessing, a vision model's image processing), not a scheduler rank's forward.")
    return f"The warmup's answer was the server's own error: {message}.{where}"


WARMUP_ERROR_BODY = Signature(
    "warmup_error_body", "health_check", "the warmup request got the server's own error answer",
    ("The server started but its own warmup request came back with an error status whose body is "
     "the server's error (an exception raised while handling that request, not a timeout or a "
     "proxy): the body's message is the cause to read. Reproduce it by starting with "
     "`--skip-server-warmup` and sending the same request by hand (a chat request with an image for "
     "a vision model, /generate otherwise).",),
    patterns=(_ERROR_BODY,), types=r"AssertionError",
    context=(r", in (?:_wait_and_warmup|_execute_server_warmup)\s*$",),
    # above warmup_failed (15), which this traceback also matches by its frame: this one says more
    priority=16, phase="ready", echo=True, detail=_body_detail,
    sources=(("sglang 0.5.5.post3", "sglang/srt/entrypoints/http_server.py:1521"),
             ("sglang 0.5.7", "sglang/srt/entrypoints/http_server.py:1566"),
             ("0.5.23", "sglang/srt/entrypoints/http_server.py:2501"),
             ("sglang 0.5.5.post3", "sglang/srt/entrypoints/openai/serving_base.py:128"),
             ("sglang 0.5.7", "sglang/srt/entrypoints/openai/serving_base.py:143"),
             ("0.5.23", "sglang/srt/entrypoints/openai/serving_base.py:139"),
             ("sglang 0.5.7", "sglang/srt/entrypoints/openai/protocol.py:73"),
             ("sglang 0.5.7", "sglang/srt/entrypoints/http_server.py:1462")))

# (round 94) SGLang's test harness polls the server it launched at /health_generate until its timeout, kills its
# process tree, raises "Server failed to start within the timeout period" (0.5.6.post2 test/test_utils.py:683-684;
# 0.5.10 :817, :970-976): the server never answered, a failed launch; an error of the server's own above decides
HARNESS_START_TIMEOUT = Signature(
    "harness_start_timeout", "health_check", "the test harness killed a server that never became healthy",
    ("SGLang's test harness got no answer from /health_generate for its whole timeout and killed the server: "
     "the last startup line of each rank says where it stopped (a rank missing from it waits on a peer); rerun "
     "the launch command by hand and `py-spy dump --pid PID` a scheduler that stops logging.",),
    patterns=(r"Server failed to start within the timeout period",), priority=12, echo=True,
    sources=(("sglang 0.5.6.post2", "sglang/test/test_utils.py:683"), ("0.5.10", "sglang/test/test_utils.py:817"),
             ("0.5.10", "sglang/test/test_utils.py:976")))
