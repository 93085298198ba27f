"""Turn an SGLang server log into a diagnosis: crashed or not, why, where, what next.

Contract: ``diagnose(text, patterns=(), *, version=None, algorithm=None) ->
Diagnosis``. ``text`` is a server log as journal text (``short``,
``short-iso`` ...), ``journalctl -o cat`` output, a plain process log or a
paste from elsewhere (:mod:`.logtext` lists the prefixes it removes); systemd's
own lines in it are evidence of the exit status. ``patterns`` are regexes
whose matching lines are quoted as evidence. ``version`` (an SGLang release)
and ``algorithm`` (``EAGLE3``, ``DFLASH``, ``DDTREE`` ...) choose the advice's
flag spellings and algorithm-specific sentences; left None they come from the
log's own facts (the ``server_args=`` line in either form, a worker's init
line, the worker in the traceback), else the advice is version-neutral. The
log is never refused: an empty or foreign text gives ``crashed=False,
phase="launch"``. When the journal holds several runs of the unit, the last
one is diagnosed. The same text again (advice for another release or algorithm, or with the
levers tried before, as watch asks) is not read again (:mod:`.sglang_reading` keeps the last
two readings; each caller gets facts of its own).

``crashed`` is true when a fatal error is in the log that the server did not
carry on past (:mod:`.rootcause` has the rules, and picks the root cause among
several), or when systemd or the shell reports a failed exit or a kill
(SIGTERM after "Stopping ..." and a Ctrl-C ``KeyboardInterrupt`` are stops: the verdict names
the stop, :mod:`.stops`).
An error of one request while the server kept serving is no crash:
``crashed=False``, kind ``request_error``, phase ``serving``, with its cause and
its advice. Speculative decoding that crashes together with another feature
(:mod:`.kinds.speculative`) is ``spec_feature_conflict``, its cause prefixed by
the combination.
A log that just stops mid-startup is not a crash: ``phase`` says how far it
got; one that ends with CPython's resource tracker warning of leaked objects, no
stop asked, is (round 30: every process ended, :func:`.exits.ended_unasked`).
``phase`` of a crash is where it happened: the last phase line seen,
raised to what the signature or the traceback's frames imply (a scheduler
event loop in the frames is ``serving``); a crash after the HTTP server came
up but before "ready to roll" is ``ready`` (the launcher's warmup request).

Why: a crash report is only useful if it names the first real failure and the
next thing to try, for the release and algorithm the user runs; the launcher's
"scheduler is dead" tells neither. The texts live in
:mod:`ddlab.crashes.kinds` so adding one is data.
"""

from __future__ import annotations

import re
import sys
from copy import deepcopy
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ddlab.core.bounded import HEAD_BYTES, TAIL_BYTES, read_bounded
from ddlab.core.errors import ConfigError
from ddlab.core.log import get_logger
from ddlab.probes import none_fields, not_armed
from ddlab.diagnosis.advice import advise, family
from ddlab.diagnosis.exits import CRASHED_EXIT, ENDED_UNASKED, ROUTER_START_PANIC, SHELL_QUIT_RE, Exit
from ddlab.diagnosis.decode_lines import DecodeRecord, decode_text, metrics_text, parse_decode_lines, summarize_decode
from ddlab.diagnosis.logtext import PHASES, Line, phase_of, strip_prefix
from ddlab.crashes.kinds.native import FATAL_SIGNAL_DUMP, STARTUP_SIGNAL_DUMP
from ddlab.crashes.kinds.runtime import HANG
from ddlab.crashes.kinds.speculative import SPEC_FEATURE, combination as _combination
from ddlab.diagnosis.phase import crash_phase
from ddlab.diagnosis.readings import spec_conflict
from ddlab.diagnosis.rootcause import PROGRESS_RE, Candidate
from ddlab.diagnosis.signatures import KINDS, SIGNATURES, WRAPPER_LINES, Found, Signature, regex
from ddlab.diagnosis.probe_advice import PROBE_KINDS, probe_target
from ddlab.diagnosis.sglang_reading import MARKER_RE, host_killed, read_sglang
from ddlab.diagnosis.stops import stopped
from ddlab.diagnosis.vllm_diagnosis import host_oom as vllm_host_oom
from ddlab.diagnosis.vllm_diagnosis import judge_vllm, read_vllm, vllm_cause
from ddlab.diagnosis.vllm_log import FAMILIES, VLLM_PROGRESS_RE, told_family

__all__ = [
    "Diagnosis", "diagnose", "read_log", "SIGNATURES", "Signature", "KINDS", "PHASES",
    "phase_of", "parse_decode_lines", "summarize_decode", "DecodeRecord", "strip_prefix",
]

_log = get_logger(__name__)

_EXIT_CODE_RE = re.compile(r"\bExit code: -?\d+|exit code:? -?\d+")
_MAX_EVIDENCE = 40
# a child's negative exit code that is a signal sent to it, not a fault (those are native_crash)
_SENT_SIGNALS = {"1": "SIGHUP", "2": "SIGINT", "3": "SIGQUIT", "15": "SIGTERM"}
_DUMPED_LOOP_RE = re.compile(r'^\s*(?:File "|event_loop_)')  # a hang told by a dumped frame
_WORKER_FRAMES = (("DDTREE", r"ddtree_worker"), ("DFLASH", r"dflash_worker"),
                  ("EAGLE", r"eagle_worker"), ("NGRAM", r"ngram_worker"))


@dataclass
class Diagnosis:
    """The verdict on one log; ``to_dict()`` is JSON-ready, ``render()`` is for people.

    ``kind`` is one of :data:`KINDS` (None when not crashed, ``request_error`` when one
    request failed and the server kept serving); ``signature`` names
    the :class:`Signature` that matched and ``sources`` where its texts come
    from; ``cause`` is one line, the message; ``evidence`` the log lines that
    prove it (prefixes removed); ``suggestion`` the next step, written for
    ``sglang_version`` and ``algorithm`` (given, or read from the log; None: neutral);
    ``decode`` the summary of ``Decode batch`` lines; ``exit_status`` as systemd
    (or the shell) said it; ``facts`` what the log states (server args, sizes);
    ``family`` the server it was read as, ``family_assumed`` when no line named either
    server (read as SGLang's, the default: the verdict says so, and how to change it).
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
    sglang_version: str | None = None
    algorithm: str | None = None
    sources: list[str] = field(default_factory=list)
    family: str = "sglang"
    family_assumed: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def exit_code(self) -> int:
        """For a script (``ddlab diagnose``): 3 crashed (as ``ddlab watch``), else 0."""
        return CRASHED_EXIT if self.crashed else 0

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
        if self.family_assumed:
            rows.append("read as:    SGLang's log: no line names its server (--family vllm reads it as vLLM's)")
        if self.family == "vllm" and self.crashed:
            rows.append(f"advice for: vLLM {self.facts.get('vllm_version') or '(any)'}, "
                        f"{self.algorithm or 'any speculative method'}")
        elif self.crashed and (self.sglang_version or self.algorithm):
            rows.append(f"advice for: SGLang {self.sglang_version or '(any)'}, "
                        f"{self.algorithm or 'any algorithm'}")
        if self.sources:
            rows.append("texts from: " + "; ".join(self.sources[:4]))
        if self.decode:
            text = metrics_text(self.decode) if self.family == "vllm" else decode_text(self.decode)
            rows.append(f"{'metrics' if self.family == 'vllm' else 'decode'}:{' ' * (4 if self.family == 'vllm' else 5)}{text}")
        if self.facts:
            rows.append("facts:      " + ", ".join(f"{k}={v}" for k, v in self.facts.items()))
        return "\n".join(rows)

    def _verdict(self) -> str:
        if not self.crashed and self.kind == "request_error":
            return f"NOT CRASHED: one request failed ({self.title}); the server kept serving"
        if self.crashed:
            what = f" ({self.title})" if self.title else ""
            return f"CRASHED: {self.kind}{what}, in phase {self.phase}"
        if self.title:  # an end that is no crash, named (another ddlab run took the host)
            return f"NOT CRASHED: {self.title}, in phase {self.phase}"
        if self.phase in ("ready", "serving"):
            return f"NOT CRASHED: the server is {self.phase}"
        return f"NOT CRASHED: the log stops in phase {self.phase} (still starting, or cut short)"


# --- context -------------------------------------------------------------------------

def _algorithm_in(frames: str) -> str | None:
    """The speculative worker whose frames are in the crash's traceback."""
    return next((name for name, worker in _WORKER_FRAMES if re.search(worker, frames)), None)


# --- evidence -----------------------------------------------------------------------

def _chain_evidence(candidate: Candidate) -> list[Line]:
    chain, raised, signature = candidate.chain, candidate.raised, candidate.signature
    picked = [chain.raised[0].start]
    for block in chain.raised:
        picked += [block.link, block.start]  # the separator says how the blocks are joined
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
    add([ln for ln in lines if MARKER_RE.search(ln.msg)][-12:])
    add([ln for ln in lines if any(p.search(ln.text) for p in patterns)][-20:])
    ordered = [picked[no].text for no in sorted(picked)]
    return ordered if len(ordered) <= _MAX_EVIDENCE else ordered[:8] + ordered[-(_MAX_EVIDENCE - 8):]


# --- cause and advice when no signature explains it -----------------------------------

def _unknown_advice(best: Candidate | None, exit_seen: Exit) -> str:
    native = r"Segmentation fault|Aborted|core-dump|SEGV|ABRT|Fatal Python"
    if exit_seen.why and re.search(native, exit_seen.why):
        return ("A native crash (segfault / abort), no Python exception: rerun with "
                "CUDA_LAUNCH_BLOCKING=1 and PYTHONFAULTHANDLER=1 (the faulthandler dump shows the "
                "thread), then with CUDA graphs off to rule them out.")
    if best is None and exit_seen.why and SHELL_QUIT_RE.search(exit_seen.why):  # (round 64)
        return ("The shell says SIGQUIT ended the process ('Quit'), a signal another process sent: SGLang's "
                "children send it to their parent when one of them fails (\"Scheduler hit an exception\", the "
                "detokenizer, the watchdog), and a process that embeds the engine without SGLang's handler "
                "dies of it. The child's own error is not in this log: get its whole output (the engine's "
                "stderr, `journalctl -u UNIT -o cat`) and read the first traceback.")
    if best is None and exit_seen.why == ENDED_UNASKED:
        return ("The server was killed mid-startup without a word: look for the kernel's OOM killer "
                "(`journalctl -k | grep -i -E 'out of memory|killed process'`; on unified memory, DGX "
                "Spark or GH200, the weights and the KV pool share the host's RAM: lower "
                "--mem-fraction-static), else a timeout of the script that started it.")
    if best is None and exit_seen.why == ROUTER_START_PANIC:  # (round 71)
        return ("sgl-router's start-up health check used a blocking HTTP client inside its async start, and "
                "tokio panicked dropping it: a bug of that router (sglang PR 7619, June 2025, moved the check "
                "to a thread of its own). Upgrade sglang-router; the workers themselves are not at fault.")
    if best is None:
        return ("The process failed without an error in this log: read the whole journal "
                "(`journalctl -u UNIT -o cat`), the lines before the exit usually say why.")
    if best.cut:
        where = best.where("sglang")
        at = f"; its last frame is {where}" if where else ""
        return (f"The log ends inside a traceback (line {best.first_no}){at}: get the whole log "
                "(`journalctl -u UNIT -o cat`), the exception line below the frames names the error.")
    if (sent := re.search(r"exit code:? -(\d+)\b", best.cause, re.I)) and sent[1] in _SENT_SIGNALS:
        name = _SENT_SIGNALS[sent[1]]
        return (f"The process was ended by {name} (exit code -{sent[1]}), a signal another process sent, "
                "not a fault of its own (SGLang sends SIGQUIT when one of its processes fails: "
                "managers/scheduler.py after \"Scheduler hit an exception\", utils/watchdog.py): the first "
                "error is that process's, earlier in the log; get the whole log (`journalctl -u UNIT -o cat`).")
    where = best.where("sglang")
    look = f" It was raised at {where}: start reading there." if where else ""
    # (round 32) retract_decode runs when the KV pool cannot hold the next decode step (0.5.8.post1
    # managers/scheduler.py:2165-2178, 0.4.10.post2 :1656-1661, 0.5.23 :4469-4493): a fault under it is
    # the retract path's, which a scheduler that never fills its pool does not take
    if best.raised is not None and any(f.func == "retract_decode" for f in best.raised.frames):
        look += (" It failed inside the scheduler's retract (retract_decode), which it runs when the KV "
                 "pool has no room for the next decode step: a bug on that path, report it with this log; "
                 "until it is fixed, fewer running requests (`--max-running-requests`) or a larger pool "
                 "(`--mem-fraction-static`) make the retract rarer.")
    return (f"No known crash signature. The first error is line {best.first_no}: {best.cause[:160]}."
            f"{look} If it recurs, add a Signature (ddlab.crashes.kinds) with a fixture log.")


def _cause(best: Candidate | None, exit_seen: Exit) -> str | None:
    """One line: the exception's message or the fatal line, cut near 240 characters."""
    if best is None:
        return exit_seen.why
    if best.signature is not None and best.signature.kind == "native_crash" \
            and best.cause.startswith("Extension modules:"):
        return ("a fatal signal's thread dump, its header cut (CPython lists the extension modules "
                f"only after a fatal error): {best.cause[:120]} ...")
    if best.signature is FATAL_SIGNAL_DUMP:
        return ("a fatal signal's thread dump (faulthandler), the scheduler running a step: "
                f"{best.cause.strip()}")
    if best.signature is STARTUP_SIGNAL_DUMP:
        return f"a fatal signal's thread dump (faulthandler), no event loop on the stack: {best.cause.strip()}"
    if best.signature is not None and best.signature.kind == "hang" and len(best.lines) == 1:
        if _DUMPED_LOOP_RE.match(best.cause):
            return f"a thread dump shows a scheduler in its event loop, no error: {best.cause.strip()}"
        # SGLang's watchdog state dump; vLLM's hang texts are error lines of their own
        if best.signature is HANG and not re.search(r"watchdog timeout|debug info", best.cause, re.I):
            return f"the scheduler watchdog's dump (no error): {best.cause.strip()}"
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

def _for_whom(version, algorithm, facts: dict, frames: str) -> tuple[str | None, str | None]:
    """The release and algorithm the advice is for: given, else what the log says."""
    algorithm = algorithm or facts.get("speculative_algorithm") or _algorithm_in(frames)
    if isinstance(algorithm, str) and family(algorithm):
        algorithm = algorithm.upper()
    return version or facts.get("sglang_version_hint"), algorithm


_THREAD_ADVICE = ("A helper thread of the server died of this exception (Python's threading.excepthook printed "
                  "it) and the process went on: what that thread did (a HiCache prefetch or backup, a "
                  "transfer loop) no longer happens, so requests that need it may stall or miss the cache. "
                  "Fix the exception (it is often a bug of the feature's backend: update SGLang, or turn the "
                  "feature off) and restart the server.")


def diagnose(text: str, patterns=(), *, version: str | None = None,
             algorithm: str | None = None, tried: dict | None = None,
             host: str | None = None, family: str | None = None) -> Diagnosis:
    """Diagnose one server log; ``patterns`` (regexes) add matching lines as evidence;
    ``version`` / ``algorithm`` choose the advice (None: from the log, else neutral);
    ``tried`` (key -> values that already failed the same way) and ``host`` (where it
    ran) let the advice move on to the next lever and name commands for that host.
    ``family`` is the server family that wrote the log (``sglang`` | ``vllm``; None: told
    from the text, :func:`~ddlab.diagnosis.vllm_log.detect_family`); a vLLM log is read in
    vLLM's dialect (:mod:`~ddlab.diagnosis.vllm_diagnosis`, ``version`` a vLLM
    release, ``algorithm`` its speculative method)."""
    if family not in (None, *FAMILIES):
        raise ConfigError(f"family {family!r}: not a server family", fix=f"one of {', '.join(FAMILIES)}",
                          value=family)
    named = True
    if family is None:
        family, named = told_family(text or "")  # not named: read as SGLang's, and said so
    if family == "vllm":
        return _diagnose_vllm(text, patterns, version=version, algorithm=algorithm, tried=tried, host=host)
    compiled = _compile(patterns)
    read = read_sglang(text or "")
    lines, phase, best, signature, frames = read.lines, read.phase, read.best, read.signature, read.frames
    request, thread, crashed, exit_seen = read.request, read.thread, read.crashed, read.exit_seen
    facts = deepcopy(read.facts)
    version, algorithm = _for_whom(version, algorithm, facts, frames)
    found = Found(best.raised.text if best and best.raised else (best.cause if best else ""),
                  best.chain.text if best and best.chain else "", phase, facts, read.markers, version,
                  algorithm, tried=dict(tried or {}), host=host, frames=frames)
    combination = None
    if crashed and best is not None and not request and spec_conflict(best, signature, found):
        signature, combination = SPEC_FEATURE, _combination(found)
        phase = crash_phase(lines, phase, best, signature, frames)
        found = replace(found, phase=phase)
    if request and not crashed:
        phase = "serving"
        found = replace(found, phase=phase)
    suggestion = (advise(signature, found) if signature else
                  _unknown_advice(best, exit_seen) if crashed else
                  _THREAD_ADVICE if thread else None)
    records = read.records
    cause = _cause(best, exit_seen) if crashed or request or thread else None
    if combination and cause:
        cause = f"{combination}: {cause}"
    seen = read.seen
    nones = none_fields(seen)
    if seen.skipped:  # a record that cannot be read (cut, hostile) is skipped, and said
        facts = {**facts, "probe_records_skipped": seen.skipped}
    unarmed = not_armed(seen)
    if unarmed:  # a probe that saw nothing must never pass for one that saw no None
        facts = {**facts, "probes_not_armed": [probe_not_armed(p) for p in unarmed]}
    if nones:  # what the probes saw is the first thing the cause says
        facts = {**facts, "none_fields": nones}
        sources = sorted({r.get("source", "DDLAB_PROBE") for r in seen
                          if r.get("event") in ("raised", "diag")}) or ["DDLAB_PROBE"]
        said = (f"{', '.join(nones)} {'is' if len(nones) == 1 else 'are'} None "
                f"({', '.join(sources)})")
        cause = f"{said}: {cause}" if cause else said
    elif crashed and signature and signature.kind in PROBE_KINDS and suggestion:
        target = probe_target(best.chain.frames if best and best.chain else [])
        if unarmed:
            suggestion = f"{probe_not_armed(unarmed[0])}. {suggestion}"
        elif target:
            suggestion += (" To see the batch's fields (None, shapes) where it fails, deploy it "
                           f"again with `ddlab deploy --probe-fn {target} ...` (nothing installed "
                           "is edited; the baseline never carries it).")
    kind = signature.kind if signature else ("unknown" if crashed else None)
    title = signature.title if signature else (None if crashed or request else stopped(lines, PROGRESS_RE))
    if request and not crashed:
        kind = "request_error"
    elif request and kind == "request_error":  # the process failed, and not of this request
        kind, signature, title = "unknown", None, None
    return Diagnosis(
        crashed=crashed, kind=kind,
        phase=phase, cause=cause,
        evidence=_evidence(lines, best, read.phase_line, exit_seen, compiled, crashed),
        suggestion=suggestion, decode=summarize_decode(records) if records else None,
        exit_status=exit_seen.status, signature=signature.name if signature else None,
        title=title, facts=facts,
        sglang_version=version, algorithm=algorithm,
        sources=[f"{path} ({release})" for release, path in signature.sources] if signature else [],
        family_assumed=not named)


def _diagnose_vllm(text: str, patterns, *, version, algorithm, tried, host) -> Diagnosis:
    """A vLLM log (:mod:`.vllm_diagnosis` reads and judges it; the evidence, the cause and a
    kill from outside are this module's, as for SGLang)."""
    compiled = _compile(patterns)
    log = read_vllm(text)
    best = log.best
    if host_killed(best, log.exit_seen, log.lines):
        first = log.exit_seen.lines[0].no if log.exit_seen.lines else 0
        best = vllm_host_oom(first, log.exit_seen.why or "killed", log.exit_seen.lines)
    said = judge_vllm(log, best, version=version, algorithm=algorithm, tried=tried, host=host)
    signature = said.signature
    return Diagnosis(
        crashed=said.crashed, kind=said.kind, phase=said.phase,
        cause=vllm_cause(_cause(best, log.exit_seen), best) if said.crashed or said.request else None,
        evidence=_evidence(log.lines, best, log.phase_line, log.exit_seen, compiled, said.crashed),
        suggestion=said.suggestion, decode=said.decode, exit_status=log.exit_seen.status,
        signature=signature.name if signature else None, facts=said.facts, algorithm=said.algorithm,
        title=said.title or (None if said.crashed or said.request else stopped(log.lines, VLLM_PROGRESS_RE)),
        family="vllm",
        sources=[f"{path} ({release})" for release, path in signature.sources] if signature else [])


def probe_not_armed(probe: dict) -> str:
    """``probe X is not armed (...): its path resolves nowhere; did you mean Y? deploy
    again with --probe-fn Y``, from a :func:`ddlab.probes.not_armed` entry."""
    closest = probe.get("closest")
    fix = (f"; did you mean {closest}? deploy again with --probe-fn {closest}" if closest
           else "; check the path (module.Class.method) on the server")
    said = str(probe.get("why") or "").split("; did you mean")[0]
    why = f" ({said})" if said else ""
    return f"probe {probe['target']} is not armed: it saw nothing{why}{fix}"


def read_log(path: str) -> str:
    """The text of a log file, or of stdin for ``-``; undecodable bytes are replaced. A log
    past :data:`~ddlab.core.bounded.HEAD_BYTES` + :data:`~ddlab.core.bounded.TAIL_BYTES` (a
    journal of days) is read as its head and its tail, as the watch reads a host's log, the
    middle left out and said (a line in the text, a record on the log)."""
    if path == "-":
        text, left = read_bounded(sys.stdin.buffer)
    else:
        file = Path(path)
        fix = "give the path of a saved log (journalctl -u UNIT > FILE), or - to read stdin"
        if not file.exists():
            raise ConfigError(f"log file {path!r}: no such file", fix=fix, value=path)
        if file.is_dir():
            raise ConfigError(f"log file {path!r}: is a directory, not a log file", fix=fix, value=path)
        try:
            with file.open("rb") as stream:
                text, left = read_bounded(stream, size=file.stat().st_size)
        except OSError as err:
            raise ConfigError(f"log file {path!r}: cannot be read ({err.strerror})", fix=fix,
                              value=path) from None
    if left:
        _log.info(f"{'stdin' if path == '-' else path}: read its first {HEAD_BYTES >> 10} KB and "
                  f"last {TAIL_BYTES >> 20} MB; the {left / 2**20:.1f} MB between them left out "
                  "(the start and the end decide a diagnosis)")
    return text
