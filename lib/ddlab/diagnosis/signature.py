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

``sources`` ties the texts to where they are written: ``(release, "path:line")``
pairs for SGLang releases (paths inside the wheel), ``("transformers 5.19.0",
"path:line")`` and the like for third-party texts. ``advice`` is a tuple of
sentences written with the newest release's flag names in backticks;
:mod:`ddlab.diagnosis.advice` renders them for the user's release and
speculative algorithm (``by_algorithm`` adds sentences per algorithm family).
``detail`` may add specifics the evidence shows (the port, the None field, the
sizes), written the same way.

Why a separate module: the registry (:mod:`ddlab.diagnosis.signatures`) and the
data files (:mod:`ddlab.diagnosis.kinds`) both need these types.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

__all__ = ["Signature", "Found", "regex"]


@cache
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
    version: str | None = None
    algorithm: str | None = None
    # values the caller already tried that failed the same way ({"mem_fraction_static":
    # [0.88, 0.92]}) and the host they ran on: advice never proposes them again
    tried: dict = field(default_factory=dict)
    host: str | None = None


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

    def matches_exception(self, type_name: str, text: str, chain_text: str) -> bool:
        if not self.patterns:
            return False
        if self.types and not regex(self.types, 0).fullmatch(type_name):
            return False
        if not any(regex(p).search(text) for p in self.patterns):
            return False
        return self.in_context(chain_text)

    def in_context(self, chain_text: str) -> bool:
        """Every ``context`` regex is in the chain and no ``absent`` one is."""
        return (all(regex(c, re.I | re.M).search(chain_text) for c in self.context)
                and not any(regex(a, re.I | re.M).search(chain_text) for a in self.absent))

    def matches_line(self, msg: str) -> bool:
        return any(regex(p, re.I).search(msg) for p in self.lines)

    def sentences(self, family: str | None) -> tuple[str, ...]:
        """The advice, then the sentences for the algorithm ``family`` (if any)."""
        extra = tuple(text for fam, text in self.by_algorithm if fam == family)
        return self.advice + extra
