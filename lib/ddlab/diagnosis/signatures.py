"""The crash signatures ddlab recognises in an SGLang server log: data, not code.

Contract: :data:`SIGNATURES` is a list of :class:`Signature`. A signature
matches an *exception* (the ``Type: message`` text of one raised exception,
continuation lines included) when its ``types`` regex (if any) matches the
type, one of its ``patterns`` matches the text, and every ``context`` regex
matches somewhere in the whole printed chain (frames included). It matches a
plain *log line* (argparse's usage error, uvicorn's bind error, the health
checker) when one of its ``lines`` regexes does. When several match,
``priority`` decides: specific beats generic (a capture failure whose message
quotes a CUDA OOM is a capture failure; an NCCL error is often the echo of
another rank's death, so it ranks low). ``phase`` is the phase a crash of this
kind implies at least. ``suggestion`` is the next step; ``detail`` may add the
specifics the evidence shows (the port, the None field, the sizes).

Adding one: append a :class:`Signature` and drop a log that shows it into
``tests/fixtures/logs/`` with its expected kind in ``tests/test_diagnose.py``;
a test fails while any signature has no fixture. Texts come from
``shared/facts/sglang.md`` and SGLang's source, for every version we meet.

:data:`WRAPPERS` are the launcher's and warmup's generic echoes of a failure
("Rank 0 scheduler is dead", ``EOFError``, "Initialization failed. warmup
error: ...", ``KeyboardInterrupt``): never the root cause while anything more
specific is in the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

__all__ = ["Signature", "Found", "SIGNATURES", "KINDS", "WRAPPERS", "WRAPPER_FRAMES", "WRAPPER_LINES",
           "by_name", "regex"]

KINDS = ("kv_pool_oom", "cuda_oom", "cuda_graph_capture", "cuda_graph_replay", "bad_argument",
         "port_in_use", "model_not_found", "nccl", "health_check", "unknown")


@lru_cache(maxsize=None)
def regex(pattern: str, flags: int = re.I | re.S) -> re.Pattern:
    """``pattern`` compiled once (signature texts are case-insensitive by default)."""
    return re.compile(pattern, flags)


@dataclass(frozen=True)
class Found:
    """What a ``detail`` hook sees: the matched text and what the log says around it."""

    text: str
    chain_text: str = ""
    phase: str = "launch"
    facts: dict = field(default_factory=dict)
    markers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Signature:
    name: str
    kind: str
    title: str
    suggestion: str
    patterns: tuple[str, ...] = ()
    types: str | None = None
    context: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    priority: int = 50
    phase: str | None = None
    detail: Callable[[Found], str | None] | None = None

    def matches_exception(self, type_name: str, text: str, chain_text: str) -> bool:
        if not self.patterns:
            return False
        if self.types and not regex(self.types, 0).fullmatch(type_name):
            return False
        if not any(regex(p).search(text) for p in self.patterns):
            return False
        return all(regex(c, re.I | re.M).search(chain_text) for c in self.context)

    def matches_line(self, msg: str) -> bool:
        return any(regex(p, re.I).search(msg) for p in self.lines)

    def advise(self, found: Found) -> str:
        extra = self.detail(found) if self.detail else None
        return " ".join(part for part in (self.suggestion, extra) if part)


# --- details: the specifics a suggestion can name ----------------------------------

def _first(patterns, text: str) -> re.Match | None:
    for pattern in patterns:
        match = regex(pattern).search(text)
        if match:
            return match
    return None


def _argparse_detail(found: Found) -> str | None:
    match = _first((r"unrecognized arguments?: (.+)", r"argument (--?[\w-]+)"), found.text)
    return f"Rejected: {match[1].strip()}." if match else None


def _kv_pool_detail(found: Found) -> str | None:
    match = regex(r"mem_fraction_static\s*=\s*([0-9.]+)").search(found.text)
    value = float(match[1]) if match else found.facts.get("mem_fraction_static")
    if not isinstance(value, (int, float)):
        return None
    return f"It is {value:g} now: try {min(value + 0.04, 0.95):.2f}."


def _capture_detail(found: Found) -> str | None:
    if regex(r"out of memory|OutOfMemoryError").search(found.text):
        return ("The capture itself ran out of GPU memory: lower --mem-fraction-static "
                "(e.g. 0.8) or --cuda-graph-max-bs (e.g. 16) first.")
    return None


_BUFFER_FIELDS = ("input_ids", "req_pool_indices", "seq_lens_cpu", "seq_lens", "out_cache_loc_swa",
                  "out_cache_loc", "positions", "num_token_non_padded", "mamba_track_indices",
                  "mamba_track_mask", "mamba_track_seqlens", "mrope_positions", "encoder_lens",
                  "custom_mask", "spec_info")


def _none_field(found: Found) -> str | None:
    fields = "|".join(_BUFFER_FIELDS)
    said = regex(rf"\b({fields})\b\s*(?:=|:|is|==)\s*None\b")
    for text in (*reversed(found.markers), found.text, found.chain_text):
        match = said.search(text)
        if match:
            return match[1]
    code = regex(rf"forward_batch\.({fields})\b").findall(found.chain_text)
    return code[-1] if code and "subscriptable" in found.text else None


def _replay_none_detail(found: Found) -> str | None:
    name = _none_field(found)
    if name:
        return f"The evidence names forward_batch.{name} as None at replay time."
    return ("The traceback does not name the field: log which of input_ids, req_pool_indices, "
            "seq_lens, out_cache_loc, positions (and num_token_non_padded, out_cache_loc_swa, "
            "mamba track indices, mrope_positions) is None in replay_prepare.")


def _replay_size_detail(found: Found) -> str | None:
    sizes = _first((r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
                    r"Expected size (\d+) but got size (\d+)",
                    r"shape \[(\d+)\] doesn't match the broadcast shape \[(\d+)\]"), found.text)
    budget = found.facts.get("tree_budget") or found.facts.get("speculative_ddtree_budget")
    parts = [f"The copy saw sizes {sizes[1]} and {sizes[2]}." if sizes else None]
    if isinstance(budget, int):
        parts.append(f"Here tree_budget={budget}: the verify graph needs {budget + 1} tokens per request.")
    return " ".join(p for p in parts if p) or None


def _port_detail(found: Found) -> str | None:
    match = _first((r"address \('[^']*', (\d+)", r"\bat (\d+) is not available",
                    r"\bport (\d{2,5})\b", r"\[[^\]]*\]:(\d{2,5})\b", r":(\d{2,5})\)"), found.text)
    port = match[1] if match else found.facts.get("port")
    return f"The port in question: {port}." if port else None


_OOM_BY_PHASE = {
    "launch": "The weights do not fit: free the GPU (nvidia-smi: an old server still running?), "
              "raise --tp-size, or use a smaller or quantized model; --mem-fraction-static does "
              "not shrink the weights.",
    "memory_pool": "The KV pool allocation ran out: lower --mem-fraction-static a little, or shrink "
                   "--context-length / --max-running-requests.",
    "graph_capture": "CUDA graph capture ran out: lower --mem-fraction-static (e.g. 0.8) or "
                     "--cuda-graph-max-bs (e.g. 16), or retry with --disable-cuda-graph.",
    "serving": "Activations ran out while serving: lower --mem-fraction-static, "
               "--max-running-requests or --chunked-prefill-size; a large "
               "--speculative-ddtree-budget grows the verify batch (budget+1 tokens per request).",
}
_OOM_BY_PHASE["load_weights"] = _OOM_BY_PHASE["launch"]
_OOM_BY_PHASE["ready"] = _OOM_BY_PHASE["serving"]


def _cuda_oom_detail(found: Found) -> str | None:
    return _OOM_BY_PHASE.get(found.phase)


# --- the registry -------------------------------------------------------------------

_REPLAY_FRAMES = (r", in (?:_grouped_foreach_copy_|_?foreach_copy|populate_from_forward_batch|fill_from"
                  r"|replay_prepare|replay|_replay\w*)\s*$|_grouped_foreach_copy_\(|replay_prepare\(")
_CAPTURE_FRAMES = r", in _?capture\w*\s*$"
_USER_ERRORS = r"(?:\w+\.)*(?:ValueError|AssertionError|NotImplementedError|TypeError|KeyError)"
_NO_GRAPH = "retry with --disable-cuda-graph to confirm the graph is at fault, then"

SIGNATURES: list[Signature] = [
    Signature(
        "unknown_algorithm", "bad_argument", "this SGLang has no such speculative algorithm",
        "This SGLang build lacks the algorithm: DDTREE exists only in the DDTree pull request "
        "(#29907) and forks. Install that build on the host, or compare with "
        "--speculative-algorithm DFLASH.",
        patterns=(r"Unknown speculative algorithm",),
        lines=(r"Unknown speculative algorithm", r"argument --speculative[-_]algorithm: invalid choice"),
        priority=95, phase="launch"),
    Signature(
        "argparse", "bad_argument", "the command line was rejected",
        "Fix the flag argparse names: check its spelling against `python -m "
        "sglang.launch_server --help` on the host; a private fork's flags "
        "(--speculative-ddtree-topk-cap ...) exist only in that build.",
        lines=(r"\berror: (?:unrecognized arguments?|argument -|the following arguments are required"
               r"|ambiguous option|one of the arguments|invalid choice|expected one argument)",),
        priority=90, phase="launch", detail=_argparse_detail),
    Signature(
        "missing_option", "bad_argument", "the options do not go together",
        "Add the option the message asks for (for DFLASH/DDTREE: "
        "--speculative-draft-model-path), or drop the one that conflicts.",
        patterns=(r"requires (?:setting |specifying |passing )?--[a-z][\w-]+",
                  r"--[a-z][\w-]+ (?:is|are) required (?:for|when|with)",
                  r"(?:cannot|can ?not|can't) be used (?:with|together)"),
        priority=88, phase="launch"),
    Signature(
        "port_in_use", "port_in_use", "the port is already taken",
        "Free the port (stop the old server: `ss -ltnp` shows who holds it, or `systemctl "
        "stop` its unit) or pick another --port.",
        patterns=(r"address already in use", r"EADDRINUSE", r"\[Errno (?:98|48)\]",
                  r"is not available in \d+ seconds", r"is used by a process already"),
        lines=(r"error while attempting to bind on address", r"address already in use"),
        priority=85, detail=_port_detail),
    Signature(
        "model_not_found", "model_not_found", "the model could not be found",
        "Check --model-path (and --speculative-draft-model-path): the folder must exist on "
        "the host with config.json and weights, or the name must be a Hugging Face repo id "
        "that is cached or reachable (HF_TOKEN for gated repos; HF_HUB_OFFLINE=1 uses the cache).",
        patterns=(r"is not a local folder and is not a valid model identifier",
                  r"RepositoryNotFoundError|Repository Not Found for url|GatedRepoError",
                  r"HFValidationError|Repo id must (?:be in the form|use alphanumeric)",
                  r"LocalEntryNotFoundError|Cannot find any model weights",
                  r"does not appear to have (?:a )?files? named",
                  r"No such file or directory: "
                  r"'[^']*(?:config\.json|\.safetensors|tokenizer[^']*|model[^']*)'",
                  r"Can't load (?:the )?(?:config|configuration|tokenizer|model) (?:for|of)",
                  r"couldn't connect to 'https://huggingface\.co'",
                  r"Unrecognized model in ",
                  r"Incorrect path_or_model_id"),
        priority=85, phase="launch"),
    Signature(
        "capture_failed", "cuda_graph_capture", "CUDA graph capture failed",
        f"Graph capture failed: {_NO_GRAPH} lower --cuda-graph-max-bs (e.g. 16) or "
        "--mem-fraction-static (e.g. 0.8); for DDTree the verify graph must be sized for "
        "budget+1 tokens per request.",
        patterns=(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed",
                  r"operation not permitted when stream is capturing",
                  r"cudaErrorStreamCapture\w+", r"stream capture (?:invalidated|unsupported)",
                  r"(?:during|while) (?:CUDA )?graph capture",
                  r"operation failed due to a previous error during capture"),
        lines=(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed",),
        priority=80, phase="graph_capture", detail=_capture_detail),
    Signature(
        "replay_none", "cuda_graph_replay", "CUDA graph replay got a None buffer",
        "Retry with --disable-cuda-graph (the eager path does not copy into the captured "
        "buffers), then find which forward-batch field is None when replay_prepare copies it: "
        "the DDTree verify path must fill it before the graph replays.",
        types=r"(?:\w+\.)*(?:TypeError|AttributeError)", patterns=(r"NoneType",),
        context=(_REPLAY_FRAMES,), priority=76, phase="graph_capture", detail=_replay_none_detail),
    Signature(
        "replay_size", "cuda_graph_replay", "CUDA graph replay got a batch of the wrong size",
        "The verify graph was captured for fewer tokens per request than DDTree sends: size "
        "the verify graph for budget+1 tokens per request (not block size); until then retry "
        "with --disable-cuda-graph.",
        patterns=(r"size of tensor a \(\d+\) must match the size of tensor b",
                  r"doesn't match the broadcast shape", r"Expected size \d+ but got size \d+",
                  r"shape mismatch|size mismatch|sizes? (?:do not|don't) match",
                  r"Tensor lists must have the same number",
                  r"shape '\[[^\]]*\]' is invalid for input of size",
                  r"out of bounds for dimension"),
        context=(_REPLAY_FRAMES,), priority=75, phase="graph_capture", detail=_replay_size_detail),
    Signature(
        "replay_cuda_error", "cuda_graph_replay", "CUDA graph replay hit a CUDA error",
        f"A CUDA error surfaced in graph replay: {_NO_GRAPH} check that the captured buffers "
        "are as large as the verify batch (budget+1 tokens per request for DDTree); "
        "CUDA_LAUNCH_BLOCKING=1 locates the kernel.",
        patterns=(r"CUDA error: (?!out of memory)", r"illegal memory access", r"device-side assert"),
        context=(_REPLAY_FRAMES,), priority=72, phase="graph_capture"),
    Signature(
        "kv_pool_oom", "kv_pool_oom", "the KV cache pool does not fit",
        "The KV cache pool does not fit next to the weights: raise --mem-fraction-static, "
        "or shrink --context-length / --max-running-requests (a drafter's pool counts too).",
        patterns=(r"Not enough memory\b.{0,120}?(?:mem[-_]fraction[-_]static|KV cache|memory pool)",),
        lines=(r"Not enough memory\. Please try to increase --mem-fraction-static",),
        priority=70, phase="memory_pool", detail=_kv_pool_detail),
    Signature(
        "cuda_oom", "cuda_oom", "CUDA ran out of memory",
        "",
        patterns=(r"CUDA out of memory", r"OutOfMemoryError", r"\bout of memory\b",
                  r"CUBLAS_STATUS_ALLOC_FAILED", r"cudaErrorMemoryAllocation"),
        priority=60, detail=_cuda_oom_detail),
    Signature(
        "capture_error", "cuda_graph_capture", "an error inside CUDA graph capture",
        f"An error was raised while capturing: {_NO_GRAPH} lower --cuda-graph-max-bs; "
        "check the attention backend and speculative worker support graph capture.",
        patterns=(r".",), types=r"(?:\w+\.)*(?:RuntimeError|\w*Error)",
        context=(_CAPTURE_FRAMES,), priority=55, phase="graph_capture"),
    Signature(
        "server_args_error", "bad_argument", "the server arguments were rejected",
        "The server arguments were refused while being checked: read the message, fix or drop "
        "the option it names.",
        patterns=(r".",), types=_USER_ERRORS, context=(r"server_args\.py",),
        priority=40, phase="launch"),
    Signature(
        "flag_value_error", "bad_argument", "an option's value was rejected",
        "An option's value was refused: fix the flag the message names.",
        patterns=(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+",), types=_USER_ERRORS,
        priority=35, phase="launch"),
    Signature(
        "nccl", "nccl", "NCCL / distributed communication failed",
        "Check NCCL: rerun with NCCL_DEBUG=INFO; make sure every GPU of --tp-size is visible "
        "and free (CUDA_VISIBLE_DEVICES); try NCCL_P2P_DISABLE=1 or --disable-custom-all-reduce. "
        "If another rank crashed first, its error is the real cause.",
        patterns=(r"\bNCCL error\b", r"\bnccl(?:UnhandledCuda|System|Internal|InvalidUsage"
                  r"|InvalidArgument|Remote)Error\b", r"DistBackendError", r"ProcessGroupNCCL",
                  r"Watchdog caught collective operation timeout", r"NCCL communicator was aborted"),
        lines=(r"Watchdog caught collective operation timeout", r"\bNCCL error\b"),
        priority=30),
    Signature(
        "health_check", "health_check", "the server stopped answering",
        "The server stopped answering its health check: the scheduler or detokenizer is "
        "stuck. Dump the scheduler's stack (py-spy dump --pid PID), retry with "
        "--disable-cuda-graph to rule out a graph hang; raise --watchdog-timeout only if a "
        "step is legitimately slow.",
        patterns=(r"Health check failed", r"watchdog timeout"),
        lines=(r"Health check failed", r"Scheduler watchdog timeout", r"\bwatchdog timeout\b"),
        priority=20),
]

WRAPPERS = (  # searched in a chain's header and outermost "Type: message"
    r"scheduler is dead", r"Initialization failed", r"^EOFError\b", r"Received sigquit",
    r"^KeyboardInterrupt\b", r"^SystemExit\b", r"res=<Response \[\d+\]>",
    r"^requests\.exceptions\.", r"Connection refused", r"Child process unexpectedly failed",
)
WRAPPER_FRAMES = r", in _wait_and_warmup\s*$"
WRAPPER_LINES = (r"Rank \d+ scheduler is dead", r"Received sigquit from a child process",
                 r"Initialization failed", r"Child process unexpectedly failed")


def by_name(name: str) -> Signature:
    """The signature called ``name`` (KeyError lists the names)."""
    for signature in SIGNATURES:
        if signature.name == name:
            return signature
    raise KeyError(f"{name}: not a signature; known: {', '.join(s.name for s in SIGNATURES)}")
