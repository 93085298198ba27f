"""The lab's requests in a server family's words (:mod:`ddlab.config.families`).

A family whose API has its own generate (SGLang: ``POST /generate``, ``output_ids``,
``meta_info.spec_verify_ct``) is driven by it, as :mod:`ddlab.lab.verify_requests`,
:mod:`ddlab.lab.lossless` and :mod:`ddlab.lab.measure` always did. A family without one
(vLLM) is driven by OpenAI's ``POST /v1/completions`` (vLLM 0.34.0:
vllm/entrypoints/openai/completion/api_router.py:37), greedily (``temperature`` 0);
streamed with ``stream_options.include_usage``, whose last chunk carries the usage
(vllm/entrypoints/openai/completion/serving.py:581-610 (0.34.0)). Its acceptance is its
own figure: the mean acceptance length, ``1 + accepted / drafts`` "conventionally
including the bonus token" (vllm/v1/spec_decode/metrics.py:113-114 (0.34.0)), read from
``/metrics``: the counters ``vllm:spec_decode_num_accepted_tokens`` and
``vllm:spec_decode_num_drafts`` (:229-231; prometheus_client adds ``_total``) differenced
before and after what is measured, as SpecDecodingProm's docstring computes it
(:186-190). Nothing here holds a connection of its own: the callers pass their client.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import httpx

from ddlab.config.families import FAMILIES, DEFAULT_FAMILY, Family, family_named

__all__ = ["family_of_run", "uses_generate", "completion_body", "completion_text",
           "SpecCounters", "spec_counters", "speculative_flags", "graphs_on_flags"]

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)")


def family_of_run(run_dir) -> Family:
    """The family of the variant a run folder's ``config.json`` records (SGLang when it
    names none or cannot be read: every run before families)."""
    try:
        config = json.loads((Path(run_dir) / "config.json").read_text())
        name = (config.get("config") or {}).get("family") or DEFAULT_FAMILY
        return FAMILIES.get(name) or family_named(None)
    except (OSError, ValueError, AttributeError, TypeError):
        return family_named(None)


def uses_generate(family: Family) -> bool:
    """Whether the family's own generate drives the lab (SGLang's ``/generate``), not
    OpenAI's completions."""
    return bool(family.api.generate)


def completion_body(prompt, max_tokens: int, *, model: str | None = None,
                    stream: bool = False) -> dict:
    """A greedy ``/v1/completions`` request (streamed: with the usage at its end)."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    if model:
        body["model"] = model
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


def completion_text(data) -> tuple[str, int]:
    """``(text, completion tokens)`` of a non-streamed completions answer (one choice)."""
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) \
            or not data["choices"]:
        raise ValueError(f"not a /v1/completions answer: {str(data)[:200]!r}")
    usage = data.get("usage") or {}
    return str(data["choices"][0].get("text") or ""), int(usage.get("completion_tokens") or 0)


@dataclass(frozen=True)
class SpecCounters:
    """The server's acceptance counters at one moment (its family's
    :class:`~ddlab.config.families.MetricsCounters`): accepted tokens, steps (drafts)."""

    accepted: float
    drafts: float


def spec_counters(client: httpx.Client, base_url: str, family: Family) -> SpecCounters | None:
    """The family's acceptance counters from ``/metrics``, summed over engines; None when
    the server exposes none (no speculation, no metrics)."""
    names = (family.counters.accepted, family.counters.steps)
    resp = client.get(f"{base_url}{family.api.metrics}")
    if resp.status_code != 200:
        return None
    sums = dict.fromkeys(names, 0.0)
    seen = set()
    for line in resp.text.splitlines():
        match = _SAMPLE.match(line)
        if match and match["name"] in sums:
            sums[match["name"]] += float(match["value"])
            seen.add(match["name"])
    return SpecCounters(*(sums[n] for n in names)) if len(seen) == len(names) else None


def speculative_flags(flags: dict, family: Family) -> bool:
    """Whether a command with these flags decodes speculatively, by the family's own
    algorithm key (SGLang ``speculative-algorithm``, not NONE; vLLM a
    ``--speculative-config`` with a method)."""
    algorithm = family.flat_flags(flags or {}).get(family.algorithm_key)
    return bool(algorithm) and str(algorithm).upper() != "NONE"


def graphs_on_flags(flags: dict, family: Family) -> bool:
    """Whether a command with these flags decodes with CUDA graphs, by the family's
    ``cuda_graph`` knob (vLLM: not ``--enforce-eager``; SGLang: ddlab.config.flags)."""
    from ddlab.config.flags import graphs_on

    knob = family.knob_for("cuda_graph")
    if knob is None or not knob.negated or family.name == DEFAULT_FAMILY:
        return graphs_on(flags or {})
    return not bool((flags or {}).get(knob.sets))
