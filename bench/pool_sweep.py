"""Benchmark a pool sweep: the same 12-cell sweep on one host, then over a pool of 3.

Usage: ``python bench/pool_sweep.py [--load-delay-s S] [--json-out FILE]``

The hosts are tests/poolkit.py's: three local host profiles on this machine,
each with its own state folder (lock, services), variant port and production
stand-in. The grid is budget {4, 8, 16} x top-k cap {1, 4} x graphs {on, off}
= 12 cells, no baseline cells (a pool measures one baseline per host, so with
them the two sweeps would not have the same cells), one request of 8 tokens a
round, at most 3 rounds, no probe.

``--load-delay-s``: each server waits that long while loading weights
(``--debug-load-delay-s`` of ddlab's target), as a GPU host spends minutes
loading weights and capturing graphs. On a real pool each host brings its own
GPU and CPUs; here the three "hosts" share this machine's cores, so with no
delay the cells compete for the same CPU and the figure says how much of the
machine's CPU a cell needs, not how a pool scales. Run it with both.

Prints the two wall times, their ratio, whether the results have the same shape
(rows, columns, statuses, cell names), and one JSON line with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests"))

import poolkit  # noqa: E402
import sweepkit  # noqa: E402

from ddlab import __version__  # noqa: E402
from ddlab.hosts.pools import load_pool  # noqa: E402
from ddlab.sweeps.results import load_cells  # noqa: E402
from ddlab.sweeps.store import Store  # noqa: E402
from ddlab.sweeps.plan import SweepOptions, plan_sweep  # noqa: E402
from ddlab.sweeps.run import run_sweep  # noqa: E402

GRID = {"budget": [4, 8, 16], "topk_cap": [1, 4], "cuda_graph": [True, False]}


def timed_sweep(pool: poolkit.Pool, host: str, delay_s: float) -> tuple[float, object, str]:
    fixed = {"debug-load-delay-s": delay_s} if delay_s else {}
    plan = plan_sweep("local", GRID, fixed=fixed, baseline=False,
                      hosts=[p.name for p in load_pool(host)])
    started = time.monotonic()
    with Store(pool.store_path) as store:
        sweep = run_sweep(plan, host=host, store=store,
                          options=SweepOptions(**poolkit.CHEAP))
    wall = time.monotonic() - started
    return wall, load_cells(sweep.sweep_id, store=pool.store_path), sweep.status


def shape(frame) -> dict:
    return {"rows": len(frame), "columns": sorted(frame.columns),
            "status": sorted(frame["status"]), "names": sorted(frame["name"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load-delay-s", type=float, default=0.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ddlab-pool-bench-") as tmp:
        with poolkit.pool_for(Path(tmp)) as pool, sweepkit.using(pool.project):
            one_s, one, one_status = timed_sweep(pool, "h1", args.load_delay_s)
            pool_s, many, pool_status = timed_sweep(pool, "trio", args.load_delay_s)
            pool.assert_put_back()
    same = shape(one) == shape(many)
    result = {
        "bench": "pool_sweep", "ddlab": __version__, "cells": len(one),
        "load_delay_s": args.load_delay_s, "one_host_s": round(one_s, 1),
        "pool_of_3_s": round(pool_s, 1), "ratio": round(pool_s / one_s, 3),
        "statuses": {"one": one_status, "pool": pool_status},
        "same_shape": same, "hosts_used": sorted(set(many["host"].dropna())),
        "cells_per_host": {h: int(n) for h, n in many["host"].value_counts().items()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in os.getloadavg()]},
    }
    print(f"12-cell sweep, load delay {args.load_delay_s:g} s: one host {one_s:.1f} s, "
          f"a pool of 3 {pool_s:.1f} s: ratio {pool_s / one_s:.2f}; same shape: {same}; "
          f"cells per host {result['cells_per_host']}")
    print(json.dumps(result))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if same and one_status == pool_status == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
