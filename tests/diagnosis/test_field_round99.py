"""Held-out round 99 (issue 24): outlines' TransformerTokenizer against ChatGLM3's read-only pad id under SGLang
0.2.5, and a client's disconnect on 0.5.6.post2: both misses the labels', disputed, ddlab's readings kept.

Round 99 (h99001-h99011; SGLang issue threads and a user's Cursor chat export) was measured once on main at b16fb9e,
staged again as 0db56b92 on 295134f (rounds 97 and 98 merged), where it reads the same: crashed 11/11, kind 9/11,
phase 10/10. docs/diagnosis.md, "Held-out round 99", tells the round.

- h99002, SGLang 0.2.5 (#735, chatglm3-6b): "AttributeError: can't set attribute 'pad_token_id'" from outlines
  0.0.46 models/transformers.py:67-68 under SGLang's FSMCache (constrained/fsm_cache.py:24). Labelled
  dependency_mismatch; disputed -> unknown: every outlines SGLang 0.2.5 admits (>=0.0.44, METADATA:244) does the
  same, and SGLang fixed it in its own code from 0.2.9 (fsm_cache.py:39-58, "tmp fix for chatglm2 & chatglm3").
- h99008, SGLang 0.5.6.post2: "[http_server] Error: Request is disconnected from the client side (type 1). Abort
  request" is the TokenizerManager aborting a request whose HTTP client left (managers/tokenizer_manager.py:958-972)
  and the /generate handler logging the ValueError it raises to end the task (entrypoints/http_server.py:609-612).
  Labelled request_error; disputed -> None: no request failed in the server.
- No rule added (no lib change: dumpfull reads every fixture the same); none left.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 99)


def test_round99_is_folded_into_work_with_two_disputes_and_none_left():
    assert _IDS == [f"h990{n:02d}" for n in range(1, 12)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h99002", "h99008"]
    assert REAL_MANIFEST["h99002"]["kind_disputed"] == ["dependency_mismatch", "unknown"]
    assert REAL_MANIFEST["h99008"]["kind_disputed"] == ["request_error", None]
    assert all(REAL_MANIFEST[i]["second_look"] for i in ("h99002", "h99008"))
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "want"), [
    ("h99002", (True, "unknown", "graph_capture")),
    ("h99008", (False, None, "serving")),
])
def test_the_disputed_logs_read_as_the_second_look(log_id, want):
    found = real(log_id)
    assert (found.crashed, found.kind, found.phase) == want


# --- h99008: a client's disconnect is no request's error ----------------------------------------------------------

_BATCH = ("[2025-12-18 19:46:26 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: "
          "0.53, #running-req: 0, #queue-req: 0, ")


def _served(error: str) -> str:
    return "\n".join([_BATCH, f"[2025-12-18 19:46:29] [http_server] Error: {error}", _BATCH]) + "\n"


@pytest.mark.parametrize("kind", [1, 3])
def test_a_request_aborted_for_its_disconnected_client_is_no_request_error(kind):
    line = f"Request is disconnected from the client side (type {kind}). Abort request obj.rid='ec8f6dc07e9c4ff7'"
    assert reads(_served(line), family="sglang") == (False, None, "serving")


# near miss: the same handler's log of a request the server refused is still one request's error
def test_a_request_the_server_refuses_under_the_same_handler_is_a_request_error():
    line = "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
    assert reads(_served(line), family="sglang") == (False, "request_error", "serving")


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_CITED = [
    ("sglang", "0.5.6.post2", "sglang/srt/managers/tokenizer_manager.py", 967,
     "# Abort the request for disconnected requests (non-streaming, waiting queue)"),
    ("sglang", "0.5.6.post2", "sglang/srt/managers/tokenizer_manager.py", 971,
     'f"Request is disconnected from the client side (type 1). Abort request {obj.rid=}"'),
    ("sglang", "0.5.6.post2", "sglang/srt/entrypoints/http_server.py", 611,
     'logger.error(f"[http_server] Error: {e}")'),
    ("sglang", "0.2.5", "sglang/srt/constrained/fsm_cache.py", 24,
     "self.outlines_tokenizer = TransformerTokenizer(tokenizer)"),
    ("outlines", "0.0.46", "outlines/models/transformers.py", 67, "if not self.tokenizer.pad_token_id:"),
    ("outlines", "0.0.46", "outlines/models/transformers.py", 68,
     "self.tokenizer.pad_token_id = self.tokenizer.eos_token_id"),
    ("outlines", "0.1.0", "outlines/models/transformers.py", 72, "if self.tokenizer.pad_token_id is None:"),
    ("sglang", "0.2.9", "sglang/srt/constrained/fsm_cache.py", 42,
     "# FIXME: tmp fix for chatglm2 & chatglm3 (pad_token_id=0)"),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
