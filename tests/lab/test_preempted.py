"""Sharing a host: a run another ddlab run took the host from is ``preempted``, never crashed.

Two checkouts on one machine, as a user has them: two project folders (each with
its own params/ and outputs/, no host profile of their own, so both use the
built-in ``local`` whose lock lives in ``~/.cache/ddlab``, per user, not per
checkout), one ``HOME`` for both (a temp one: the tests never touch the real
``~/.cache/ddlab``), the same server port (the repo's base config gives both
30000; here one free port for both). Real ``ddlab`` processes from the venv, run
from each checkout's folder with no ``DDLAB_*`` variable: one sweeps while the
other deploys with ``--force``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from ddlab.sweeps.results import load_cells
from ddlab.sweeps.store import Store
from labkit import DDLAB, REPO, free_port, wait_for
from sweepkit import target_pids

WHEN = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


class Checkout:
    """A project folder as a user's second clone is: params/ and notebooks/, its own outputs/."""

    def __init__(self, folder: Path, port: int, home: Path):
        self.root, self.home = Path(folder), home
        (self.root / "params").mkdir(parents=True)
        shutil.copytree(REPO / "params" / "base", self.root / "params" / "base")
        local = self.root / "params" / "base" / "local.yaml"
        data = yaml.safe_load(local.read_text())
        data["flags"]["port"] = port
        local.write_text(yaml.safe_dump(data, sort_keys=False))
        (self.root / "notebooks").symlink_to(REPO / "notebooks")

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDLAB_")}
        return {**env, "HOME": str(self.home)}

    def start(self, *args: str) -> "Running":
        proc = subprocess.Popen([DDLAB, *args], cwd=self.root, env=self.env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return Running(proc)

    def ddlab(self, *args: str, timeout_s: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([DDLAB, *args], cwd=self.root, env=self.env(), text=True,
                              capture_output=True, timeout=timeout_s)

    @property
    def store(self) -> Store:
        return Store(self.root / "outputs" / "ddlab.sqlite")


class Running:
    """A ddlab process whose stderr is read as it comes (its progress and messages)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.lines = proc, []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)

    def said(self, pattern: str) -> bool:
        return any(re.search(pattern, line) for line in list(self.lines))

    def finish(self, timeout_s: float = 180) -> tuple[int, str, str]:
        with self.proc:  # its pipes closed
            out = self.proc.stdout.read()
            code = self.proc.wait(timeout=timeout_s)
            self.reader.join(timeout=10)
        return code, out, "".join(self.lines)


def _lock(home: Path) -> dict | None:
    try:
        return json.loads((home / ".cache" / "ddlab" / "lock.json").read_text())
    except (FileNotFoundError, ValueError):
        return None


@pytest.fixture
def checkouts(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    a, b = Checkout(tmp_path / "a", port, home), Checkout(tmp_path / "b", port, home)
    yield a, b, port
    for checkout in (a, b):  # whatever a failed test left: the host put back
        checkout.ddlab("restore", "--host", "local", "--force")
    assert not target_pids(port)


@pytest.mark.slow
def test_two_checkouts_one_forces_local_while_the_other_sweeps(checkouts):
    a, b, port = checkouts
    home = a.home
    victim = a.start("sweep", "--budget", "[4, 16]", "--topk-cap", "4", "--cuda-graph", "false",
                     "--requests", "4", "--max-new-tokens", "32", "--ci-target", "0",
                     "--no-bracket", "--timeout", "120")
    # the second cell deployed (the first, the baseline, measured): take the host then
    wait_for(lambda: victim.said(r"cell 2/3") and (_lock(home) or {}).get("variant"),
             timeout_s=120, what="the sweep's second cell to be deployed")
    holder = _lock(home)["holder"]
    assert holder["pid"] == victim.proc.pid and holder["project"] == str(a.root)
    forcer = b.start("deploy", "--host", "local", "--set", "budget=8", "--force")
    code, out, err = forcer.finish()
    assert code == 0, err
    assert "taking over the lock held by" in err and f"pid {victim.proc.pid}" in err

    code, out, err = victim.finish()
    assert code == 9, (out, err)  # preempted: its own exit code, never 3 (crashed)
    said = f"pid {forcer.proc.pid}: `ddlab deploy --host local --set budget=8 --force`"
    assert out.startswith("SWEEP PREEMPTED: 3 cells, 1 measured, 0 crashed"), out
    assert said in out and f"in {b.root}" in out, out  # the verdict names the other run
    assert re.search(f"took the host with --force at {WHEN}", out), out
    assert "crashed (" not in out + err and "signal 15" not in out
    sweep_id = re.search(r"-p resume (\S+)", out)[1]
    cells = load_cells(sweep_id, store=a.store)
    assert list(cells["status"]) == ["measured", "preempted", "pending"], cells[["name", "status"]]
    preempted = cells[cells["status"] == "preempted"].iloc[0]
    assert preempted["kind"] == "preempted" and said in preempted["cause"]
    verdict = json.loads((Path(preempted["run_dir"]) / "verdict.json").read_text())
    assert verdict["state"] == "preempted" and verdict["exit_code"] == 9 and not verdict["crashed"]
    assert verdict["headline"].startswith("PREEMPTED (not a crash)") and said in verdict["cause"]

    assert _lock(home)["holder"]["project"] == str(b.root), "the victim left the host alone"
    done = b.ddlab("restore", "--host", "local")
    assert done.returncode == 0, done.stderr
    resumed = a.ddlab("sweep", "--resume", sweep_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("SWEEP DONE: 3 cells, 3 measured, 0 crashed"), resumed.stdout
    cells = load_cells(sweep_id, store=a.store)
    assert list(cells["status"]) == ["measured"] * 3
    assert _lock(home) is None and not target_pids(port)
    assert not list((home / ".cache" / "ddlab" / "preempted").glob("*.json")), "record read"


@pytest.mark.slow
def test_a_watch_whose_host_another_run_restores_ends_preempted(checkouts):
    a, b, port = checkouts
    home = a.home
    deployed = a.ddlab("deploy", "--host", "local")
    assert deployed.returncode == 0, deployed.stderr
    watch = a.start("watch", "--host", "local", "--probe", "--grace", "60")
    wait_for(lambda: watch.said(r"probed, grace period"), timeout_s=90,
             what="the watch to be in its grace period")
    assert _lock(home)["holder"]["pid"] == watch.proc.pid
    taker = b.start("restore", "--host", "local", "--force")  # takes the host, puts it back
    code, out, err = taker.finish()
    assert code == 0 and "lock released" in out, err

    code, out, err = watch.finish()
    assert code == 9, (out, err)
    verdict = json.loads(out.strip().splitlines()[-1])
    said = f"pid {taker.proc.pid}: `ddlab restore --host local --force`, in {b.root})"
    assert verdict["state"] == "preempted" and verdict["kind"] == "preempted", verdict
    assert said in verdict["cause"] and re.search(f"took the host with --force at {WHEN}",
                                                  verdict["cause"])
    assert verdict["headline"].startswith("PREEMPTED (not a crash): ")
    assert "not putting the host back" in err and not re.search("(?<!NOT )CRASHED", out)
    assert "NOT CRASHED: preempted: another ddlab run took the host" in out
    assert _lock(home) is None and not target_pids(port), "the taker put the host back"


@pytest.mark.slow
def test_a_sweep_told_to_wait_queues_behind_the_run_that_took_its_host_then_finishes(checkouts):
    a, b, port = checkouts
    home = a.home
    # a grid of 1 and its baseline: the host taken while the grid cell is deployed
    victim = a.start("sweep", "--budget", "4", "--topk-cap", "4", "--cuda-graph", "false",
                     "--requests", "4", "--max-new-tokens", "32", "--ci-target", "0",
                     "--no-bracket", "--timeout", "120", "--wait", "120")
    wait_for(lambda: victim.said(r"cell 2/2") and (_lock(home) or {}).get("variant"),
             timeout_s=120, what="the sweep's second cell to be deployed")
    forcer = b.start("deploy", "--host", "local", "--set", "budget=8", "--force")
    assert forcer.finish()[0] == 0
    wait_for(lambda: victim.said(r"waiting for the host\].*in use by .*left by `ddlab deploy --host "
                                 r"local --set budget=8 --force`"),
             timeout_s=60, what="the sweep to queue behind the deploy, naming it")
    assert victim.proc.poll() is None
    assert b.ddlab("restore", "--host", "local").returncode == 0  # the other run is done
    code, out, err = victim.finish()
    assert code == 0, (out, err)
    assert out.startswith("SWEEP DONE: 2 cells, 2 measured, 0 crashed"), out
    assert "the host is free after a wait of" in err
    sweep_id = re.search(r"\[sweep\] (\S+): done in \S+;", err)[1]
    runs = a.store.db.execute("SELECT state FROM runs WHERE sweep_id = ? ORDER BY id",
                              (sweep_id,)).fetchall()
    assert [r[0] for r in runs] == ["measured", "preempted", "measured"]
    assert _lock(home) is None and not target_pids(port)
