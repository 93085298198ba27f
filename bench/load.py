"""Benchmark a long sweep: a 50-cell sweep runs to the end and leaks nothing.

Usage: ``python bench/load.py [--cells N] [--kinds process-local,systemd-ssh] [--json-out FILE]``
(root for ``systemd-ssh``: it boots the real test host of tests/testhost/).

The suite proves the behaviour on a few cells (tests/reliability/test_load.py);
this is the long figure: N cells (budget x top-k cap of the embedded target,
one request of 8 tokens each, no probe, so the target's start-up dominates)
against the local process manager and the systemd test host over SSH. Counted
before and after (after a one-cell warm-up sweep, so lazily created things
already exist): this process's fds, threads, children and listening sockets,
target servers on the sweep's port, the test host's sshd sessions; sampled
during the sweep: sshd sessions (one persistent connection, however many cells).

Prints a card per kind, then one JSON line with every figure, the machine's
load before and after, and the configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

import faultkit as fk  # noqa: E402

from ddlab import __version__  # noqa: E402
from ddlab.sweeps.store import Store  # noqa: E402
from ddlab.sweeps.plan import SweepOptions, plan_sweep  # noqa: E402
from ddlab.sweeps.run import run_sweep  # noqa: E402
from testhost.host import TestHost, unavailable_reason  # noqa: E402


def _grid(cells: int) -> dict:
    caps = [1, 2, 3, 4, 5]
    return {"budget": list(range(1, max(1, cells // len(caps)) + 1)), "topk_cap": caps}


def _sweep(bench, grid: dict):
    with bench.using(), Store(bench.store_path) as store:
        plan = plan_sweep(bench.base, grid, baseline=False)
        sweep = run_sweep(plan, host=bench.host, options=SweepOptions(**fk.CHEAP), store=store)
        return sweep, store.cells(sweep.sweep_id)


def run_kind(kind: str, cells: int, folder: Path) -> dict:
    testhost = TestHost().start() if kind == "systemd-ssh" else None
    try:
        with fk.bench_for(folder / kind, testhost) as bench:
            warm, _ = _sweep(bench, {"budget": [2]})
            before = fk.settled(fk.resources(bench), bench, timeout_s=5)
            sessions, stop = [], threading.Event()

            def sample():
                while not stop.wait(0.5):
                    if testhost is not None:
                        sessions.append(len(testhost.sshd_session_pids()))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.monotonic()
            try:
                sweep, rows = _sweep(bench, _grid(cells))
            finally:
                stop.set()
                sampler.join()
            took_s = time.monotonic() - started
            after = fk.settled(before, bench)
            return {"kind": kind, "cells": len(rows), "status": sweep.status,
                    "measured": sum(r["status"] == "measured" for r in rows),
                    "wall_s": round(took_s, 1), "s_per_cell": round(took_s / max(1, len(rows)), 2),
                    "leaked": {k: (before[k], after[k]) for k in before if before[k] != after[k]},
                    "ssh_sessions_max": max(sessions, default=0),
                    "ssh_sessions_before": before.get("ssh_sessions")}
    finally:
        if testhost is not None:
            testhost.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=50)
    parser.add_argument("--kinds", default="process-local,systemd-ssh")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if "systemd-ssh" in kinds and unavailable_reason():
        print(f"skipping systemd-ssh: {unavailable_reason()}", file=sys.stderr)
        kinds.remove("systemd-ssh")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ddlab-bench-load-") as tmp:
        results = [run_kind(kind, args.cells, Path(tmp)) for kind in kinds]
    record = {"bench": "load", "ddlab": __version__, "machine": platform.node(),
              "cpus": os.cpu_count(), "loadavg_before": load_before,
              "loadavg_after": os.getloadavg(), "options": fk.CHEAP, "results": results}
    for r in results:
        print(f"{r['kind']}: {r['cells']} cells, {r['measured']} measured, {r['status']}; "
              f"{r['wall_s']} s ({r['s_per_cell']} s/cell); leaked: {r['leaked'] or 'nothing'}; "
              f"ssh sessions during: max {r['ssh_sessions_max']} (before {r['ssh_sessions_before']})")
    line = json.dumps(record)
    if args.json_out:
        Path(args.json_out).write_text(line + "\n")
    print(line)
    ok = all(r["status"] == "done" and not r["leaked"] and r["measured"] == r["cells"] for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
