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
from ddlab.diagnosis import explain
from ddlab.diagnosis.advice import advise, family
from ddlab.diagnosis.exits import CRASHED_EXIT
from ddlab.diagnosis.decode_lines import DecodeRecord, decode_text, metrics_text, parse_decode_lines, summarize_decode
from ddlab.diagnosis.logtext import PHASES, phase_of, strip_prefix
from ddlab.crashes.kinds.speculative import SPEC_FEATURE, combination as _combination
from ddlab.diagnosis.phase import crash_phase
from ddlab.diagnosis.readings import spec_conflict
from ddlab.diagnosis.rootcause import PROGRESS_RE
from ddlab.diagnosis.signatures import KINDS, SIGNATURES, Found, Signature
from ddlab.diagnosis.probe_advice import PROBE_KINDS, probe_target
from ddlab.diagnosis.sglang_reading import host_killed, read_sglang
from ddlab.diagnosis.stops import stopped
from ddlab.diagnosis.vllm_diagnosis import host_oom as vllm_host_oom
from ddlab.diagnosis.vllm_diagnosis import judge_vllm, read_vllm, vllm_cause
from ddlab.diagnosis.vllm_log import FAMILIES, VLLM_PROGRESS_RE, told_family

__all__ = [
    "Diagnosis", "diagnose", "read_log", "SIGNATURES", "Signature", "KINDS", "PHASES",
    "phase_of", "parse_decode_lines", "summarize_decode", "DecodeRecord", "strip_prefix",
]

_log = get_logger(__name__)

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
            rows.append(f"metrics:    {metrics_text(self.decode)}" if self.family == "vllm"
                        else f"decode:     {decode_text(self.decode)}")
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
                  explain.unknown_advice(best, exit_seen) if crashed else
                  _THREAD_ADVICE if thread else None)
    records = read.records
    cause = explain.cause(best, exit_seen, lines) if crashed or request or thread else None
    if combination and cause:
        cause = f"{combination}: {cause}"
    facts, cause, suggestion = _probes_said(read, facts, cause, suggestion, signature if crashed else None)
    kind = signature.kind if signature else ("unknown" if crashed else None)
    title = signature.title if signature else (None if crashed or request else stopped(lines, PROGRESS_RE))
    if request and not crashed:
        kind = "request_error"
    elif request and kind == "request_error":  # the process failed, and not of this request
        kind, signature, title = "unknown", None, None
    return Diagnosis(
        crashed=crashed, kind=kind,
        phase=phase, cause=cause,
        evidence=explain.evidence(lines, best, read.phase_line, exit_seen, compiled, crashed),
        suggestion=suggestion, decode=summarize_decode(records) if records else None,
        exit_status=exit_seen.status, signature=signature.name if signature else None,
        title=title, facts=facts,
        sglang_version=version, algorithm=algorithm,
        sources=[f"{path} ({release})" for release, path in signature.sources] if signature else [],
        family_assumed=not named)


def _probes_said(read, facts: dict, cause: str | None, suggestion: str | None,
                 signature: Signature | None) -> tuple[dict, str | None, str | None]:
    """What the log's probe records add: the None fields first in the cause, records skipped and
    probes not armed in the facts, and, for a crash a probe can explain (``signature``: the
    crash's), how to deploy one."""
    seen, best = read.seen, read.best
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
    elif signature and signature.kind in PROBE_KINDS and suggestion:
        target = probe_target(best.chain.frames if best and best.chain else [])
        if unarmed:
            suggestion = f"{probe_not_armed(unarmed[0])}. {suggestion}"
        elif target:
            suggestion += (" To see the batch's fields (None, shapes) where it fails, deploy it "
                           f"again with `ddlab deploy --probe-fn {target} ...` (nothing installed "
                           "is edited; the baseline never carries it).")
    return facts, cause, suggestion


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
    cause = vllm_cause(explain.cause(best, log.exit_seen, log.lines), best) if said.crashed or said.request else None
    return Diagnosis(
        crashed=said.crashed, kind=said.kind, phase=said.phase, cause=cause,
        evidence=explain.evidence(log.lines, best, log.phase_line, log.exit_seen, compiled, said.crashed),
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
