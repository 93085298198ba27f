"""The facts a server log states about itself: server args, sizes, speculative algorithm.

Contract: :func:`parse_facts` reads :class:`~ddlab.diagnosis.logtext.Line`
records and returns a flat dict: the chosen server args from the launcher's
``server_args=`` line (both forms: the dataclass repr
``server_args=ServerArgs(model_path='...', ...)`` up to 0.5.18 and the dict
``server_args={'model_path': '...', ...}`` from 0.5.20, citations in
docs/sglang.md section 2), the token budget line (``max_total_num_tokens=...``),
the DDTree worker's sizes, the DFLASH draft runner's block size. It adds
``speculative_algorithm`` when a worker's own init line names it, and
``sglang_version_hint``: the oldest release whose server-args shape and keys
the log shows (the dict form: 0.5.20; ``cuda_graph_backend_decode``: 0.5.14;
``speculative_draft_attention_backend``: 0.5.10; else 0.4.10.post2), which is
what advice must be spelled for when nobody says the version.

Why: the advice for a crash depends on the release (flag names) and the
algorithm (DDTree sizing advice is wrong for EAGLE); a log that states them
should not need to be told.
"""

from __future__ import annotations

import re

from ddlab.core.literals import literal_eval
from ddlab.diagnosis.logtext import Line

__all__ = ["parse_facts", "version_hint", "SERVER_ARG_KEYS"]

_DDTREE_RE = re.compile(r"Initialized DDTree worker\.?\s*(?P<body>.*)$")
_DFLASH_RE = re.compile(r"Initialized DFLASH draft runner\.?\s*(?P<body>.*)$")
_BUDGET_RE = re.compile(r"\bmax_total_num_tokens=\d")
_ARGS_RE = re.compile(r"\bserver_args=(?P<form>ServerArgs\(|\{)?")
_KV_RE = re.compile(r"\b(?P<key>[a-z_][a-z0-9_]*)=(?P<value>'[^']*'|\"[^\"]*\"|[^,()\s]+(?: GB)?)")
_DICT_KV_RE = re.compile(r"'(?P<key>[a-z_][a-z0-9_]*)': (?P<value>'[^']*'|\"[^\"]*\"|[^,{}\[\]]+)")
SERVER_ARG_KEYS = (
    "model_path", "speculative_algorithm", "speculative_draft_model_path",
    "speculative_num_draft_tokens", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_dflash_block_size", "speculative_ddtree_budget", "mem_fraction_static",
    "context_length", "max_running_requests", "chunked_prefill_size", "cuda_graph_max_bs",
    "cuda_graph_max_bs_decode", "disable_cuda_graph", "attention_backend", "tp_size", "dp_size",
    "port", "trust_remote_code", "watchdog_timeout", "page_size", "enable_mixed_chunk", "enable_lora",
    "lora_paths", "enable_dp_attention", "disaggregation_mode", "enable_hierarchical_cache",
    "mamba_scheduler_strategy", "mamba_radix_cache_strategy", "dcp_size", "grammar_backend",
)
_VERSION_KEYS = (  # (a key only that generation's server args have, the release it stands for)
    ("cuda_graph_backend_decode", "0.5.14"), ("cuda_graph_max_bs_decode", "0.5.14"),
    ("speculative_draft_attention_backend", "0.5.10"),
)


def _literal(value: str):
    value = value.strip().removesuffix(" GB")
    try:
        return literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def _pairs(text: str, keys=None, pattern: re.Pattern = _KV_RE) -> dict:
    found = {}
    for match in pattern.finditer(text):
        if keys is None or match["key"] in keys:
            found.setdefault(match["key"], _literal(match["value"]))
    return found


def _dict_args(text: str) -> dict:
    """The 0.5.20+ ``server_args={...}`` dict; a pasted, cut one read key by key."""
    body = text[text.index("{"):]
    try:
        value = literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k in SERVER_ARG_KEYS}
    return _pairs(body, SERVER_ARG_KEYS, _DICT_KV_RE)


def version_hint(args_line: str) -> str | None:
    """The oldest release whose ``server_args=`` line looks like ``args_line``."""
    match = _ARGS_RE.search(args_line)
    if not match:
        return None
    if match["form"] == "{":
        return "0.5.20"
    for key, release in _VERSION_KEYS:
        if f"{key}=" in args_line:
            return release
    return "0.4.10.post2" if match["form"] else None


def _server_args(msg: str) -> dict:
    match = _ARGS_RE.search(msg)
    args = _dict_args(msg) if match["form"] == "{" else _pairs(msg, SERVER_ARG_KEYS)
    hint = version_hint(msg)
    return {**args, "sglang_version_hint": hint} if hint else args


def parse_facts(lines: list[Line]) -> dict:
    """Facts the log states: server args, token budget, DDTree / DFLASH sizes, version hint."""
    facts: dict = {}
    for line in lines:
        if ddtree := _DDTREE_RE.search(line.msg):
            facts.update(_pairs(ddtree["body"]))
            facts.setdefault("speculative_algorithm", "DDTREE")
        elif dflash := _DFLASH_RE.search(line.msg):
            facts.update({k: v for k, v in _pairs(dflash["body"]).items() if k == "block_size"})
            facts.setdefault("speculative_algorithm", "DFLASH")
        elif _BUDGET_RE.search(line.msg):
            facts.update(_pairs(line.msg))
        elif _ARGS_RE.search(line.msg):
            for key, value in _server_args(line.msg).items():
                facts.setdefault(key, value)
    return {key: value for key, value in facts.items() if value is not None}
