"""One SGLang log read once: what it says whoever the advice is for (its lines, how far it
got, its facts, chains and exit, the root cause and its signature, the frames near it), kept
for the same text again: advice for another release or algorithm, or with the levers tried
before (as watch asks after a crash), is judged from the same reading
(:func:`ddlab.diagnosis.diagnosis.diagnose` hands each caller its own facts). The rules live
in :mod:`.rootcause`, :mod:`.phase` and :mod:`ddlab.crashes.kinds`; this module puts them in
order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ddlab.crashes.frames import shows_startup
from ddlab.crashes.kinds.graphs import copy_reading, piecewise_reading
from ddlab.crashes.kinds.runtime import HANG_DUMP
from ddlab.crashes.kinds.native import dump_reading
from ddlab.diagnosis.decode_lines import DecodeRecord, parse_decode_lines
from ddlab.diagnosis.engine_bars import slowest_engine
from ddlab.diagnosis.exits import (ENDED_UNASKED, OOM_KILLER, ROUTER_START_PANIC, Exit, ended_unasked, exit_of,
                                  last_run, router_start_panic)
from ddlab.diagnosis.facts import parse_facts
from ddlab.diagnosis.logtext import Line, phase_reached, split_lines
from ddlab.diagnosis.phase import crash_phase, frames_near
from ddlab.diagnosis.readings import on_graph, shm_reading
from ddlab.diagnosis.rootcause import Candidate, root_cause
from ddlab.diagnosis.signatures import Signature, by_name
from ddlab.diagnosis.stalls import WATCHDOG_DEFAULT_S, stall
from ddlab.diagnosis.tracebacks import Chain, find_chains
from ddlab.probes import probe_records

MARKER_RE = re.compile(r"\b[A-Z][A-Z0-9]*_DIAG\b")  # a diagnostic record's marker (DFLASH_DIAG ...)


def host_killed(best: Candidate | None, exit_seen: Exit, lines: list[Line]) -> bool:
    """Killed from outside with nothing else to blame: the kernel's OOM killer, most likely. A
    traceback cut before its exception line that starts after the launcher's "Exit code: -9" is
    the launcher reporting that death, nothing to blame."""
    killed_at = next((ln.no for ln in lines if re.search(r"Exit code: -9\b", ln.msg)), None)
    reported = (best is not None and best.cut and best.signature is None and killed_at is not None
                and best.first_no > killed_at)
    if best is not None and not (best.wrapper and best.signature is None) and not reported:
        return False
    if exit_seen.why == OOM_KILLER or killed_at is not None:
        return True
    return best is None and exit_seen.killed


def _crash(lines: list[Line], chains: list[Chain], exit_seen: Exit, facts: dict) -> Candidate | None:
    """The root cause; a kill from outside with nothing else to blame is the host's OOM; with
    no error at all, a scheduler silent for the watchdog's timeout while requests wait hangs."""
    best = root_cause(lines, chains)
    if host_killed(best, exit_seen, lines):
        first = exit_seen.lines[0].no if exit_seen.lines else 0
        return Candidate(first, first, exit_seen.why or "killed", by_name("host_oom"), lines=exit_seen.lines)
    if best is None or best.request or best.thread:
        timeout = facts.get("watchdog_timeout")
        silent = stall(lines, timeout if isinstance(timeout, (int, float)) and timeout > 0
                       else WATCHDOG_DEFAULT_S)
        return silent or best
    return best


@dataclass(frozen=True)
class SglangLog:
    """What an SGLang log says, whoever the advice is for: its lines, how far it got (the crash's
    phase), its facts, chains and exit, the root cause and its signature, the frames near it."""

    lines: list[Line]
    phase: str
    phase_line: Line | None
    facts: dict
    chains: list[Chain]
    exit_seen: Exit
    best: Candidate | None
    request: bool  # one request failed; the server kept serving
    thread: bool  # only a helper thread died; the process went on
    crashed: bool
    signature: Signature | None
    frames: str
    markers: tuple[str, ...]
    records: list[DecodeRecord]
    seen: list  # the probes' records (ddlab.probes.Records)


# the same text again (advice for another release or algorithm, or with the levers tried before) is not read
# again; diagnose hands each caller its own facts
@lru_cache(maxsize=2)
def read_sglang(text: str) -> SglangLog:
    """Read one SGLang log (the last run in it)."""
    lines = last_run(split_lines(text))
    phase, phase_line = slowest_engine(lines, *phase_reached(lines))  # (round 108) several engines' bars
    facts, chains, exit_seen = parse_facts(lines), find_chains(lines), exit_of(lines)
    if not exit_seen.failed and (ended := ended_unasked(lines, phase)):  # round 30: killed mid-startup
        exit_seen = replace(exit_seen, failed=True, why=ENDED_UNASKED, lines=[*exit_seen.lines, ended])
    elif not exit_seen.failed and (panic := router_start_panic(lines)):  # round 71: sgl-router's start panicked
        exit_seen = replace(exit_seen, failed=True, why=ROUTER_START_PANIC, lines=[*exit_seen.lines, panic])
    best = _crash(lines, chains, exit_seen, facts)
    request = best is not None and best.request  # one request failed; the server kept serving
    thread = best is not None and best.thread  # only a helper thread died; the process went on
    crashed = (best is not None and not request and not thread) or exit_seen.failed
    signature = best.signature if best else None
    if crashed and signature is None and best is not None and best.chain is not None and best.raised.type:
        signature = copy_reading(best.raised.text, best.chain.text, on_graph(lines, best))
    frames = frames_near(best, chains, lines)
    signature = piecewise_reading(signature, shows_startup(frames) or phase == "graph_capture")
    if best is not None and (dumped := dump_reading(signature, frames, HANG_DUMP)) is not signature:
        signature = best.signature = dumped  # a fatal signal's dump of a running scheduler
    if best is not None and (shm := shm_reading(signature, best.cause, lines)) is not signature:
        signature = best.signature = shm  # a bus error while /dev/shm was full
    phase = crash_phase(lines, phase, best, signature, frames)
    markers = tuple(ln.msg for ln in lines if MARKER_RE.search(ln.msg))
    return SglangLog(lines, phase, phase_line, facts, chains, exit_seen, best, request, thread, crashed, signature,
                     frames, markers, parse_decode_lines(lines), probe_records(text))
