"""The registry of crash kinds and signatures ddlab recognises in an SGLang server log.

Contract: :data:`SIGNATURES` joins the families in :mod:`ddlab.crashes.kinds`
(data, one module per family) into one list of
:class:`~ddlab.crashes.signature.Signature`; :data:`KINDS` names every kind
(``unknown`` last) and :data:`KIND_MEANINGS` says in one line what each means.
:data:`WRAPPERS` (searched in a chain's header and outermost ``Type: message``),
:data:`WRAPPER_FRAMES` and :data:`WRAPPER_LINES` are the launcher's and warmup's
generic echoes of a failure ("Rank 0 scheduler is dead", ``EOFError``,
"Received sigquit from a child process", "Initialization failed. warmup
error: ...", ``KeyboardInterrupt``): never the root cause while anything more
specific is in the log.

Adding a signature: append it to the family's module with its ``sources``
(release and ``path:line`` in the wheel), and drop a log written from the real
text into ``tests/fixtures/logs/`` with its expected kind in
``tests/diagnosis/test_diagnosis.py``; a test fails while any signature has no
fixture, no source, or advice that proposes a flag the release lacks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ddlab.crashes.kinds import (caches, diffusion, disks, event_loops, graphs, hybrid_pools, images, launch, memory,
                                 models, native, quant_args, requests, router, runtime, speculative, web_deps, weights)
from ddlab.device_crashes import device
from ddlab.crashes.signature import Found, Signature, ascii_lower, needle, regex
from ddlab.diagnosis.vllm_log import VLLM_PROGRESS_RE, vllm_phase_marker
from ddlab.vllm_crashes import backends as vllm_backends, signatures as vllm

__all__ = ["Signature", "Found", "SIGNATURES", "KINDS", "KIND_MEANINGS", "WRAPPERS",
           "WRAPPER_FRAMES", "WRAPPER_LINES", "by_name", "regex", "Registry", "SGLANG", "VLLM",
           "VLLM_SIGNATURES", "registry"]

KIND_MEANINGS = {
    "kv_pool_oom": "the KV cache pool (or a hybrid model's state cache) does not fit at startup",
    "cuda_oom": "a CUDA allocation failed (weights, activations, graph memory), or vLLM refused one "
                "at startup (less GPU memory free than --gpu-memory-utilization asks for)",
    "slots_exhausted": "the scheduler ran out of request slots or KV token slots while serving",
    "host_oom": "host RAM or /dev/shm ran out (the kernel's OOM killer, ENOMEM)",
    "disk_full": "a disk, or the user's quota on it, is full (a download, a cache, a checkpoint: ENOSPC, EDQUOT)",
    "cuda_graph_capture": "capturing CUDA graphs failed",
    "cuda_graph_replay": "a captured CUDA graph got inputs it cannot take (None, wrong size)",
    "forward_input_mismatch": "the eager runner got batch inputs that disagree (no graph involved)",
    "cuda_illegal_access": "a GPU kernel faulted: illegal memory access, device-side assert",
    "unsupported_gpu": "a kernel has no build for this GPU's compute capability",
    "kernel_compile": "a just-in-time kernel build failed (Triton, flashinfer, nvcc)",
    "bad_argument": "the command line or a server argument was rejected",
    "port_in_use": "a port the server needs is taken",
    "model_not_found": "the model or draft path is missing, gated, unknown or unreachable",
    "arch_unsupported": "the model's architecture is unknown to the installed transformers / SGLang",
    "dependency_mismatch": "installed packages do not match (undefined symbol, version, import)",
    "draft_incompatible": "the draft checkpoint does not fit the speculative algorithm or target",
    "nccl": "NCCL / distributed communication failed, or a peer was lost",
    "hang": "the scheduler stopped making progress without an error (watchdog, thread dump, no batch)",
    "health_check": "a probe got no answer: the health check, /health 503, the warmup request",
    "native_crash": "a fatal signal (segfault, bus error, abort) with no Python exception",
    "spec_feature_conflict": "speculative decoding combined with another feature crashed while serving",
    "weights_unreadable": "the checkpoint's files cannot be read or placed by the loader",
    "pd_transfer": "a PD-disaggregation KV transfer or bootstrap failed and the server died of it",
    "kernel_config_unsupported": "a kernel refuses this model configuration on a GPU it supports",
    "request_error": "one request failed while the server kept serving (not a crash)",
    "unknown": "a crash no signature explains: the first error line and where to look",
}
KINDS = tuple(KIND_MEANINGS)

SIGNATURES: list[Signature] = [
    *launch.SIGNATURES, *models.SIGNATURES, *weights.SIGNATURES, *memory.SIGNATURES, *graphs.SIGNATURES,
    *device.SIGNATURES, *runtime.SIGNATURES, *native.SIGNATURES, *requests.SIGNATURES, *speculative.SIGNATURES,
    *diffusion.SIGNATURES,  # (round 38)
    *router.SIGNATURES,  # (round 51)
    *caches.SIGNATURES,  # (round 52)
    *images.SIGNATURES,  # (round 79)
    *event_loops.SIGNATURES,  # (round 97)
    *web_deps.SIGNATURES,  # (round 98)
    *quant_args.SIGNATURES,  # (round 98)
    *hybrid_pools.SIGNATURES,  # (round 110)
    *disks.SIGNATURES,  # (vLLM round 119's w11903, both servers)
]

WRAPPERS = (
    r"scheduler is dead", r"scheduler died during initialization", r"Initialization failed",
    r"^EOFError\b", r"Received sigquit", r"SIGQUIT received", r"^KeyboardInterrupt\b",
    r"^SystemExit\b", r"res=<Response \[\d+\]>", r"^requests\.exceptions\.", r"Connection refused",
    r"Child process unexpectedly failed",
    # (round 93) SGLang's test harness seeing the server it launched exit: popen_launch_server's "Server process
    # exited with code N. Check server logs for errors." (0.5.10 sglang/test/test_utils.py:794, :961, :975), which
    # a test's setUpClass wraps again ("Test failed for MODEL: ..."); the server's own log above says why
    r"Server process exited with code -?\d+\. Check server logs for errors",
)
WRAPPER_FRAMES = r", in _wait_and_warmup\s*$"
WRAPPER_LINES = (
    r"Rank \d+ scheduler is dead", r"Rank \d+ scheduler died during initialization",
    r"Received sigquit from a child proces", r"SIGQUIT received\. signum=",
    r"Subprocess \S+ \(pid=\d+\) crashed with exit code", r"Initialization failed",
    r"Child process unexpectedly failed",
    # (round 28) 0.1.12-0.1.14's launcher says "Initialization failed" without those words: it prints
    # each init state, the failed one a traceback, and exits (0.1.13 srt/server.py:497-502); also cut
    r"^(?:router|detoken) init st(?:a(?:t(?:e(?::.*)?)?)?)?\s*$",
    # (vLLM round 61) Ray's core worker exiting when it cannot register with its raylet (vllm_crashes/backends.py)
    vllm_backends.RAY_UNREGISTERED,
)


VLLM_SIGNATURES: list[Signature] = list(vllm.SIGNATURES)
# Python's own ends of a run that are no crash of vLLM's, and torch.multiprocessing's echo
VLLM_WRAPPERS = (r"^EOFError\b", r"^KeyboardInterrupt\b", r"^SystemExit\b", r"Connection refused",
                 r"^requests\.exceptions\.ConnectionError", *vllm.ECHO_LINES)


@dataclass(frozen=True)
class Registry:
    """What :mod:`.rootcause` needs of a server family: its signatures, the generic echoes
    (searched in a chain's header and outermost exception; frames; plain lines), the lines
    that show the server carried on (None: SGLang's batch and "ready to roll" lines) and the
    function that reads a startup phase line (None: SGLang's)."""

    family: str
    signatures: tuple[Signature, ...]
    wrappers: tuple[str, ...]
    wrapper_frames: str
    wrapper_lines: tuple[str, ...]
    progress: re.Pattern | None = None
    phase_marker: Callable[[str], str | None] | None = None
    # (round 20) the messages of records the server logs with the traceback of an exception it caught
    # and went on past: such a traceback is neither a crash nor a request's error
    caught: tuple[str, ...] = ()
    # (vLLM round 57) the frames through which the server hands every open request the exception its engine
    # loop died of: a request's traceback through them that raised a crash's error is that crash
    engine_streams: str = ""

    def shared(self, signature: Signature, chain_text: str) -> bool:
        """``signature`` is a crash's (no echo) and the traceback ``chain_text`` went through
        :attr:`engine_streams`."""
        return bool(not signature.echo and self.engine_streams
                    and regex(self.engine_streams, re.M).search(chain_text))

    @cached_property
    def _line_tests(self) -> tuple[tuple[str, re.Pattern, int], ...]:
        """Every signature's ``lines``: (its :func:`needle`, its regex, the signature's index)."""
        return tuple((needle(p), regex(p, re.I), i)
                     for i, s in enumerate(self.signatures) for p in s.lines)

    def line_hits(self, msg: str, stamped: bool = True) -> list[Signature]:
        """The signatures one of whose ``lines`` is in ``msg``, in registry order (what
        :meth:`Signature.matches_line` says of each, in one pass: a log's every line is asked);
        a ``stamped`` signature only where the line carried a logger's stamp."""
        low = ascii_lower(msg)
        found = []
        for lit, rx, i in self._line_tests:  # a loop: a comprehension's frame costs more than most tests
            if (low is None or lit in low) and rx.search(msg):
                found.append(i)
        return [self.signatures[i] for i in sorted(set(found)) if stamped or not self.signatures[i].stamped]


SGLANG = Registry("sglang", tuple(SIGNATURES), WRAPPERS, WRAPPER_FRAMES, WRAPPER_LINES)
VLLM = Registry("vllm", tuple(VLLM_SIGNATURES), VLLM_WRAPPERS, "", (), VLLM_PROGRESS_RE, vllm_phase_marker,
                vllm.CAUGHT, vllm.ENGINE_STREAMS)


def registry(family: str) -> Registry:
    """The registry of ``family`` (``sglang`` | ``vllm``)."""
    return {"sglang": SGLANG, "vllm": VLLM}[family]


def by_name(name: str) -> Signature:
    """The signature called ``name`` (KeyError lists the names)."""
    for signature in SIGNATURES:
        if signature.name == name:
            return signature
    for signature in VLLM_SIGNATURES:
        if signature.name == name:
            return signature
    raise KeyError(f"{name}: not a signature; known: {', '.join(s.name for s in SIGNATURES)}")
