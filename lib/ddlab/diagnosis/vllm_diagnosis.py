"""A vLLM server log read for a diagnosis: the same verdict as SGLang's, in vLLM's dialect.

Contract: :func:`ddlab.diagnosis.diagnosis.diagnose` (with ``family="vllm"``, or when
the text is detected as vLLM's) reads the log with :func:`read_vllm` and judges it with
:func:`judge_vllm`, then builds its :class:`~ddlab.diagnosis.diagnosis.Diagnosis` with
``family="vllm"`` (this module imports nothing of it). The lines are read with vLLM's prefixes peeled
(:mod:`.vllm_log`); the exception chains, the exit and the root-cause rules are
SGLang's (:mod:`.tracebacks`, :mod:`.exits`, :mod:`.rootcause`) over vLLM's registry
(:data:`~ddlab.diagnosis.signatures.VLLM`: :mod:`ddlab.vllm_crashes.signatures`). Three
readings are vLLM's own: a V0 worker's "Exception in worker X while processing method
M: MESSAGE, Traceback ..." header carries the exception's message (0.6.2 and older),
so a traceback cut below it is read by that message; a log whose worker monitor says a
worker died holds no hang (the stalls are the others waiting on it); and the phase is the last vLLM
phase line reached, raised to the signature's phase and to the phase vLLM's frames
show (:data:`FRAME_PHASES`: startup frames win over serving frames). A fault only a
running server meets, in a paste that shows nothing of the startup, is ``serving``.

The advice is the signature's sentences in vLLM's flags; for a release given (or read
from the log: the API server's version line, the banner) a sentence whose flag that
release's parser table (:func:`ddlab.config.vllm.vllm_table`) refuses is dropped.
``decode`` is the summary of vLLM's metrics lines (:func:`.vllm_metrics.summarize_metrics`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ddlab.config.vllm import vllm_table
from ddlab.vllm_crashes.signatures import SERVING_ECHOES
from ddlab.crashes.signature import Found, Signature
from ddlab.diagnosis.exits import Exit, exit_of, last_run
from ddlab.diagnosis.logtext import PHASES, Line
from ddlab.diagnosis.phase import frames_near
from ddlab.diagnosis.rootcause import Candidate, root_cause
from ddlab.diagnosis.signatures import VLLM
from ddlab.diagnosis.tracebacks import Chain, find_chains
from ddlab.diagnosis.vllm_log import (
    ENGINE_START_RE,
    VLLM_READY_RE,
    vllm_lines,
    vllm_phase_marker,
    vllm_phase_reached,
)
from ddlab.diagnosis.vllm_facts import vllm_facts
from ddlab.diagnosis.vllm_frames import CONFIG_FRAMES as _CONFIG_FRAMES, FRAME_PHASES
from ddlab.diagnosis.vllm_frames import ENGINE_BUILT_FRAMES as _BUILT_FRAMES
from ddlab.diagnosis.vllm_frames import STARTUP_FRAMES as _STARTUP_FRAMES
from ddlab.diagnosis.vllm_frames import frame_phases as _frame_phases, ipython_frames
from ddlab.diagnosis.vllm_metrics import parse_metrics_lines, summarize_metrics
from ddlab.diagnosis.vllm_runs import last_started
from ddlab.diagnosis.vllm_records import (dumped_step, only_vllm_files, only_vllm_services, with_announced_traceback,
                                          with_engine_messages, with_first_code_line, with_handler_records,
                                          with_utility_records, without_debug_tracebacks)
from ddlab.diagnosis.width_wrap import unwrapped_paste
from ddlab.vllm_crashes.requests import HANDLER_LOGGED, UTILITY_FAILED

__all__ = ["VllmLog", "VllmVerdict", "read_vllm", "judge_vllm", "host_oom", "vllm_cause",
           "FRAME_PHASES", "advise_vllm"]

# lines that show the startup (where one is, the paste is no mid-serving fragment)
# (round 12, for round 11's vl07) the pynccl communicator's warm-up all-reduce, a code line that
# vLLM runs only while it builds the communicator, right after ncclCommInitRank ("# A small
# all_reduce for warmup.": distributed/device_communicators/pynccl.py:105 (0.6.4.post1, 0.7.3), :190
# in _init_comm, which __init__ calls (0.30.0-0.34.0)); read wherever a line shows it (a paste that
# joined a traceback's lines keeps its code lines whole, not its frame lines' names)
_STARTUP_RE = re.compile(r"non-default args:|args: Namespace\(|vLLM (?:API )?server version|Initializing an? "
                         r"(?:V1 )?LLM engine|Automatically detected platform|Starting to load model"
                         r"|EngineCore failed to start|Engine core initialization failed"
                         r"|\bself\.all_reduce\(data\)"
                         # (round 13) the model-parallel groups set up (distributed/parallel_state.py:2268
                         # (0.30.0), :2395 (0.34.0), in initialize_model_parallel: start-up only)
                         r"|\brank \d+ in world size \d+ is assigned as DP rank")
# (round 19) the engine core logs this only when building it raised (engine_core still None), never once its
# busy loop runs (v1/engine/core.py:1755-1757 (0.34.0), :1366 (0.30.0)): wherever the paste shows it, after
# the error too, the crash was in the startup
_FAILED_START_RE = re.compile(r"EngineCore failed to start\.")
# 0.6.2 and older: "Exception in worker X while processing method M: MESSAGE, Traceback ..."
_WORKER_HEADER_RE = re.compile(r"while processing method \w+: (?P<msg>.+?),?\s*$")


def _with_worker_message(chains: list[Chain]) -> list[Chain]:
    """A V0 worker's traceback cut below its header: the header's message is its exception."""
    for chain in chains:
        outer = chain.outermost
        said = _WORKER_HEADER_RE.search(chain.header or "")
        if not outer.type and said:
            outer.type, outer.message = "Exception", said["msg"]
            outer.exc_lines = [outer.start] if outer.start else []
            chain.cut = False
    return chains


_CALL_RE = re.compile(r"(\w+)\(")
# the executor runs a method on every worker by its name (v1/executor/abstract.py:132, :137 (0.34.0);
# V0 executor/ray_gpu_executor.py:279 (0.6.4.post1)): a traceback cut in the executor's frames is
# in that method; so is the worker wrapper's report of the method that raised (round 8:
# worker/worker_base.py:478 (0.6.4.post1), :579 (0.7.3), v1/executor/ray_utils.py:87 (0.30.0)), and
# a V0 multiprocessing worker's (round 10: executor/multiproc_worker_utils.py:230 (0.6.4.post1),
# :243 (0.7.3); the driver runs the method on every worker at once, so another worker's header
# names it too)
_RPC_RE = re.compile(r"\b(?:collective_rpc|_run_workers)\(\s*[\"'](\w+)[\"']"
                     r"|Error executing method '?(\w+)'?\. This might cause deadlock"
                     r"|Exception in worker \S+ while processing method (\w+)")


def _rpc_methods(frames: str) -> str:
    """The worker methods the executor's calls in ``frames`` name, one frame line each."""
    return "".join(f"\n, in {''.join(method)}" for method in _RPC_RE.findall(frames))


_CODE_RE = re.compile(r"^\s+(?!File \")\S")


def _code_above(best: Candidate | None, lines: list[Line]) -> str:
    """A paste cut inside a traceback's frames: the code lines above its first frame line (their
    frame's "File" line cut off) are the calls the frames below were making, read with them. (round 50)
    A blank line between them is the paste's (a reply double-spacing each line), no line of the log."""
    if best is None:
        return ""
    above = [ln for ln in lines if ln.no < best.first_no]
    code = []
    for ln in reversed(above):
        if not ln.msg.strip():
            continue
        if not _CODE_RE.match(ln.msg):
            return ""
        code.insert(0, ln.msg)
    return "\n" + "\n".join(code) if code else ""


def _call_in_progress(best: Candidate | None) -> str:
    """A traceback cut below its last frame: that frame's code line is the call it was making
    (``self._initialize_kv_caches(`` cut there is the KV cache's setup), read as one frame more."""
    if best is None or not best.cut or best.raised is None or not best.raised.frames:
        return ""
    # (a frame line cut before its code: the frame above it was making the call)
    code = next((frame.code for frame in reversed(best.raised.frames) if frame.code), "")
    called = _CALL_RE.findall(code)
    return f"\n, in {called[-1]}" if called else ""


# uvicorn's own lines (uvicorn/server.py, lifespan/on.py): any ASGI app's, vLLM's server's or another app's
_UVICORN_RE = re.compile(rf"Started server process \[\d+\]|Waiting for application startup\.|{VLLM_READY_RE.pattern}")


def _uvicorn_after_failed_start(lines: list[Line]) -> set[int]:
    """The numbers of uvicorn's lines after an engine core failed to start, before any engine starts again (round 107):
    the core logs "EngineCore failed to start." only when building it raised (v1/engine/core.py:700 (0.10.1.1)), and
    its API server enters build_async_engine_client before serve_http (entrypoints/openai/api_server.py:1870, :1882
    (0.10.1.1)), so it never started uvicorn: such a line is another app's (a container's fallback server)."""
    foreign, failed = set(), False
    for line in lines:
        if _FAILED_START_RE.search(line.msg):
            failed = True
        elif ENGINE_START_RE.search(line.msg):
            failed = False
        elif failed and _UVICORN_RE.search(line.msg):
            foreign.add(line.no)
    return foreign


def _crash_phase(lines: list[Line], reached: str, best: Candidate | None, signature: Signature | None,
                 frames: str, dumped: bool = False) -> str:
    if _CONFIG_FRAMES.search(frames) and not _STARTUP_FRAMES.search(frames):
        # (round 75) the engine's config was being made: vLLM starts uvicorn only after it built the engine, so a
        # uvicorn line above is another app's (trl's vllm-serve runs LLM() in a child of its own FastAPI app)
        reached = vllm_phase_reached([ln for ln in lines if not _UVICORN_RE.search(ln.msg)])[0]
    elif foreign := _uvicorn_after_failed_start(lines):  # (round 107) another app's server after the engine died
        reached = vllm_phase_reached([ln for ln in last_started(lines) if ln.no not in foreign])[0]
    hints = [signature.phase] if signature and signature.phase else []
    hints += _frame_phases(frames)
    if not _STARTUP_FRAMES.search(frames) and (dumped or any(
            re.search(p, ln.msg) for ln in lines for p in SERVING_ECHOES)):
        hints.append("serving")  # the engine's busy loop died (or dumped its batch)
    phase = max([reached, *hints], key=PHASES.index)
    if best is None:
        return phase
    shown = any(_STARTUP_RE.search(ln.msg) or vllm_phase_marker(ln.msg) for ln in lines
                if ln.no <= best.last_no) or any(_FAILED_START_RE.search(ln.msg) for ln in lines)
    if (phase == "launch" and signature is not None and signature.running
            and not _STARTUP_FRAMES.search(frames) and not _BUILT_FRAMES.search(frames) and not shown):
        phase = "serving"
    # vLLM serves once uvicorn says so (no warmup request follows, unlike SGLang's launcher):
    # a crash after "Application startup complete." is a crash while serving. Not uvicorn's bind
    # failure (round 15): uvicorn binds its port only after the app's startup (server.py:116; the bind at
    # :182, its error logged at :190, then exit, uvicorn 0.54.0): that crash is the startup's last step
    bind = signature is not None and signature.kind == "port_in_use"
    if phase == "ready" and not bind and any(VLLM_READY_RE.search(ln.msg) for ln in lines
                                             if ln.no < best.first_no):
        phase = "serving"
    return phase


# --- advice -------------------------------------------------------------------------

_FRAGMENT_RE = re.compile(r"`(--[^`]*)`")


def _accepted(fragment: str, version: str) -> bool:
    table = vllm_table(version)
    words = fragment.split()
    if len(words) == 1 and "=" not in words[0]:
        return table.match(words[0])[0] is not None
    return not any(f.level == "error" for f in table.check(words))


def advise_vllm(signature: Signature, found: Found) -> str:
    """The signature's sentences and detail; for a known release, only those whose flags its
    parser table takes (every release of the tables takes them all today)."""
    sentences = list(signature.advice)
    extra = signature.detail(found) if signature.detail else None
    if extra:
        sentences.append(extra)
    if found.version:
        sentences = [s for s in sentences if all(_accepted(f, found.version) for f in _FRAGMENT_RE.findall(s))]
    return " ".join(s for s in sentences if s)


def _unknown_advice(best: Candidate | None) -> str:
    if best is None:
        return ("The process failed without an error in this log: get the whole log from the start "
                "(the engine core's lines are tagged `(EngineCore_DP0 pid=N)`).")
    where = best.where("vllm")
    if best.cut:
        at = f"; its last frame is {where}" if where else ""
        return (f"The log ends inside a traceback (line {best.first_no}){at}: get the whole log, the "
                "exception line below the frames names the error.")
    look = f" It was raised at {where}: start reading there." if where else ""
    return (f"No known crash signature. The first error is line {best.first_no}: {best.cause[:160]}."
            f"{look}")


_VALIDATION_RE = re.compile(r"\d+ validation errors? for \w+\s*$")
_VALUE_ERROR_RE = re.compile(r"^\s*Value error, (.+?)(?: \[type=.*)?$", re.M)


def vllm_cause(said: str | None, best: Candidate | None) -> str | None:
    """The cause line, pydantic's "N validation error for X" completed by its "Value error" line: pydantic's first
    line names only the class; the "Value error, ..." line under it says why."""
    if not said or best is None or best.raised is None or not _VALIDATION_RE.search(said.splitlines()[0]):
        return said
    why = _VALUE_ERROR_RE.search(best.raised.text)
    return f"{said}: {why[1][:200]}" if why else said


# --- the reading ----------------------------------------------------------------------

@dataclass
class VllmLog:
    """A vLLM log read: its lines, the phase it reached, its facts, chains, exit, root cause."""

    lines: list[Line]
    reached: str
    phase_line: Line | None
    facts: dict
    chains: list[Chain]
    exit_seen: Exit
    best: Candidate | None
    dumped: bool = False  # (round 70) a line of the engine's dump of the step it failed on (vllm_records.dumped_step)


@dataclass
class VllmVerdict:
    """What :func:`judge_vllm` says of a read log: :class:`~ddlab.diagnosis.diagnosis.Diagnosis`'s
    fields that depend on vLLM's dialect."""

    crashed: bool
    request: bool
    kind: str | None
    phase: str
    signature: Signature | None
    title: str | None
    suggestion: str | None
    facts: dict
    algorithm: str | None
    decode: dict | None


# the worker monitor's report that a process ended (v1/executor/multiproc_executor.py:405 (0.34.0),
# :315 (0.30.0); ray_executor_v2.py:523): a death, not a stall; the others' shared-memory
# stalls around it are them waiting on the dead process
_DIED_RE = re.compile(r"Worker proc \S+ died unexpectedly|RayWorkerProc rank=\d+ died unexpectedly")
_NO_HANG = replace(VLLM, signatures=tuple(s for s in VLLM.signatures if s.kind != "hang"))


@lru_cache(maxsize=2)  # the same text again (advice for another release, a log polled unchanged) is not read again
def read_vllm(text: str) -> VllmLog:
    """The lines (vLLM's prefixes peeled, the last run, a DEBUG record's traceback blanked), the phase
    reached, the facts, the chains (a V0 worker's header message and V0 engine's logged one kept) and
    exit, and the root cause over vLLM's registry (with no hang where a worker died). The last two
    readings are kept and shared: nothing that takes one changes it."""
    text = unwrapped_paste(only_vllm_files(only_vllm_services(text or "")))  # (round 77) a terminal's wrap
    lines = last_run(vllm_lines(without_debug_tracebacks(text)))
    reached, phase_line = vllm_phase_reached(last_started(lines))  # (round 102) the last of a file's runs
    chains = with_engine_messages(_with_worker_message(find_chains(lines)), lines, text)
    chains = with_announced_traceback(with_first_code_line(chains, lines), lines, text)
    chains = with_utility_records(with_handler_records(chains, text, HANDLER_LOGGED), text, UTILITY_FAILED)
    registry = _NO_HANG if any(_DIED_RE.search(ln.msg) for ln in lines) else VLLM
    return VllmLog(lines, reached, phase_line, vllm_facts(lines), chains, exit_of(lines),
                   root_cause(lines, chains, registry), dumped_step(text))


def host_oom(first: int, why: str, lines: list[Line]) -> Candidate:
    """A kill from outside with nothing else to blame, as vLLM's host_oom."""
    signature = next(s for s in VLLM.signatures if s.kind == "host_oom")
    return Candidate(first, first, why, signature, lines=lines)


# (round 52) V0's initialize_cache checks the cache's size first (raise_if_cache_size_invalid) and only then
# allocates it and warms up (self._init_cache_engine(), self._warm_up_model(): 0.8.0 worker/worker.py:291,
# :307-308; 0.6.4.post1 :268, :276-277): where its frame is on one of those calls the check passed, and the
# wrapper's "initialize_cache" line says only which method raised: its traceback cut below it, read as any
# cut traceback (vllm_capture_cut), else vllm_worker_method_failed
_PAST_SIZE_CHECK = re.compile(r", in initialize_cache\n[ \t]+self\._(?:init_cache_engine|warm_up_model)\(\)")
_METHOD_ONLY = {"vllm_initialize_cache_failed": "vllm_worker_method_failed"}


def _method_only(signature: Signature, best: Candidate, chains: list[Chain]) -> Signature:
    cut = [s for c in chains if c.cut and 0 < c.first_no - best.last_no <= 2 for s in VLLM.signatures
           if s.matches_context(c.text)]
    return max(cut, key=lambda s: s.priority, default=None) or next(
        s for s in VLLM.signatures if s.name == _METHOD_ONLY[signature.name])


def judge_vllm(log: VllmLog, best: Candidate | None, *, version: str | None = None,
               algorithm: str | None = None, tried: dict | None = None, host: str | None = None) -> VllmVerdict:
    """Crashed or not, the kind, the phase, the advice (for ``version`` or the log's release and
    ``algorithm`` or its speculative method) and the metrics summary, for the root cause ``best``."""
    request = best is not None and best.request
    crashed = (best is not None and not request) or log.exit_seen.failed or log.dumped
    signature = best.signature if best else None
    frames = frames_near(best, log.chains, log.lines) + _call_in_progress(best) + _code_above(best, log.lines)
    if best is not None and not (best.raised and best.raised.frames):  # (round 94) a chain of no frames of its own
        frames += ipython_frames([ln.msg for ln in log.lines if ln.no < best.first_no])
    frames += _rpc_methods(frames + (f"\n{best.cause}" if best else ""))
    if signature and signature.name in _METHOD_ONLY and _PAST_SIZE_CHECK.search(frames):
        signature = _method_only(signature, best, log.chains)
    phase = ("serving" if request and not crashed
             else _crash_phase(log.lines, log.reached, best, signature, frames, log.dumped))
    version = version or log.facts.get("vllm_version")
    algorithm = algorithm or log.facts.get("speculative_method")
    found = Found(best.raised.text if best and best.raised else (best.cause if best else ""),
                  best.chain.text if best and best.chain else "", phase, log.facts, (), version,
                  algorithm, tried=dict(tried or {}), host=host, frames=frames)
    suggestion = (advise_vllm(signature, found) if signature else
                  _unknown_advice(best) if crashed else None)
    kind = signature.kind if signature else ("unknown" if crashed else None)
    if request and not crashed:
        kind = "request_error"
    elif request and kind == "request_error":  # the process failed, and not of this request
        kind, signature = "unknown", None
    records = parse_metrics_lines(log.lines)
    return VllmVerdict(crashed, request, kind, phase, signature, signature.title if signature else None,
                       suggestion, {**log.facts, "vllm_version": version} if version else dict(log.facts),
                       algorithm, summarize_metrics(records) if records else None)
