"""What a probe is, checked before anything touches a host.

A probe names one function on the server's path and what to record from it:
``DOTTED.PATH[:MODE]``, e.g.
``sglang.srt.model_executor.cuda_graph_runner.CudaGraphRunner.replay:first=3``.

- ``error`` (the default): one record each time the function raises;
- ``first=N``: one record for each of the first N calls (N at most
  :data:`MAX_RECORDS`, the hook's bound per target per process);
- ``time``: the wall time of each call.

The path travels into a systemd unit's environment and a shell command line, so
it may hold letters, digits, ``_`` and ``.`` only, and every segment must be a
Python identifier: anything else is refused here, with the value and the fix.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError

__all__ = ["EXAMPLE", "MAX_RECORDS", "MODES", "ProbeSpec", "parse_probe", "parse_probes"]

MODES = ("error", "first", "time")
MAX_RECORDS = 50  # the hook writes at most this many records per target per process
EXAMPLE = "ddlab.target.cuda_graph_runner.CudaGraphRunner.replay:first=3"
_PATH_CHARS = re.compile(r"[^A-Za-z0-9_.]")
_FIX = f"write DOTTED.PATH[:MODE], e.g. {EXAMPLE}"


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: the function's dotted path, the mode, and N for ``first=N`` (else None)."""

    target: str
    mode: str = "error"
    n: int | None = None

    def to_text(self) -> str:
        """The probe as :func:`parse_probe` reads it (``error`` spelled out)."""
        mode = f"first={self.n}" if self.mode == "first" else self.mode
        return f"{self.target}:{mode}"

    def to_json(self) -> dict:
        """The entry the hook reads from ``DDLAB_PROBES``."""
        return {"target": self.target, "mode": self.mode, "n": self.n}


def parse_probe(text: str) -> ProbeSpec:
    """``DOTTED.PATH[:MODE]`` -> :class:`ProbeSpec`; a :class:`ConfigError` naming the
    value and the fix for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise _error(text, "empty; name the function to probe")
    if any(ch.isspace() for ch in text):
        raise _error(text, "contains a space; a probe is one word")
    path, colon, mode = text.partition(":")
    _check_path(text, path)
    mode_name, n = _parse_mode(text, mode) if colon else ("error", None)
    return ProbeSpec(path, mode_name, n)


def parse_probes(texts) -> list[ProbeSpec]:
    """Each probe parsed (a lone string is one probe); duplicates dropped, order kept."""
    if isinstance(texts, (str, ProbeSpec)):
        texts = [texts]
    out: list[ProbeSpec] = []
    for text in texts:
        spec = text if isinstance(text, ProbeSpec) else parse_probe(text)
        if spec not in out:
            out.append(spec)
    return out


def _check_path(text: str, path: str) -> None:
    bad = sorted(set(_PATH_CHARS.findall(path)))
    if bad:
        shown = " ".join(repr(ch) for ch in bad)
        raise _error(text, f"{shown} not allowed in the path (letters, digits, _ and . only; "
                           "no shell metacharacters)")
    segments = path.split(".")
    for segment in segments:
        if not segment:
            raise _error(text, "an empty segment in the path (a leading, trailing or double dot)")
        if not segment.isidentifier() or keyword.iskeyword(segment):
            raise _error(text, f"segment {segment!r} is not a Python identifier")
    if len(segments) < 2:
        raise _error(text, "names no function inside a module",
                     fix=f"write MODULE.FUNCTION or MODULE.CLASS.METHOD, e.g. {EXAMPLE}")


def _parse_mode(text: str, mode: str) -> tuple[str, int | None]:
    path = text.partition(":")[0]
    name, equals, count = mode.partition("=")
    if name == "first" and not equals:
        raise _error(text, "mode 'first' needs a count", fix=f"try {path}:first=3")
    if name not in MODES or (name != "first" and equals):
        guess = name if name in MODES else closest(name, MODES)  # time=3: time, without =
        hint = f"did you mean {guess}? " if guess else ""
        raise _error(text, f"mode {mode!r} is unknown; allowed: error, first=N, time",
                     fix=f"{hint}try {path}:error, {path}:first=3 or {path}:time")
    if name != "first":
        return name, None
    if not count.isdigit() or not 0 < int(count) <= MAX_RECORDS:
        raise _error(text, f"first={count}: N must be a whole number from 1 to {MAX_RECORDS} "
                           "(the hook's bound per target per process)",
                     fix=f"try {path}:first=3")
    return name, int(count)


def _error(text, problem: str, *, fix: str = _FIX) -> ConfigError:
    return ConfigError(f"probe {text!r}: {problem}", fix=fix, key="probe", value=text)
