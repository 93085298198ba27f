"""How busy the host was while a cell was measured: a figure's context.

A throughput measured while something else ate half the host's CPU is not the
variant's throughput. Around each measurement :func:`sample` reads, in one
command on the host (local or over SSH), the 1-minute load average, the CPU
counters of ``/proc/stat`` and every process's CPU time; :func:`window` turns
two samples into the share of the host's CPU that *other* processes used
meanwhile (the server's process tree and, on the local host, this measuring
process excluded) and a warning when it is large or the host was overloaded.
Linux only (``/proc``); elsewhere the figures are None and nothing warns.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from ddlab.core.errors import DdlabError
from ddlab.hosts.transport import LocalTransport

__all__ = ["LoadSample", "sample", "window", "OTHER_CPU_WARN"]

# other processes above this share of all cores while measuring: the figure is suspect
OTHER_CPU_WARN = 0.10

_SCRIPT = ('cat /proc/loadavg; grep "^cpu " /proc/stat; getconf _NPROCESSORS_ONLN 2>/dev/null || echo 0; '
           'echo ---; cat /proc/[0-9]*/stat 2>/dev/null; true')


@dataclass
class LoadSample:
    when: float
    load1: float | None = None
    busy: int = 0          # jiffies, all cores
    total: int = 0
    cores: int = 0
    procs: dict[int, tuple[int, int]] = field(default_factory=dict)  # pid -> (ppid, cpu jiffies)


def sample(transport) -> LoadSample:
    """The host's load now; an empty sample (figures None) where /proc cannot be read."""
    now = time.monotonic()
    try:
        done = transport.run(["sh", "-c", _SCRIPT], check=False, timeout_s=20)
    except DdlabError:
        return LoadSample(when=now)
    return parse(done.stdout, when=now)


def parse(text: str, *, when: float = 0.0) -> LoadSample:
    head, _, stats = text.partition("\n---\n")
    lines = head.splitlines()
    out = LoadSample(when=when)
    try:
        out.load1 = float(lines[0].split()[0])
        ticks = [int(x) for x in lines[1].split()[1:]]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)   # idle + iowait
        out.total = sum(ticks[:8])                               # guest time is in user already
        out.busy = out.total - idle
        out.cores = int(lines[2])
    except (IndexError, ValueError):
        return LoadSample(when=when)
    for line in stats.splitlines():
        close = line.rfind(")")  # the command name may hold spaces and parentheses
        fields = line[close + 2:].split() if close > 0 else []
        if len(fields) > 12 and line.split(" ", 1)[0].isdigit():
            out.procs[int(line.split(" ", 1)[0])] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return out


def _tree(procs: dict[int, tuple[int, int]], roots: set[int]) -> set[int]:
    """``roots`` and all their descendants."""
    found = {p for p in roots if p in procs}
    grew = True
    while grew:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return found


def window(before: LoadSample, after: LoadSample, *, ours=()) -> dict:
    """Load figures of the time between two samples. ``ours``: pids whose process
    trees are the measurement itself (the server; the client when it runs there)."""
    out = {"load_before": before.load1, "load_after": after.load1, "cores": after.cores or None,
           "cpu_busy": None, "cpu_other": None, "load_warning": None}
    span = after.total - before.total
    if before.load1 is None or after.load1 is None or span <= 0:
        return out
    out["cpu_busy"] = round((after.busy - before.busy) / span, 3)
    mine = _tree(after.procs, {p for p in ours if p})
    own = sum(after.procs[p][1] - before.procs.get(p, (0, 0))[1] for p in mine)
    other = max(0.0, (after.busy - before.busy - own) / span)
    out["cpu_other"] = round(other, 3)
    warnings = []
    if other > OTHER_CPU_WARN:
        warnings.append(f"other processes used {other:.0%} of the host's CPU while it was measured")
    cores = after.cores or 0
    moved = abs(after.load1 - before.load1) >= max(1.0, 0.5 * cores)  # a short cell's own
    # server adds little to a 1-minute average: a move this large is something else
    if cores and (moved or max(before.load1, after.load1) > cores):
        warnings.append(f"load average {before.load1:.2f} -> {after.load1:.2f} on {cores} cores")
    out["load_warning"] = "; ".join(warnings) or None
    return out


def local_pid(transport) -> int:
    """This process's pid when it runs on the host measured (the client's CPU is ours)."""
    return os.getpid() if isinstance(transport, LocalTransport) else 0
