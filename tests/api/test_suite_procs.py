"""bench/suite_procs.py: CPU charged to the kind of process that spent it (issue 22's
profile of the suite by process kind)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("suite_procs", Path(__file__).parents[2] / "bench" / "suite_procs.py")
suite_procs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite_procs)

pytestmark = pytest.mark.slow  # a benchmark's tool, not ddlab: make test


@pytest.mark.parametrize("cmd, kind", [
    ("/repo/.venv/bin/python -m ddlab.target --port 31000 --speculative-algorithm DDTREE", "target"),
    ("/repo/.venv/bin/python -m ddlab.target --dialect vllm --port 31001", "target (vLLM dialect)"),
    ("/repo/.venv/bin/python /repo/.venv/bin/ddlab watch --host local", "ddlab CLI"),
    ("/repo/.venv/bin/python -m ipykernel_launcher -f /tmp/kernel-1.json", "Jupyter kernel"),
    ("/repo/.venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))", "pytest worker"),
    ("sshd: root@notty", "sshd / ssh"),
    ("/bin/sleep 5", "other"),
])
def test_a_command_line_is_charged_to_its_kind(cmd, kind):
    assert suite_procs.kind_of(cmd) == kind


def test_a_busy_child_is_seen_with_its_cpu_and_the_table_sums_it():
    busy = "import time\nend = time.process_time() + 0.8\nwhile time.process_time() < end: pass"
    code, wall, rows = suite_procs.sample([sys.executable, "-c", busy], interval=0.05)
    assert code == 0 and wall >= 0.8
    mine = [r for r in rows if "process_time" in r["cmd"]]
    assert len(mine) == 1 and 0.6 <= mine[0]["cpu_s"] <= wall + 0.1, mine
    assert "other Python" in suite_procs.table(mine, wall)




def test_a_process_is_charged_to_the_test_it_was_started_under():
    """Seen first as the shell (no test in its environment), then as what it executed: the row
    is the executed command's, with the test from its own environment (under a loaded suite the
    first sight often falls between fork and exec)."""
    busy = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    script = 'sleep 0.3; PYTEST_CURRENT_TEST="tests/x/test_a.py::test_b (call)" exec "$0" -c "$1"'
    code, _, rows = suite_procs.sample(["sh", "-c", script, sys.executable, busy], interval=0.05)
    mine = [r for r in rows if "process_time" in r["cmd"]]
    assert code == 0 and len(mine) == 1, mine
    assert mine[0]["cmd"].startswith(sys.executable) and mine[0]["test"] == "tests/x/test_a.py::test_b", mine
    listing = suite_procs.by_test(mine, "other Python")
    assert "   1  tests/x/test_a.py\n" in listing and "tests/x/test_a.py::test_b" in listing, listing
