"""One benchmark request, timed chunk by chunk, in the server family's API.

:func:`generate` is SGLang's streamed ``/generate`` (its ``meta_info``: completion tokens,
``spec_verify_ct``, the accepted-drafts histogram); :func:`complete` is a streamed
``/v1/completions`` for a family without its own generate (vLLM), its tokens from the
usage chunk at its end (vllm/entrypoints/openai/completion/serving.py:581-610 (0.34.0)).
Both at temperature 0, both return a :class:`RequestResult` with TTFT, the per-token ITL
and the text. :mod:`ddlab.lab.measure` runs them in rounds.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx

from ddlab.lab.family_api import completion_body

__all__ = ["RequestResult", "generate", "complete"]


@dataclass
class RequestResult:
    prompt_index: int
    ok: bool
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    spec_verify_ct: int | None = None
    # [k]: the request's verify steps that accepted k drafts, where the server says
    # (SGLang 0.5.23 meta_info spec_correct_drafts_histogram, tokenizer_manager.py:3193-3201)
    spec_correct_drafts_histogram: list | None = None
    e2e_s: float = 0.0
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    text: str = ""


def generate(client: httpx.Client, base_url: str, text: str, *, max_new_tokens: int,
             prompt_index: int = 0, timeout_s: float = 120.0) -> RequestResult:
    """One streamed ``/generate`` at temperature 0, timed chunk by chunk."""
    body = {"text": text, "stream": True,
            "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0}}
    result = RequestResult(prompt_index=prompt_index, ok=False)
    start = last = time.perf_counter()
    seen_tokens = 0
    try:
        with client.stream("POST", f"{base_url}/generate", json=body, timeout=timeout_s) as resp:
            if resp.status_code != 200:
                resp.read()
                result.error = f"HTTP {resp.status_code}: {resp.text[:200]}"
                return result
            for chunk in _sse_events(resp):
                now = time.perf_counter()
                if "error" in chunk:  # SGLang streams a failure this way, status still 200
                    result.error = f"server error: {str(chunk['error'])[:200]}"
                    return result
                meta = chunk.get("meta_info", {})
                tokens = int(meta.get("completion_tokens", seen_tokens))
                new = tokens - seen_tokens
                if new > 0:
                    if result.ttft_s is None:  # tokens beyond the first came with it
                        result.ttft_s = now - start
                        result.itl_s.extend([0.0] * (new - 1))
                    else:
                        result.itl_s.extend([(now - last) / new] * new)
                    seen_tokens = tokens
                    last = now
                _absorb_meta(result, chunk, meta)
        result.ok = True
    except (httpx.HTTPError, json.JSONDecodeError) as err:
        result.error = f"{type(err).__name__}: {err}"
    finally:
        result.e2e_s = time.perf_counter() - start
    return result


def _absorb_meta(result: RequestResult, chunk: dict, meta: dict) -> None:
    result.text = chunk.get("text", result.text)
    result.prompt_tokens = int(meta.get("prompt_tokens", result.prompt_tokens))
    result.completion_tokens = int(meta.get("completion_tokens", result.completion_tokens))
    if meta.get("spec_verify_ct") is not None:
        result.spec_verify_ct = int(meta["spec_verify_ct"])
    if isinstance(meta.get("spec_correct_drafts_histogram"), list):
        result.spec_correct_drafts_histogram = [int(n) for n in meta["spec_correct_drafts_histogram"]]
    finish = meta.get("finish_reason")
    if isinstance(finish, dict):
        result.finish_reason = finish.get("type")
    elif finish:
        result.finish_reason = str(finish)


def complete(client: httpx.Client, base_url: str, text: str, *, max_new_tokens: int,
             prompt_index: int = 0, timeout_s: float = 120.0,
             model: str | None = None) -> RequestResult:
    """One streamed ``/v1/completions`` at temperature 0, timed chunk by chunk; its tokens
    from the usage chunk at its end (vllm/entrypoints/openai/completion/serving.py:581-610
    (0.34.0)), each chunk's gap spread over the tokens a chunk carried on average."""
    body = completion_body(text, max_new_tokens, model=model, stream=True)
    result = RequestResult(prompt_index=prompt_index, ok=False)
    start = time.perf_counter()
    arrivals: list[float] = []
    try:
        with client.stream("POST", f"{base_url}/v1/completions", json=body,
                           timeout=timeout_s) as resp:
            if resp.status_code != 200:
                resp.read()
                result.error = f"HTTP {resp.status_code}: {resp.text[:200]}"
                return result
            for chunk in _sse_events(resp):
                if "error" in chunk:
                    result.error = f"server error: {str(chunk['error'])[:200]}"
                    return result
                _absorb_choice(result, chunk, arrivals, time.perf_counter() - start)
        result.ok = result.completion_tokens > 0 or bool(arrivals)
        result.error = None if result.ok else "no tokens and no usage in the stream"
    except (httpx.HTTPError, json.JSONDecodeError) as err:
        result.error = f"{type(err).__name__}: {err}"
    finally:
        result.e2e_s = time.perf_counter() - start
    if arrivals:
        result.ttft_s = arrivals[0]
        per_chunk = max(result.completion_tokens / len(arrivals), 1.0)
        result.itl_s = [(b - a) / per_chunk for a, b in zip(arrivals, arrivals[1:])]
    return result


def _absorb_choice(result: RequestResult, chunk: dict, arrivals: list, at_s: float) -> None:
    for choice in chunk.get("choices") or ():
        if choice.get("text"):
            result.text += choice["text"]
            arrivals.append(at_s)
        if choice.get("finish_reason"):
            result.finish_reason = str(choice["finish_reason"])
    usage = chunk.get("usage") or {}
    if usage:
        result.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        result.completion_tokens = int(usage.get("completion_tokens") or 0)


def _sse_events(resp: httpx.Response):
    for line in resp.iter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)
