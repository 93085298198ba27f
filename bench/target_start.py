"""What one start of the embedded target costs, cold and forked from a warm parent (issue 22).

The suite starts the target about 340 times (bench/suite_procs.py), and on 2 cores its wall
time is its CPU over two. A cold start is ``python -m ddlab.target`` from exec to ``/health``
answering, then SIGTERM: mostly ``import torch``. A warm start forks a parent that imported
torch and the target's modules already, and runs the same ``ddlab.target.main`` in the child:
what a pre-forking launcher (a zygote) would pay per start. Each start's CPU is the child's
own (``wait4``'s rusage), user + system. The two kinds alternate, so a load change hits both.

    python bench/target_start.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import sys
import time
import urllib.request

ARGS = ["--speculative-algorithm", "DDTREE"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(port: int, timeout_s: float = 120.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _stop(pid: int) -> float:
    """SIGTERM, reap; the child's CPU seconds (user + system)."""
    os.kill(pid, signal.SIGTERM)
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


def cold() -> tuple[bool, float, float]:
    """(ready, wall s, CPU s) of one `python -m ddlab.target` start."""
    port, started = _free_port(), time.monotonic()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:  # posix_spawn, not Popen: _stop reaps it with wait4 to read its rusage
        pid = os.posix_spawn(sys.executable, [sys.executable, "-m", "ddlab.target", "--port", str(port), *ARGS],
                             os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    finally:
        os.close(devnull)
    ready, wall = _wait_ready(port), time.monotonic() - started
    return ready, wall, _stop(pid)


def warm() -> tuple[bool, float, float]:
    """(ready, wall s, CPU s) of one start forked from this (warm) process."""
    import ddlab.target  # the warm parent: torch and the server imported once, here
    import ddlab.target.server  # noqa: F401

    port, started = _free_port(), time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: the same main a cold start runs
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            ddlab.target.main(["--port", str(port), *ARGS])
        finally:
            os._exit(0)
    ready, wall = _wait_ready(port), time.monotonic() - started
    return ready, wall, _stop(pid)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="starts of each kind (default 5)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results: dict[str, list[tuple[bool, float, float]]] = {"cold": [], "warm": []}
    for _ in range(args.runs):
        for kind, start in (("cold", cold), ("warm", warm)):
            results[kind].append(start())
    print(f"{args.runs} starts of each kind, alternating; load average {load:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end, {os.cpu_count()} cores")
    for kind, rows in results.items():
        cpu = sorted(row[2] for row in rows)
        wall = sorted(row[1] for row in rows)
        print(f"  {kind}: ready {sum(row[0] for row in rows)}/{len(rows)}; CPU-s median "
              f"{statistics.median(cpu):.2f} (min {cpu[0]:.2f}, max {cpu[-1]:.2f}); wall s median "
              f"{statistics.median(wall):.2f} (min {wall[0]:.2f}, max {wall[-1]:.2f})")
    return 0 if all(row[0] for rows in results.values() for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
