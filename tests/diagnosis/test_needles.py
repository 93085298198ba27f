"""ddlab.crashes.signature.needle: the substring test that rules a line out before a
signature's regex runs must never rule out a line the regex matches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddlab.crashes.signature import Screen, ascii_lower, branches, needle, regex
from ddlab.diagnosis import logtext, vllm_log
from ddlab.diagnosis.logtext import split_lines
from ddlab.diagnosis.signatures import SGLANG, VLLM
from fieldkit import quarter, quarters

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


@pytest.mark.parametrize("q", quarters())
def test_no_fixture_line_a_signature_matches_is_ruled_out_by_its_needle(q):
    """Every line pattern of both families against every line of the real-log fixtures (a
    quarter at a time): the needle test says no only where the regex says no."""
    patterns = {p for registry in (SGLANG, VLLM) for s in registry.signatures for p in s.lines}
    lines = {line.msg for path in quarter(sorted((LOGS / "real").rglob("*.log")), q)
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


@pytest.mark.slow
def test_a_registry_asks_each_line_once_as_each_signature_would():
    """Registry.line_hits (needles first, one pass) names the signatures Signature.matches_line
    names, in the registry's order, on every line of the real-log fixtures."""
    lines = {line.msg for path in sorted((LOGS / "real").rglob("*.log"))[::4]
             for line in split_lines(path.read_text(encoding="utf-8", errors="replace"))}
    lines |= {"Not enough space for mamba ping pong idx ſ", "Address already in use \u212a"}
    for registry in (SGLANG, VLLM):
        for msg in lines:
            assert registry.line_hits(msg) == [s for s in registry.signatures if s.matches_line(msg)], msg


# --- Screen: a regex of alternatives, each asked only where its needle is --------------------

@pytest.mark.parametrize("pattern, parts", [
    (r"a|b(c|d)|e", ["a", "b(c|d)", "e"]),  # a group's own branches stay inside it
    (r"[|]x|\|y|z", ["[|]x", r"\|y", "z"]),  # a class's and an escaped bar are no branch
    (r"[]|]p|[^]|]q|r", ["[]|]p", "[^]|]q", "r"]),  # a "]" first in a class is a literal
    (r"(?:u|v)w|(?<=\S)x", ["(?:u|v)w", r"(?<=\S)x"]),
    (r"one", ["one"]),
])
def test_branches_split_a_pattern_at_its_top_level_bars_only(pattern, parts):
    assert branches(pattern) == parts
    assert "|".join(parts) == pattern


@pytest.mark.parametrize("pattern", [r"(?i)a|b", r"(a)|\1b", r"(?P<n>a)|(?P=n)"])
def test_a_screen_refuses_what_its_alternatives_alone_would_read_otherwise(pattern):
    with pytest.raises(ValueError, match="Screen takes no"):
        Screen(re.compile(pattern))
    with pytest.raises(ValueError, match="Screen takes no"):
        Screen(re.compile(r"a # a comment | b", re.X))


def test_a_screen_answers_as_its_regex_on_hard_lines():
    screen = Screen(re.compile(r"\bsegfault\b|kelvin \d+|^\s*\[\d{4}\]|Capture\b.{0,40}\bcuda graph", re.I))
    for line, hit in [("a SEGFAULT here", True), ("segfaults", False), ("\u017fegfault", True),  # ſ folds to s
                      ("\u212aelvin 3", True), ("  [2025] x", True), ("[20251]", False),
                      ("Capture the cuda graph", True), ("capture" + "x" * 50 + " cuda graph", False), ("", False)]:
        assert screen.hit(line) is hit is bool(screen.regex.search(line)), line


@pytest.mark.slow
def test_the_librarys_screens_answer_as_their_regexes_on_the_fixture_lines():
    """Every Screen diagnosis builds (the family marks, both dialects' phase markers) against
    every raw line and every peeled message of a quarter of the real-log fixtures."""
    screens = [vllm_log._VLLM_SCREEN, vllm_log._SGLANG_SCREEN,
               *(s for _, s in logtext._PHASE_SCREENS), *(s for _, s in vllm_log._PHASE_SCREENS)]
    texts = [path.read_text(encoding="utf-8", errors="replace")
             for corpus in ("real", "vllm-real") for path in sorted((LOGS / corpus).rglob("*.log"))[::4]]
    lines = {raw for text in texts for raw in text.splitlines()}
    lines |= {line.msg for text in texts for line in split_lines(text)}
    hits = 0
    for screen in screens:
        for line in lines:
            said = screen.hit(line)
            assert said is (screen.regex.search(line) is not None), (screen.regex.pattern[:60], line)
            hits += said
    assert hits > 1000  # the fixtures do exercise the screens
