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
    python bench/suite_procs.py --read out.json --by-test target   # whose starts they were
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


def _test_of(pid: str) -> str:
    """The pytest test a process was started under: ``PYTEST_CURRENT_TEST`` in the environment
    it was executed with (pytest sets it in the worker's, and children inherit it); "" when
    absent (the test host's systemd and sshd start theirs with their own environments)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return ""
    for entry in raw.split(b"\0"):
        if entry.startswith(b"PYTEST_CURRENT_TEST="):
            return entry[20:].decode(errors="replace").rsplit(" (", 1)[0]
    return ""


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
                row = seen[(pid, stat[0])] = {"pid": int(pid), "cmd": "",
                                              "base": stat[1] if before else 0, "ticks": stat[1]}
            row["ticks"] = stat[1]
            # read each time: a process first seen between fork and exec shows its parent's
            # command line and environment, then its own once exec has happened
            cmd = _cmdline(pid)
            if (cmd and cmd != row["cmd"]) or "test" not in row:
                row["cmd"], row["test"] = cmd or row["cmd"], _test_of(pid)

    sweep(before=True)
    started = time.monotonic()
    child = subprocess.Popen(command)
    while child.poll() is None:
        sweep(before=False)
        time.sleep(interval)
    wall = time.monotonic() - started
    rows = [{"pid": r["pid"], "cmd": r["cmd"], "test": r.get("test", ""),
             "cpu_s": (r["ticks"] - r["base"]) / TICK}
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


def by_test(rows: list[dict], kind: str, top: int = 40) -> str:
    """Processes of one kind per test module and per test that started them (the costliest)."""
    cpu, count, module_cpu, module_count = Counter(), Counter(), Counter(), Counter()
    for row in rows:
        if kind_of(row["cmd"]) != kind:
            continue
        test = row.get("test") or "(no test in its environment)"
        module = test.split("::")[0]
        cpu[test] += row["cpu_s"]
        count[test] += 1
        module_cpu[module] += row["cpu_s"]
        module_count[module] += 1
    lines = [f"{kind}: {sum(count.values())} processes, {sum(cpu.values()):.0f} CPU-s; by module:"]
    lines += [f"  {spent:7.1f} CPU-s {module_count[m]:4d}  {m}" for m, spent in module_cpu.most_common(top)]
    lines.append("by test:")
    lines += [f"  {spent:7.1f} CPU-s {count[t]:4d}  {t}" for t, spent in cpu.most_common(top)]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the per-process rows here")
    parser.add_argument("--read", help="print the table of rows written before with --json")
    parser.add_argument("--by-test", metavar="KIND",
                        help="also list one kind's processes by the test that started them")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = parser.parse_args(argv)
    if args.read:
        saved = json.loads(Path(args.read).read_text())
        print(table(saved["rows"], saved.get("wall_s")))
        if args.by_test:
            print(by_test(saved["rows"], args.by_test))
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- make check")
    code, wall, rows = sample(command)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "wall_s": wall, "rows": rows}))
    print(table(rows, wall))
    if args.by_test:
        print(by_test(rows, args.by_test))
    return code


if __name__ == "__main__":
    sys.exit(main())
