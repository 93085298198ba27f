"""CPU time per test, children and services included: a pytest plugin for finding what the
suite spends its cores on (issue 22's 10-minute goal: on 2 cores the suite is CPU-bound).

Each pytest process (each xdist worker) moves itself into a cgroup-v1 ``cpuacct`` group of
its own, so every process it starts (servers, kernels, CLI calls, browsers, detached
ones too) is counted there; around each test the group's ``cpuacct.usage`` is read. A
process that outlives its test (a module fixture's server) is charged to the tests that
run while it lives. Linux with cgroup v1 ``cpuacct`` and root only; elsewhere it says so
and records nothing.

    PYTHONPATH=bench SUITE_CPU=/tmp/cpu.jsonl .venv/bin/python -m pytest -p suite_cpu -n 4 ...
    python bench/suite_cpu.py /tmp/cpu.jsonl        # the top tests and modules by CPU
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/cpuacct")


def _group() -> Path | None:
    name = f"ddlab-suite-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    group = ROOT / name
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as err:
        print(f"suite_cpu: no cpuacct group ({err}): nothing recorded", file=sys.stderr)
        return None
    return group


_STATE: dict = {}


def pytest_configure(config):
    out = os.environ.get("SUITE_CPU")
    if out:
        _STATE["out"], _STATE["group"] = Path(out), _group()


def pytest_runtest_protocol(item, nextitem):
    group = _STATE.get("group")
    if group is None:
        return None
    usage = group / "cpuacct.usage"
    before, started = int(usage.read_text()), time.monotonic()
    from _pytest.runner import runtestprotocol
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runtestprotocol(item, nextitem=nextitem)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    record = {"test": item.nodeid, "cpu_s": (int(usage.read_text()) - before) / 1e9,
              "wall_s": time.monotonic() - started, "ended": time.time(),
              "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    with open(_STATE["out"], "a") as out:
        out.write(json.dumps(record) + "\n")
    return True


def main(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    total = sum(r["cpu_s"] for r in rows)
    print(f"{len(rows)} tests, {total:.0f} CPU-s in all")
    modules = Counter()
    for r in rows:
        modules[r["test"].split("::")[0]] += r["cpu_s"]
    print("by module:")
    for name, cpu in modules.most_common(30):
        print(f"  {cpu:7.1f}  {100 * cpu / total:4.1f} %  {name}")
    print("by test:")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:40]:
        print(f"  {r['cpu_s']:7.1f}  (wall {r['wall_s']:6.1f})  {r['test']}")
    _tail(rows)


def _tail(rows: list[dict]) -> None:
    """When each worker ran its last test: a worker idle long before the others is time a
    long test started late cost the run (records of older runs have no end times)."""
    rows = [r for r in rows if "ended" in r]
    if not rows:
        return
    first = min(r["ended"] - r["wall_s"] for r in rows)
    last = max(r["ended"] for r in rows)
    print(f"run: {last - first:.0f} s from the first test's start to the last test's end")
    for worker in sorted({r["worker"] for r in rows}):
        mine = [r for r in rows if r["worker"] == worker]
        end = max(mine, key=lambda r: r["ended"])
        print(f"  {worker}: {len(mine)} tests, idle for the last {last - end['ended']:.0f} s; "
              f"last: {end['test']} ({end['wall_s']:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1])
