"""Benchmark client for a ready SGLang-compatible server (``/generate``, streamed).

One run: ``warmup`` requests first (excluded from every figure), then
``requests`` requests at ``concurrency`` from a prompt set, each streamed so
TTFT and inter-token latency are seen. Figures per run:

- accept length = sum of completion tokens / sum of ``spec_verify_ct`` over
  *this run's* requests. Never the server's lifetime ``avg_spec_accept_length``,
  which includes warmup and earlier runs. None without speculation.
- output tok/s = sum of completion tokens / wall time; requests/s likewise.
- TTFT, ITL (per token: a chunk carrying k tokens after a gap g counts k
  gaps of g/k, since one speculative step emits several tokens at once) and
  TPOT = (e2e - TTFT) / (completion tokens - 1), at p50/p90/p99.

Rounds: the same ``requests`` requests, again and again; each round is one
sample of every figure. At least ``repeats`` rounds; with ``ci_target`` (a
relative half width, 0.05 = +-5 %) at least 3, then more until the 95%
confidence interval of the round throughputs' median is that narrow, or
``max_rounds`` or ``max_time_s`` is reached, but never before ``min_time_s``
of measuring. Each figure is the median over rounds; tok/s, TTFT p50, TPOT
p50 and e2e p50 carry ``_ci_low``/``_ci_high`` (:mod:`ddlab.lab.stats`), and
``output_tok_s_samples`` keeps the round throughputs (a speedup's interval
needs both sides' samples). Accept length is exact (a count ratio), no CI.
Threads, not asyncio, so it runs unchanged inside a Jupyter kernel's event loop.

A family without its own generate (vLLM, ``family="vllm"``) is asked by a streamed
``/v1/completions`` (:func:`complete`; its tokens from the usage chunk at the end, the
ITL per chunk spread over the tokens it carried on average), and its accept length is
its own figure, the mean acceptance length ``1 + accepted / drafts`` from ``/metrics``,
differenced around each round (:mod:`ddlab.lab.family_api`): exact, no CI, as SGLang's.
"""

from __future__ import annotations

import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from ddlab.config.families import Family, MetricsCounters, family_named
from ddlab.core.checks import check_number
from ddlab.core.errors import ConfigError
from ddlab.core.progress import Heartbeat
from ddlab.lab import http_client
from ddlab.lab.bench_requests import RequestResult, complete, generate
from ddlab.lab.family_api import SpecCounters, spec_counters, uses_generate
from ddlab.lab.stats import median_ci, relative_half_width

__all__ = ["BENCH_PROMPTS", "CI_FIGURES", "RequestResult", "Repetition", "Measurement", "load_prompts",
           "check_stopping",
           "generate", "complete", "measure"]

# Deterministic built-in prompts: Python source openings, which both a code
# model on a GPU host and the embedded byte-level target continue sensibly.
BENCH_PROMPTS = [
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "import os\nimport sys\n\n\ndef main(argv):\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n",
    "    def __repr__(self):\n        return ",
    "def read_config(path):\n    with open(path) as f:\n",
    "        if not isinstance(value, str):\n            raise TypeError(",
    "for key, value in sorted(mapping.items()):\n",
    "    try:\n        import threading\n    except ImportError:\n",
    "def parse_args(args=None):\n    parser = argparse.ArgumentParser(",
    "    @property\n    def name(self):\n",
    "# Copyright (C) 2001 Python Software Foundation\n\"\"\"Utilities for ",
    "        for line in lines:\n            line = line.strip()\n",
]


@dataclass
class Repetition:
    """One measured run (warmup excluded)."""

    requests: list[RequestResult]
    wall_s: float
    concurrency: int
    # the server's acceptance counters' change over the round (vLLM's /metrics), if read,
    # and the family's counters that say how they give its figure
    spec: tuple | None = None   # (accepted tokens, drafts)
    counters: MetricsCounters | None = None

    def summary(self) -> dict:
        ok = [r for r in self.requests if r.ok]
        tokens = sum(r.completion_tokens for r in ok)
        verify = [r.spec_verify_ct for r in ok]
        verify_total = sum(verify) if ok and None not in verify else 0
        out = {
            "n_requests": len(self.requests),
            "n_ok": len(ok),
            "n_failed": len(self.requests) - len(ok),
            "completion_tokens": tokens,
            "wall_s": self.wall_s,
            "accept_length": self.counters.acceptance(*self.spec) if self.spec is not None else
                             tokens / verify_total if verify_total else None,
            "output_tok_s": tokens / self.wall_s if self.wall_s > 0 else None,
            "requests_s": len(ok) / self.wall_s if self.wall_s > 0 else None,
        }
        ttft = [r.ttft_s * 1e3 for r in ok if r.ttft_s is not None]
        itl = [x * 1e3 for r in ok for x in r.itl_s]
        tpot = [(r.e2e_s - r.ttft_s) * 1e3 / (r.completion_tokens - 1)
                for r in ok if r.ttft_s is not None and r.completion_tokens > 1]
        e2e = [r.e2e_s * 1e3 for r in ok]
        for name, values in (("ttft_ms", ttft), ("itl_ms", itl), ("tpot_ms", tpot), ("e2e_ms", e2e)):
            for q in (50, 90, 99):
                out[f"{name}_p{q}"] = _percentile(values, q)
        return out


# figures that carry a confidence interval (round medians)
CI_FIGURES = ("output_tok_s", "ttft_ms_p50", "tpot_ms_p50", "e2e_ms_p50")


@dataclass
class Measurement:
    """All repeats of one benchmark, with each figure's median and spread."""

    runs: list[Repetition]
    config: dict

    stopped: str = ""   # why measuring stopped: "ci", "rounds", "time", "repeats"
    elapsed_s: float = 0.0  # from the first round's start to the last one's end

    def summary(self) -> dict:
        per_run = [run.summary() for run in self.runs]
        out: dict = {"repeats": len(per_run), "rounds": len(per_run),
                     "measure_s": round(sum(r.wall_s for r in self.runs), 3),
                     "elapsed_s": round(self.elapsed_s, 3),
                     "stopped": self.stopped or None}
        for key in per_run[0]:
            values = [s[key] for s in per_run if s[key] is not None]
            if not values:
                out[key] = None
                continue
            out[key] = statistics.median(values)
            if len(per_run) > 1 and isinstance(values[0], float):
                out[f"{key}_spread"] = max(values) - min(values)
        # a request lost in any round is lost: a median over rounds would hide it
        out["n_failed_total"] = sum(s["n_failed"] for s in per_run)
        out["n_requests_total"] = sum(s["n_requests"] for s in per_run)
        tokens = sum(s["completion_tokens"] for s in per_run)
        verify = [r.spec_verify_ct for run in self.runs for r in run.requests if r.ok]
        if verify and None not in verify and sum(verify):  # exact over all rounds
            out["accept_length"] = tokens / sum(verify)
        spec = [run.spec for run in self.runs]
        if spec and None not in spec:  # the family's own counters, over all rounds
            out["accept_length"] = self.runs[0].counters.acceptance(*map(sum, zip(*spec)))
        for key in CI_FIGURES:
            _, low, high = median_ci([s[key] for s in per_run])
            out[f"{key}_ci_low"], out[f"{key}_ci_high"] = low, high
        out["output_tok_s_samples"] = [s["output_tok_s"] for s in per_run
                                       if s["output_tok_s"] is not None]
        return out

    def to_dict(self) -> dict:
        return {"config": self.config, "summary": self.summary(), "stopped": self.stopped,
                "runs": [{"wall_s": r.wall_s, "concurrency": r.concurrency,
                          **({"spec": r.spec} if r.spec is not None else {}),
                          "requests": [asdict(q) for q in r.requests]} for r in self.runs]}


def load_prompts(path: str | Path) -> list[str]:
    """Prompts from a file: JSON lines with "text" or "prompt", else one prompt per
    line (a literal backslash-n in a line is a newline)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"prompt file {str(path)!r}: not found",
                          fix="give an existing file, one prompt per line or JSON lines", value=str(path))
    prompts = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            prompts.append(_json_prompt(path, number, line))
        else:
            prompts.append(line.replace("\\n", "\n"))
    if not prompts:
        raise ConfigError(f"prompt file {str(path)!r}: holds no prompt",
                          fix="put one prompt per line", value=str(path))
    return prompts


def _json_prompt(path: Path, number: int, line: str) -> str:
    where = f"prompt file {str(path)!r}, line {number}"
    try:
        item = json.loads(line)
    except ValueError as err:
        raise ConfigError(f"{where}: not valid JSON ({err})", fix="write one JSON object per line, "
                          'such as {"text": "def main():"}', value=line[:80]) from None
    text = (item.get("text") or item.get("prompt")) if isinstance(item, dict) else None
    if not isinstance(text, str) or not text:
        raise ConfigError(f'{where}: needs a non-empty "text" or "prompt" string',
                          fix='such as {"text": "def main():"}', value=line[:80])
    return text


def measure(base_url: str, *, requests: int = 16, concurrency: int = 1,
            max_new_tokens: int = 128, warmup: int = 2, repeats: int = 1,
            ci_target: float | None = None, min_time_s: float = 0.0,
            max_time_s: float = 120.0, max_rounds: int = 20,
            prompts: list[str] | str | Path | None = None, timeout_s: float = 120.0,
            label: str = "bench", record: Path | None = None,
            headers=None, family: Family | str | None = None) -> Measurement:
    """Benchmark the server at ``base_url``; see the module docstring for the figures
    and when it stops. ``headers`` go with every request (the server's API key);
    ``family``: the server's (None: SGLang), which says how it is asked and where its
    acceptance comes from.

    ``prompts``: a list, a prompt file (:func:`load_prompts`), or None for
    :data:`BENCH_PROMPTS`. Every parameter is checked before the first request."""
    for name, value in (("requests", requests), ("concurrency", concurrency),
                        ("max_new_tokens", max_new_tokens), ("repeats", repeats),
                        ("max_rounds", max_rounds)):
        check_number(name, value, minimum=1, integer=True)
    check_number("warmup", warmup, integer=True, example=2)
    check_stopping(ci_target=ci_target, min_time_s=min_time_s, max_time_s=max_time_s)
    prompts = _check_prompts(prompts)
    family = family if isinstance(family, Family) else family_named(family)
    ask = generate if uses_generate(family) else complete
    config = {"base_url": base_url, "requests": requests, "concurrency": concurrency,
              "max_new_tokens": max_new_tokens, "warmup": warmup, "repeats": repeats,
              "ci_target": ci_target, "min_time_s": min_time_s, "max_time_s": max_time_s,
              "max_rounds": max_rounds, "n_prompts": len(prompts),
              **({} if uses_generate(family) else {"family": family.name})}
    limits = httpx.Limits(max_connections=concurrency + 1)
    with http_client.client(limits=limits, headers=headers) as client, \
            Heartbeat(label, interval_s=5.0, record=record) as beat:
        for i in range(warmup):
            ask(client, base_url, prompts[i % len(prompts)], max_new_tokens=max_new_tokens,
                     prompt_index=i % len(prompts), timeout_s=timeout_s)
            beat.beat(f"warmup {i + 1}/{warmup}")
        runs: list[Repetition] = []
        rates: list[float] = []  # each round's tok/s, summarised once as it ends
        least = max(repeats, 3) if ci_target else repeats
        most = max(max_rounds, least) if ci_target else repeats
        started = time.monotonic()
        stopped = "repeats"
        while True:
            before = _counters(client, base_url, family)
            runs.append(_one_repetition(client, base_url, prompts, requests, concurrency,
                                        max_new_tokens, timeout_s, beat, len(runs), ask))
            runs[-1].spec = _difference(before, _counters(client, base_url, family))
            runs[-1].counters = family.counters
            rates.append(runs[-1].summary()["output_tok_s"])
            if len(runs) < least:
                continue
            if not ci_target:
                break
            spent = time.monotonic() - started
            width = relative_half_width(*median_ci(rates))
            beat.beat(f"round {len(runs)}: tok/s +-{_pct(width)} (target +-{ci_target:.0%})")
            if spent < min_time_s and len(runs) < most:
                continue
            stopped = ("ci" if width <= ci_target else "rounds" if len(runs) >= most
                       else "time" if spent >= max_time_s else "")
            if stopped:
                break
        result = Measurement(runs=runs, config=config, stopped=stopped,
                             elapsed_s=time.monotonic() - started)
        s = result.summary()
        beat.close(f"done: {s['n_ok']:g}/{s['n_requests']:g} ok per round, {len(runs)} rounds "
                   f"(stopped: {stopped}), {_fmt(s['output_tok_s'])} tok/s "
                   f"[{_fmt(s['output_tok_s_ci_low'])}, {_fmt(s['output_tok_s_ci_high'])}], "
                   f"accept length {_fmt(s['accept_length'])}")
    return result


def check_stopping(*, ci_target, min_time_s, max_time_s) -> None:
    """The stopping rule's parameters, checked (before anything is measured)."""
    if ci_target is not None and (isinstance(ci_target, bool)
                                  or not isinstance(ci_target, (int, float))
                                  or not 0 < ci_target < 1):
        raise ConfigError(f"ci_target={ci_target!r}: must be a share between 0 and 1 "
                          "(0.05: the 95% interval within +-5 % of the median), or None",
                          fix="try ci_target=0.05", key="ci_target", value=ci_target)
    for name, value in (("min_time_s", min_time_s), ("max_time_s", max_time_s)):
        check_number(name, value, seconds=True, example=10)
    if max_time_s < min_time_s:
        raise ConfigError(f"max_time_s={max_time_s!r} is below min_time_s={min_time_s!r}",
                          fix="raise max_time_s or lower min_time_s", key="max_time_s",
                          value=max_time_s)


def _pct(width: float) -> str:
    return "?" if width == float("inf") else f"{width:.1%}"


def _counters(client, base_url: str, family: Family) -> SpecCounters | None:
    """The family's acceptance counters (None: it has none, or the server shows none)."""
    if uses_generate(family):
        return None
    try:
        return spec_counters(client, base_url, family)
    except httpx.HTTPError:
        return None


def _difference(before: SpecCounters | None, after: SpecCounters | None) -> tuple | None:
    if before is None or after is None:
        return None
    return (after.accepted - before.accepted, after.drafts - before.drafts)


def _one_repetition(client, base_url, prompts, requests, concurrency, max_new_tokens, timeout_s,
             beat: Heartbeat, repeat: int, ask=generate) -> Repetition:
    results: list[RequestResult] = []
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(ask, client, base_url, prompts[i % len(prompts)],
                               max_new_tokens=max_new_tokens, prompt_index=i % len(prompts),
                               timeout_s=timeout_s) for i in range(requests)]
        for future in as_completed(futures):
            results.append(future.result())
            failed = sum(not r.ok for r in results)
            beat.beat(f"round {repeat + 1}: {len(results)}/{requests} requests"
                      + (f", {failed} failed" if failed else ""))
    wall = time.perf_counter() - start
    results.sort(key=lambda r: r.prompt_index)
    return Repetition(requests=results, wall_s=wall, concurrency=concurrency)


def _check_prompts(prompts) -> list[str]:
    if prompts is None:
        return BENCH_PROMPTS
    if isinstance(prompts, (str, Path)):
        return load_prompts(prompts)
    prompts = list(prompts)
    bad = [p for p in prompts if not isinstance(p, str) or not p]
    if not prompts or bad:
        raise ConfigError(f"prompts={(bad or prompts)[:3]!r}: must be non-empty strings, at least one",
                          fix="give a list of prompts, a prompt file, or None for the built-in set",
                          key="prompts", value=bad or prompts)
    return prompts


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"
