"""Host load around a measurement, read from the real /proc of this machine."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ddlab.hosts.profiles import load_host
from ddlab.hosts.transport import LocalTransport
from ddlab.lab import hostload

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

BURN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass"


@pytest.fixture
def transport():
    with LocalTransport(load_host("local")) as t:
        yield t


def test_a_sample_reads_the_load_the_cpu_counters_and_the_processes(transport):
    s = hostload.sample(transport)
    assert s.load1 is not None and s.load1 >= 0
    assert s.cores >= 1 and 0 < s.busy <= s.total
    import os

    assert os.getpid() in s.procs and s.procs[os.getpid()][0] == os.getppid()


def test_a_busy_process_is_other_load_unless_it_is_the_measurement(transport):
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        time.sleep(0.3)
        before, ticks_before = _sampled(transport, burner.pid)
        time.sleep(1.5)
        after, ticks_after = _sampled(transport, burner.pid)
    finally:
        burner.kill()
        burner.wait()
    theirs = hostload.window(before, after)
    ours = hostload.window(before, after, ours=(burner.pid,))
    span = after.total - before.total
    # the sample read the burner's ticks at some instant inside each bracket: its share lies between these
    # (on a loaded host a sample takes long enough for the burner to run several ticks while it reads)
    least, most = (ticks_after[0] - ticks_before[1]) / span, (ticks_after[1] - ticks_before[0]) / span
    assert least > 0.03, "the burner ran"
    assert least - 0.002 <= theirs["cpu_other"] - ours["cpu_other"] <= most + 0.002, \
        "the burner's CPU is other load, or the measurement's own"
    assert theirs["load_warning"] and "other processes used" in theirs["load_warning"]
    assert theirs["load_before"] == before.load1 and theirs["cores"] == after.cores


def test_no_proc_gives_no_figures_and_no_warning():
    empty = hostload.parse("")
    assert empty.load1 is None
    window = hostload.window(empty, empty)
    assert window["cpu_other"] is None and window["load_warning"] is None


def _sampled(transport, pid: int):
    """A sample, and the burner's ticks read just before and just after it (independently of ddlab)."""
    first = _ticks(pid)
    sample = hostload.sample(transport)
    return sample, (first, _ticks(pid))


def _ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks, read here independently of ddlab."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().split(") ", 1)[1].split()
    return int(fields[11]) + int(fields[12])
