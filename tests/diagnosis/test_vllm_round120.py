"""vLLM held-out round 120 (4 logs, w12001-w12004), folded into work after its miss was read.

Measured once on main at 744aebb3 (staged as a3270800): crashed 4/4, kind 3/4, phase 4/4. One log missed, read
against vLLM 0.17.1's routes:

- w12004 (kind, fixed): vLLM 0.17.1 on a T4 (Qwen2.5-7B GPTQ-Int8, --enforce-eager) answers 268
  "POST /v1/chat/completions" with 200 on a public address; among the access lines internet scanners' probes, "GET /",
  "GET /HNAP1", ... and one "POST /sdk HTTP/1.1" 404 Not Found, and uvicorn's "Invalid HTTP request received." for a
  non-HTTP probe. ddlab read the /sdk 404 as the client's refused request (request_error). No route of vLLM's server has
  a word of "/sdk" in it (0.17.1 vllm/entrypoints/openai/chat_completion/api_router.py:34-35 "/v1/chat/completions",
  openai/completion/api_router.py:34-35, openai/models/api_router.py:20, sagemaker/api_router.py:110, :118, the
  serve/* and pooling/* routers): the server answers every path it has no route for with 404, whoever asked, and a
  path with none of its routes' words is a stray probe's, not the user's client's. Not crashed, kind none, as labelled
  (crashes/kinds/stray_paths.py ``ROUTE_LIKE``: uvicorn's 404 on a POST is read as request_error only on a path with a
  word of the server's routes; "/chat/completions" without /v1, "/v1/chat/completion" or "/v1/embeddings" stay the
  client's, and any other 4xx is read on any path, as before).
- w12001, w12002, w12003 (read as labelled): a user's pasted KV-cache refusal (kv_pool_oom, memory_pool), a V0
  engine's latency benchmark that ends well, and the same T4 server as w12004 answering 642 chat requests.

The positive tests below failed at 744aebb3 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said)

_ROUND = [f"w120{n:02d}" for n in range(1, 5)]
_API = "(APIServer pid=1) INFO:     "


def _serving(*access: str) -> str:
    """A vLLM server that came up and answers chat requests, then the access lines ``access``."""
    return ("(APIServer pid=1) INFO 03-19 03:24:12 [utils.py:302] vLLM API server version 0.17.1\n"
            "(APIServer pid=1) INFO 03-19 03:26:01 [launcher.py:47] Route: /v1/chat/completions, Methods: POST\n"
            f"{_API}Started server process [1]\n{_API}Waiting for application startup.\n"
            f"{_API}Application startup complete.\n"
            + f'{_API}172.17.0.1:50110 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' * 3
            + "".join(f"{_API}{line}\n" for line in access))


def test_the_round_is_folded_with_its_four_logs():
    assert folded_round(VLLM_MANIFEST, 120) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w12004: a scanner's 404 beside a server that answers its API -------------------------------------------------

def test_the_scanners_404s_are_not_a_request_error():
    assert reads(read_log("w12004.log")) == (False, None, "serving")
    assert said(read_log("w12004.log"))[1:] == (None, None)


@pytest.mark.parametrize("path", ["/sdk", "/wp-login.php", "/.env", "/cgi-bin/luci", "/HNAP1"])
def test_a_post_404_on_a_path_of_no_route_is_a_stray_probe(path):
    text = _serving(f'54.225.70.151:47968 - "POST {path} HTTP/1.1" 404 Not Found',
                    "WARNING:  Invalid HTTP request received.")
    assert said(text) == (False, None, None)
    assert said(text, family="vllm") == (False, None, None)


@pytest.mark.parametrize("path", ["/chat/completions", "/v1/chat/completion", "/v1/embeddings", "/completions",
                                  "/generate", "/v1/models/chat"])
def test_a_404_on_a_route_like_path_stays_the_clients(path):
    text = _serving(f'172.17.0.1:50112 - "POST {path} HTTP/1.1" 404 Not Found')
    assert said(text)[:2] == (False, "request_error")
    assert said(text, family="vllm")[:2] == (False, "request_error")


@pytest.mark.parametrize("status", ["400 Bad Request", "401 Unauthorized", "422 Unprocessable Entity"])
def test_another_4xx_is_read_on_any_path(status):
    text = _serving(f'54.225.70.151:47968 - "POST /sdk HTTP/1.1" {status}')
    assert said(text)[:2] == (False, "request_error")


def test_a_stray_probe_beside_a_clients_404_keeps_the_clients():
    text = _serving('54.225.70.151:47968 - "POST /sdk HTTP/1.1" 404 Not Found',
                    '172.17.0.1:50112 - "POST /chat/completions HTTP/1.1" 404 Not Found')
    assert said(text)[:2] == (False, "request_error")


# --- the texts the rule cites --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "text"), [
    ("vllm/entrypoints/openai/chat_completion/api_router.py", '@router.post(\n    "/v1/chat/completions",'),
    ("vllm/entrypoints/openai/completion/api_router.py", '@router.post(\n    "/v1/completions",'),
    ("vllm/entrypoints/openai/models/api_router.py", '@router.get("/v1/models")'),
    ("vllm/entrypoints/sagemaker/api_router.py", '@router.post("/ping", response_class=Response)'),
    ("vllm/entrypoints/pooling/embed/api_router.py", '"/v1/embeddings",'),
    ("vllm/entrypoints/serve/instrumentator/metrics.py", 'Mount("/metrics", make_asgi_app(registry=registry))'),
], ids=["chat", "completions", "models", "ping", "embeddings", "metrics"])
def test_the_cited_routes_are_vllms_own(path, text):
    assert_in_wheel("0.17.1", path, text)


def test_uvicorns_warning_is_its_own():
    assert_in_library_wheel("uvicorn", "0.54.0", "uvicorn/protocols/http/httptools_impl.py",
                            'msg = "Invalid HTTP request received."')
