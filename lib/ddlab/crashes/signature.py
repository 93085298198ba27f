"""One crash signature: the texts that identify a kind of failure, where they come from, the advice.

Contract: a :class:`Signature` matches an *exception* (the ``Type: message``
text of one raised exception, continuation lines included) when its ``types``
regex (if any) matches the type, one of its ``patterns`` matches the text,
every ``context`` regex matches somewhere in the printed chain (frames
included) and no ``absent`` regex does. It matches a plain *log line*
(argparse's usage error, uvicorn's bind error, a C++ ``what():``, a kernel's
device assert, an error that SGLang logs instead of raising) when one of its
``lines`` regexes does. ``priority`` ranks signatures that match the same
evidence (specific beats generic); ``phase`` is the least phase a crash of
this kind implies; ``fatal`` means the server cannot have carried on past it
(uvicorn exits after a bind error even if a later line says "ready");
``echo`` marks the launcher's generic wrappers that mean something when
nothing else is in the log (a warmup request that timed out).

``request`` marks an error raised for one request while the server keeps
serving (uvicorn's "Exception in ASGI application", a request the tokenizer
refuses, a PD transfer that failed for one request): alone it is kind
``request_error`` and no crash; when the process dies of it right after (an
unexplained or cut traceback of the same rank follows), it is the crash and its
own kind. ``running`` marks a fault only a running server meets (a kernel
fault reported asynchronously, a collective timing out, a fatal signal): where
the log shows nothing of the startup, its phase is ``serving``. ``cut_ok``: the
``context`` alone decides, also for a traceback cut before its exception line, unless one of
``cut_absent`` is in the chain (frames that show the cut error is not the one the context names).
``explains``: its ``lines`` are a library's warning (torch's store socket timing out): such a
line never decides alone, whatever its severity; it explains a traceback the same process cuts or
leaves unexplained right after it, as a request's error does.
``cleared_by``: regexes of later lines (their whole text, SGLang's stamp
included) that show the server carried on past it (a scheduler rank still
logging after a failed health check).
``busy_before``: regexes of the line just before a wait notice that show a step the notice itself
names as slow work under way (a torch.compile begun, not ended): the notice is that work's wait.
``under``: regexes of a message's own first line: where one is among the :data:`UNDER_SPAN` lines right
above a hit of ``lines`` that are the tail of such a message, the message is shown and the tail alone decides
nothing (vLLM round 106: torch's CUDA check hints under their own "CUDA error: invalid argument" line).
``stamped``: its ``lines`` count only on a line that carries a logger's stamp (SGLang's
``[date time]``): a text as plain as ``error: ...`` is the server's only with it.
``wrapped``: its ``patterns`` are also asked of the message with its line breaks taken out
(:func:`unwrapped`): a one-line message a terminal or a paste wrapped at its width.

``sources`` ties the texts to where they are written: ``(release, "path:line")``
pairs for SGLang releases (paths inside the wheel), ``("transformers 5.19.0",
"path:line")`` and the like for third-party texts. ``advice`` is a tuple of
sentences written with the newest release's flag names in backticks;
:mod:`ddlab.diagnosis.advice` renders them for the user's release and
speculative algorithm (``by_algorithm`` adds sentences per algorithm family).
``detail`` may add specifics the evidence shows (the port, the None field, the
sizes), written the same way.

Why a separate module: the registry (:mod:`ddlab.diagnosis.signatures`) and the
data files (:mod:`ddlab.crashes.kinds`) both need these types.
"""

from __future__ import annotations

import re
import re._parser as sre_parse  # noqa: PLC2701 (the parser re itself uses: stable since 3.11)
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

__all__ = ["Signature", "Found", "regex", "needle", "branches", "Screen", "type_names", "unwrapped", "NO_LATER_FRAME",
           "UNDER_SPAN"]


# (vLLM round 106) the lines a message's tail may sit below its first line: torch's CUDA check prints "CUDA error: "
# and the error's string, then (newer releases) a "Search for `cudaError...'" line, its two hint lines and "Compile
# with `TORCH_USE_CUDA_DSA` ...": the last four lines below the first (pytorch 98fb6fe
# c10/cuda/CUDAMiscFunctions.cpp:7-18, d545da4 c10/cuda/CUDAException.cpp:31-36)
UNDER_SPAN = 4

# what follows a traceback's raising frame where it is the last one: its code line and the exception's lines,
# no other "File ..." line to the text's end (a context pattern ending "...in FUNC\s*\n" + this says FUNC raised)
NO_LATER_FRAME = r'(?:(?![ \t]*File ").*(?:\n|\Z))*\Z'

@cache
def regex(pattern: str, flags: int = re.I | re.S) -> re.Pattern:
    """``pattern`` compiled once (signature texts are case-insensitive by default)."""
    return re.compile(pattern, flags)


# (round 70) Ray raises a remote task's error as an instance of a class made to subclass both RayTaskError and
# the cause's own class, named "RayTaskError(<the cause's class name>)" (ray 2.43.0 exceptions.py:169 class
# cls(RayTaskError, cause_cls), :183-184 its __name__; as_instanceof_cause :217-239): an exception of the
# cause's type, which a signature's ``types`` is asked of too
_RAY_DUAL_RE = re.compile(r"(?:[A-Za-z_]\w*\.)*RayTaskError\((?P<cause>[A-Za-z_]\w*)\)")


def type_names(type_name: str) -> tuple[str, ...]:
    """``type_name`` and, for Ray's ``RayTaskError(Cause)``, the cause's type (an instance of both)."""
    dual = _RAY_DUAL_RE.fullmatch(type_name)
    return (type_name, dual["cause"]) if dual else (type_name,)


def unwrapped(text: str) -> tuple[str, ...]:
    """``text`` and, where it has line breaks, its lines joined again as one: a break inside a word
    (joined with nothing) and one at a space (joined with a space; a continuation line is read
    stripped, so the space is lost either side)."""
    return (text, text.replace("\n", ""), text.replace("\n", " ")) if "\n" in text else (text,)


@dataclass(frozen=True)
class Found:
    """What a ``detail`` hook sees: the matched text and what the log says around it."""

    text: str
    chain_text: str = ""
    phase: str = "launch"
    facts: dict = field(default_factory=dict)
    markers: tuple[str, ...] = ()
    version: str | None = None
    algorithm: str | None = None
    # values the caller already tried that failed the same way ({"mem_fraction_static":
    # [0.88, 0.92]}) and the host they ran on: advice never proposes them again
    tried: dict = field(default_factory=dict)
    host: str | None = None
    # the frames printed around the crash: its traceback, another rank's beside it, a
    # faulthandler or py-spy dump below it (the last Python frame of a native crash)
    frames: str = ""


@dataclass(frozen=True)
class Signature:
    name: str
    kind: str
    title: str
    advice: tuple[str, ...]
    patterns: tuple[str, ...] = ()
    types: str | None = None
    context: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    priority: int = 50
    phase: str | None = None
    detail: Callable[[Found], str | None] | None = None
    by_algorithm: tuple[tuple[str, str], ...] = ()
    sources: tuple[tuple[str, str], ...] = ()
    fatal: bool = False
    echo: bool = False
    request: bool = False
    running: bool = False
    cut_ok: bool = False
    cut_absent: tuple[str, ...] = ()
    explains: bool = False
    cleared_by: tuple[str, ...] = ()
    busy_before: tuple[str, ...] = ()
    under: tuple[str, ...] = ()
    stamped: bool = False
    wrapped: bool = False

    def matches_exception(self, type_name: str, text: str, chain_text: str) -> bool:
        if not self.patterns:
            return False
        if self.types and not any(regex(self.types, 0).fullmatch(t) for t in type_names(type_name)):
            return False
        texts = unwrapped(text) if self.wrapped else (text,)
        if not any(regex(p).search(t) for p in self.patterns for t in texts):
            return False
        return self.in_context(chain_text)

    def in_context(self, chain_text: str) -> bool:
        """Every ``context`` regex is in the chain and no ``absent`` one is."""
        return (all(regex(c, re.I | re.M).search(chain_text) for c in self.context)
                and not any(regex(a, re.I | re.M).search(chain_text) for a in self.absent))

    def carried_on(self, lines: list, first_no: int, last_no: int) -> bool:
        """A later line of ``cleared_by``; or, for a wait notice, the line just before it one of ``busy_before``
        (the notice is that work's wait); or a message's tail with one of ``under`` just above it (the message
        decides). ``lines``: the log's records (``no``, ``text``, ``msg``). Most signatures have none: no line is
        looked at then."""
        if self.cleared_by and any(regex(p, re.M).search(ln.text) for ln in lines if ln.no > last_no
                                   for p in self.cleared_by):
            return True
        if self.under and any(regex(p, re.I).search(ln.msg) for ln in lines if 0 < first_no - ln.no <= UNDER_SPAN
                              for p in self.under):
            return True
        if not self.busy_before:
            return False
        before = next((ln for ln in reversed(lines) if ln.no < first_no and ln.msg.strip()), None)
        return before is not None and any(regex(p, re.M).search(before.text) for p in self.busy_before)

    def matches_context(self, chain_text: str) -> bool:
        """A traceback cut before its exception line: only a ``cut_ok`` signature's context
        can tell what it was."""
        return (self.cut_ok and bool(self.context) and self.in_context(chain_text)
                and not any(regex(a, re.I | re.M).search(chain_text) for a in self.cut_absent))

    @property
    def counts_in_a_handler(self) -> bool:
        """Read inside a request's handler: a request's error, or (round 19) a fatal echo of the
        engine's death, which every later request meets alike."""
        return self.request or (self.echo and self.fatal)

    def matches_line(self, msg: str) -> bool:
        """One of ``lines`` is in ``msg`` (a registry asks all its signatures at once, faster:
        :meth:`ddlab.diagnosis.signatures.Registry.line_hits`)."""
        return any(regex(p, re.I).search(msg) for p in self.lines)

    def sentences(self, family: str | None) -> tuple[str, ...]:
        """The advice, then the sentences for the algorithm ``family`` (if any)."""
        extra = tuple(text for fam, text in self.by_algorithm if fam == family)
        return self.advice + extra


def ascii_lower(msg: str) -> str | None:
    """``msg`` lower-cased for :func:`needle` tests, or None where it is not ASCII (a regex
    with ``re.I`` folds some non-ASCII letters to ASCII ones: there only the regex decides)."""
    return msg.lower() if msg.isascii() else None


@cache
def needle(pattern: str) -> str:
    """The longest run of plain characters that every case-insensitive match of ``pattern``
    contains, lower-cased ("" where it has none, or a non-ASCII one).

    Diagnosing a log tries every signature's ``lines`` on every line: most lines hold none,
    and a substring test rules a pattern out for a small part of a regex search's cost (with
    one pass per line, the 1047 fixture logs diagnose in about a quarter less CPU, 2026-12-04).
    Only characters the pattern's top level requires in sequence count: a branch, a group, a
    repeat or a class ends a run."""
    best = run = ""
    for op, value in sre_parse.parse(pattern, re.I):
        if op is sre_parse.LITERAL and chr(value).isascii():
            run += chr(value).lower()
            best = max(best, run, key=len)
        else:
            run = ""
    return best


def branches(pattern: str) -> list[str]:
    """``pattern`` split at its top-level ``|`` (not inside a group or a character class, not
    escaped): its alternatives, each a regex of its own."""
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":  # a "]" first in a class (after "^") is a literal
            i += 1 + (pattern[i + 1:i + 2] == "^")
            i += pattern[i:i + 1] == "]"
            in_class = True
            continue
        elif c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and not depth:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return parts + [pattern[start:]]


_GLOBAL_FLAGS_RE = re.compile(r"\(\?[aiLmsux]+\)")
_BACKREF_RE = re.compile(r"\\[1-9]|\(\?P=")


class Screen:
    """A regex asked only whether it is in a line, each of its alternatives searched only
    where that alternative's :func:`needle` is: the regex's own answer (:meth:`hit`) for a part
    of its cost. A regex of many alternatives is tried at every position of a line; a log's
    every line is asked whether it names the server (vLLM's marks: 37 alternatives), so on
    lines that hold none of the needles the substring tests answer first (the family marks of
    the 1779 fixture logs' 60076 lines: 0.45 s of CPU against 1.8 s, 2026-12-05). Not for a
    regex whose match is read: the alternative that answers is not always the leftmost."""

    __slots__ = ("regex", "_bare", "_screened")

    def __init__(self, regex: re.Pattern):
        if regex.flags & re.X or _GLOBAL_FLAGS_RE.match(regex.pattern) or _BACKREF_RE.search(regex.pattern):
            raise ValueError(f"Screen takes no verbose regex, inline global flags or backreference: {regex.pattern!r}")
        parts = branches(regex.pattern)
        bare = [p for p in parts if not needle(p)]
        self.regex = regex
        self._bare = re.compile("|".join(bare), regex.flags) if bare else None
        self._screened = tuple((needle(p), re.compile(p, regex.flags)) for p in parts if needle(p))

    def hit(self, text: str) -> bool:
        """Whether ``regex.search(text)`` finds a match."""
        low = ascii_lower(text)
        if low is None:
            return self.regex.search(text) is not None
        if self._bare is not None and self._bare.search(text):
            return True
        for lit, rx in self._screened:  # a loop: a generator's frames cost more than the tests
            if lit in low and rx.search(text):
                return True
        return False
