"""Errors of one request while the server keeps serving, and PD disaggregation's transfers.

Not every error is a crash. An exception raised in an HTTP request handler
(uvicorn logs "Exception in ASGI application" and answers 500), a request the
tokenizer manager refuses (longer than the context), a KV transfer that failed
for one request between a prefill and a decode server, a weight update an RL
trainer sent that the model runner answered with failure: the server goes on
serving, so the diagnosis is ``crashed=False`` and kind ``request_error``, with
the error and its own next step. These signatures are ``request``: when the
process dies of one right after (an unexplained or cut traceback of the same
rank follows it), that is the crash, and a PD transfer's kind is then
``pd_transfer``.

A traceback whose frames are the HTTP server's request handlers (uvicorn's
``run_asgi``, fastapi's ``run_endpoint_function``, SGLang's OpenAI endpoints)
is a request's, whatever it raised: the handler turns it into a 500.
"""

from __future__ import annotations

from ddlab.crashes.kinds.request_waits import TOKENIZER_REQUEST_WAIT
from ddlab.crashes.kinds.stray_paths import ROUTE_LIKE
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "REQUEST_FRAMES", "NOT_A_REQUEST", "ASGI_ERROR", "ANSWERED_4XX"]

# ``handle_request`` is SGLang's OpenAI serving entry (0.5.23 srt/entrypoints/openai/serving_base.py:80); httpx's
# and httpcore's transports name their client-side sends so too (httpx/_transports/default.py, httpcore/_sync/
# connection_pool.py): a server's own download (the Hub asked for a config at launch) is no request it served
REQUEST_FRAMES = (
    r"(?:uvicorn[/\\]protocols|starlette|fastapi)[/\\]\S+\", line \d+, in \w+"
    r"|, in (?:run_asgi|run_endpoint_function|openai_v1_\w+|v1_(?:chat_)?(?:completions|generate_request|embeddings)"
    r"|_convert_to_internal_request|_validate_one_request|_tokenize_one_request)\s*$"
    # (round 37) the batch API's worker, 0.4.6.post4 openai_api/adapter.py:291: by its path, as other
    # libraries name functions process_batch too
    r"|openai_api[/\\]adapter\.py\", line \d+, in process_batch\s*$"
    r"|^(?![^\n]*[/\\](?:httpx|httpcore)[/\\])[^\n]*, in handle_request\s*$"
    rf"|{TOKENIZER_REQUEST_WAIT}")  # (round 86) the tokenizer manager's per-request coroutines (.request_waits)

# the HTTP server starting (uvicorn's lifespan, SGLang's startup hooks) is no request, nor (round 98) a module's import
NOT_A_REQUEST = r"[/\\]lifespan[/\\]|, in (?:lifespan|startup|_wait_and_warmup|<module>)\s*$"

ASGI_ERROR = Signature(
    "asgi_exception", "request_error", "a request raised in the HTTP server's handler",
    ("One request raised in the HTTP server's handler (uvicorn answered 500): the server is still "
     "serving. Read the traceback under 'Exception in ASGI application' for the request's fault "
     "(a malformed body, a chat template the model lacks, a parameter out of range) and fix the "
     "client's request; if every request fails the same way, the server's own settings "
     "(`--chat-template`, `--tool-call-parser`) are the suspects.",),
    lines=(r"Exception in ASGI application",),
    context=(REQUEST_FRAMES,), absent=(NOT_A_REQUEST,), patterns=(r".",),
    priority=10, phase="serving", request=True, cut_ok=True,
    sources=(("uvicorn 0.54.0", "uvicorn/protocols/http/httptools_impl.py:426"),
             ("uvicorn 0.54.0", "uvicorn/protocols/http/h11_impl.py:415"),
             ("0.4.10.post2", "sglang/srt/entrypoints/http_server.py:776"),
             ("0.5.23", "sglang/srt/entrypoints/openai/serving_base.py:80")))

REQUEST_REFUSED = Signature(
    "request_refused", "request_error", "the server refused a request",
    ("The server refused one request as asked: a prompt longer than the context, a body that "
     "does not validate, a chat request to a model with no chat template. Shorten the input or "
     "lower max_tokens on the client, or start the server with a longer `--context-length` if the "
     "model supports it (`--allow-auto-truncate` cuts long inputs instead of refusing them); give "
     "a model without a template one with `--chat-template`.",),
    patterns=(r"is longer than the model's context length \(\d+ tokens\)\.(?!\s*Truncating)",
              r"Requested token count exceeds the model's maximum context length",
              r"\d+ validation errors? for \w*(?:Request|ReqInput)\b",
              r"Cannot use chat template functions because tokenizer\.chat_template is not set",
              # the fast tokenizer refusing the form of one request's input (a list where text
              # belongs); the server's own calls pass text
              r"TextEncodeInput must be Union\["),
    lines=(r"is longer than the model's context length \(\d+ tokens\)\.(?!\s*Truncating)",
           r"Requested token count exceeds the model's maximum context length",
           r"Cannot use chat template functions because tokenizer\.chat_template is not set"),
    priority=11, phase="serving", request=True,
    sources=(("0.4.10.post2", "sglang/srt/managers/tokenizer_manager.py:575"),
             ("0.4.10.post2", "sglang/srt/managers/tokenizer_manager.py:593"),
             ("0.5.23", "sglang/srt/managers/tokenizer_manager.py:1350"),
             ("0.5.23", "sglang/srt/managers/tokenizer_manager.py:1372"),
             ("pydantic-core 2.41.5 (v2.41.5)", "src/errors/validation_exception.rs:105 (ValidationError::"
                                                "display: N validation errors for <model>)"),
             ("transformers 4.57.6", "transformers/tokenization_utils_base.py:1826 (get_chat_template: "
                                     "Cannot use chat template functions because tokenizer.chat_template is "
                                     "not set)"),
             ("tokenizers 0.21.4 (v0.21.4)", "bindings/python/src/tokenizer.rs:420 (TextEncodeInput::"
                                            "extract_bound: TextEncodeInput must be Union["
                                            "TextInputSequence, Tuple[InputSequence, InputSequence]])")))


def _pd_detail(found: Found) -> str | None:
    text = f"{found.text}\n{found.frames}"
    if match := regex(r"(https?://[\w.-]+:None\b\S*)").search(text):
        return (f"The bootstrap address has no port ({match[1]}): the client or the router did not "
                "pass the prefill server's bootstrap port (`--disaggregation-bootstrap-port` on the "
                "prefill server, and the same in the request's bootstrap_port).")
    if regex(r"Cannot assign requested address|Connection refused|Max retries exceeded|timed out"
             r"|End of file|Connection reset").search(text):
        return ("The two sides could not reach each other: check the addresses and ports in the "
                "message from the other host (`nc -zv HOST PORT`), the NIC the transfer engine "
                "binds (`--disaggregation-ib-device`), and firewalls between the nodes.")
    if regex(r"metadata|segment descriptor").search(text):
        return ("The transfer engine's metadata lookup failed: the peer's segment is not registered "
                "(it restarted, or the two sides use different metadata servers): restart both "
                "sides against the same metadata server.")
    return None


PD_TRANSFER = Signature(
    "pd_transfer", "pd_transfer", "a KV transfer between the prefill and the decode server failed",
    ("The KV cache transfer between the prefill and the decode server failed (PD "
     "disaggregation): check that both sides run the same SGLang and transfer backend "
     "(`--disaggregation-transfer-backend`, mooncake / nixl) versions, that the decode server "
     "reaches the prefill server's bootstrap port (`nc -zv PREFILL_HOST BOOTSTRAP_PORT` from the "
     "decode host), and the transfer engine's own error lines just above this one.",),
    patterns=(r"(?:Prefill|Decode) (?:transfer|bootstrap|handshake) failed for request", r"\bKVTransferError\b",
              r"Error fetching prefill (?:parallel |server )?info from bootstrap",
              r"timed out after [\d.]+s (?:in KVPoll\.\w+|waiting for KV transfer)"),
    lines=(r"(?:Prefill|Decode) (?:transfer|bootstrap|handshake) failed for request",
           # the same line with the request's ids elided ("...") before its exception: the
           # receiver's KVTransferError (0.5.23 disaggregation/decode.py:2864, " with exception {e}")
           r"(?:Prefill|Decode) transfer failed\b.{0,200}\bKVTransferError\b",
           r"timed out after [\d.]+s (?:in KVPoll\.\w+|waiting for KV transfer)",
           r"Error fetching prefill (?:parallel |server )?info from bootstrap",
           r"TcpTransport::\w+ encountered an (?:ASIO )?exception",
           r"\bSession::(?:readBody|writeBody) failed\b",
           r"Unexpected code in http response, (?:GET|PUT|DELETE) \S*metadata",
           r"Worker: Process failed for slice", r"Worker: Cannot make connection for endpoint"),
    priority=45, phase="serving", request=True, detail=_pd_detail,
    sources=(("0.4.10.post2", "sglang/srt/disaggregation/decode.py:571"),
             ("0.4.10.post2", "sglang/srt/disaggregation/prefill.py:503"),
             ("0.4.10.post2", "sglang/srt/disaggregation/common/conn.py:278"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:52"),
             ("0.4.10.post2", "sglang/srt/disaggregation/prefill.py:221"),
             ("0.4.10.post2", "sglang/srt/disaggregation/decode.py:319"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:987"),
             ("0.5.10", "sglang/srt/disaggregation/mooncake/conn.py:1705"),
             ("0.5.23", "sglang/srt/disaggregation/common/conn.py:2404"),
             ("0.5.10", "sglang/srt/disaggregation/decode.py:1067"),
             ("0.5.10", "sglang/srt/disaggregation/common/conn.py:623"),
             ("0.5.23", "sglang/srt/disaggregation/decode.py:2864"),
             ("0.5.23", "sglang/srt/disaggregation/prefill.py:1287"),
             ("0.5.23", "sglang/srt/disaggregation/common/conn.py:103"),
             ("Mooncake cae1728", "mooncake-transfer-engine/src/transport/tcp_transport/tcp_transport.cpp:523"),
             ("Mooncake cae1728", "mooncake-transfer-engine/src/transport/tcp_transport/tcp_transport.cpp:223"),
             ("Mooncake cae1728", "mooncake-transfer-engine/src/transport/tcp_transport/"
                                  "tcp_transport.cpp:176 (Session::writeBody: \"Session::writeBody failed. "
                                  "... Error: \", the slice failed :182)"),
             ("Mooncake 5bc114c~1", "mooncake-transfer-engine/src/transfer_metadata_plugin.cpp:233"),
             ("Mooncake cae1728", "mooncake-transfer-engine/src/transport/rdma_transport/worker_pool.cpp:295"),
             ("Mooncake cae1728", "mooncake-transfer-engine/src/transport/rdma_transport/worker_pool.cpp:242")))

# the transfer engine could not set up at startup (no request involved): the scheduler's
# constructor builds the KV manager, which registers the KV pool's buffers with the engine
# (0.5.23 managers/scheduler.py:689 init_disaggregation, after the pool); that failing is fatal
# Ascend's transfer engine (memfabric) likewise, in the scheduler's KV manager (0.5.23
# disaggregation/ascend/transfer_engine.py:83, logged then raised); NIXL's agent failing to create
# its transport backend (UCX) when the KV manager builds it (nixl src/core/nixl_agent.cpp,
# createBackend: "backend 'UCX' encountered error during ... setup with status NIXL_ERR_BACKEND")
_PD_SETUP = (r"Mooncake memory registration failed", r"Mooncake Transfer Engine initialization failed",
             r"NIXL memory registration failed", r"Ascend Transfer Engine initialization failed",
             r"createBackend: backend '\w+' encountered error during [\w\s-]{0,40}setup with status NIXL_ERR_\w+",
             # (round 33) NIXL's agent: no backend could register the buffers (v1.4.0 nixl_agent.cpp:545,
             # NIXL_ERROR_FUNC prefixing "registerMem: ", src/utils/common/nixl_log.h:54)
             r"registerMem: registration failed for the specified or all potential backends")
PD_SETUP = Signature(
    "pd_transfer_setup", "pd_transfer", "the PD transfer engine could not start or register the KV buffers",
    ("The KV transfer engine of PD disaggregation failed while the server started: it could not "
     "register the KV cache's GPU memory with the NIC (RDMA) or could not start. The transfer "
     "library's own line above this one gives the reason (Mooncake: \"Failed to register memory "
     "...: <errno>\"). Check that `--disaggregation-ib-device` names RDMA devices this GPU can "
     "reach, that GPUDirect RDMA is loaded (`lsmod | grep peermem`), the locked-memory limit "
     "(`ulimit -l` unlimited in the container), and that both servers run the same transfer "
     "backend (`--disaggregation-transfer-backend`) version.",),
    patterns=_PD_SETUP, lines=_PD_SETUP, priority=46, phase="memory_pool", fatal=True,
    sources=(("0.5.23", "sglang/srt/distributed/device_communicators/mooncake_transfer_engine.py:150"),
             ("0.5.23", "sglang/srt/distributed/device_communicators/mooncake_transfer_engine.py:153"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/transfer_engine.py:77"),
             ("0.4.10.post2", "sglang/srt/disaggregation/nixl/conn.py:172"),
             ("0.5.23", "sglang/srt/disaggregation/nixl/conn.py:1998"),
             ("0.5.23", "sglang/srt/disaggregation/mooncake/conn.py:277"),
             ("0.5.23", "sglang/srt/disaggregation/ascend/transfer_engine.py:83"),
             ("NIXL 1.4.0 (ai-dynamo/nixl v1.4.0)", "src/core/nixl_agent.cpp:433 (nixlAgent::createBackend: "
                                                    "backend '...' encountered error during ... setup with "
                                                    "status NIXL_ERR_BACKEND)"),
             ("NIXL 1.4.0 (ai-dynamo/nixl v1.4.0)", "src/core/nixl_agent.cpp:545 (nixlAgent::registerMem: "
                                                    "registration failed for the specified or all "
                                                    "potential backends)")))

# (round 29) the native engine's own initialize raising instead of returning non-zero (pybind11 turns a
# C++ exception into RuntimeError): the frame of SGLang's call to it, 0.5.8.post1
# disaggregation/mooncake/transfer_engine.py:181 ("ret_value = self.engine.initialize("; 0.4.10.post2
# :62, :69), 0.5.23 distributed/device_communicators/mooncake_transfer_engine.py:212 (through
# run_with_deadline), disaggregation/ascend/transfer_engine.py:79; Mooncake's TCP transport opening an
# IPv6 listener where the host has none throws asio's "open: Address family not supported by protocol"
# (kvcache-ai/Mooncake d2529dff8 mooncake-transfer-engine/src/transport/tcp_transport/tcp_transport.cpp:263;
# from 24c632f84 it logs "Failed to set up IPv6 dual-stack listener" and listens on IPv4, :284-286)
_ENGINE_INIT_CALL = (r'transfer_engine\.py", line \d+, in (?:initialize|<lambda>)\s*\n'
                     r'\s*(?:ret_value = |lambda: )?self\.engine\.initialize\(')


def _engine_init_detail(found: Found) -> str | None:
    if regex(r"Address family not supported by protocol").search(found.text):
        return ("The engine opened a socket of an address family this host does not have (an IPv6 "
                "listener where IPv6 is disabled): enable IPv6 on the host, or use a newer Mooncake, "
                "whose TCP transport falls back to IPv4.")
    return None


PD_ENGINE_INIT = Signature(
    "pd_transfer_engine_init", "pd_transfer", "the PD transfer engine raised while it started",
    ("The KV transfer engine of PD disaggregation raised while it started, before any request: its "
     "message says why. Check the transport it was asked for (Mooncake's MC_FORCE_TCP, "
     "`--disaggregation-ib-device`), that the host's network has what the transport opens (RDMA "
     "devices, an address family), and that both servers run the same transfer backend "
     "(`--disaggregation-transfer-backend`) version.",),
    types=r"(?:\w+\.)*\w*(?:Error|Exception)", patterns=(r".",), context=(_ENGINE_INIT_CALL,),
    priority=46, phase="memory_pool", fatal=True, detail=_engine_init_detail,
    sources=(("sglang 0.5.8.post1", "sglang/srt/disaggregation/mooncake/transfer_engine.py:181"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/transfer_engine.py:62"),
             ("0.5.23", "sglang/srt/distributed/device_communicators/mooncake_transfer_engine.py:212"),
             ("0.5.23", "sglang/srt/disaggregation/ascend/transfer_engine.py:79"),
             ("Mooncake d2529dff8", "mooncake-transfer-engine/src/transport/tcp_transport/"
                                    "tcp_transport.cpp:263 (asio's open: Address family not supported by "
                                    "protocol)")))

# a transfer worker thread catches what one room's transfer raised, logs it with its traceback
# and marks that room failed (0.5.23 disaggregation/nixl/conn.py:1924-1933)
PD_TRANSFER_WORKER = Signature(
    "pd_transfer_worker", "pd_transfer", "a KV transfer worker failed one request's transfer",
    PD_TRANSFER.advice,
    lines=(r"Unexpected transfer worker error for room \d+",), patterns=(r".",),
    context=(r'disaggregation[/\\]\w+[/\\]conn\.py", line \d+, in transfer_worker\s*$',),
    priority=44, phase="serving", request=True, cut_ok=True, detail=_pd_detail,
    sources=(("0.5.23", "sglang/srt/disaggregation/nixl/conn.py:1933"),))

# a thread of the PD KV manager died of an uncaught exception: Python's threading.excepthook prints
# "Exception in thread Thread-N (TARGET):" (Python 3.10+ names a thread after its target) over
# the traceback. The threads are the KV managers' loops, started once and never restarted:
# 0.4.10.post2 disaggregation/nixl/conn.py:387 and mooncake/conn.py:690 (bootstrap_thread),
# mooncake/conn.py:780 (decode_thread); 0.5.23 nixl/conn.py:3426 (bootstrap_thread_guarded,
# which logs "prefill bootstrap_thread died on engine_rank=N; requests to this rank will time
# out in KVPoll.Bootstrapping", :3419), :1043 (decode_listener_thread), mooncake/conn.py:3036,
# :3075, mori/conn.py:1003, :1040 (bootstrap_worker, decode_worker). A paste may cut the name.
# (round 23) 0.4.6.post4's Mooncake prefill transfer_thread (mooncake/conn.py:304, started once at :374)
# catches only queue.Empty (:370): the RuntimeError transfer_sync raises on a failed write
# (transfer_engine.py:69-70, "Mooncake Transfer Engine Return Error.") ends it. (transfer_worker,
# 0.4.10.post2 conn.py:515, catches per room and is not matched.)
_PD_THREAD = (r"^Exception in thread [\w-]+ \((?:bootstrap_(?:th|wo)|decode_(?:thread|listener|worker)|transfer_th)",
              r"\bbootstrap_thread died on engine_rank=")
PD_THREAD_DIED = Signature(
    "pd_thread_died", "pd_transfer", "a thread of the PD transfer died (bootstrap or decode loop)",
    ("A thread of the KV manager of PD disaggregation died of an uncaught exception (SGLang never "
     "restarts it): this rank takes no more transfers, every request sent to it times out while "
     "the process lives on. Read the transfer library's error just above (NIXL / Mooncake) and the "
     "thread's traceback; restart the server after fixing it, and check that prefill and decode "
     "run the same SGLang and transfer backend (`--disaggregation-transfer-backend`) versions.",),
    lines=_PD_THREAD, priority=47, phase="serving", fatal=True, running=True, detail=_pd_detail,
    sources=(("0.4.10.post2", "sglang/srt/disaggregation/nixl/conn.py:387"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:690"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:780"),
             ("sglang 0.4.6.post4", "sglang/srt/disaggregation/mooncake/conn.py:374"),
             ("sglang 0.4.6.post4", "sglang/srt/disaggregation/mooncake/transfer_engine.py:70"),
             ("0.5.23", "sglang/srt/disaggregation/nixl/conn.py:3419"),
             ("0.5.23", "sglang/srt/disaggregation/nixl/conn.py:3426"),
             ("0.5.23", "sglang/srt/disaggregation/nixl/conn.py:1043"),
             ("0.5.23", "sglang/srt/disaggregation/mooncake/conn.py:3036"),
             ("0.5.23", "sglang/srt/disaggregation/mori/conn.py:1003"),
             ("CPython 3.10.4", "Lib/threading.py:1283 (excepthook: Exception in thread NAME:; Thread "
                                "names a thread 'Thread-N (target)' :849, :853)")))

# (round 25) a transfer's status, as the Mooncake (and common) KV manager keeps it, is a plain lookup of
# the request's bootstrap room in every release (0.4.6.post4 mooncake/conn.py:411-412, 0.4.10.post2
# mooncake/conn.py:826-827, 0.5.13 common/conn.py:209-210, 0.5.23 common/conn.py:608-609; its
# PPConsensusStore, pp_consensus_store.py:122-124, a lookup too), which a sender's or receiver's poll
# calls first (0.4.10.post2 mooncake/conn.py:972, :1287; 0.5.13 mooncake/conn.py:1720, :1888; 0.5.23
# common/conn.py:2593): what that call raises is a KeyError, the manager holding no status for a room in
# flight (never recorded, or cleared: 0.4.10.post2 mooncake/conn.py:996-998). A traceback cut inside the
# call says as much; NIXL's check_status reads with a default (0.5.13 nixl/conn.py:507-508): not matched
_STATUS_CALL = (r'[/\\]disaggregation[/\\](?:mooncake|common)[/\\]conn\.py", line \d+, in _?poll[ \t]*\n'
                r"[ \t]*status = self\.kv_mgr\.check_status\(self\.bootstrap_room\)[ \t]*"
                r"(?:\n[ \t]*[~^]+[ \t]*)?"
                r'(?:\n[ \t]*File "[^"\n]*", line \d+, in (?:check_status|__getitem__)[ \t]*(?:\n[ \t]+[^\n]*)?)*'
                r"\s*(?:\Z|\n(?:builtins\.)?KeyError\b)")
PD_STATUS_LOST = Signature(
    "pd_status_lost", "pd_transfer", "the KV manager had no transfer status for a request's bootstrap room",
    ("The scheduler polled the status of one request's KV transfer (PD disaggregation) and the "
     "transfer manager had none for its bootstrap room (a KeyError: the room's status was never "
     "recorded, or already cleared: a sender's clear() drops it once its transfer concluded or "
     "failed), and the scheduler died of it. It is a bug in PD disaggregation's bookkeeping of "
     "transfers: check that prefill and decode run the same SGLang and "
     "`--disaggregation-transfer-backend` versions, read the transfer errors and aborts just above "
     "the traceback, and report it with the whole log.",),
    patterns=(r".",), types=r"(?:builtins\.)?KeyError", context=(_STATUS_CALL,),
    priority=44, phase="serving", cut_ok=True,
    sources=(("sglang 0.4.6.post4", "sglang/srt/disaggregation/mooncake/conn.py:412"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:827"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:972"),
             ("0.4.10.post2", "sglang/srt/disaggregation/mooncake/conn.py:1287"),
             ("0.5.13", "sglang/srt/disaggregation/common/conn.py:210"),
             ("0.5.13", "sglang/srt/disaggregation/mooncake/conn.py:1720"),
             ("0.5.13", "sglang/srt/disaggregation/mooncake/conn.py:1888"),
             ("0.5.23", "sglang/srt/disaggregation/common/conn.py:609"),
             ("0.5.23", "sglang/srt/disaggregation/common/conn.py:2593"),
             ("0.5.23", "sglang/srt/disaggregation/pp_consensus_store.py:124")))

REQUEST_5XX = Signature(
    "request_http_5xx", "request_error", "the server answered a request with an error status",
    ("The server answered one request with a 5xx status (uvicorn's access line) and kept serving: "
     "the error of that request is usually logged just above (a traceback, a transfer error); "
     "if every request fails, read the first one.",),
    lines=(r'"(?:POST|PUT|DELETE|PATCH) /\S+ HTTP/[\d.]+" 5\d\d\b',),
    priority=9, phase="serving", request=True,
    sources=(("uvicorn 0.54.0", "uvicorn/logging.py:107 (AccessFormatter: \"METHOD PATH HTTP/v\" STATUS)"),))

_HTTP_4XX = {"400": "the body is not one this endpoint takes (a field, a value out of range, a model "
                     "name it does not serve)",
             "401": "no API key or a wrong one: the server runs with `--api-key`, the client must send "
                    "it (`Authorization: Bearer KEY`)",
             "403": "the key is not allowed this endpoint",
             "404": "the path or the model is not served here (the OpenAI routes are under /v1/; "
                    "`--served-model-name` sets the model's name)",
             "413": "the body is larger than the server accepts",
             "422": "the body does not validate against the endpoint's schema"}


def _http_4xx(found: Found) -> str | None:
    codes = dict.fromkeys(regex(r'HTTP/[\d.]+" (4\d\d)\b').findall(found.text))
    said = [f"{code}: {_HTTP_4XX[code]}" for code in codes if code in _HTTP_4XX]
    return ("Refused with " + "; ".join(said) + ".") if said else None


# uvicorn's access line of a request the server answered with a client error: refused as sent
# (a bad body, no or a wrong API key, an unknown path or model), the server serving on. Only a
# request a client sends (POST ...): a GET the launcher or a probe makes proves nothing.
# (:mod:`ddlab.diagnosis.rootcause` also reads it: the traceback right above it is that request's). (round 120) A 404
# only on a path with a word of the server's routes: a scanner's probe ("/sdk") is no client's (stray_paths.py)
ANSWERED_4XX = rf'"(?:POST|PUT|DELETE|PATCH) (?:{ROUTE_LIKE}/\S+ HTTP/[\d.]+" 404|/\S+ HTTP/[\d.]+" 4(?!04)\d\d)\b'
REQUEST_4XX = Signature(
    "request_http_4xx", "request_error", "the server refused a request as the client sent it",
    ("The server answered a request with a 4xx status (uvicorn's access line) and kept serving: the "
     "request is refused as the client sent it. Fix the client's request (its body, its API key, "
     "its path or model name); the server needs no change unless every client is refused the same "
     "way.",),
    lines=(ANSWERED_4XX,),
    priority=8, phase="serving", request=True, detail=_http_4xx,
    sources=(("uvicorn 0.54.0", "uvicorn/logging.py:107 (AccessFormatter: \"METHOD PATH HTTP/v\" STATUS)"),
             ("0.5.23", "sglang/srt/utils/auth.py:196")))

GRAMMAR_REJECTED = Signature(
    "grammar_token_rejected", "request_error", "the grammar rejected a token of one constrained request",
    ("The grammar of one structured-output request (JSON schema, regex, EBNF) did not accept a "
     "token the model produced, and the scheduler aborted that request; the server kept serving. "
     "With speculative decoding the rejected token is often a draft token the verify step kept: "
     "if it recurs, retry the request without the speculative algorithm to tell, and try another "
     "`--grammar-backend`.",),
    patterns=(r"Grammar accept_token failed\b",),
    lines=(r"Grammar accept_token failed\b",),
    priority=12, phase="serving", request=True,
    sources=(("0.4.10.post2", "sglang/srt/managers/scheduler_output_processor_mixin.py:282"),
             ("0.5.10", "sglang/srt/managers/scheduler_output_processor_mixin.py:542"),
             ("0.5.10", "sglang/srt/disaggregation/decode_schedule_batch_mixin.py:127"),
             ("0.5.10", "sglang/srt/constrained/xgrammar_backend.py:80 (Tokens not accepted: TOKEN)")))

# the model runner catches a failed weight update (an RL trainer pushing weights into a running
# server), logs it and answers that request with failure: the server goes on; above NCCL's own
# errors (30), whose text the process-group failure carries
_WEIGHT_UPDATE = (r"Failed to update parameter online: ", r"Failed to initialize custom process group: ")
WEIGHT_UPDATE_FAILED = Signature(
    "weight_update_failed", "request_error", "a weight update sent to the running server failed",
    ("A request that updates the weights of the running server failed and was answered with the "
     "error; the server kept serving, but after a failed parameter update its weights are partly "
     "updated: resend the whole update. For a process group that did not form, check that the "
     "trainer and the server agree on the address, port, world size and backend of the group, "
     "and that they can reach each other (`nc -zv HOST PORT`).",),
    patterns=_WEIGHT_UPDATE, lines=_WEIGHT_UPDATE, priority=35, phase="serving", request=True,
    sources=(("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:817"),
             ("0.4.10.post2", "sglang/srt/model_executor/model_runner.py:862"),
             ("0.5.23", "sglang/srt/model_executor/model_runner_components/weight_updater.py:142"),
             ("0.5.23", "sglang/srt/model_executor/model_runner_components/weight_updater.py:335")))

# (round 37) the OpenAI batch API's worker (process_batch, an asyncio task) logs a request's failure or the
# whole batch's as "error: ..." and marks the batch failed (0.4.6.post4 openai_api/adapter.py:366, :417;
# 0.4.4.post1 :330, :381): the server goes on. Only with SGLang's stamp (pip and cargo print "error: ")
BATCH_API_ERROR = Signature(
    "batch_api_error", "request_error", "a batch of the OpenAI batch API failed",
    ("A batch sent through the OpenAI batch API (/v1/batches) failed in the server's batch worker, "
     "which marked it failed and kept serving. The error is the batch's: check its input file (one "
     "request per line, each with a custom_id, method, url and body), or send the requests one by one "
     "to see which fails.",),
    lines=(r"^(?-i:error): \S",), priority=7, phase="serving", request=True, stamped=True,
    sources=(("sglang 0.4.4.post1", "sglang/srt/openai_api/adapter.py:381"),
             ("sglang 0.4.6.post4", "sglang/srt/openai_api/adapter.py:366"),
             ("sglang 0.4.6.post4", "sglang/srt/openai_api/adapter.py:417")))

SIGNATURES = [ASGI_ERROR, REQUEST_REFUSED, PD_TRANSFER, PD_SETUP, PD_TRANSFER_WORKER, PD_THREAD_DIED, PD_STATUS_LOST,
              REQUEST_5XX,
              REQUEST_4XX, GRAMMAR_REJECTED,
              WEIGHT_UPDATE_FAILED,
              PD_ENGINE_INIT, BATCH_API_ERROR]  # (round 29, 37)
