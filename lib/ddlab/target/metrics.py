"""Serving counters, and their Prometheus text under SGLang's metric names.

Contract: the scheduler updates a ``Metrics`` (plain attributes, one writer);
``render(model_name)`` returns the text ``/metrics`` serves with
``--enable-metrics``: gauges ``sglang:gen_throughput``,
``sglang:spec_accept_length``, ``sglang:spec_accept_rate``,
``sglang:num_running_reqs``, ``sglang:num_queue_reqs``, ``sglang:token_usage``;
counters ``sglang:spec_verify_calls_total``, ``sglang:generation_tokens_total``,
``sglang:prompt_tokens_total``, ``sglang:num_requests_total``; histograms
``sglang:time_to_first_token_seconds``, ``sglang:inter_token_latency_seconds``,
``sglang:e2e_request_latency_seconds``. Every figure is a measurement of
requests this server decoded.
"""

from __future__ import annotations

import bisect

__all__ = ["Metrics", "Histogram"]

_LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    def __init__(self, buckets=_LATENCY_BUCKETS):
        self.buckets, self.counts, self.sum, self.count = buckets, [0] * len(buckets), 0.0, 0

    def observe(self, value: float, n: int = 1) -> None:
        i = bisect.bisect_left(self.buckets, value)
        if i < len(self.buckets):
            self.counts[i] += n
        self.sum += value * n
        self.count += n

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        for le, c in zip(self.buckets, self.counts):
            running += c
            out.append(f'{name}_bucket{{{labels},le="{le}"}} {running}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.count}')
        out += [f"{name}_sum{{{labels}}} {self.sum}", f"{name}_count{{{labels}}} {self.count}"]
        return out


class Metrics:
    def __init__(self):
        self.gen_throughput = 0.0
        self.spec_accept_length = self.spec_accept_rate = None
        self.accepted_total = self.verifies_total = 0  # flushed at each decode log line
        self.num_running = self.num_queue = 0
        self.token_usage = 0.0
        self.verify_calls = self.generation_tokens = self.prompt_tokens = self.requests = 0
        self.ttft, self.itl, self.e2e = Histogram(), Histogram(), Histogram()
        # vLLM's speculative counters (vllm/v1/spec_decode/metrics.py:26-49 (0.34.0)), lifetime
        self.num_drafts = self.num_draft_tokens = self.num_accepted_tokens = 0
        self.accepted_per_pos: list[int] = []
        self.finished_by_reason: dict[str, int] = {}

    def observe_draft(self, num_draft_tokens: int, num_accepted_tokens: int) -> None:
        self.num_drafts += 1
        self.num_draft_tokens += num_draft_tokens
        self.num_accepted_tokens += num_accepted_tokens
        if len(self.accepted_per_pos) < num_accepted_tokens:
            self.accepted_per_pos += [0] * (num_accepted_tokens - len(self.accepted_per_pos))
        for i in range(num_accepted_tokens):
            self.accepted_per_pos[i] += 1

    @property
    def avg_spec_accept_length(self):
        """Lifetime average over flushed decode intervals (None before the first)."""
        return self.accepted_total / self.verifies_total if self.verifies_total else None

    def observe_finished(self, req) -> None:
        self.requests += 1
        reason = (req.finish_reason or {}).get("type", "abort")
        self.finished_by_reason[reason] = self.finished_by_reason.get(reason, 0) + 1
        self.ttft.observe(req.first_token_at - req.created)
        self.e2e.observe(req.finished_at - req.created)
        for (t_prev, _), (t, n) in zip(req.token_times, req.token_times[1:]):
            if n:
                self.itl.observe((t - t_prev) / n, n)

    def render(self, model_name: str) -> str:
        lab = f'model_name="{model_name}"'
        gauges = {"gen_throughput": self.gen_throughput, "num_running_reqs": self.num_running,
                  "num_queue_reqs": self.num_queue, "token_usage": self.token_usage,
                  "spec_accept_length": self.spec_accept_length or 0.0,
                  "spec_accept_rate": self.spec_accept_rate or 0.0}
        counters = {"spec_verify_calls_total": self.verify_calls,
                    "generation_tokens_total": self.generation_tokens,
                    "prompt_tokens_total": self.prompt_tokens, "num_requests_total": self.requests}
        lines = []
        for name, value in gauges.items():
            lines += [f"# HELP sglang:{name} {name.replace('_', ' ')}", f"# TYPE sglang:{name} gauge",
                      f"sglang:{name}{{{lab}}} {value}"]
        for name, value in counters.items():
            lines += [f"# HELP sglang:{name} {name.replace('_', ' ')}", f"# TYPE sglang:{name} counter",
                      f"sglang:{name}{{{lab}}} {value}"]
        for name, h in (("time_to_first_token_seconds", self.ttft),
                        ("inter_token_latency_seconds", self.itl), ("e2e_request_latency_seconds", self.e2e)):
            lines += [f"# HELP sglang:{name} {name.replace('_', ' ')}", f"# TYPE sglang:{name} histogram"]
            lines += h.lines(f"sglang:{name}", lab)
        return "\n".join(lines) + "\n"
