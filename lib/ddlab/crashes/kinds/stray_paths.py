"""A 404 on a path that is no route of the server, nor a near miss of one: a stray probe, not a client's request.

Contract: :data:`ROUTE_LIKE` is a lookahead put before the path of uvicorn's access line
(``"METHOD PATH HTTP/v" STATUS``, uvicorn 0.54.0 uvicorn/logging.py:107); it holds where the path has a word of
the server's routes in it. :mod:`.requests` reads a 404 as the client's refused request (``request_error``)
only on such a path; any other 4xx is read on any path, as before.

Why: the server answers every path it has no route for with 404 "Not Found", whoever asked. A server on a
public address is asked for paths of other software by internet scanners ("/sdk", "/HNAP1", "/.env",
"/wp-login.php"; uvicorn warns "Invalid HTTP request received." for their non-HTTP probes,
uvicorn/protocols/http/httptools_impl.py:176, h11_impl.py:183): their 404s say nothing of the user's client.
A client that got the route wrong asks a path with the route's words in it ("/chat/completions" without
/v1, "/v1/chat/completion", "/v1/embeddings" on a server that serves no embedding model), and that 404
stays the client's. The words are those of the routes vLLM's OpenAI server registers (0.17.1
vllm/entrypoints/openai/chat_completion/api_router.py:34-35 "/v1/chat/completions", :76-77 its "/render";
openai/completion/api_router.py:34-35 "/v1/completions"; openai/models/api_router.py:20 "/v1/models";
openai/responses/api_router.py:48 "/v1/responses"; anthropic/api_router.py:49 "/v1/messages", :95
"/v1/messages/count_tokens"; pooling/embed/api_router.py:44 "/v1/embeddings"; pooling/score/api_router.py:35
"/score", :68 "/v1/score", :87 "/rerank", :119 "/v1/rerank", :138 "/v2/rerank"; serve/tokenize/api_router.py:39
"/tokenize", :68 "/detokenize"; sagemaker/api_router.py:110 "/ping", :118 "/invocations";
serve/lora/api_router.py:42 "/v1/load_lora_adapter", :59 "/v1/unload_lora_adapter"; serve/sleep/api_router.py:22
"/sleep", :33 "/wake_up"; serve/instrumentator/health.py:22 "/health"; serve/instrumentator/metrics.py:41
"/metrics"; the generate, pooling, classify, audio, profile, cache, RLHF and elastic-EP routers, the serve/*
api_router.py files, the same way) and of SGLang's (0.5.23 sglang/srt/entrypoints/http_server.py: "/generate",
"/encode", "/classify", "/flush_cache", "/update_weights_from_disk", "/open_session", "/abort_request", ...).

Why a module of its own: requests.py is at its ~400-line bound (../shared/STYLE.md).
"""

from __future__ import annotations

__all__ = ["ROUTE_LIKE"]

# a word of the servers' routes anywhere in the path (a near miss keeps one: "/chat/completion", "/v1/embed");
# written with [^\s"] so it stops at the path's end whether or not the caller's regex is case-blind
_ROUTE_WORDS = (r"v\d|chat|complet|embed|model|respons|message|token|score|rerank|generat|encode|classif|pool"
                r"|audio|transcri|translat|invocation|ping|health|metric|lora|adapter|sleep|wake|pause|resume"
                r"|profile|cache|weight|session|abort|rpc|scale|render|inference")
ROUTE_LIKE = rf'(?=/[^\s"]*?(?:{_ROUTE_WORDS}))'
