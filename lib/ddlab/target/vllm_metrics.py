"""vLLM's ``/metrics`` and its periodic stats lines, over the engine's counters.

Contract: ``render_metrics(state)`` is the Prometheus text under vLLM 0.34.0's names
(vllm/v1/metrics/loggers.py:499-961, vllm/v1/spec_decode/metrics.py:229-258), labels
``model_name`` and ``engine``, counters with prometheus_client's ``_total``; ``StatsLogger``
logs ``Engine 000: Avg prompt throughput: ...`` (loggers.py:335) and ``SpecDecoding metrics:
...`` (vllm/v1/spec_decode/metrics.py:120) every interval, as vLLM's ``LoggingStatLogger`` and
``SpecDecodingLogging`` compute them (loggers.py:113-346, metrics.py:52-135).
"""

from __future__ import annotations

import time

from ddlab.target.vllm_lines import log_line

__all__ = ["render_metrics", "StatsLogger"]


def render_metrics(state) -> str:
    """Prometheus text under vLLM 0.34.0's names (vllm/v1/metrics/loggers.py:499-961,
    vllm/v1/spec_decode/metrics.py:229-258), labels ``model_name`` and ``engine``, counters with
    prometheus_client's ``_total``."""
    eng, name = state.engine, state.name
    lab = f'model_name="{name}",engine="0"'
    out = []

    def metric(mname, kind, doc, samples):
        out.extend([f"# HELP {mname} {doc}", f"# TYPE {mname} {kind}"])
        out.extend(f"{mname}{{{lab}{extra}}} {float(v)}" for extra, v in samples)

    if eng is None:
        return ""
    m, k = eng.metrics, eng.spec.num_draft_slots
    metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
           [("", m.num_running)])
    metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           [("", m.num_queue)])
    metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
           [("", m.token_usage)])
    metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
           [("", m.prompt_tokens)])
    metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           [("", m.generation_tokens)])
    metric("vllm:request_success_total", "counter", "Count of successfully processed requests.",
           [(f',finished_reason="{r}"', m.finished_by_reason.get(r, 0))
            for r in ("stop", "length", "abort", "error", "repetition")])
    if state.args.spec_method:
        metric("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.",
               [("", m.num_drafts)])
        metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
               [("", m.num_draft_tokens)])
        metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
               [("", m.num_accepted_tokens)])
        per_pos = m.accepted_per_pos + [0] * (k - len(m.accepted_per_pos))
        metric("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
               "Accepted tokens per draft position.",
               [(f',position="{p}"', per_pos[p]) for p in range(k)])
    for mname, h, doc in (("vllm:time_to_first_token_seconds", m.ttft, "Histogram of time to first token in seconds."),
                          ("vllm:inter_token_latency_seconds", m.itl, "Histogram of inter-token latency in seconds."),
                          ("vllm:e2e_request_latency_seconds", m.e2e, "Histogram of e2e request latency in seconds.")):
        out.extend([f"# HELP {mname} {doc}", f"# TYPE {mname} histogram"])
        out.extend(h.lines(mname, lab))
    return "\n".join(out) + "\n"


class StatsLogger:
    """vLLM's ``LoggingStatLogger`` (vllm/v1/metrics/loggers.py:113-346) and
    ``SpecDecodingLogging`` (vllm/v1/spec_decode/metrics.py:52-135), over the engine's counters."""

    def __init__(self, state, interval_s: float):
        self.state, self.interval_s = state, interval_s
        self.last = self._snapshot()
        self.last_t = time.monotonic()
        self.last_throughputs = (0.0, 0.0)

    def _snapshot(self):
        m = self.state.engine.metrics
        return (m.prompt_tokens, m.generation_tokens, m.num_drafts, m.num_draft_tokens,
                m.num_accepted_tokens, list(m.accepted_per_pos))

    def run(self):
        while not self.state.dead:
            time.sleep(self.interval_s)
            self.log()

    def log(self):
        eng, now, snap = self.state.engine, time.monotonic(), self._snapshot()
        dt = max(now - self.last_t, 1e-9)
        prompt_tp, gen_tp = (snap[0] - self.last[0]) / dt, (snap[1] - self.last[1]) / dt
        idle = not any((prompt_tp, gen_tp, *self.last_throughputs))
        drafts, drafted, accepted = (snap[i] - self.last[i] for i in (2, 3, 4))
        per_pos = [a - (self.last[5][i] if i < len(self.last[5]) else 0) for i, a in enumerate(snap[5])]
        self.last, self.last_t, self.last_throughputs = snap, now, (prompt_tp, gen_tp)
        if idle:
            return  # loggers.py:280: an idle engine logs at DEBUG
        device = "GPU" if eng.runner.device.type == "cuda" else eng.runner.device.type.upper()
        log_line(f"Engine 000: Avg prompt throughput: {prompt_tp:.1f} tokens/s, Avg generation throughput: "
             f"{gen_tp:.1f} tokens/s, Running: {len(eng.running)} reqs, Waiting: {len(eng.waiting)} reqs, "
             f"{device} KV cache usage: {eng.metrics.token_usage * 100:.1f}%", "loggers.py:335")
        if drafts:
            k = eng.spec.num_draft_slots
            rates = ", ".join(f"{(per_pos[i] if i < len(per_pos) else 0) / drafts:.3f}" for i in range(k))
            rate = f"{accepted / drafted * 100:.1f}" if drafted else "nan"
            log_line(f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
                 f"Accepted throughput: {accepted / dt:.2f} tokens/s, Drafted throughput: "
                 f"{drafted / dt:.2f} tokens/s, Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
                 f"Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {rate}%",
                 "metrics.py:120")


