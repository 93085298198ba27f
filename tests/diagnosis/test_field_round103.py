"""Held-out round 103 (issue 24): an RDNA4 TP2 server's only trace of a failed request, FastAPI's deprecation warning
raised from serving_chat.py's create_error_response, is a client that left: the label's miss, disputed, ddlab's
reading kept.

Round 103 (h103002, h103003, h103007, h103009, h103010; users' own log repositories) was measured once on main at
66b14a51: crashed 5/5, kind 4/5, phase 5/5. docs/diagnosis.md, "Held-out round 103", tells the round.

- h103010 (mattbucci/2x-R9700-RDNA4-GFX1201-sglang-inference, SGLang 0.5.11): "serving_chat.py:1012:
  FastAPIDeprecationWarning: ORJSONResponse is deprecated" over "return self.create_error_response(str(e))", no
  traceback, no 4xx line. 0.5.11's _handle_non_streaming_request answers a ValueError of generate_request so
  (entrypoints/openai/serving_chat.py:1007-1012; a 400 ORJSONResponse, serving_base.py:209-225, which logs nothing:
  the line is FastAPI's warning for the class, fastapi 0.165.0 responses.py:69-77). The request decoding since
  17:43:48 is gone at 17:53:48, 600 s later: its client left, the TokenizerManager aborted it and raised only to end
  the handler (managers/tokenizer_manager.py:1364-1375, "Request is disconnected from the client side (type 3)"), and
  the 400 went to no one (uvicorn 0.54.0 protocols/http/httptools_impl.py:467-468 return before the access line).
  Labelled request_error; disputed -> None, as round 99's h99008 (the same abort, another handler's log).
- No rule added (no lib change: dumpfull reads every fixture the same); none left.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 103)


def test_round103_is_folded_into_work_with_one_dispute_and_none_left():
    assert _IDS == ["h103002", "h103003", "h103007", "h103009", "h103010"]
    assert disputed(REAL_MANIFEST, _IDS) == ["h103010"]
    assert REAL_MANIFEST["h103010"]["kind_disputed"] == ["request_error", None]
    assert "phase_disputed" not in REAL_MANIFEST["h103010"]
    assert REAL_MANIFEST["h103010"]["second_look"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


def test_h103010_reads_as_the_second_look_and_as_h99008_of_the_same_abort():
    found, same = real("h103010"), real("h99008")
    assert (found.crashed, found.kind, found.phase) == (False, None, "serving")
    assert (same.crashed, same.kind, same.phase) == (False, None, "serving")
    assert REAL_MANIFEST["h99008"]["kind_disputed"] == ["request_error", None]


# --- what the reading rests on: the request answered to no one -----------------------------------------------------

def _lines() -> list[str]:
    return (REAL / "h103010.log").read_text(encoding="utf-8").splitlines()


# the log itself: the request prefilled at 17:43:48 decodes until 17:53:47 and is gone at 17:53:48, when the warning
# is printed and a new request is prefilled; no access line answers it, every other chat request has its 200 OK
def test_the_warning_comes_600_seconds_after_the_lost_requests_prefill_with_no_access_line():
    lines = _lines()
    warn = next(i for i, ln in enumerate(lines) if "serving_chat.py:1012: FastAPIDeprecationWarning" in ln)
    assert lines[warn + 1].strip() == "return self.create_error_response(str(e))"
    assert "[2026-05-25 17:53:47 TP0] Decode batch, #running-req: 1, #full token: 2969" in lines[warn - 2]
    assert lines[warn - 1].startswith("[2026-05-25 17:53:48 TP0] Prefill batch, #new-seq: 1, #new-token: 84")
    assert any(ln.startswith("[2026-05-25 17:43:48 TP0] Prefill batch, #new-seq: 1, #new-token: 57") for ln in lines)
    assert not [ln for ln in lines if '"POST /v1/chat/completions HTTP/1.1" 4' in ln]
    assert not [ln for ln in lines if "Traceback (most recent call last)" in ln]


_BATCH = ("[2026-05-25 17:53:47 TP0] Decode batch, #running-req: 1, #full token: 2969, full token usage: 0.01, "
          "mamba num: 2, mamba usage: 0.05, cuda graph: False, gen throughput (token/s): 4.83, #queue-req: 0")
_WARNING = [
    "/srv/sglang/python/sglang/srt/entrypoints/openai/serving_chat.py:1012: FastAPIDeprecationWarning: ORJSONResponse"
    " is deprecated, FastAPI now serializes data directly to JSON bytes via Pydantic when a return type or response"
    " model is set, which is faster and doesn't need a custom response class.",
    "  return self.create_error_response(str(e))",
]
_BAD_REQUEST = '[2026-05-25 17:53:48] INFO:     127.0.0.1:41238 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request'
_OK = '[2026-05-25 17:54:14] INFO:     127.0.0.1:41238 - "POST /v1/chat/completions HTTP/1.1" 200 OK'


def _served(*middle: str) -> str:
    return "\n".join([_BATCH, *middle, _BATCH]) + "\n"


# the warning pair alone, between decode batches, is no request's error: a library's deprecation of a class
@pytest.mark.parametrize("after", [(), (_OK,)], ids=["alone", "then-200"])
def test_the_orjson_deprecation_warning_from_create_error_response_is_no_request_error(after):
    assert reads(_served(*_WARNING, *after), family="sglang") == (False, None, "serving")


# near miss: where the client was still there and got the 400 (uvicorn's access line), it is one request's error
@pytest.mark.parametrize("middle", [(*_WARNING, _BAD_REQUEST), (_BAD_REQUEST,)], ids=["with-warning", "line-alone"])
def test_a_request_answered_400_is_still_a_request_error(middle):
    assert reads(_served(*middle), family="sglang") == (False, "request_error", "serving")


# --- the lines cited from the wheels --------------------------------------------------------------------------------
# 0.5.11's lines (serving_chat.py:1012, serving_base.py:225, tokenizer_manager.py:1374) were read from its wheel
# (pip download --no-deps sglang==0.5.11); 0.5.12, unpacked here, has the same code

_CITED = [
    ("sglang", "0.5.12", "sglang/srt/entrypoints/openai/serving_chat.py", 1099,
     "return self.create_error_response(str(e))"),
    ("sglang", "0.5.12", "sglang/srt/entrypoints/openai/serving_base.py", 225,
     "return ORJSONResponse(content=error.model_dump(), status_code=status_code)"),
    ("sglang", "0.5.12", "sglang/srt/managers/tokenizer_manager.py", 1384,
     "# Abort the request for disconnected requests (non-streaming, running)"),
    ("sglang", "0.5.12", "sglang/srt/managers/tokenizer_manager.py", 1388,
     'f"Request is disconnected from the client side (type 3). Abort request {obj.rid=}"'),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/httptools_impl.py", 467, "if self.disconnected:"),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/httptools_impl.py", 468, "return  # pragma: full coverage"),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/httptools_impl.py", 482, "self.access_logger.info("),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
