"""The target's command line: SGLang's flag names, resolved into ``ServerArgs``.

Contract: ``parse_args(argv) -> ServerArgs``; ``parse_command_line(argv)``
also returns the deprecation warnings the flags earned, worded as the chosen
``--log-format`` words them (the server logs them first, as SGLang does).
The parser is the generation's: ``--log-format`` is read first, then the
whole command line with that release's option strings. Under 0.5.23 the
flags are spelled as 0.5.23's ``sglang serve`` spells them, and argparse's
prefix matching is on as there (0.5.23 ``server_args.py:679`` keeps
``allow_abbrev``), so the removed ``--cuda-graph-max-bs`` is
``ambiguous option: --cuda-graph-max-bs could match
--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill`` as there; under 0.4
the old names (``--cuda-graph-max-bs``, ``--cuda-graph-bs``) are 0.4's own.
``--disable-cuda-graph`` is deprecated in favour of
``--cuda-graph-backend-decode disabled`` and still works. The prefill graph
flags parse and change nothing: the target's prefill always runs eagerly
(``--cuda-graph-backend-prefill`` takes only ``disabled``).
``--context-length`` and ``--max-prefill-tokens`` read SGLang's
human-readable integers (``32k`` = 32000, ``32Ki`` = 32768).
``--speculative-algorithm`` is a free string read case-insensitively, as
0.5.23's ``SpeculativeAlgorithm.from_string`` reads it (``spec_info.py:49-65``);
:func:`speculative_algorithm` resolves it (the launcher calls it, after its
first lines, as 0.5.23's speculative hook does). Errors are argparse's
(``error: unrecognized arguments: ...``, ``invalid choice``, exit 2) or
SGLang's own texts. ``--tp-size`` other than 1 is refused with a message
saying why. ``--speculative-ddtree-shadow-linear`` parses and has no effect (a
private fork's switch). ``--log-format`` picks the SGLang generation whose
lines and crash texts the target prints (``log_lines``). Two ``--debug-*``
switches reproduce field bugs through the real code path (``cuda_graph_runner``);
what a dropped field does by default is the generation's (:func:`default_drop_mode`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from decimal import Decimal

from ddlab.target.log_lines import LOG_FORMATS, generation

__all__ = ["ServerArgs", "build_parser", "parse_args", "parse_command_line", "VERIFY_FIELDS",
           "DROP_MODES", "human_readable_int", "speculative_algorithm", "ALGORITHMS", "log_format_of",
           "default_drop_mode"]

# The forward-batch fields copied into the static buffers at every replay.
VERIFY_FIELDS = ("input_ids", "req_pool_indices", "seq_lens", "out_cache_loc", "positions",
                 "num_token_non_padded")
DROP_MODES = ("raise", "skip")
GRAPH_BACKENDS = ("full", "breakable", "disabled")
ALGORITHMS = ("DFLASH", "DDTREE")  # what the target runs; NONE (or no flag) is no speculation
# 0.5.23's builtins the target does not run (sglang/srt/speculative/spec_info.py:39-47, and the
# NEXTN alias, arg_groups/speculative_hook.py:109): refused with the target's own words
_NOT_HERE = ("UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NEXTN")


@dataclasses.dataclass
class ServerArgs:
    model_path: str = "ddlab-tiny"
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 30000
    device: str = "auto"
    device_memory_gb: float = 1.0
    mem_fraction_static: float = 0.88
    context_length: int | None = None
    max_running_requests: int | None = None
    chunked_prefill_size: int = 8192
    max_prefill_tokens: int = 16384
    tp_size: int = 1
    random_seed: int = 0
    api_key: str | None = None
    admin_api_key: str | None = None
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_dflash_block_size: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_ddtree_budget: int | None = None
    speculative_ddtree_topk_cap: int | None = None
    speculative_ddtree_shadow_linear: bool = False
    cuda_graph_backend_decode: str = "full"
    cuda_graph_max_bs_decode: int = 8
    cuda_graph_bs_decode: list | None = None
    cuda_graph_backend_prefill: str = "disabled"
    cuda_graph_max_bs_prefill: int | None = None
    cuda_graph_bs_prefill: list | None = None
    disable_cuda_graph: bool = False
    disable_cuda_graph_padding: bool = False
    enable_metrics: bool = False
    decode_log_interval: int = 40
    log_level: str = "info"
    log_level_http: str = "warning"
    log_format: str = LOG_FORMATS[0]
    skip_server_warmup: bool = False
    cpu_threads: int = 0
    debug_drop_verify_field: str | None = None
    debug_drop_verify_mode: str | None = None  # None: the generation's own (see __post_init__)
    debug_graph_tokens_per_req: int | None = None
    debug_load_delay_s: float = 0.0

    def __post_init__(self):
        if self.debug_drop_verify_mode is None:
            self.debug_drop_verify_mode = default_drop_mode(self.log_format)

    @property
    def speculative(self) -> bool:
        return self.speculative_algorithm in ("DFLASH", "DDTREE")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"ServerArgs({inner})"


def default_drop_mode(log_format: str) -> str:
    """What the generation's copy into the graph buffers does with a None field: 0.5.23's
    ``fill_from`` skips it (``cuda_graph_buffer_registry.py:441-443, 489-491``: the graph then
    replays a stale buffer), 0.4's ``replay_prepare`` hands it to ``Tensor.copy_``, which raises
    (0.4.10.post2 ``cuda_graph_runner.py:725-729``)."""
    return "raise" if log_format == "0.4" else "skip"


def human_readable_int(text: str) -> int:
    """SGLang's reading (0.5.23 ``utils/common.py:3394``): ``32k`` = 32000, ``32Ki`` = 32768."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text.strip())
    if not match:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Invalid integer value: '{text.strip()}'. Use a plain integer, SI suffixes (1k, 1M), "
                "or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive.") from None
    number, suffix = match.groups()
    if suffix.endswith("i"):
        if "." in number:
            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with IEC suffixes like '{suffix}'. Use an integer IEC value "
                f"such as '{int(Decimal(number))}{suffix}', or an SI value such as '{number}{suffix[0]}'.")
        return int(number) * 2 ** (10 * (1 + "KMGT".index(suffix[0])))
    return int(Decimal(number) * 10 ** (3 * (1 + "kMGT".index(suffix))))


def _positive(text, read=int):
    value = read(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be an integer >= 1")
    return value


def _positive_human(text):
    return _positive(text, human_readable_int)


def _fraction(text):
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be between 0 and 1")
    return value


class _Deprecated(argparse.Action):
    """SGLang's ``DeprecatedAliasStoreAction`` / ``DeprecatedStoreTrueAction``: store, and
    note (option, replacement) for the warning the server logs once logging is up."""

    def __init__(self, option_strings, dest, replacement, **kw):
        self.replacement = replacement
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        namespace.deprecated_used = [*namespace.deprecated_used, (option_string, self.replacement)]


EXAMPLES = """examples:
  {prog} --port 30000 --speculative-algorithm DDTREE --speculative-ddtree-budget 16
  {prog} --port 30001 --disable-cuda-graph --log-format 0.4"""


def build_parser(prog="python -m ddlab.target", log_format=LOG_FORMATS[0]) -> argparse.ArgumentParser:
    """The parser of ``log_format``'s generation (its option strings differ: see the module)."""
    p = argparse.ArgumentParser(prog=prog, description="ddlab's tree-speculative target server "
                                "(SGLang's flags, HTTP API and log lines)", epilog=EXAMPLES.format(
                                    prog=prog), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(deprecated_used=())
    a = p.add_argument
    a("--model-path", default="ddlab-tiny", help="built-in name (ddlab-tiny) or a weights directory")
    a("--served-model-name", help="name in /v1/models (default: --model-path)")
    a("--host", default="127.0.0.1")
    a("--port", type=int, default=30000)
    a("--device", default="auto", choices=["auto", "cpu", "cuda"])
    a("--device-memory-gb", type=float, default=1.0, help="declared device memory on CPU (GiB)")
    a("--mem-fraction-static", type=_fraction, default=0.88, help="fraction for weights + KV pool")
    a("--context-length", type=_positive_human, help="default: the model's (320); 32k, 32Ki read")
    a("--max-running-requests", type=_positive, help="default 48 (SGLang's default under speculation)")
    a("--chunked-prefill-size", type=int, default=8192, help="logged only: prompts fit one chunk")
    a("--max-prefill-tokens", type=_positive_human, default=16384, help="logged only")
    a("--tp-size", type=int, default=1)
    a("--random-seed", type=int, default=0)
    a("--api-key", help="requests need 'Authorization: Bearer KEY' (not /health, /metrics)")
    a("--admin-api-key", help="accepted; this server has no admin endpoints")
    _add_speculative(p)
    _add_graphs(p, log_format)
    a("--enable-metrics", action="store_true", help="serve Prometheus text at /metrics")
    a("--decode-log-interval", type=_positive, default=40)
    a("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    a("--log-level-http", default="warning", choices=["debug", "info", "warning", "error"])
    a("--log-format", default=LOG_FORMATS[0], choices=LOG_FORMATS,
      help="the SGLang generation whose log lines and crash texts to print (default %(default)s)")
    a("--skip-server-warmup", action="store_true")
    a("--cpu-threads", type=int, default=0, help="torch threads on CPU (0: 1, fastest for this model)")
    _add_debug(p)
    return p


def _add_graphs(p, log_format):
    a = p.add_argument
    a("--cuda-graph-backend-decode", choices=GRAPH_BACKENDS, default="full",
      help="decode/verify graphs: full (breakable runs as full here), disabled = no graphs")
    a("--disable-cuda-graph", action=_Deprecated, nargs=0, default=False,
      replacement="--cuda-graph-backend-{decode,prefill}=disabled",
      help="deprecated: --cuda-graph-backend-decode disabled")
    a("--disable-cuda-graph-padding", action="store_true")
    a("--cuda-graph-max-bs-decode", type=_positive, default=8)
    a("--cuda-graph-bs-decode", type=_positive, nargs="+")
    a("--cuda-graph-backend-prefill", choices=GRAPH_BACKENDS, default="disabled",
      help="prefill graphs: the target has none (its prefill runs eagerly): only disabled")
    a("--cuda-graph-max-bs-prefill", type=_positive, help="accepted; no effect (no prefill graphs)")
    a("--cuda-graph-bs-prefill", type=_positive, nargs="+", help="accepted; no effect (no prefill graphs)")
    if log_format == "0.4":  # 0.4's own names (0.5.14-0.5.18 kept them as deprecated aliases; 0.5.20 removed them)
        a("--cuda-graph-max-bs", dest="cuda_graph_max_bs_decode", type=_positive, action=_Deprecated,
          replacement="--cuda-graph-max-bs-decode", help="0.4's name of --cuda-graph-max-bs-decode")
        a("--cuda-graph-bs", dest="cuda_graph_bs_decode", type=_positive, nargs="+", action=_Deprecated,
          replacement="--cuda-graph-bs-decode", help="0.4's name of --cuda-graph-bs-decode")


def _add_speculative(p):
    a = p.add_argument
    a("--speculative-algorithm", metavar="NAME",
      help="NONE, DFLASH or DDTREE, in any case (SGLang reads the name case-insensitively)")
    a("--speculative-draft-model-path", help="built-in name (ddlab-tiny-drafter) or a directory")
    a("--speculative-dflash-block-size", type=_positive, help="default: the drafter's (16)")
    a("--speculative-num-draft-tokens", type=_positive, help="= block size for DFLASH")
    a("--speculative-ddtree-budget", type=_positive, help="non-root tree nodes (default block size - 1)")
    a("--speculative-ddtree-topk-cap", type=_positive,
      help="per-depth top-k cap (default: $SGLANG_DDTREE_MAX_TOPK or 6)")
    a("--speculative-ddtree-shadow-linear", action="store_true", help="accepted; no effect here")


def _add_debug(p):
    a = p.add_argument
    a("--debug-drop-verify-field", choices=VERIFY_FIELDS,
      help="hand the graph runner verify batches without this field")
    a("--debug-drop-verify-mode", choices=DROP_MODES,
      help="skip: the copy into the static buffers leaves the field's buffer as it was, as "
           "SGLang 0.5.23's fill_from does (the default under --log-format 0.5.23; input_ids and "
           "positions still fail, in _copy_replay_inputs, as there); raise: the copy fails on the "
           "missing field, as 0.4's (its default) and a fork whose copy does not skip")
    a("--debug-load-delay-s", type=_non_negative_float, default=0.0,
      help="wait this long while loading weights, as a GPU host does for minutes (the "
           "process sleeps: a cell's cost is the host's time, not this machine's CPU)")
    a("--debug-graph-tokens-per-req", type=_positive,
      help="size the static verify buffers for N tokens per request instead of budget+1")


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not (value >= 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number of seconds >= 0")
    return value


def log_format_of(argv) -> str:
    """``--log-format`` as given (exactly spelled), else the default: it picks the parser."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--log-format")
    given = pre.parse_known_args(argv)[0].log_format
    return given if given in LOG_FORMATS else LOG_FORMATS[0]


def speculative_algorithm(name: str | None) -> str | None:
    """``--speculative-algorithm`` as 0.5.23 reads it (``SpeculativeAlgorithm.from_string``,
    sglang/srt/speculative/spec_info.py:49-65: ``name.upper()``, NONE for no speculation):
    ``DFLASH``, ``DDTREE`` or None; any other name raises SGLang's ValueError."""
    upper = None if name is None else name.upper()
    if upper in (None, "NONE"):
        return None
    if upper in ALGORITHMS:
        return upper
    if upper in _NOT_HERE:
        raise ValueError(f"Speculative algorithm {name}: ddlab's target runs DFLASH and DDTREE "
                         "(or NONE), not this one")
    raise ValueError(f"Unknown speculative algorithm name: {name}")


def parse_command_line(argv=None, prog="python -m ddlab.target") -> tuple[ServerArgs, list[str]]:
    """-> (the args, the deprecation warnings to log, worded for ``--log-format``). A name
    ``--speculative-algorithm`` does not know stays as given: :func:`speculative_algorithm`
    refuses it where SGLang does (the launcher, after its first lines)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(prog, log_format_of(argv))
    ns = parser.parse_args(argv)
    if ns.cuda_graph_backend_decode == "disabled":
        ns.disable_cuda_graph = True
    elif ns.disable_cuda_graph:
        ns.cuda_graph_backend_decode = "disabled"
    if ns.tp_size != 1:
        parser.error(f"argument --tp-size: {ns.tp_size}: ddlab's target runs on one device; use 1")
    if ns.cuda_graph_backend_prefill != "disabled":
        parser.error(f"argument --cuda-graph-backend-prefill: {ns.cuda_graph_backend_prefill!r}: ddlab's "
                     "target has no prefill graphs (its prefill runs eagerly); use disabled")
    try:
        ns.speculative_algorithm = speculative_algorithm(ns.speculative_algorithm)
    except ValueError:
        pass  # kept as given: the launcher raises SGLang's error where SGLang does
    if ns.speculative_ddtree_topk_cap is None and ns.speculative_algorithm == "DDTREE":
        ns.speculative_ddtree_topk_cap = int(os.environ.get("SGLANG_DDTREE_MAX_TOPK", "6"))
    fields = {f.name for f in dataclasses.fields(ServerArgs)}
    args = ServerArgs(**{k: v for k, v in vars(ns).items() if k in fields})
    words = generation(args.log_format)
    warnings = [words.deprecated(option, new) for option, new in ns.deprecated_used]
    return args, [w for w in warnings if w]


def parse_args(argv=None, prog="python -m ddlab.target") -> ServerArgs:
    return parse_command_line(argv, prog)[0]
