"""What a request to the target may ask, checked once for both APIs (SGLang's and OpenAI's),
and what an endpoint answers.

:func:`make_req` turns a prompt (text or byte ids) and SGLang sampling params
into an engine request, refusing with :class:`BadRequest` (a 4xx) what the
target cannot honour: unknown params, sampling (it decodes greedily only), ids
outside its byte vocabulary. :func:`decode_text` turns output bytes to text.
An endpoint answers a :class:`Reply`: a whole body (:func:`json_reply`), or a
server-sent-event stream (:func:`stream_reply`) that the server sends chunked.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Generator
from dataclasses import dataclass

from ddlab.target.engine import Req

__all__ = ["BadRequest", "Reply", "decode_text", "json_reply", "make_req", "stream_reply",
           "SAMPLING_KEYS"]

SAMPLING_KEYS = {"max_new_tokens", "temperature", "top_p", "top_k", "min_p", "stop", "stop_token_ids",
                 "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "no_stop_trim",
                 "n", "repetition_penalty", "frequency_penalty", "presence_penalty", "min_new_tokens"}


class BadRequest(Exception):
    """A request the server refuses with a 4xx; the message says what to change."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


@dataclass
class Reply:
    """An HTTP answer: ``body`` whole, or ``chunks`` (text pieces sent as they come;
    closed by the server when it stops sending, also when the client left)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    chunks: Generator[str, None, None] | None = None


def json_reply(data, status: int = 200) -> Reply:
    return Reply(status=status, body=json.dumps(data).encode())


def stream_reply(chunks: Generator[str, None, None]) -> Reply:
    return Reply(content_type="text/event-stream; charset=utf-8", chunks=chunks)


def decode_text(ids, final=True) -> str:
    """Bytes to text; an incomplete UTF-8 tail is held back until ``final``."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(ids), final=final)


def make_req(engine, prompt, sp: dict) -> Req:
    """A validated Req from a prompt (text or ids) and SGLang sampling params."""
    unknown = set(sp) - SAMPLING_KEYS
    if unknown:
        raise BadRequest(f"unknown sampling_params {sorted(unknown)}; known: {sorted(SAMPLING_KEYS)}")
    temperature = sp.get("temperature") or 0
    if not isinstance(temperature, (int, float)):
        raise BadRequest(f"temperature={temperature!r}: must be a number; send 0")
    if temperature > 0 and sp.get("top_k") != 1:
        raise BadRequest(f"temperature={temperature}: ddlab's target decodes greedily only; "
                         "send temperature 0")
    max_new = sp.get("max_new_tokens", 128)
    if not isinstance(max_new, int) or max_new < 1:
        raise BadRequest(f"max_new_tokens={max_new!r}: must be an integer >= 1")
    if isinstance(prompt, str):
        ids = list(prompt.encode("utf-8"))
    elif isinstance(prompt, list) and all(isinstance(t, int) and 0 <= t < 256 for t in prompt):
        ids = prompt
    else:
        raise BadRequest("the prompt must be a string or a list of byte ids (0..255)")
    stop = sp.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    stop_ids = sp.get("stop_token_ids") or []
    if not (isinstance(stop, list) and all(isinstance(s, str) and s for s in stop)):
        raise BadRequest(f"stop={stop!r}: must be a string or a list of non-empty strings")
    if not (isinstance(stop_ids, list) and all(isinstance(t, int) for t in stop_ids)):
        raise BadRequest(f"stop_token_ids={stop_ids!r}: must be a list of integers")
    req = Req(ids, max_new, stop=stop, stop_token_ids=stop_ids)
    try:
        engine.validate(req)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    return req


