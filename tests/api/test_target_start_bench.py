"""bench/target_start.py: one start of the embedded target, cold and forked from a warm
parent (issue 22's figure for what a pre-forking launcher would save). Slow: it starts two
targets. Run as its own process, as a reader runs it: it forks, and a pytest worker has
threads of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "bench" / "target_start.py"


@pytest.mark.slow
def test_both_kinds_of_start_reach_ready_and_say_their_cpu():
    done = subprocess.run([sys.executable, str(SCRIPT), "--runs", "1"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    cpu = {kind: float(value) for kind, value in
           re.findall(r"(cold|warm): ready 1/1; CPU-s median ([\d.]+)", done.stdout)}
    assert set(cpu) == {"cold", "warm"}, done.stdout
    # a cold start imports torch in the child; a warm one finds it imported already
    assert cpu["cold"] > cpu["warm"] > 0, done.stdout
