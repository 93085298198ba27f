"""What a vLLM log states about itself: the release, the chosen args, the speculative method, the sizes.

Contract: :func:`vllm_facts` takes the lines :func:`.vllm_log.vllm_lines` split (vLLM's prefixes peeled) and
returns a dict of what they state: ``vllm_version`` (the API server's version line, the banner, or the engine's
"Initializing a V1 LLM engine (vX)"), the args of interest from "non-default args: {...}" or the 0.6-era
``args: Namespace(...)``, ``speculative_method`` and ``num_speculative_tokens`` (from ``speculative_config``, or
``draft_model`` where only ``speculative_model`` is set), V0's ``speculative_proposer``, and the sizes vLLM reports
(weights, the KV cache's memory, tokens and blocks, the graphs' memory, the maximum concurrency), and (round 115)
``rust_frontend_refused``, the arguments the Rust frontend named as not implemented. A key is absent where no line
states it.

Why a module of its own: :mod:`.vllm_log` (the family marks, the prefixes, the phase table) is at its ~400-line
bound (../shared/STYLE.md), and the facts are read from its lines, not from the text.
"""

from __future__ import annotations

import re

from ddlab.core.literals import literal_eval
from ddlab.diagnosis.logtext import Line

__all__ = ["vllm_facts", "listed_below"]

_VERSION_RES = (
    re.compile(r"vLLM (?:API )?server version:? v?(\d+\.\d+[\w.+-]*)"),   # "vLLM API server version 0.6.1"
    re.compile(r"\bversion (\d+\.\d+\.\d+[\w.+-]*)\s*$"),                 # the banner: "... version 0.19.0"
    re.compile(r"Initializing a V1 LLM engine \(v(\d+\.\d+[\w.+-]*)\)"),
    re.compile(r"Initializing an LLM engine \(v(\d+\.\d+[\w.+-]*)\)"),
)
_NON_DEFAULT_RE = re.compile(r"non-default args: (\{.*\})\s*$")
_NAMESPACE_RE = re.compile(r"\bargs: Namespace\((.*)")
_KV_RE = re.compile(r"\b(?P<key>[a-z_][a-z0-9_]*)=(?P<value>'[^']*'|\"[^\"]*\"|\{[^{}]*\}|[^,()\s]+)")
_ARG_KEYS = (
    "model", "model_tag", "served_model_name", "speculative_config", "gpu_memory_utilization",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enforce_eager", "compilation_config",
    "tensor_parallel_size", "data_parallel_size", "port", "kv_cache_dtype", "num_speculative_tokens",
    "speculative_model", "block_size", "quantization", "cpu_offload_gb",
)
_SIZE_RES = (
    ("weights_gib", re.compile(r"Model loading took ([\d.]+) ?GiB")),
    ("weights_gib", re.compile(r"Loading model weights took ([\d.]+) ?GB")),
    ("available_kv_cache_gib", re.compile(r"Available KV cache memory: ([\d.]+) ?GiB")),
    ("kv_cache_tokens", re.compile(r"KV cache size: ([\d,]+) tokens")),
    ("max_concurrency", re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x")),
    ("gpu_blocks", re.compile(r"# GPU blocks: (\d+)")),
    ("graph_capture_gib", re.compile(r"Graph capturing finished in \d+ secs?, took ([\d.]+) GiB")),
)


# (round 115) the Rust frontend's refusal of the arguments it does not implement lists them one a line, "- name",
# under its header (the strings of vllm 0.22.0's vllm/vllm-rs, src/cmd/src/cli/unsupported.rs: "The following
# arguments are not implemented in Rust frontend yet:", "Remove these arguments to continue.")
_RUST_REFUSED_RE = re.compile(r"^The following arguments are not implemented in Rust frontend yet:\s*$")
_LISTED_RE = re.compile(r"^- ([a-z_][a-z0-9_]*)\s*$")


def listed_below(lines: list[Line], start: int, item: re.Pattern, most: int) -> list[str]:
    """The items of the list that begins at ``lines[start]``, one a line (``item``'s first group), at most ``most``:
    what a line ending in a colon introduces (the Rust frontend's refused arguments, a cause's list)."""
    items: list[str] = []
    for line in lines[start:start + most]:
        if not (listed := item.match(line.msg)):
            break
        items.append(listed[1].strip())
    return items


def _rust_refused(lines: list[Line]) -> list[str]:
    names = [name for at, line in enumerate(lines) if _RUST_REFUSED_RE.match(line.msg)
             for name in listed_below(lines, at + 1, _LISTED_RE, 40)]
    return list(dict.fromkeys(names))


def _literal(text):
    if not isinstance(text, str):
        return text
    try:
        return literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text.strip("'\"")


def _args(msg: str) -> dict:
    if match := _NON_DEFAULT_RE.search(msg):
        value = _literal(match[1])
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k in _ARG_KEYS}
        return {m["key"]: _literal(m["value"]) for m in re.finditer(
            r"'(?P<key>[a-z_]+)': (?P<value>'[^']*'|\{[^{}]*\}|[^,{}]+)", match[1]) if m["key"] in _ARG_KEYS}
    if match := _NAMESPACE_RE.search(msg):
        return {m["key"]: _literal(m["value"]) for m in _KV_RE.finditer(match[1]) if m["key"] in _ARG_KEYS}
    return {}


def _as_dict(value) -> dict | None:
    value = _literal(value)
    return value if isinstance(value, dict) else None


def _method(spec) -> str | None:
    if (spec := _as_dict(spec)) is not None:
        method = spec.get("method")
        return str(method) if method else ("draft_model" if spec.get("model") else None)
    return None


def vllm_facts(lines: list[Line]) -> dict:
    """What a vLLM log states about itself: ``vllm_version`` (the API server's version line
    or the banner), the chosen args, ``speculative_method``, ``num_speculative_tokens`` and
    the sizes vLLM reports (weights, KV cache, graphs)."""
    facts: dict = {}
    for line in lines:
        msg = line.msg
        for regex in _VERSION_RES:
            if match := regex.search(msg):
                facts.setdefault("vllm_version", match[1])
        for key, value in _args(msg).items():
            facts.setdefault(key, value)
        for key, regex in _SIZE_RES:
            if match := regex.search(msg):
                text = match[1].replace(",", "")
                facts[key] = int(text) if text.isdigit() else float(text)
        if match := re.search(r"Configuring SpecDecodeWorker with proposer=<class '[\w.]+\.(\w+)'>", msg):
            facts.setdefault("speculative_proposer", match[1])
    if refused := _rust_refused(lines):
        facts["rust_frontend_refused"] = refused
    spec = facts.get("speculative_config")
    method = _method(spec) or (facts.get("speculative_model") and "draft_model")
    if method:
        facts["speculative_method"] = method
        tokens = (_as_dict(spec) or {}).get("num_speculative_tokens")
        if tokens is not None:
            facts.setdefault("num_speculative_tokens", tokens)
    return {k: v for k, v in facts.items() if v is not None}
