"""ddlab.diagnosis.long_lines: a pasted line past LIMIT characters is read by its head and its tail,
so one huge exception message (round 98's h98006: shutil.Error listing every file aiter could not copy,
1.7 MB on one line) neither slows every signature's search nor lands whole in the evidence, and the
reading stays what the whole line gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlab.diagnosis.facts import parse_facts
from ddlab.diagnosis.logtext import split_lines
from ddlab.diagnosis.long_lines import HEAD, LIMIT, TAIL, bounded
from fieldkit import real

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"


@pytest.mark.parametrize("size", [0, 1, LIMIT - 1, LIMIT])
def test_a_line_up_to_the_limit_is_kept_whole(size):
    text = ("0123456789" * (size // 10 + 1))[:size]
    assert bounded(text) == text


def test_a_longer_line_keeps_its_head_and_tail_and_says_how_much_it_left_out():
    text = "H" * HEAD + "m" * 1_000_000 + "T" * TAIL
    kept = bounded(text)
    assert kept.startswith("H" * HEAD + " [") and kept.endswith("] " + "T" * TAIL)
    assert "m" not in kept.replace("left out", "")
    assert "1,000,000 characters" in kept
    assert len(kept) < LIMIT + 100


def _copy_error(n: int) -> str:
    """shutil.copytree's Error(errors) as Python prints it: one line, one tuple per file."""
    items = ", ".join(f"('/src/ck/f{i}.hpp', '/aiter/jit/build/ck/f{i}.hpp', \"[Errno 13] Permission denied: "
                      f"'/aiter/jit/build/ck/f{i}.hpp'\")" for i in range(n))
    return f"shutil.Error: [{items}]"


def test_split_lines_bounds_each_line_and_keeps_the_line_count():
    huge = _copy_error(20_000)
    assert len(huge) > 20 * LIMIT
    lines = split_lines(f"first line\n{huge}\nlast line\n")
    assert [ln.no for ln in lines] == [1, 2, 3]
    assert lines[1].msg.startswith("shutil.Error: [('/src/ck/f0.hpp'")
    assert lines[1].msg.endswith("'/aiter/jit/build/ck/f19999.hpp'\")]")
    assert max(len(ln.text) for ln in lines) < LIMIT + 100


def test_the_longest_server_args_line_of_the_fixtures_is_read_whole():
    longest = max((ln for path in sorted((LOGS / "sglang").glob("*.log"))
                   for ln in path.read_text(errors="replace").splitlines() if "server_args=ServerArgs(" in ln), key=len)
    assert len(longest) < LIMIT
    [line] = split_lines(longest)
    assert line.text == longest.rstrip("\r\n")
    assert parse_facts([line])  # the args it states are read


def test_the_1_7_mb_copy_error_reads_as_labelled_and_its_evidence_is_bounded():
    assert max(map(len, (LOGS / "real" / "h98006.log").read_text().splitlines())) > 25 * LIMIT
    found = real("h98006")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "dependency_mismatch", "launch", "aiter_jit_dir_denied")
    assert max(map(len, found.evidence)) < LIMIT + 100
    assert any("characters of this line ...]" in line for line in found.evidence)
