"""Processes of the test harnesses, by pid from /proc, never by name: the one copy that
the test host (host.py), the Slurm cluster (slurm.py, and its keeper, which runs this
file's folder without the tests on sys.path) and their tests share. Stdlib only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["children", "descendants", "alive", "kill_quietly", "exe", "ns_pid", "remove_stale"]


def children(pid: int) -> list[int]:
    """Direct children of pid (every thread's), from /proc."""
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids += [int(p) for p in fh.read().split()]
    except OSError:
        pass
    return kids


def descendants(pid: int) -> list[int]:
    """Children, their children, and so on (zombies included)."""
    out, todo = [], children(pid)
    while todo:
        kid = todo.pop()
        out.append(kid)
        todo += children(kid)
    return out


def alive(pid: int) -> bool:
    """True while pid runs (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill_quietly(pid: int, sig: int) -> None:
    """``os.kill``, where a process already gone (or not ours) is no error."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def ns_pid(pid: int) -> int:
    """The pid that `pid` has inside its own (innermost) pid namespace."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except OSError:
        pass
    return 0


def remove_stale(base_dir: Path) -> None:
    """Remove the folders under ``base_dir`` whose owning test process (``owner.pid``) is
    gone: a run killed before its teardown (whatever it started died with it)."""
    for entry in base_dir.iterdir():
        try:
            owner = int((entry / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:
            pass
