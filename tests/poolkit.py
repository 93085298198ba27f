"""A pool of hosts on this machine, for the pool sweep tests and bench/pool_sweep.py
(a helper, not a test module).

:func:`make_pool` is a :class:`sweepkit.Project` with ``n`` local host profiles
``h1``..``hN`` and a pool profile ``trio`` naming them. Each host is a real
place of its own as ddlab sees it: its own ``state_dir`` (so its own lock,
process-manager services and installs), its own port for variants through the
profile's ``overrides``, and its own production stand-in (``baseline_service``,
a process that just runs) that a sweep must stop and put back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import yaml

import sweepkit
from ddlab.hosts import connect, manager_for
from ddlab.hosts.profiles import load_host
from ddlab.hosts.services import ServiceSpec
from labkit import free_port, wait_for

PYTHON = sys.executable
CHEAP = {"requests": 1, "max_new_tokens": 8, "warmup": 0, "probe": False, "grace_s": 0.0,
         "timeout_s": 60.0, "max_rounds": 3, "bracket": False}


@dataclasses.dataclass
class Pool:
    project: sweepkit.Project
    hosts: list[str]
    ports: dict[str, int]
    baselines: dict[str, str]

    @property
    def store_path(self) -> Path:
        return self.project.store_path

    def env(self) -> dict:
        return self.project.env()

    def state(self, host: str) -> Path:
        return self.project.root.parent / f"state-{host}"

    def manager(self, host: str):
        with sweepkit.using(self.project):
            return manager_for(connect(load_host(host)))

    def baseline_active(self, host: str) -> bool:
        return self.manager(host).state(self.baselines[host]).active_state == "active"

    def variants(self, host: str) -> list[str]:
        folder = self.state(host) / "services"
        return sorted(p.name for p in folder.glob("ddlab-local*")) if folder.is_dir() else []

    def lock(self, host: str) -> Path:
        return self.state(host) / "lock.json"

    def assert_put_back(self, said: str = "") -> None:
        """On every host: the baseline runs, no variant is installed, no lock is left,
        no server answers on the host's variant port. ``said``: the sweep's stderr, shown
        with a failure."""
        tail = f"\n--- the sweep's stderr, its end ---\n{said[-6000:]}" if said else ""
        for host in self.hosts:
            assert self.baseline_active(host), f"{host}: its baseline does not run again{tail}"
            assert self.variants(host) == [], f"{host}: variants left: {self.variants(host)}{tail}"
            assert not self.lock(host).exists(), f"{host}: lock left: {self.lock(host).read_text()}{tail}"
            wait_for(lambda: not sweepkit.target_pids(self.ports[host]), timeout_s=15,
                     what=f"no server left on {host}'s port")

    def close(self) -> None:
        for host in self.hosts:
            with contextlib.suppress(Exception):
                manager = self.manager(host)
                for name in self.variants(host):
                    manager.remove(name)
                manager.remove(self.baselines[host])


def make_pool(folder: Path, n: int = 3, *, base_overrides: dict | None = None) -> Pool:
    """``n`` hosts h1..hN and the pool profile ``trio`` (module docstring); each host's
    baseline started. ``base_overrides``: flags for the project's ``local`` base."""
    project = sweepkit.make_project(Path(folder))
    if base_overrides:
        path = project.root / "params" / "base" / "local.yaml"
        data = yaml.safe_load(path.read_text())
        data["flags"].update(base_overrides)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    tag = uuid.uuid4().hex[:6]
    hosts = [f"h{i}" for i in range(1, n + 1)]
    ports, baselines = {}, {}
    for host in hosts:
        ports[host] = free_port()
        baselines[host] = f"ddlab-test-prod-{tag}-{host}"
        profile = {"state_dir": str(project.root.parent / f"state-{host}"),
                   "baseline_service": baselines[host], "overrides": {"port": ports[host]},
                   "description": f"test pool host {host}"}
        (project.root / "params" / "hosts" / f"{host}.yaml").write_text(yaml.safe_dump(profile))
    (project.root / "params" / "hosts" / "trio.yaml").write_text(yaml.safe_dump({"pool": hosts}))
    pool = Pool(project=project, hosts=hosts, ports=ports, baselines=baselines)
    for host in hosts:
        manager = pool.manager(host)
        manager.install(ServiceSpec(baselines[host], [PYTHON, "-c", "import time; time.sleep(3600)"],
                                    workdir="/"))
        manager.start(baselines[host])
        wait_for(lambda h=host: pool.baseline_active(h), what=f"{host}'s baseline to run")
    return pool


@contextlib.contextmanager
def pool_for(folder: Path, n: int = 3, **kwargs):
    pool = make_pool(folder, n, **kwargs)
    try:
        yield pool
    finally:
        pool.close()


def sweep_script(pool: Pool, grid: dict, host="trio", options: dict | None = None) -> list[str]:
    """argv of a separate process that runs a sweep of ``grid`` over ``host``. SIGUSR1
    makes it print every thread's stack on stderr (:func:`finish`, for a wind-down that
    does not end)."""
    code = textwrap.dedent(f"""
        import faulthandler, signal
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        from ddlab.hosts.pools import load_pool
        from ddlab.sweeps.store import Store
        from ddlab.sweeps.plan import SweepOptions, plan_sweep
        from ddlab.sweeps.run import run_sweep
        hosts = [p.name for p in load_pool({host!r})]
        plan = plan_sweep("local", {grid!r}, hosts=hosts)
        run_sweep(plan, host={host!r}, options=SweepOptions(**{options or CHEAP!r}),
                  store=Store({str(pool.store_path)!r}))
    """)
    return [PYTHON, "-c", code]


def finish(proc: subprocess.Popen, timeout_s: float = 120) -> str:
    """Wait for a :func:`sweep_script` process that was sent a signal; its stderr. One
    that does not end in time is made to print its threads' stacks, killed, and the
    test fails with them (what a hang in CI leaves to read)."""
    try:
        return proc.communicate(timeout=timeout_s)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        proc.kill()
        err = proc.communicate()[1]
        pytest.fail(f"the sweep did not end within {timeout_s:g} s of the signal; its stderr "
                    f"(thread stacks last):\n{err[-12000:]}")
