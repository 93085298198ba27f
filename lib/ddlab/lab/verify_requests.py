"""Verify requests: HTTP requests that drive the speculative verify path of a ready server.

"Ready" is not "works": in the field the replay crash came only with the first
request after ready. :func:`probe_server` sends one request alone, then two at
once (batch 2), greedily, and reports per request whether it was served and
what the server said of its verify steps (``spec_verify_ct``, accept length). A family
without its own generate (vLLM) is asked by ``/v1/completions`` (:mod:`ddlab.lab.family_api`);
its answer says nothing of verify steps. (A probe in the other sense, a function wrapped
inside the server, is :mod:`ddlab.probes`.)
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from ddlab.config.families import Family, family_named
from ddlab.lab import http_client
from ddlab.lab.family_api import completion_body, completion_text, uses_generate
from ddlab.lab.measure import BENCH_PROMPTS

__all__ = ["ProbeResult", "probe_server"]


@dataclass
class ProbeResult:
    """One probe request: did the verify path run, and what did it report."""

    ok: bool
    batch: int
    status: int | None = None
    error: str | None = None
    completion_tokens: int = 0
    spec_verify_ct: int | None = None
    spec_accept_length: float | None = None
    e2e_s: float = 0.0


def probe_server(base_url: str, *, max_new_tokens: int = 32, timeout_s: float = 60.0,
                 headers=None, family: Family | str | None = None,
                 model: str | None = None) -> list[ProbeResult]:
    """Drive the verify path: one request alone, then two at once (batch 2); ``headers``
    go with each (the server's API key); ``family``: the server's (None: SGLang), ``model``
    the served model's name for OpenAI's completions."""
    family = family if isinstance(family, Family) else family_named(family)
    one = _probe_one if uses_generate(family) else _complete_one
    with http_client.client(timeout=timeout_s, headers=headers) as client:
        results = [one(client, base_url, BENCH_PROMPTS[0], max_new_tokens, batch=1, model=model)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            results += list(pool.map(lambda p: one(client, base_url, p, max_new_tokens,
                                                   batch=2, model=model), BENCH_PROMPTS[1:3]))
    return results


def _complete_one(client: httpx.Client, base_url: str, prompt: str, max_new_tokens: int,
                  *, batch: int, model: str | None = None) -> ProbeResult:
    """One greedy ``/v1/completions`` (vLLM's, and SGLang's OpenAI route)."""

    def read(answer) -> dict:
        return {"completion_tokens": completion_text(answer)[1]}

    return _request_one(client, f"{base_url}/v1/completions",
                        completion_body(prompt, max_new_tokens, model=model), read, batch=batch)


def _probe_one(client: httpx.Client, base_url: str, prompt: str, max_new_tokens: int,
               *, batch: int, model: str | None = None) -> ProbeResult:
    """One greedy SGLang ``/generate``, with its speculative counters."""

    def read(answer) -> dict:
        try:
            meta = answer.get("meta_info", {})
        except AttributeError:
            raise ValueError(f"not a /generate answer: {str(answer)[:200]!r}") from None
        return {"completion_tokens": int(meta.get("completion_tokens", 0)),
                "spec_verify_ct": meta.get("spec_verify_ct"),
                "spec_accept_length": meta.get("spec_accept_length")}

    body = {"text": prompt, "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0}}
    return _request_one(client, f"{base_url}/generate", body, read, batch=batch)


def _request_one(client: httpx.Client, url: str, body: dict, read, *, batch: int) -> ProbeResult:
    """POST ``body``; a transport error, a status other than 200, an answer that is not JSON
    or one ``read`` refuses (ValueError) is a failed probe with its reason, else ``read``'s
    fields."""
    start = time.perf_counter()
    try:
        resp = client.post(url, json=body)
    except httpx.HTTPError as err:
        return ProbeResult(ok=False, batch=batch, error=f"{type(err).__name__}: {err}",
                           e2e_s=time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    if resp.status_code != 200:
        return ProbeResult(ok=False, batch=batch, status=resp.status_code,
                           error=f"HTTP {resp.status_code}: {resp.text[:200]}", e2e_s=elapsed)
    try:
        answer = resp.json()
    except ValueError:
        route = "/" + url.split("/", 3)[-1]
        return ProbeResult(ok=False, batch=batch, status=200, e2e_s=elapsed,
                           error=f"not a {route} answer: {resp.text[:200]!r}")
    try:
        fields = read(answer)
    except ValueError as err:  # JSON, but not the answer this route gives
        return ProbeResult(ok=False, batch=batch, status=200, e2e_s=elapsed, error=str(err))
    return ProbeResult(ok=True, batch=batch, status=200, e2e_s=elapsed, **fields)


