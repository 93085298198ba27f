"""Which error in a log is the crash: candidates, what the server carried on past, the root cause.

Contract: :func:`root_cause` takes a log's lines and exception chains and
returns the :class:`Candidate` that explains the crash, or None. Candidates
are every exception chain (:mod:`.tracebacks`), every line a signature
recognises outside a chain (argparse's usage error, uvicorn's bind error, a
C++ ``what():``, a kernel's device assert, an error SGLang logs instead of
raising) and every generic echo line ("Received sigquit from a child
process", either spelling). The rules:

1. Within one chain the outermost exception decides; a capture failure that
   wraps a CUDA OOM is a capture failure. Only when the outermost matches no
   signature are the inner ones asked, outermost first.
2. Generic echoes (:data:`~ddlab.diagnosis.signatures.WRAPPERS`: "Rank 0
   scheduler is dead", the launcher's ``EOFError``, "Initialization failed.
   warmup error") never win over anything else; an echo a signature explains
   (a warmup request that timed out) wins over the bare ones.
3. Among recognised errors the highest signature priority wins (specific over
   generic; NCCL and health-check failures are often consequences); on a tie,
   the earliest in the log (the first rank to fail started it).
4. With nothing recognised, the earliest complete exception is the cause (kind
   ``unknown``), then a traceback the log cuts before its exception line, then
   a generic echo.

"Carried on past": a recognised error is survived when "ready to roll" or a
batch line of the same rank (or of no rank) follows it; an unrecognised one
also when a later startup phase line follows (a warning printed with a
traceback). Progress bars are not a startup going on: any rank prints them,
in any order. A ``fatal`` signature (uvicorn's bind error, a slot pool that
ran out) is never survived.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ddlab.diagnosis.logtext import Line, is_progress_bar, phase_marker
from ddlab.diagnosis.signatures import SIGNATURES, WRAPPER_FRAMES, WRAPPER_LINES, WRAPPERS, Signature, regex
from ddlab.diagnosis.tracebacks import Chain, Raised

__all__ = ["Candidate", "candidates", "root_cause", "clean_cause"]

_PROGRESS_RE = re.compile(r"The server is fired up and ready to roll|Decode batch\b|Prefill batch\b")
_LEVEL_RE = re.compile(r"^(?:ERROR|CRITICAL|FATAL|WARNING):\s*")
_NATIVE_RE = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):"
                        r"|^Fatal Python error: ")  # faulthandler: a fatal signal, not an exception
_CPP_RE = re.compile(r"^\s*(?:what\(\):\s*|terminate called after throwing an instance of \S+\s*)")


@dataclass
class Candidate:
    """One error the log shows; the root cause is picked among these."""

    first_no: int
    last_no: int
    cause: str
    signature: Signature | None = None
    wrapper: bool = False
    chain: Chain | None = None
    raised: Raised | None = None
    lines: list[Line] = field(default_factory=list)
    cut: bool = False
    rank: str | None = None


def clean_cause(text: str) -> str:
    """The message of a line: no level prefix, no C++ ``what():``."""
    return _CPP_RE.sub("", _LEVEL_RE.sub("", text.strip())).strip()


def _best(type_name: str, text: str, chain_text: str) -> Signature | None:
    hits = [s for s in SIGNATURES if s.matches_exception(type_name, text, chain_text)]
    return max(hits, key=lambda s: s.priority, default=None)


def _is_wrapper(chain: Chain) -> bool:
    texts = (chain.header, chain.outermost.text)
    return (any(regex(w).search(t) for w in WRAPPERS for t in texts)
            or bool(regex(WRAPPER_FRAMES, re.M).search(chain.text)))


def _rank(lines: list[Line]) -> str | None:
    return next((ln.rank for ln in lines if ln.stamped), None)


def _chain_candidate(chain: Chain) -> Candidate:
    chain_text, rank = chain.text, _rank(chain.lines)
    span = (chain.first_no, chain.last_no)
    for raised in reversed(chain.raised):  # outermost first
        if raised.type and (signature := _best(raised.type, raised.text, chain_text)):
            return Candidate(*span, raised.first_line, signature, wrapper=signature.echo,
                             chain=chain, raised=raised, rank=rank)
    outer = chain.outermost
    if not outer.type:
        where = chain.header or "frames with no exception line"
        cause = f"the log ends inside a traceback ({where}): its exception line is missing"
        return Candidate(*span, cause, chain=chain, raised=outer, cut=True, rank=rank)
    return Candidate(*span, outer.first_line, None, wrapper=_is_wrapper(chain),
                     chain=chain, raised=outer, rank=rank)


def _line_candidate(line: Line) -> Candidate | None:
    hits = [s for s in SIGNATURES if s.matches_line(line.msg)]
    cause = clean_cause(line.msg)
    if hits:
        best = max(hits, key=lambda s: s.priority)
        return Candidate(line.no, line.no, cause, best, wrapper=best.echo, lines=[line], rank=line.rank)
    if any(regex(p, re.I).search(line.msg) for p in WRAPPER_LINES):
        return Candidate(line.no, line.no, cause, None, wrapper=True, lines=[line], rank=line.rank)
    if _NATIVE_RE.search(line.msg):
        return Candidate(line.no, line.no, cause, None, lines=[line], rank=line.rank)
    return None


def _survived(candidate: Candidate, progress: list[tuple[int, str | None]], advanced: int) -> bool:
    if candidate.signature and candidate.signature.fatal:
        return False
    later = [rank for no, rank in progress if no > candidate.last_no]
    same = [rank for rank in later if rank is None or candidate.rank is None or rank == candidate.rank]
    if same:
        return True
    return candidate.signature is None and advanced > candidate.last_no


def candidates(lines: list[Line], chains: list[Chain]) -> list[Candidate]:
    """Every error the server did not carry on past (see the module docstring)."""
    covered = {line.no for chain in chains for line in chain.lines}
    found = [_chain_candidate(chain) for chain in chains
             if chain.outermost.type != "KeyboardInterrupt"]  # someone pressed Ctrl-C: a stop
    found += [c for line in lines if line.no not in covered and (c := _line_candidate(line))]
    progress = [(ln.no, ln.rank) for ln in lines if _PROGRESS_RE.search(ln.msg)]
    advanced = max((ln.no for ln in lines if phase_marker(ln.msg) and not is_progress_bar(ln.msg)),
                   default=0)
    return [c for c in found if not _survived(c, progress, advanced)]


def _pick(found: list[Candidate]) -> Candidate | None:
    known = [c for c in found if c.signature and not c.wrapper]
    if known:
        return max(known, key=lambda c: (c.signature.priority, -c.first_no))
    for tier in ([c for c in found if not c.wrapper and not c.cut], [c for c in found if c.cut]):
        if tier:
            return min(tier, key=lambda c: c.first_no)
    echoes = [c for c in found if c.signature]
    if echoes:
        return max(echoes, key=lambda c: (c.signature.priority, -c.first_no))
    return min(found, key=lambda c: c.first_no, default=None)


def root_cause(lines: list[Line], chains: list[Chain]) -> Candidate | None:
    """The candidate that explains the crash (rules in the module docstring), or None."""
    return _pick(candidates(lines, chains))
