"""CPU by process kind while a command runs: what the suite's cores go to (issue 22).

``bench/suite_cpu.py`` charges CPU to tests; this charges it to the kind of process that spent
it: the pytest workers themselves, target servers (ddlab's embedded server, each start mostly
``import torch``), ``ddlab`` CLI calls, Jupyter kernels, papermill, the browser, systemd, sshd.
It samples ``/proc`` every 0.25 s while the command runs and keeps, per process, the CPU it
had used when last seen (minus what it had used before the command began), so a process
that lives less than a sample is missed and the last quarter second of each is not counted:
the totals are a floor. Linux only.

    python bench/suite_procs.py -- make check          # runs it, then prints the table
    python bench/suite_procs.py --json out.json -- .venv/bin/python -m pytest -n 4 ...
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
# (kind, regex over the command line), first match wins
KINDS = (
    ("target (vLLM dialect)", r"-m ddlab\.target\b.*--dialect vllm|ddlab target .*--dialect vllm"),
    ("target", r"-m ddlab\.target\b|ddlab target\b"),
    ("pytest worker", r"-m pytest|exec\(eval\(sys\.stdin|^\S*python\S* -u -c "),
    ("Jupyter kernel", r"ipykernel"),
    ("papermill", r"papermill"),
    ("JupyterLab", r"jupyter[-_ ]?lab|jupyter-server|jupyter_server"),
    ("nbconvert", r"nbconvert"),
    ("browser", r"chrom|playwright"),
    ("ddlab CLI", r"bin/ddlab\b|-m ddlab(?:\.cli)?\b"),
    ("sshd / ssh", r"^(?:sshd|ssh)\b|/sshd\b|/ssh "),
    ("systemd / journald", r"systemd|journal"),
    ("Slurm / munge", r"slurm|munge|srun|sbatch|squeue|scancel"),
    ("other Python", r"python"),
)


def _stat(pid: str) -> tuple[str, int] | None:
    """(start time, CPU ticks) of a live process, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return rest[19], int(rest[11]) + int(rest[12])


def _cmdline(pid: str) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:400]


def sample(command: list[str], interval: float = 0.25) -> tuple[int, float, list[dict]]:
    """Run ``command`` while sampling; its exit code, wall seconds and one row per process."""
    seen: dict[tuple[str, str], dict] = {}

    def sweep(before: bool) -> None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            stat = _stat(pid)
            if stat is None:
                continue
            row = seen.get((pid, stat[0]))
            if row is None:
                row = seen[(pid, stat[0])] = {"pid": int(pid), "cmd": _cmdline(pid),
                                              "base": stat[1] if before else 0, "ticks": stat[1]}
            row["ticks"] = stat[1]
            if not row["cmd"]:  # read again once exec has happened
                row["cmd"] = _cmdline(pid)

    sweep(before=True)
    started = time.monotonic()
    child = subprocess.Popen(command)
    while child.poll() is None:
        sweep(before=False)
        time.sleep(interval)
    wall = time.monotonic() - started
    rows = [{"pid": r["pid"], "cmd": r["cmd"], "cpu_s": (r["ticks"] - r["base"]) / TICK}
            for r in seen.values() if r["ticks"] > r["base"] and r["pid"] != os.getpid()]
    return child.returncode, wall, rows


def kind_of(cmd: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, cmd):
            return kind
    return "other"


def table(rows: list[dict], wall: float | None = None) -> str:
    cpu, count = Counter(), Counter()
    for row in rows:
        kind = kind_of(row["cmd"])
        cpu[kind] += row["cpu_s"]
        count[kind] += 1
    total = sum(cpu.values())
    lines = [f"{total:.0f} CPU-s seen in {len(rows)} processes"
             + (f", {wall:.0f} s of wall time ({os.cpu_count()} cores)" if wall else "")]
    for kind, spent in cpu.most_common():
        lines.append(f"  {spent:8.1f} CPU-s  {100 * spent / total:5.1f} %  {count[kind]:5d} processes"
                     f"  {spent / count[kind]:5.2f} each  {kind}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the per-process rows here")
    parser.add_argument("--read", help="print the table of rows written before with --json")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = parser.parse_args(argv)
    if args.read:
        saved = json.loads(Path(args.read).read_text())
        print(table(saved["rows"], saved.get("wall_s")))
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- make check")
    code, wall, rows = sample(command)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "wall_s": wall, "rows": rows}))
    print(table(rows, wall))
    return code


if __name__ == "__main__":
    sys.exit(main())
