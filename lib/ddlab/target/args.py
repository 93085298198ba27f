"""The target's command line: SGLang's flag names, resolved into ``ServerArgs``.

Contract: ``parse_args(argv) -> ServerArgs``. Flags are spelled as
``python -m sglang.launch_server`` spells them (``../shared/facts/sglang.md``);
errors are argparse's (``error: unrecognized arguments: ...``, ``invalid
choice``, exit 2) or SGLang's own texts where sglang.md quotes one. Flags that
only make sense on a GPU host (``--tp-size`` other than 1) are refused with
a message saying so. ``--speculative-ddtree-shadow-linear`` parses and has
no effect (a private fork's switch; ddlab passes it through). Two ``--debug-*``
switches reproduce field bugs through the real code path (see
``cuda_graph_runner``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os

__all__ = ["ServerArgs", "build_parser", "parse_args", "VERIFY_FIELDS"]

# The forward-batch fields copied into the static buffers at every replay.
VERIFY_FIELDS = ("input_ids", "req_pool_indices", "seq_lens", "out_cache_loc", "positions",
                 "num_token_non_padded")


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
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_dflash_block_size: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_ddtree_budget: int | None = None
    speculative_ddtree_topk_cap: int | None = None
    speculative_ddtree_shadow_linear: bool = False
    disable_cuda_graph: bool = False
    disable_cuda_graph_padding: bool = False
    cuda_graph_max_bs: int = 8
    cuda_graph_bs: list | None = None
    enable_metrics: bool = False
    decode_log_interval: int = 40
    log_level: str = "info"
    log_level_http: str = "warning"
    skip_server_warmup: bool = False
    cpu_threads: int = 0
    debug_drop_verify_field: str | None = None
    debug_graph_tokens_per_req: int | None = None

    @property
    def speculative(self) -> bool:
        return self.speculative_algorithm in ("DFLASH", "DDTREE")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"ServerArgs({inner})"


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be an integer >= 1")
    return value


def _fraction(text):
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be between 0 and 1")
    return value


def build_parser(prog="python -m ddlab.target") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="ddlab's tree-speculative target server "
                                "(SGLang's flags, HTTP API and log lines)")
    a = p.add_argument
    a("--model-path", default="ddlab-tiny", help="built-in name (ddlab-tiny) or a weights directory")
    a("--served-model-name", help="name in /v1/models (default: --model-path)")
    a("--host", default="127.0.0.1")
    a("--port", type=int, default=30000)
    a("--device", default="auto", choices=["auto", "cpu", "cuda"])
    a("--device-memory-gb", type=float, default=1.0, help="declared device memory on CPU (GiB)")
    a("--mem-fraction-static", type=_fraction, default=0.88, help="fraction for weights + KV pool")
    a("--context-length", type=_positive, help="default: the model's (320)")
    a("--max-running-requests", type=_positive, help="default 48 (SGLang's default under speculation)")
    a("--chunked-prefill-size", type=int, default=8192, help="logged only: prompts fit one chunk")
    a("--max-prefill-tokens", type=int, default=16384, help="logged only")
    a("--tp-size", type=int, default=1)
    a("--random-seed", type=int, default=0)
    _add_speculative(p)
    a("--disable-cuda-graph", action="store_true", help="verify eagerly, without static buffers")
    a("--cuda-graph-backend-decode", choices=["full", "disabled"],
      help="newest SGLang's spelling: disabled = --disable-cuda-graph")
    a("--disable-cuda-graph-padding", action="store_true")
    a("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode", type=_positive, default=8)
    a("--cuda-graph-bs", "--cuda-graph-bs-decode", type=_positive, nargs="+")
    a("--enable-metrics", action="store_true", help="serve Prometheus text at /metrics")
    a("--decode-log-interval", type=_positive, default=40)
    a("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    a("--log-level-http", default="warning", choices=["debug", "info", "warning", "error"])
    a("--skip-server-warmup", action="store_true")
    a("--cpu-threads", type=int, default=0, help="torch threads on CPU (0: 1, fastest for this model)")
    a("--debug-drop-verify-field", choices=VERIFY_FIELDS,
      help="build verify batches without this field (reproduces the field's graph-replay crash)")
    a("--debug-graph-tokens-per-req", type=_positive,
      help="size the static verify buffers for N tokens per request instead of budget+1")
    return p


def _add_speculative(p):
    a = p.add_argument
    a("--speculative-algorithm", choices=["NONE", "DFLASH", "DDTREE"])
    a("--speculative-draft-model-path", help="built-in name (ddlab-tiny-drafter) or a directory")
    a("--speculative-dflash-block-size", type=_positive, help="default: the drafter's (16)")
    a("--speculative-num-draft-tokens", type=_positive, help="= block size for DFLASH")
    a("--speculative-ddtree-budget", type=_positive, help="non-root tree nodes (default block size - 1)")
    a("--speculative-ddtree-topk-cap", type=_positive,
      help="per-depth top-k cap (default: $SGLANG_DDTREE_MAX_TOPK or 6)")
    a("--speculative-ddtree-shadow-linear", action="store_true", help="accepted; no effect here")


def parse_args(argv=None, prog="python -m ddlab.target") -> ServerArgs:
    parser = build_parser(prog)
    ns = parser.parse_args(argv)
    if ns.cuda_graph_backend_decode == "disabled":
        ns.disable_cuda_graph = True
    if ns.tp_size != 1:
        parser.error(f"argument --tp-size: {ns.tp_size}: ddlab's target runs on one device; use 1")
    if ns.speculative_algorithm == "NONE":
        ns.speculative_algorithm = None
    if ns.speculative_ddtree_topk_cap is None and ns.speculative_algorithm == "DDTREE":
        ns.speculative_ddtree_topk_cap = int(os.environ.get("SGLANG_DDTREE_MAX_TOPK", "6"))
    fields = {f.name for f in dataclasses.fields(ServerArgs)}
    return ServerArgs(**{k: v for k, v in vars(ns).items() if k in fields})
