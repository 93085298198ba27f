"""SGLang's ``Decode batch`` lines: one record per line, and the summary a diagnosis reports.

Contract: :func:`parse_decode_lines` reads every ``Decode batch`` line of a log (text, read with
:func:`.logtext.split_lines`, or its lines) into a :class:`DecodeRecord` (running requests, token
usage, accept length, generation throughput, CUDA graph, ...; a field the line lacks stays None);
:func:`summarize_decode` gives the figures a diagnosis reports (its ``decode``): counts, means,
last values. Split from :mod:`.logtext`, which reads the log's lines and phases; vLLM's metrics
lines are :mod:`.vllm_metrics`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache

from ddlab.diagnosis.logtext import Line, split_lines

__all__ = ["DecodeRecord", "parse_decode_lines", "summarize_decode", "decode_text", "metrics_text"]


@dataclass(frozen=True)
class DecodeRecord:
    """One ``Decode batch`` line; fields the line lacks stay None."""

    line_no: int
    time: str | None = None
    rank: str | None = None
    running_req: int | None = None
    token: int | None = None
    token_usage: float | None = None
    full_token: int | None = None
    full_token_usage: float | None = None
    mamba_num: int | None = None
    mamba_usage: float | None = None
    accept_len: float | None = None
    accept_rate: float | None = None
    cuda_graph: bool | None = None
    gen_throughput_tok_s: float | None = None
    queue_req: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _to_bool(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes", "on")


_DECODE_RE = re.compile(r"Decode batch\b[.,:]?\s*(?P<body>.*)$")
_PAIR_RE = re.compile(r"(?P<key>#?[A-Za-z][^:,]*?):\s*(?P<value>[^,]+)")
_DECODE_FIELDS = (  # (key regex, field, converter); first match wins
    (r"#running-req", "running_req", int),
    (r"#full token", "full_token", int),
    (r"#token", "token", int),
    (r"full token usage", "full_token_usage", float),
    (r"token usage", "token_usage", float),
    (r"mamba num", "mamba_num", int),
    (r"mamba usage", "mamba_usage", float),
    (r"accept len", "accept_len", float),
    (r"accept rate", "accept_rate", float),
    (r"cuda graph", "cuda_graph", _to_bool),
    (r"gen throughput", "gen_throughput_tok_s", float),
    (r"#queue-req", "queue_req", int),
)


# a key may carry its unit after it: "gen throughput (token/s)"
_DECODE_KEYS = tuple((re.compile(pattern + r"(?:\s*\(.*\))?"), name, convert)
                     for pattern, name, convert in _DECODE_FIELDS)


@lru_cache(maxsize=256)  # a log of days repeats the same dozen keys on every line
def _decode_field(key: str):
    key = key.strip().lower()
    for pattern, name, convert in _DECODE_KEYS:
        if pattern.fullmatch(key):
            return name, convert
    return None, None


def _decode_record(line: Line) -> DecodeRecord | None:
    match = _DECODE_RE.search(line.msg)
    if not match:
        return None
    values = {}
    for pair in _PAIR_RE.finditer(match["body"]):
        name, convert = _decode_field(pair["key"])
        if name and name not in values:
            try:
                values[name] = convert(pair["value"].strip())
            except ValueError:
                values[name] = None
    return DecodeRecord(line_no=line.no, time=line.time, rank=line.rank, **values)


def parse_decode_lines(text_or_lines) -> list[DecodeRecord]:
    """Every ``Decode batch`` line of a log (text or :class:`Line` list), in order."""
    lines = split_lines(text_or_lines) if isinstance(text_or_lines, str) else text_or_lines
    return [record for line in lines if (record := _decode_record(line))]


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def summarize_decode(records: list[DecodeRecord]) -> dict:
    """Summary figures: count, accept length mean/last, throughput mean/max, graphs."""
    if not records:
        return {"count": 0}

    def column(name):
        return [getattr(r, name) for r in records if getattr(r, name) is not None]

    accept, rate, speed = column("accept_len"), column("accept_rate"), column("gen_throughput_tok_s")
    usage = column("token_usage") or column("full_token_usage")
    graphs = set(column("cuda_graph"))
    return {
        "count": len(records),
        "accept_len_mean": _mean(accept),
        "accept_len_last": accept[-1] if accept else None,
        "accept_rate_mean": _mean(rate),
        "gen_throughput_tok_s_mean": _mean(speed),
        "gen_throughput_tok_s_max": max(speed) if speed else None,
        "gen_throughput_tok_s_last": speed[-1] if speed else None,
        "running_req_max": max(column("running_req"), default=None),
        "queue_req_max": max(column("queue_req"), default=None),
        "token_usage_max": max(usage, default=None),
        "cuda_graph": graphs.pop() if len(graphs) == 1 else None,
    }


def decode_text(decode: dict) -> str:
    """A summary of SGLang's decode lines in one line (a verdict's ``decode:`` row)."""
    graphs = {True: "on", False: "off", None: "mixed/unknown"}[decode.get("cuda_graph")]
    return (f"{decode['count']} lines; accept len mean {decode.get('accept_len_mean')} "
            f"(last {decode.get('accept_len_last')}); gen throughput mean "
            f"{decode.get('gen_throughput_tok_s_mean')} / max {decode.get('gen_throughput_tok_s_max')} "
            f"tok/s; cuda graph {graphs}")


def metrics_text(summary: dict) -> str:
    """A summary of vLLM's metrics lines in one line (a verdict's ``metrics:`` row)."""
    text = (f"{summary['count']} metrics lines; gen throughput mean "
            f"{summary.get('gen_throughput_tok_s_mean')} / max {summary.get('gen_throughput_tok_s_max')} "
            f"tok/s; running max {summary.get('running_max')}, waiting max {summary.get('waiting_max')}")
    if summary.get("spec_count"):
        text += (f"; {summary['spec_count']} speculative lines: mean acceptance length "
                 f"{summary.get('accept_len_mean')} (last {summary.get('accept_len_last')}), accepted "
                 f"{summary.get('accepted_tokens')} of {summary.get('drafted_tokens')} drafted tokens, "
                 f"per position {summary.get('per_position_acceptance_mean')}")
    return text
