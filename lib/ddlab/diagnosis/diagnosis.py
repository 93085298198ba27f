"""Turn an SGLang server log into a diagnosis: crashed or not, why, what next.

Contract: ``diagnose(text, patterns=()) -> Diagnosis``. ``text`` is a server
log as journal text (``short``, ``short-iso``, ``short-iso-precise`` ...),
``journalctl -o cat`` output or a plain process log; systemd's own lines in it
("Main process exited, code=exited, status=1/FAILURE", "Failed with result
'exit-code'") are evidence of the exit status. ``patterns`` are regexes whose
matching lines are quoted as evidence. The log is never refused: an empty or
foreign text gives ``crashed=False, phase="launch"``. When the journal holds
several runs of the unit ("Starting ..." again), the last one is diagnosed.

``crashed`` is true when a fatal error is in the log (a traceback, an orphan
exception line or a signature's fatal line) that the server did not carry on
past, or when systemd or the shell reports a failed exit or a kill (SIGTERM
after systemd's "Stopping ..." and a Ctrl-C ``KeyboardInterrupt`` are stops).
"Carried on past": a recognised error is survived only if "ready to roll" or a
batch line follows it (another rank may still log a phase line before the
SIGQUIT lands); an unrecognised one also once a later startup phase begins (a
warning printed with a traceback). A log that just stops mid-startup is not a
crash: ``phase`` says how far it got. ``phase`` of a crash is the last phase
line seen, raised to what the signature or the traceback's frames imply (a
replay failure is ``serving`` even during the warmup request).

Root cause, when the log holds several errors (TP ranks, scheduler, launcher):

1. Within one chain the outermost exception decides; a capture failure that
   wraps a CUDA OOM is a capture failure. Only when the outermost matches no
   signature are the inner ones asked, outermost first.
2. Generic echoes (:data:`ddlab.diagnosis.signatures.WRAPPERS`: "Rank 0 scheduler is
   dead", the launcher's ``EOFError``, "Initialization failed. warmup error")
   never win over anything else.
3. Among recognised errors the highest signature priority wins (specific over
   generic; NCCL and health-check failures are often consequences); on a tie,
   the earliest in the log (the first rank to fail started it).
4. With nothing recognised, the earliest non-generic exception is the cause
   and the kind is ``unknown``; then a generic echo; then the exit status.

Why: a crash report is only useful if it names the first real failure and the
next thing to try; the launcher's "scheduler is dead" tells neither. The
registry of texts lives in :mod:`ddlab.diagnosis.signatures` so adding one is data.
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ddlab.core.errors import ConfigError
from ddlab.diagnosis.logtext import (
    PHASES,
    DecodeRecord,
    Line,
    parse_decode_lines,
    parse_facts,
    phase_marker,
    phase_of,
    phase_reached,
    split_lines,
    strip_prefix,
    summarize_decode,
)
from ddlab.diagnosis.signatures import (
    KINDS,
    SIGNATURES,
    WRAPPER_FRAMES,
    WRAPPER_LINES,
    WRAPPERS,
    Found,
    Signature,
    regex,
)
from ddlab.diagnosis.tracebacks import Chain, Raised, find_chains

__all__ = [
    "Diagnosis", "diagnose", "read_log", "SIGNATURES", "Signature", "KINDS", "PHASES",
    "phase_of", "parse_decode_lines", "summarize_decode", "DecodeRecord", "strip_prefix",
]

_PROGRESS_RE = re.compile(r"The server is fired up and ready to roll|Decode batch\b|Prefill batch\b")
_MARKER_RE = re.compile(r"\b[A-Z][A-Z0-9]*_DIAG\b")
_EXIT_RE = re.compile(r"Main process exited, (?P<status>code=(?P<code>\w+), status=(?P<value>[^\s,;]+))")
_RESULT_RE = re.compile(r"Failed with result '(?P<result>[^']+)'")
_STOPPING_RE = re.compile(r"^Stopping\b")
_SHELL_DEATH_RE = re.compile(r"^(?:\S+: line \d+:\s+\d+\s+)?(?P<what>Killed|Aborted|Segmentation fault)"
                             r"\b|^Fatal Python error: (?P<fatal>.+)")
_EXIT_CODE_RE = re.compile(r"\bExit code: -?\d+")
_START_RE = re.compile(r"^Start(?:ing|ed) \S")
_LEVEL_RE = re.compile(r"^(?:ERROR|CRITICAL|FATAL|WARNING):\s*")
_MAX_EVIDENCE = 40
_FRAME_PHASES = (  # where a traceback's frames show it was, when the phase lines are missing
    ("load_weights", re.compile(
        r", in (?:load_model|load_weights\w*|_initialize_model|weight_loader)\s*$", re.M)),
    ("memory_pool", re.compile(
        r", in (?:init_memory_pool|_resolve_memory_pool_config|profile_max_num_token)\s*$", re.M)),
    ("graph_capture", re.compile(
        r", in (?:init_cuda_graphs|init_device_graphs|_?capture\w*)\s*$", re.M)),
)


@dataclass
class Diagnosis:
    """The verdict on one log; ``to_dict()`` is JSON-ready, ``render()`` is for people.

    ``kind`` is one of :data:`KINDS` (None when not crashed); ``signature`` names
    the :class:`Signature` that matched; ``cause`` is one line; ``evidence`` the
    log lines that prove it (journal prefix removed); ``decode`` the summary of
    ``Decode batch`` lines; ``exit_status`` as systemd (or the shell) said it;
    ``facts`` what the log states (DDTree sizes, token budget, server args).
    """

    crashed: bool
    kind: str | None
    phase: str
    cause: str | None
    evidence: list[str]
    suggestion: str | None
    decode: dict | None = None
    exit_status: str | None = None
    signature: str | None = None
    title: str | None = None
    facts: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    def render(self) -> str:
        """Top-down: verdict, phase, cause, exit status, evidence, next step, figures."""
        rows = [self._verdict(), f"phase:      {self.phase}"]
        if self.cause:
            rows.append(f"cause:      {self.cause}")
        if self.exit_status:
            rows.append(f"exit:       {self.exit_status}")
        if self.evidence:
            rows += ["evidence:"] + [f"  | {line}" for line in self.evidence]
        if self.suggestion:
            rows.append(f"suggestion: {self.suggestion}")
        if self.decode:
            rows.append(f"decode:     {_decode_text(self.decode)}")
        if self.facts:
            rows.append("facts:      " + ", ".join(f"{k}={v}" for k, v in self.facts.items()))
        return "\n".join(rows)

    def _verdict(self) -> str:
        if self.crashed:
            what = f" ({self.title})" if self.title else ""
            return f"CRASHED: {self.kind}{what}, in phase {self.phase}"
        if self.phase in ("ready", "serving"):
            return f"NOT CRASHED: the server is {self.phase}"
        return f"NOT CRASHED: the log stops in phase {self.phase} (still starting, or cut short)"


def _decode_text(decode: dict) -> str:
    graphs = {True: "on", False: "off", None: "mixed/unknown"}[decode.get("cuda_graph")]
    return (f"{decode['count']} lines; accept len mean {decode.get('accept_len_mean')} "
            f"(last {decode.get('accept_len_last')}); gen throughput mean "
            f"{decode.get('gen_throughput_tok_s_mean')} / max {decode.get('gen_throughput_tok_s_max')} "
            f"tok/s; cuda graph {graphs}")


# --- candidates ---------------------------------------------------------------------

@dataclass
class _Candidate:
    """One error the log shows; the root cause is picked among these."""

    first_no: int
    last_no: int
    cause: str
    signature: Signature | None = None
    wrapper: bool = False
    chain: Chain | None = None
    raised: Raised | None = None
    lines: list[Line] = field(default_factory=list)


def _best(type_name: str, text: str, chain_text: str) -> Signature | None:
    hits = [s for s in SIGNATURES if s.matches_exception(type_name, text, chain_text)]
    return max(hits, key=lambda s: s.priority, default=None)


def _is_wrapper(chain: Chain) -> bool:
    texts = (chain.header, chain.outermost.text)
    return (any(regex(w).search(t) for w in WRAPPERS for t in texts)
            or bool(regex(WRAPPER_FRAMES, re.M).search(chain.text)))


def _chain_candidate(chain: Chain) -> _Candidate:
    chain_text = chain.text
    for raised in reversed(chain.raised):  # outermost first
        signature = _best(raised.type, raised.text, chain_text)
        if signature:
            return _Candidate(chain.first_no, chain.last_no, raised.first_line, signature,
                              chain=chain, raised=raised)
    outer = chain.outermost
    return _Candidate(chain.first_no, chain.last_no, outer.first_line, None,
                      wrapper=_is_wrapper(chain), chain=chain, raised=outer)


def _line_candidate(line: Line) -> _Candidate | None:
    hits = [s for s in SIGNATURES if s.matches_line(line.msg)]
    cause = _LEVEL_RE.sub("", line.msg.strip())
    if hits:
        best = max(hits, key=lambda s: s.priority)
        return _Candidate(line.no, line.no, cause, best, lines=[line])
    if any(regex(p, re.I).search(line.msg) for p in WRAPPER_LINES):
        return _Candidate(line.no, line.no, cause, None, wrapper=True, lines=[line])
    return None


def _candidates(lines: list[Line], chains: list[Chain]) -> list[_Candidate]:
    covered = {line.no for chain in chains for line in chain.lines}
    found = [_chain_candidate(chain) for chain in chains
             if chain.outermost.type != "KeyboardInterrupt"]  # someone pressed Ctrl-C: a stop
    found += [c for line in lines if line.no not in covered and (c := _line_candidate(line))]
    serving = max((ln.no for ln in lines if _PROGRESS_RE.search(ln.msg)), default=0)
    advanced = max((ln.no for ln in lines if phase_marker(ln.msg)), default=0)
    # The server carried on past an error: not the crash. A recognised error only
    # counts as survived once the server serves again (another rank may log a
    # phase line or two before the SIGQUIT reaches it); an unknown one, once the
    # startup moves on.
    return [c for c in found if c.last_no > (serving if c.signature else max(serving, advanced))]


def _crash_phase(phase: str, best: _Candidate | None, signature: Signature | None) -> str:
    """The phase reached, raised to what the signature or the traceback's frames imply."""
    hints = [signature.phase] if signature and signature.phase else []
    if best is not None and best.chain is not None:
        text = best.chain.text
        hints += [name for name, frames in _FRAME_PHASES if frames.search(text)]
    return max([phase, *hints], key=PHASES.index)


def _pick(candidates: list[_Candidate]) -> _Candidate | None:
    known = [c for c in candidates if c.signature and not c.wrapper]
    if known:
        return max(known, key=lambda c: (c.signature.priority, -c.first_no))
    plain = [c for c in candidates if not c.wrapper] or candidates
    return min(plain, key=lambda c: c.first_no, default=None)


# --- exit status ------------------------------------------------------------------

@dataclass
class _Exit:
    status: str | None = None
    failed: bool = False
    why: str | None = None
    lines: list[Line] = field(default_factory=list)


_OOM_KILLER = "killed by the kernel OOM killer (host memory ran out)"


def _exit_line(msg: str, stopping: bool) -> tuple[str | None, str | None, bool]:
    """(status, why, failed) that one line says about how the server ended."""
    if exited := _EXIT_RE.search(msg):
        code, value = exited["code"], exited["value"]
        clean = code == "exited" and value.split("/")[0] == "0"
        asked = stopping and value.split("/")[-1] in ("TERM", "INT", "HUP", "15", "2", "143", "130")
        failed = not clean and not asked
        return exited["status"], f"main process exited: {exited['status']}" if failed else None, failed
    if result := _RESULT_RE.search(msg):
        oom = result["result"] == "oom-kill"
        return None, _OOM_KILLER if oom else f"systemd: failed with result '{result['result']}'", True
    if "killed by the OOM killer" in msg or "Out of memory: Killed process" in msg:
        return None, _OOM_KILLER, True
    if _SHELL_DEATH_RE.search(msg):
        return msg, msg, True
    return None, None, False


def _exit_of(lines: list[Line]) -> _Exit:
    seen, stopping = _Exit(), False
    for line in lines:
        if line.stamped:
            continue
        msg = line.msg.strip()
        stopping = stopping or bool(_STOPPING_RE.search(msg))
        status, why, failed = _exit_line(msg, stopping)
        if status or why:
            seen.lines.append(line)
            seen.status = status or seen.status
            seen.failed = seen.failed or failed
            if why and (seen.why is None or _OOM_KILLER not in seen.why):
                seen.why = why if seen.why is None or why == _OOM_KILLER else seen.why
    return seen


def _last_run(lines: list[Line]) -> list[Line]:
    """The lines of the unit's last run, when the journal holds several."""
    starts = [i for i, ln in enumerate(lines)
              if ln.ident in (None, "systemd") and not ln.stamped and _START_RE.search(ln.msg)
              and (ln.ident == "systemd" or ".service" in ln.msg)]
    if len(starts) < 2:
        return lines
    cut = starts[-1]
    while cut - 1 in starts and lines[cut - 1].msg.startswith("Starting"):
        cut -= 1
    return lines[cut:]


# --- evidence and advice ------------------------------------------------------------

def _chain_evidence(candidate: _Candidate) -> list[Line]:
    chain, raised, signature = candidate.chain, candidate.raised, candidate.signature
    picked = [chain.raised[0].start]
    for block in chain.raised:
        picked += block.exc_lines[:6]
        if block is not raised and block.frames:  # where an inner exception was raised
            picked += [block.frames[-1].at, block.frames[-1].code_at]
    frames = raised.frames[-3:] + [
        f for f in raised.frames
        if signature and any(regex(c, re.I | re.M).search(f"{f.at.msg}\n{f.code}") for c in signature.context)
    ]
    for frame in frames:
        picked += [ln for ln in (frame.at, frame.code_at) if ln]
    return picked


def _evidence(lines, best, phase_line, exit_seen, patterns, crashed) -> list[str]:
    picked: dict[int, Line] = {}

    def add(found):
        picked.update((ln.no, ln) for ln in found if ln is not None)

    if best is not None:
        add(_chain_evidence(best) if best.chain else best.lines)
    if crashed:
        add([phase_line])
        add(ln for ln in lines if _EXIT_CODE_RE.search(ln.msg) or
            any(regex(p, re.I).search(ln.msg) for p in WRAPPER_LINES))
        add(exit_seen.lines)
    add([ln for ln in lines if _MARKER_RE.search(ln.msg)][-12:])
    add([ln for ln in lines if any(p.search(ln.text) for p in patterns)][-20:])
    ordered = [picked[no].text for no in sorted(picked)]
    return ordered if len(ordered) <= _MAX_EVIDENCE else ordered[:8] + ordered[-(_MAX_EVIDENCE - 8):]


def _unknown_advice(best: _Candidate | None, exit_seen: _Exit, lines: list[Line]) -> str:
    if exit_seen.why and "OOM killer" in exit_seen.why:
        return "Host RAM ran out: check `journalctl -k` for the OOM killer; load fewer models per host."
    if exit_seen.why and re.search(r"Segmentation fault|Aborted|core-dump|SEGV|ABRT", exit_seen.why):
        return ("A native crash (segfault/abort), no Python exception: rerun with "
                "CUDA_LAUNCH_BLOCKING=1 and PYTHONFAULTHANDLER=1; the faulthandler dump shows "
                "the thread; then try --disable-cuda-graph to rule out the graphs.")
    if (best is None or best.wrapper) and any(re.search(r"Exit code: -9\b", ln.msg) for ln in lines):
        return ("A child died by SIGKILL without a traceback: check `journalctl -k` / dmesg for "
                "the kernel OOM killer (host RAM).")
    return ("Not a known signature: read the traceback tail below; if it recurs, add a "
            "Signature to ddlab.diagnosis.signatures.SIGNATURES with a fixture log.")


def _cause(best: _Candidate | None, exit_seen: _Exit) -> str | None:
    """One line: the exception or fatal line, cut at a sentence end near 240 characters."""
    if best is None:
        return exit_seen.why
    text = best.cause if not (best.wrapper and exit_seen.why) else f"{best.cause} [{exit_seen.why}]"
    if len(text) <= 240:
        return text
    cut = text.rfind(". ", 120, 240)
    return text[:cut + 1] + " ..." if cut > 0 else text[:240] + " ..."


def _compile(patterns) -> list[re.Pattern]:
    compiled = []
    for pattern in patterns or ():
        try:
            compiled.append(re.compile(pattern))
        except re.error as err:
            raise ConfigError(f"pattern {pattern!r}: not a valid regular expression ({err})",
                              fix="quote it for the shell and escape ( [ . with a backslash",
                              value=pattern) from None
    return compiled


# --- the entry point ----------------------------------------------------------------

def diagnose(text: str, patterns=()) -> Diagnosis:
    """Diagnose one server log; ``patterns`` (regexes) add matching lines as evidence."""
    compiled = _compile(patterns)
    lines = _last_run(split_lines(text or ""))
    phase, phase_line = phase_reached(lines)
    facts = parse_facts(lines)
    records = parse_decode_lines(lines)
    best = _pick(_candidates(lines, find_chains(lines)))
    exit_seen = _exit_of(lines)
    crashed = best is not None or exit_seen.failed
    signature = best.signature if best and not best.wrapper else None
    phase = _crash_phase(phase, best, signature)
    markers = tuple(ln.msg for ln in lines if _MARKER_RE.search(ln.msg))
    found = Found(best.raised.text if best and best.raised else (best.cause if best else ""),
                  best.chain.text if best and best.chain else "", phase, facts, markers)
    kind = signature.kind if signature else ("unknown" if crashed else None)
    cause = _cause(best, exit_seen) if crashed else None
    return Diagnosis(
        crashed=crashed, kind=kind, phase=phase, cause=cause,
        evidence=_evidence(lines, best, phase_line, exit_seen, compiled, crashed),
        suggestion=(signature.advise(found) if signature else
                    _unknown_advice(best, exit_seen, lines) if crashed else None),
        decode=summarize_decode(records) if records else None,
        exit_status=exit_seen.status, signature=signature.name if signature else None,
        title=signature.title if signature else None, facts=facts)


def read_log(path: str) -> str:
    """The text of a log file, or of stdin for ``-``; undecodable bytes are replaced."""
    if path == "-":
        return sys.stdin.buffer.read().decode("utf-8", errors="replace")
    file = Path(path)
    fix = "give the path of a saved log (journalctl -u UNIT > FILE), or - to read stdin"
    if not file.exists():
        raise ConfigError(f"log file {path!r}: no such file", fix=fix, value=path)
    if file.is_dir():
        raise ConfigError(f"log file {path!r}: is a directory, not a log file", fix=fix, value=path)
    try:
        return file.read_bytes().decode("utf-8", errors="replace")
    except OSError as err:
        raise ConfigError(f"log file {path!r}: cannot be read ({err.strerror})", fix=fix,
                          value=path) from None
