"""ddlab.crashes.signature.needle: the substring test that rules a line out before a
signature's regex runs must never rule out a line the regex matches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddlab.crashes.signature import ascii_lower, needle, regex
from ddlab.diagnosis.logtext import split_lines
from ddlab.diagnosis.signatures import SGLANG, VLLM

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"


@pytest.mark.parametrize("pattern, expected", [
    (r"Not enough space for mamba ping pong idx", "not enough space for mamba ping pong idx"),
    (r"address already in use", "address already in use"),
    (r"CUDA (?:error|out of memory): (\w+)", "cuda "),  # a group ends the run
    (r"Capture cuda graph failed|capture failed", ""),  # a branch at the top: nothing required
    (r"expected at most \d+ argument\(s\)", "expected at most "),
    (r"colou?r map", "r map"),  # an optional letter ends a run: the longer one after it
    (r"Ünïcode ascii part", "code ascii part"),  # a non-ASCII letter ends a run
    (r"[Ee]rror: bad", "rror: bad"),
])
def test_the_needle_is_the_longest_run_the_pattern_requires(pattern, expected):
    assert needle(pattern) == expected


@pytest.mark.parametrize("msg", ["CUDA ERROR: out of memory at Kernel", "ſegfault", "a \u212aelvin line"])
def test_a_line_not_in_ascii_is_left_to_the_regex(msg):
    low = ascii_lower(msg)
    assert (low is None) == (not msg.isascii())
    if low is not None:
        assert low == msg.lower()


def test_no_fixture_line_a_signature_matches_is_ruled_out_by_its_needle():
    """Every line pattern of both families against every line of the real-log fixtures: the
    needle test says no only where the regex says no."""
    patterns = {p for registry in (SGLANG, VLLM) for s in registry.signatures for p in s.lines}
    lines = {line.msg for path in sorted((LOGS / "real").rglob("*.log"))
             for line in split_lines(path.read_text(encoding="utf-8", errors="replace"))}
    matched = 0
    for pattern in patterns:
        compiled, lit = regex(pattern, re.I), needle(pattern)
        for msg in lines:
            if compiled.search(msg):
                matched += 1
                low = ascii_lower(msg)
                assert low is None or lit in low, (pattern, lit, msg)
    assert matched > 100  # the fixtures do exercise the patterns


def test_a_registry_asks_each_line_once_as_each_signature_would():
    """Registry.line_hits (needles first, one pass) names the signatures Signature.matches_line
    names, in the registry's order, on every line of the real-log fixtures."""
    lines = {line.msg for path in sorted((LOGS / "real").rglob("*.log"))[::4]
             for line in split_lines(path.read_text(encoding="utf-8", errors="replace"))}
    lines |= {"Not enough space for mamba ping pong idx ſ", "Address already in use \u212a"}
    for registry in (SGLANG, VLLM):
        for msg in lines:
            assert registry.line_hits(msg) == [s for s in registry.signatures if s.matches_line(msg)], msg
