"""``python -m ddlab.target --dialect vllm [vllm serve flags]``: vLLM 0.34.0's flags, for what the
target can do, resolved into the engine's ``ServerArgs``.

Contract: ``parse_vllm_args(argv) -> VllmServerArgs`` (argv without ``--dialect vllm``), parsed
as ``vllm serve`` parses them (each flag's source in docs/target.md, "vLLM dialect"): the model
positionally (wins over ``--model``, vllm/entrypoints/cli/serve.py:56-57); underscores in a
flag's name read as dashes (vllm/utils/argparse_utils.py:379-395); argparse's errors otherwise
(exit 2). ``--speculative-config``: ``eagle``/``eagle3`` run the drafter as a chain of
``num_speculative_tokens`` (DFLASH's path with block size k + 1), ``ngram`` prompt lookup on
the request's own tokens; its keys are checked against the real ``SpeculativeConfig`` fields
(ddlab's 0.34.0 table) and a bad one is kept as ``vllm_spec_error``, raised where vLLM raises
it (when the API server makes the engine config). ``--enforce-eager`` or ``cudagraph_mode:
NONE``: no graphs. The target's own switches (device, budget, faults) as in the SGLang dialect.
Kept free of torch (the start path).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

from ddlab.target import vllm_lines  # noqa: F401 (registers the dialect's words for the engine)
from ddlab.target.args import (DROP_MODES, VERIFY_FIELDS, ServerArgs, _non_negative_float, _positive)

__all__ = ["VllmServerArgs", "build_vllm_parser", "parse_vllm_args", "METHODS", "dialect_of",
           "non_default_args"]

METHODS = ("eagle", "eagle3", "ngram")  # what the target runs of vLLM's SpeculativeMethod
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
MOST_DRAFT_TOKENS = 15  # the drafter's block is 16: the bonus + 15 drafted positions
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92
DEFAULT_MAX_NUM_SEQS = 256
_TABLE = Path(__file__).resolve().parents[1] / "config" / "vllm_flags" / "vllm-0.34.0.json"


@dataclasses.dataclass(repr=False)
class VllmServerArgs(ServerArgs):
    """``ServerArgs`` for the engine, plus what the vLLM dialect read (``vllm``: the parsed
    namespace as vLLM names it; ``ngram``: (min n, max n) for prompt lookup)."""

    log_format: str = "vllm"
    port: int = 8000
    host: str = ""
    ngram: tuple | None = None
    vllm_spec_error: Exception | None = None
    spec_method: str | None = None
    num_speculative_tokens: int | None = None
    enforce_eager: bool = False
    cudagraph_mode: str | None = None
    disable_log_stats: bool = False
    uvicorn_log_level: str = "info"
    disable_uvicorn_access_log: bool = False
    vllm: dict = dataclasses.field(default_factory=dict)

    @property
    def speculative(self) -> bool:
        return self.spec_method is not None


def dialect_of(argv) -> tuple[str, list[str]]:
    """(``--dialect`` as given, else ``sglang``; the argv without it)."""
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg == "--dialect" and i + 1 < len(argv):
            return argv[i + 1], argv[:i] + argv[i + 2:]
        if arg.startswith("--dialect="):
            return arg.split("=", 1)[1], argv[:i] + argv[i + 1:]
    return "sglang", argv


def _dashes(argv) -> list[str]:
    """vLLM's ``FlexibleArgumentParser``: underscores in a ``--name`` (before ``=`` and any
    ``.``) read as dashes (vllm/utils/argparse_utils.py:379-395 (0.34.0))."""
    pattern = re.compile(r"(?<=--)[^\.]*")
    out = []
    for arg in argv:
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            out.append(pattern.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + eq + value)
        else:
            out.append(arg)
    return out


def human_readable_int_or_auto(text: str) -> int:
    """vLLM's ``human_readable_int_or_auto`` (vllm/utils/argparse_utils.py:77 (0.34.0)): ``auto``
    and ``-1`` = the model's (-1 here); ``25.6k`` = 25600, ``1K`` = 1024, no decimals with a
    binary suffix."""
    value = text.strip()
    if value.lower() in ("auto", "-1"):
        return -1
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        number, suffix = match.groups()
        if suffix.isupper():
            if "." in number:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean to "
                    f"use {number}{suffix.lower()} instead?")
            return int(number) * 1024 ** ("KMGT".index(suffix) + 1)
        return int(Decimal(number) * 1000 ** ("kmgt".index(suffix) + 1))
    return int(value)


class _EnableDisable(argparse.Action):
    """vLLM's ``EnableDisableAction`` (vllm/utils/argparse_utils.py:120): ``--x`` on,
    ``--no-x`` (or ``--disable-x`` for ``--enable-x``) off."""

    def __init__(self, option_strings, dest, **kw):
        kw.setdefault("nargs", 0)
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, not option_string.startswith(("--no-", "--disable-")))


def build_vllm_parser(prog="python -m ddlab.target --dialect vllm") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="ddlab's tree-speculative target server "
                                "(vLLM 0.34.0's flags, HTTP API and log lines)")
    a = p.add_argument
    a("model_tag", nargs="?", help="the model to serve (cli_args.py:439)")
    a("--model", default="ddlab-tiny", help="arg_utils.py:976")
    a("--served-model-name", nargs="+")
    a("--host")
    a("--port", type=int, default=8000)
    a("--api-key", nargs="+")
    a("--uvicorn-log-level", default="info",
      choices=["critical", "debug", "error", "info", "trace", "warning"])
    a("--disable-uvicorn-access-log", "--enable-uvicorn-access-log", "--no-disable-uvicorn-access-log",
      action=_EnableDisable, default=False)
    a("--seed", type=int, default=0)
    a("--max-model-len", type=human_readable_int_or_auto)
    a("--enforce-eager", "--no-enforce-eager", action=_EnableDisable, default=False)
    a("--tensor-parallel-size", "-tp", type=int, default=1)
    a("--gpu-memory-utilization", "--device-memory-utilization", type=float)
    a("--enable-prefix-caching", "--disable-prefix-caching", "--no-enable-prefix-caching",
      action=_EnableDisable)
    a("--max-num-batched-tokens", type=human_readable_int_or_auto)
    a("--max-num-seqs", type=int)
    a("--cudagraph-capture-sizes", type=int, nargs="+")
    a("--max-cudagraph-capture-size", type=int)
    a("--speculative-config", "-sc", type=json.loads)
    a("--compilation-config", "-cc", type=json.loads)
    a("--disable-log-stats", action="store_true")
    # the target's own (as in the SGLang dialect)
    a("--device", default="auto", choices=["auto", "cpu", "cuda"])
    a("--device-memory-gb", type=float, default=1.0, help="declared device memory on CPU (GiB)")
    a("--cpu-threads", type=int, default=0)
    a("--debug-drop-verify-field", choices=VERIFY_FIELDS)
    a("--debug-drop-verify-mode", choices=DROP_MODES)
    a("--debug-graph-tokens-per-req", type=_positive)
    a("--debug-load-delay-s", type=_non_negative_float, default=0.0)
    return p


def non_default_args(ns: argparse.Namespace) -> dict:
    """``get_non_default_args`` (vllm/entrypoints/common/startup.py:63-91): what differs from
    the parser's defaults, as vLLM names it (``model`` too when given positionally)."""
    defaults = vars(build_vllm_parser().parse_args([]))
    return {k: v for k, v in vars(ns).items() if defaults.get(k) != v}


def _spec_fields() -> dict:
    return json.loads(_TABLE.read_text())["speculative_config"]["fields"]


def _value_error(sc: dict, words: str) -> ValueError:
    """A check of SpeculativeConfig's own (its ``_verify_args``, a pydantic ``model_validator``:
    vllm/config/speculative.py:1645-1664 (0.34.0)) refusing the config, in pydantic's words
    for a ValueError raised inside a validator of a dataclass built from keywords."""
    return ValueError(f"1 validation error for SpeculativeConfig\n  Value error, {words} "
                      f"[type=value_error, input_value=ArgsKwargs((), {sc!r}), "
                      "input_type=ArgsKwargs]")


def _speculative(sc, error) -> dict:
    """The speculative config as the target runs it; vLLM's errors (or the target's words for a
    method it does not run)."""
    if not isinstance(sc, dict):
        error(f"argument --speculative-config/-sc: {sc!r} is not a JSON object")
    sc = {k.replace("-", "_"): v for k, v in sc.items()}  # vllm/engine/arg_utils.py:2159
    fields = _spec_fields()
    unknown = [k for k in sc if k not in fields]
    if unknown:  # pydantic's words for an extra field (extra="forbid", vllm/config/utils.py:72)
        raise ValueError(f"{len(unknown)} validation error{'s' if len(unknown) > 1 else ''} for "
                         "SpeculativeConfig\n" + "\n".join(
                             f"{k}\n  Unexpected keyword argument [type=unexpected_keyword_argument, "
                             f"input_value={sc[k]!r}, input_type={type(sc[k]).__name__}]" for k in unknown))
    method = sc.get("method")
    if method is None and sc.get("model") in ("ngram", "[ngram]"):
        method = "ngram"  # speculative.py:1368-1369
    k = sc.get("num_speculative_tokens")
    if k is not None and (not isinstance(k, int) or k <= 0):
        raise ValueError("1 validation error for SpeculativeConfig\nnum_speculative_tokens\n  Input "
                         f"should be greater than 0 [type=greater_than, input_value={k!r}, "
                         f"input_type={type(k).__name__}]")
    if method not in METHODS:
        raise ValueError(f"Speculative method {method!r}: ddlab's target runs "
                         f"{', '.join(METHODS)} (its drafter as an EAGLE-like chain, or prompt "
                         "lookup), not this one")
    if k is None:  # speculative.py:1653-1658
        raise _value_error(sc, "num_speculative_tokens must be provided with speculative model "
                               "unless the draft model config contains an n_predict parameter.")
    if k > MOST_DRAFT_TOKENS and method != "ngram":
        raise _value_error(sc, f"num_speculative_tokens={k}: ddlab's target drafter proposes at "
                               f"most {MOST_DRAFT_TOKENS} tokens (its block is "
                               f"{MOST_DRAFT_TOKENS + 1})")
    lo, hi = sc.get("prompt_lookup_min"), sc.get("prompt_lookup_max")
    lo, hi = lo or hi or 5, hi or lo or 5  # speculative.py:551-556
    if method == "ngram" and not 1 <= lo <= hi:
        raise ValueError(f"prompt_lookup_min={lo} must be <= prompt_lookup_max={hi}")
    return {"method": method, "k": k, "model": sc.get("model"), "ngram": (lo, hi)}


def parse_vllm_args(argv=None, prog="python -m ddlab.target --dialect vllm") -> VllmServerArgs:
    """vLLM's command line -> the target's args (parse errors exit 2 as argparse's; a bad
    ``--speculative-config`` raises ValueError where vLLM's engine config does: the caller)."""
    argv = _dashes(sys.argv[1:] if argv is None else argv)
    parser = build_vllm_parser(prog)
    ns = parser.parse_args(argv)
    if ns.model_tag is not None:  # vllm/entrypoints/cli/serve.py:56-57
        ns.model = ns.model_tag
    if ns.tensor_parallel_size != 1:
        parser.error(f"argument --tensor-parallel-size/-tp: {ns.tensor_parallel_size}: ddlab's "
                     "target runs on one device; use 1")
    cc = ns.compilation_config or {}
    if not isinstance(cc, dict):
        parser.error(f"argument --compilation-config/-cc: {cc!r} is not a JSON object")
    mode = cc.get("cudagraph_mode")
    if mode is not None and str(mode).upper() not in CUDAGRAPH_MODES:
        parser.error(f"argument --compilation-config/-cc: KeyError: {str(mode).upper()!r}")
    sizes = ns.cudagraph_capture_sizes or cc.get("cudagraph_capture_sizes")
    max_size = ns.max_cudagraph_capture_size or cc.get("max_cudagraph_capture_size")
    graphs_off = ns.enforce_eager or (mode is not None and str(mode).upper() == "NONE")
    args = VllmServerArgs(
        model_path=ns.model, served_model_name=(ns.served_model_name or [None])[0],
        host=ns.host or "", port=ns.port, device=ns.device, device_memory_gb=ns.device_memory_gb,
        mem_fraction_static=ns.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
        context_length=None if ns.max_model_len in (None, -1) else ns.max_model_len,
        max_running_requests=ns.max_num_seqs or DEFAULT_MAX_NUM_SEQS,
        chunked_prefill_size=ns.max_num_batched_tokens or 2048, random_seed=ns.seed,
        api_key=(ns.api_key or [None])[0],
        cuda_graph_backend_decode="disabled" if graphs_off else "full", disable_cuda_graph=graphs_off,
        cuda_graph_max_bs_decode=max_size or 8, cuda_graph_bs_decode=sizes,
        cpu_threads=ns.cpu_threads, skip_server_warmup=True,
        debug_drop_verify_field=ns.debug_drop_verify_field,
        debug_drop_verify_mode=ns.debug_drop_verify_mode or "skip",
        debug_graph_tokens_per_req=ns.debug_graph_tokens_per_req,
        debug_load_delay_s=ns.debug_load_delay_s,
        enforce_eager=ns.enforce_eager, cudagraph_mode=None if mode is None else str(mode).upper(),
        disable_log_stats=ns.disable_log_stats, uvicorn_log_level=ns.uvicorn_log_level,
        disable_uvicorn_access_log=ns.disable_uvicorn_access_log, vllm=vars(ns))
    if ns.speculative_config is not None:
        try:
            spec = _speculative(ns.speculative_config, parser.error)
        except ValueError as e:
            args.vllm_spec_error = e  # raised where vLLM's engine config is made (the server)
            return args
        args.spec_method, args.num_speculative_tokens = spec["method"], spec["k"]
        if spec["method"] == "ngram":
            args.ngram = spec["ngram"]
            args.speculative_num_draft_tokens = spec["k"] + 1
        else:  # the drafter, as a chain of k: DFLASH's path with block size k + 1
            args.speculative_algorithm = "DFLASH"
            args.speculative_dflash_block_size = spec["k"] + 1
            args.speculative_draft_model_path = spec["model"]
    return args
