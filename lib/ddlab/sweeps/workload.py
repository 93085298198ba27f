"""A cell measured under load: every concurrency level on one server start.

Speculation trades spare compute for latency: as the batch grows the verify step
costs more and the gain shrinks, until it loses. A workload sweep
(``concurrency=[1, 4, 16]``) measures each cell's server, once started, at every
level in turn (lowest first; the server is never restarted between levels), each
level to its own 95 % interval with the sweep's adaptive rounds
(:func:`ddlab.lab.measure.measure`: ``ci_target``, ``max_rounds``, ``max_time_s``
per level), so the no-speculation baseline cell is measured at the same levels and
every level has its speedup (:mod:`ddlab.sweeps.levels`).

Per cell, after ``warmup`` requests:

1. **Acceptance per prompt set** (:mod:`ddlab.sweeps.prompt_sets`): each set's
   prompts once, at concurrency 1; its accept length is the difference of the
   server's own counters before and after, ``sglang:generation_tokens_total`` over
   ``sglang:spec_verify_calls_total`` (SGLang 0.5.23
   ``sglang/srt/observability/metrics_collector.py:1860-1869``, both incremented per
   finished request at ``:2110-2112``; served at ``/metrics`` with
   ``--enable-metrics``, which a workload sweep turns on), so it covers exactly those
   requests. Per position (the share of verify steps that accepted at least k drafts)
   where the server reports each request's ``spec_correct_drafts_histogram``
   (``sglang/srt/managers/tokenizer_manager.py:3193-3201``). A server without the
   counters falls back on the requests' own ``spec_verify_ct`` and says so
   (``accept_source``).
2. **Each level**: ``max(requests, level)`` requests a round, all sets' prompts
   mixed, at that concurrency; the counters are differenced around it too
   (``accept_length_server``). Per-user tok/s is each request's tokens over its
   own end-to-end time (what one user sees), the median over a round's requests,
   then over rounds with its interval; total tok/s is the round's tokens over its wall
   time, as in a single-level sweep.

A vLLM server (``family="vllm"``) is asked by ``/v1/completions`` (:mod:`ddlab.lab.family_api`)
and its acceptance is its own figure, the mean acceptance length ``1 + accepted / drafts``
from ``vllm:spec_decode_num_accepted_tokens_total`` and ``vllm:spec_decode_num_drafts_total``
differenced the same way (vllm/v1/spec_decode/metrics.py:186-190 (0.34.0)); per position,
``vllm:spec_decode_num_accepted_tokens_per_pos_total`` over the drafts (:192-195, the
counter at :255: the share of drafts whose position p was accepted, i.e. that accepted at
least p, as SGLang's per position); its finished requests ``vllm:request_success_total``
(vllm/v1/metrics/loggers.py:809). vLLM serves ``/metrics`` without a flag.

A request rate (open-loop arrivals) is not a level kind yet: levels are closed-loop
concurrency. :func:`duration_bound` is what the plan says before it starts.
"""

from __future__ import annotations

import re
import statistics

import httpx

from ddlab.config.families import Family, MetricsCounters, family_named
from ddlab.core.checks import check_number
from ddlab.core.errors import ConfigError
from ddlab.core.progress import duration_words
from ddlab.lab import http_client
from ddlab.lab.family_api import uses_generate
from ddlab.lab.measure import Measurement, complete, generate, measure
from ddlab.lab.stats import median_ci
from ddlab.sweeps.prompt_sets import SHIPPED, load_sets, mixed

__all__ = ["check_levels", "prompt_names", "read_counters", "measure_workload", "accept_per_position",
           "duration_bound"]

_POSITION = re.compile(r'position="(\d+)"')
_SET_CONCURRENCY = 1   # each set's acceptance pass: one request at a time


def check_levels(value):
    """One level stays an int (a single-level sweep, as before); several become a
    sorted tuple without repeats (a stored list comes back a tuple)."""
    if not isinstance(value, (list, tuple)):
        check_number("concurrency", value, minimum=1, integer=True, example=4)
        return value
    if not value:
        raise ConfigError("concurrency=[]: needs at least one level",
                          fix="e.g. -p concurrency 1, or -p concurrency '[1, 4, 16]'",
                          key="concurrency", value=value)
    for level in value:
        check_number("concurrency", level, minimum=1, integer=True, example=4)
    levels = tuple(sorted(set(value)))
    return levels[0] if len(levels) == 1 else levels


def prompt_names(value) -> tuple:
    """Prompt set names or paths, as a tuple of strings (one string: one set)."""
    value = [value] if isinstance(value, str) and value else list(value or ())
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ConfigError(f"prompts={bad!r}: each must be a set's name or a file's path",
                          fix="e.g. -p prompts '[chat, code, math]' or '[my_prompts.jsonl]'",
                          key="prompts", value=bad)
    return tuple(value)


def _counters_of(family: Family | None) -> MetricsCounters:
    """The family's acceptance counters (SGLang's when none is named)."""
    return (family or family_named(None)).counters


def read_counters(client: httpx.Client, base_url: str, family: Family | None = None) -> dict | None:
    """The family's counters (its :class:`~ddlab.config.families.MetricsCounters`) from
    ``/metrics``, summed over label sets, and the accepted drafts per position by position
    where the family counts them; None when the server serves none (no
    ``--enable-metrics``, another server, no speculation on vLLM)."""
    try:
        reply = client.get(f"{base_url}/metrics", timeout=10.0)
    except httpx.HTTPError:
        return None
    if reply.status_code != 200:
        return None
    counters = _counters_of(family)
    found = dict.fromkeys(counters.names, 0.0)
    per_pos: dict[int, float] = {}
    seen = False
    for line in reply.text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.partition("} ") if "{" in line else line.partition(" ")
        name = series.partition("{")[0]
        if name in found or (counters.per_position and name == counters.per_position):
            try:
                number = float(value.split()[0])
            except (ValueError, IndexError):
                continue
            if name in found:
                found[name] += number
                seen = True
            elif (position := _POSITION.search(series)) is not None:
                per_pos[int(position[1])] = per_pos.get(int(position[1]), 0.0) + number
    if per_pos:
        found["per_pos"] = per_pos
    return found if seen else None


def _accept_from(before: dict | None, after: dict | None,
                 family: Family | None = None) -> float | None:
    """The acceptance between two readings in the family's own figure (SGLang's accept
    length, tokens / verify steps; vLLM's mean acceptance length, 1 + accepted / drafts)."""
    if not before or not after:
        return None
    counters = _counters_of(family)
    return counters.acceptance(after[counters.accepted] - before[counters.accepted],
                               after[counters.steps] - before[counters.steps])


def _per_position_from(before: dict | None, after: dict | None,
                       family: Family | None = None) -> list[float]:
    """Per draft position p = 1, 2, ..., accepted at p over the steps, between two
    readings ([] without them, or for a family that counts no positions)."""
    if not before or not after or "per_pos" not in after:
        return []
    steps_name = _counters_of(family).steps
    steps = after[steps_name] - before[steps_name]
    if steps <= 0:
        return []
    old = before.get("per_pos") or {}
    return [round((after["per_pos"][p] - old.get(p, 0.0)) / steps, 4)
            for p in sorted(after["per_pos"])]


def accept_per_position(histograms) -> list[float]:
    """From requests' ``spec_correct_drafts_histogram`` ([k]: steps that accepted k drafts):
    for draft position p = 1, 2, ..., the share of verify steps that accepted at least p."""
    total: list[int] = []
    for histogram in histograms:
        for k, n in enumerate(histogram or ()):
            total.extend([0] * (k + 1 - len(total)))
            total[k] += n
    steps = sum(total)
    if not steps:
        return []
    return [round(sum(total[p:]) / steps, 4) for p in range(1, len(total))]


def _requests_accept(result: Measurement) -> float | None:
    ok = [r for run in result.runs for r in run.requests if r.ok]
    verify = [r.spec_verify_ct for r in ok]
    if not ok or None in verify or not sum(verify):
        return None
    return sum(r.completion_tokens for r in ok) / sum(verify)


def _user_tok_s(result: Measurement) -> tuple:
    """Per-user tok/s: per round the median over requests of tokens / own e2e time; then
    the median over rounds and its 95% interval."""
    rounds = []
    for run in result.runs:
        rates = [r.completion_tokens / r.e2e_s for r in run.requests if r.ok and r.e2e_s > 0]
        if rates:
            rounds.append(statistics.median(rates))
    return median_ci(rounds)


def _set_pass(client, base_url, prompt_set, options, headers, family=None) -> dict:
    before = read_counters(client, base_url, family)
    result = measure(base_url, requests=len(prompt_set.prompts), concurrency=_SET_CONCURRENCY,
                     max_new_tokens=options.max_new_tokens, warmup=0, repeats=1,
                     prompts=list(prompt_set.prompts), label=f"acceptance {prompt_set.name}",
                     headers=headers, family=family)
    after = read_counters(client, base_url, family)
    server = _accept_from(before, after, family)
    requests = _requests_accept(result)
    histograms = [r.spec_correct_drafts_histogram for run in result.runs for r in run.requests
                  if r.ok and r.spec_correct_drafts_histogram]
    return {"set": prompt_set.name, "prompts": len(prompt_set.prompts),
            "accept_length": server if server is not None else requests,
            "accept_source": "server counters" if server is not None
            else "request meta" if requests is not None else None,
            "accept_length_requests": requests,
            "accept_per_position": accept_per_position(histograms) if histograms
            else _per_position_from(before, after, family),
            "n_failed": sum(not r.ok for run in result.runs for r in run.requests)}


def _level(client, base_url, level, prompts, options, headers, label, record,
           family=None) -> tuple:
    before = read_counters(client, base_url, family)
    result = measure(base_url, requests=max(options.requests, level), concurrency=level,
                     max_new_tokens=options.max_new_tokens, warmup=0, repeats=options.repeats,
                     ci_target=options.ci_target, min_time_s=options.min_time_s,
                     max_time_s=options.max_time_s, max_rounds=options.max_rounds,
                     prompts=prompts, label=f"{label} c{level}", record=record, headers=headers,
                     family=family)
    after = read_counters(client, base_url, family)
    server = _accept_from(before, after, family)
    user, low, high = _user_tok_s(result)
    summary = {"concurrency": level, **result.summary(), "user_tok_s": user,
               "user_tok_s_ci_low": low, "user_tok_s_ci_high": high,
               "accept_length_server": server,
               # the server's own count of finished requests after this level (None: no /metrics)
               "server_requests_after": after[_counters_of(family).requests] if after else None}
    return summary, result.to_dict()


def measure_workload(base_url: str, options, *, label: str = "bench", record=None,
                     headers=None, family: Family | str | None = None) -> tuple[dict, dict]:
    """Measure a ready server at every level of ``options`` (a :class:`SweepOptions`);
    returns ``(metrics, evidence)``: the metrics the store keeps (the lowest level's
    figures at the top, as a single-level cell's, plus ``levels`` and ``prompt_sets``)
    and what ``bench.json`` keeps (every request of every level). ``family``: the
    server's (None: SGLang), which says how it is asked and where its acceptance is."""
    family = family if isinstance(family, Family) else family_named(family)
    ask = generate if uses_generate(family) else complete
    sets = load_sets(options.prompts or SHIPPED)
    prompts = mixed(sets)
    with http_client.client(headers=headers) as client:
        for i in range(options.warmup):
            ask(client, base_url, prompts[i % len(prompts)],
                max_new_tokens=options.max_new_tokens, prompt_index=i % len(prompts))
        per_set = [_set_pass(client, base_url, s, options, headers, family) for s in sets]
        levels, evidence = [], []
        for level in options.levels:
            summary, runs = _level(client, base_url, level, prompts, options, headers, label,
                                   record, family)
            levels.append(summary)
            evidence.append(runs)
    metrics = {**levels[0], "levels": levels, "prompt_sets": per_set,
               "n_failed_total": sum(s["n_failed_total"] for s in levels),
               "n_requests_total": sum(s["n_requests_total"] for s in levels)}
    return metrics, {"levels": evidence, "prompt_sets": per_set}


def duration_bound(cells: int, options, *, bracketed: int = 0) -> str:
    """What a workload sweep's plan says before it starts: the measuring it may take (a
    level stops at ``max_time_s`` whatever its interval, once it has its first rounds: 3
    with ``ci_target``, ``repeats`` without), besides each cell's server start."""
    levels = len(options.levels)
    measurements = (cells + bracketed) * levels
    bound = measurements * options.max_time_s
    again = f" (+{bracketed} re-measured baselines)" if bracketed else ""
    return (f"workload: {cells} cells{again} x {levels} levels "
            f"({', '.join(map(str, options.levels))}) = {measurements} measurements on "
            f"{cells + bracketed} server starts; measuring takes about {duration_words(bound)} "
            f"at most ({measurements} x max_time_s {options.max_time_s:g} s; a level slower "
            "than that stops after its first rounds), plus the starts and an acceptance pass "
            "per prompt set per cell")
