"""vLLM's metrics lines: the periodic stats and the speculative decoding metrics, and their summary.

Contract: :func:`parse_metrics_lines` reads every metrics line of a vLLM log (text, read with
:func:`.vllm_log.vllm_lines`, or its lines) into a :class:`MetricsRecord`: the periodic line
(throughput, running / waiting requests, KV cache usage, prefix cache hit rate;
v1/metrics/loggers.py:283 (0.34.0), V0 engine/metrics.py:450 (0.6.4.post1)) and the speculative
lines (mean acceptance length, per-position acceptance rate, accepted / drafted tokens:
v1/spec_decode/metrics.py:121 (0.34.0); the V0 engine's "Speculative metrics: Draft acceptance rate
...", engine/metrics.py:484); :func:`summarize_metrics` gives the figures a diagnosis reports
(its ``decode``). Split from :mod:`.vllm_log`, which reads the rest of the log.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.vllm_log import vllm_lines

__all__ = ["MetricsRecord", "parse_metrics_lines", "summarize_metrics"]


@dataclass(frozen=True)
class MetricsRecord:
    """One metrics line of vLLM: the periodic stats (``kind="stats"``) or the speculative
    decoding metrics (``kind="spec"``); fields the line lacks stay None."""

    line_no: int
    kind: str
    engine: str | None = None
    prompt_tok_s: float | None = None
    gen_tok_s: float | None = None
    running: int | None = None
    waiting: int | None = None
    kv_cache_usage_pct: float | None = None
    prefix_cache_hit_pct: float | None = None
    mean_acceptance_length: float | None = None
    accepted_tok_s: float | None = None
    drafted_tok_s: float | None = None
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    per_position_acceptance: tuple[float, ...] | None = None
    draft_acceptance_rate: float | None = None   # 0..1 (V1 prints a percentage)
    num_speculative_tokens: int | None = None     # V0 only
    emitted_tokens: int | None = None             # V0 only

    def to_dict(self) -> dict:
        return asdict(self)


_ENGINE_RE = re.compile(r"^Engine (\d+): ")
_STATS = (  # V1 0.34.0 v1/metrics/loggers.py:283; V0 0.6.4.post1 engine/metrics.py:450
    ("prompt_tok_s", r"Avg prompt throughput: ([\d.]+) tokens/s", float),
    ("gen_tok_s", r"Avg generation throughput: ([\d.]+) tokens/s", float),
    ("running", r"Running: (\d+) reqs", int),
    ("waiting", r"(?:Waiting|Pending): (\d+) reqs", int),
    ("kv_cache_usage_pct", r"KV cache usage: ([\d.]+)%", float),
    ("prefix_cache_hit_pct", r"Prefix cache hit rate: ([\d.]+)%", float),
)
_SPEC = (  # V1 0.34.0 v1/spec_decode/metrics.py:121
    ("mean_acceptance_length", r"Mean acceptance length: ([\d.]+|nan)", float),
    ("accepted_tok_s", r"Accepted throughput: ([\d.]+) tokens/s", float),
    ("drafted_tok_s", r"Drafted throughput: ([\d.]+) tokens/s", float),
    ("accepted_tokens", r"Accepted: (\d+) tokens", int),
    ("drafted_tokens", r"Drafted: (\d+) tokens", int),
    ("draft_acceptance_rate", r"Avg Draft acceptance rate: ([\d.]+|nan)%", lambda t: float(t) / 100),
)
_SPEC_V0 = (  # V0 0.6.4.post1 engine/metrics.py:484
    ("draft_acceptance_rate", r"Draft acceptance rate: ([\d.]+|nan)", float),
    ("num_speculative_tokens", r"Number of speculative tokens: (\d+)", int),
    ("accepted_tokens", r"Number of accepted tokens: (\d+)", int),
    ("drafted_tokens", r"Number of draft tokens: (\d+)", int),
    ("emitted_tokens", r"Number of emitted tokens: (\d+)", int),
)
_PER_POSITION_RE = re.compile(r"Per-position acceptance rate: ((?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)")


def _fields(msg: str, table) -> dict:
    values = {}
    for name, pattern, convert in table:
        if name not in values and (match := re.search(pattern, msg)):
            values[name] = convert(match[1])
    return values


def _metrics_record(line: Line) -> MetricsRecord | None:
    msg = line.msg
    engine = _ENGINE_RE.match(msg)
    where = {"line_no": line.no, "engine": engine[1] if engine else None}
    if "SpecDecoding metrics:" in msg:
        values = _fields(msg, _SPEC)
        if rates := _PER_POSITION_RE.search(msg):
            values["per_position_acceptance"] = tuple(float(r) for r in rates[1].split(", "))
        return MetricsRecord(kind="spec", **where, **values)
    if "Speculative metrics:" in msg:
        return MetricsRecord(kind="spec", **where, **_fields(msg, _SPEC_V0))
    if re.search(_STATS[0][1], msg):
        return MetricsRecord(kind="stats", **where, **_fields(msg, _STATS))
    return None


def parse_metrics_lines(text_or_lines) -> list[MetricsRecord]:
    """Every metrics line of a vLLM log (text or :class:`Line` list), in order."""
    lines = vllm_lines(text_or_lines) if isinstance(text_or_lines, str) else text_or_lines
    return [record for line in lines if (record := _metrics_record(line))]


def _mean(values) -> float | None:
    values = [v for v in values if v == v]  # nan (no drafts yet) is no figure
    return round(sum(values) / len(values), 4) if values else None


def summarize_metrics(records: list[MetricsRecord]) -> dict:
    """Summary figures: generation throughput (mean over lines that generated, max), the
    most running / waiting requests, and speculative decoding's acceptance: the mean
    acceptance length over the lines (and the last), the overall acceptance (accepted /
    drafted tokens, summed), the mean per-position acceptance rate."""
    stats = [r for r in records if r.kind == "stats"]
    spec = [r for r in records if r.kind == "spec"]
    busy = [r.gen_tok_s for r in stats if r.gen_tok_s]
    summary = {
        "count": len(stats), "spec_count": len(spec),
        "gen_throughput_tok_s_mean": _mean(busy),
        "gen_throughput_tok_s_max": max(busy, default=None),
        "running_max": max((r.running for r in stats if r.running is not None), default=None),
        "waiting_max": max((r.waiting for r in stats if r.waiting is not None), default=None),
        "kv_cache_usage_pct_max": max((r.kv_cache_usage_pct for r in stats
                                       if r.kv_cache_usage_pct is not None), default=None),
    }
    if spec:
        lengths = [r.mean_acceptance_length for r in spec if r.mean_acceptance_length is not None]
        accepted = sum(r.accepted_tokens or 0 for r in spec)
        drafted = sum(r.drafted_tokens or 0 for r in spec)
        rows = [r.per_position_acceptance for r in spec if r.per_position_acceptance]
        width = max((len(row) for row in rows), default=0)
        summary.update({
            "accept_len_mean": _mean(lengths),
            "accept_len_last": lengths[-1] if lengths else None,
            "accepted_tokens": accepted, "drafted_tokens": drafted,
            "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
            "per_position_acceptance_mean": [
                _mean([row[i] for row in rows if len(row) > i]) for i in range(width)] or None,
        })
    return summary
