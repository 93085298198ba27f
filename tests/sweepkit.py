"""Shared parts of the sweep, results, plots, report, runner and demo tests (a helper,
not a test module).

Real parts only: sweeps run on the ``local`` host against ddlab's own target
server, notebooks under real papermill kernels, results in real SQLite.

Isolation, because other engineers run tests on this machine at the same time:
a :class:`Project` is a temp ``DDLAB_ROOT`` whose ``params/hosts/local.yaml``
(which replaces the built-in profile) keeps the lock and the process files in a
temp ``state`` folder, whose ``params/base/local.yaml`` is the repo's with a
free port (so even a notebook run with no ``fixed`` port never meets another
server), and whose ``notebooks`` are the repo's; ``DDLAB_OUTPUTS`` points at a
temp folder too.

:func:`shared_sweep` runs one small finished sweep per test run
(2 baselines + budget {4, 16} x cap {4} x graphs {on, off} + the replay-fault
cell: 7 cells, about 20 s) for the tests that only read a finished sweep. Under
pytest-xdist the first worker to ask builds it (the others wait on a file lock)
and each worker works on its own copy of the project, store included.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from labkit import REPLAY_FAULT, REPO, free_port, said, wait_for

PYTHON = sys.executable
FAST_OPTIONS = {"requests": 2, "max_new_tokens": 32, "warmup": 1, "grace_s": 0.5, "max_rounds": 3,
                "bracket": False,
                "timeout_s": 60.0}
SHARED_GRID = {"budget": [4, 16], "topk_cap": [4], "cuda_graph": [True, False]}


@dataclasses.dataclass
class Project:
    """A temp DDLAB_ROOT (see the module docstring) and its outputs folder."""

    root: Path
    state: Path
    outputs: Path
    port: int

    @property
    def store_path(self) -> Path:
        return self.outputs / "ddlab.sqlite"

    @property
    def lock_path(self) -> Path:
        return self.state / "lock.json"

    def env(self) -> dict:
        """The environment for a subprocess (ddlab CLI, papermill, a script) in this project."""
        return {**os.environ, "DDLAB_ROOT": str(self.root), "DDLAB_OUTPUTS": str(self.outputs)}

    def services(self) -> list[str]:
        """Services the process manager still has installed here (should be none after a run)."""
        folder = self.state / "services"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def runs(self) -> list[Path]:
        """``ddlab run`` folders, oldest first."""
        return sorted(p.parent for p in self.outputs.glob("*/run.json"))


def make_project(folder: Path) -> Project:
    folder = Path(folder)
    root = folder / "project"
    (root / "params" / "hosts").mkdir(parents=True)
    shutil.copytree(REPO / "params" / "base", root / "params" / "base")
    port = free_port()
    local = root / "params" / "base" / "local.yaml"
    data = yaml.safe_load(local.read_text())
    data["flags"]["port"] = port
    local.write_text(yaml.safe_dump(data, sort_keys=False))
    (root / "notebooks").symlink_to(REPO / "notebooks")
    state = folder / "state"
    (root / "params" / "hosts" / "local.yaml").write_text(yaml.safe_dump({"state_dir": str(state)}))
    return Project(root=root, state=state, outputs=folder / "outputs", port=port)


@contextlib.contextmanager
def using(project: Project):
    """``DDLAB_ROOT`` and ``DDLAB_OUTPUTS`` pointed at ``project`` for the block."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DDLAB_ROOT", str(project.root))
        mp.setenv("DDLAB_OUTPUTS", str(project.outputs))
        yield project


def target_pids(port: int) -> list[int]:
    """Processes of ddlab's target server listening (by their argv) on ``port``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ddlab.target" in argv and str(port).encode() in argv:
            found.append(int(cmdline.parent.name))
    return found


def assert_host_put_back(project: Project) -> None:
    """No lock, no installed service, no target process left on the project's port."""
    assert not project.lock_path.exists(), project.lock_path.read_text()
    assert project.services() == []
    wait_for(lambda: not target_pids(project.port), timeout_s=10, what="no target process left")


def run_counts(store_path: Path, sweep_id: str) -> dict[str, dict[str, int]]:
    """config hash -> {run state: how many runs}, read with a plain SQLite connection.
    A baseline's ``bracket`` run (measured again after the grid) is not the cell running
    again, and is left out."""
    with contextlib.closing(sqlite3.connect(store_path)) as db:
        rows = db.execute("SELECT config_hash, state, COUNT(*) FROM runs WHERE sweep_id = ?"
                          " AND state != 'bracket' GROUP BY config_hash, state",
                          (sweep_id,)).fetchall()
    counts: dict[str, dict[str, int]] = {}
    for config_hash, state, n in rows:
        counts.setdefault(config_hash, {})[state] = n
    return counts


# The process SIGKILLs itself the moment its store first holds a finished run: right
# after the call that wrote it returns, whatever that call is (so a resume sees the store
# exactly as a kill between two of the sweep's writes would leave it).
KILL_AT_FIRST_OUTCOME = """
    import os, signal
    from ddlab.sweeps.store import DONE_STATES, Store

    def _killed_after(method):
        def call(self, *args, **kwargs):
            out = method(self, *args, **kwargs)
            marks = ",".join("?" * len(DONE_STATES))
            if self.db.execute(f"SELECT COUNT(*) FROM runs WHERE state IN ({marks})",
                               DONE_STATES).fetchone()[0]:
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        return call

    for _name, _method in list(vars(Store).items()):
        if callable(_method) and not _name.startswith("__") and _name != "close":
            setattr(Store, _name, _killed_after(_method))
"""


def sweep_script(project: Project, grid: dict, *, baseline: bool = True, extra=(),
                 prelude: str = "") -> list[str]:
    """argv of a separate process that plans and runs a sweep in ``project`` (fast options);
    ``prelude``: code it runs first (e.g. :data:`KILL_AT_FIRST_OUTCOME`)."""
    code = textwrap.dedent(prelude) + textwrap.dedent(f"""
        from ddlab.sweeps.store import Store
        from ddlab.sweeps.plan import SweepOptions, plan_sweep
        from ddlab.sweeps.run import run_sweep
        plan = plan_sweep("local", {grid!r}, baseline={baseline!r}, extra={list(extra)!r})
        run_sweep(plan, host="local", options=SweepOptions(**{FAST_OPTIONS!r}),
                  store=Store({str(project.store_path)!r}))
    """)
    return [PYTHON, "-c", code]


@dataclasses.dataclass
class SharedSweep:
    project: Project
    sweep_id: str
    messages: list[str]
    hashes: list[str]


_SHARED: dict = {}


def shared_sweep(tmp_path_factory) -> SharedSweep:
    """This worker's copy of the run's small finished sweep (module docstring)."""
    if "error" in _SHARED:
        pytest.fail(f"the shared sweep failed earlier: {_SHARED['error']}")
    if "sweep" not in _SHARED:
        try:
            built = _built_once(tmp_path_factory)
            _SHARED["sweep"] = _copy_of(built, tmp_path_factory.mktemp("shared-sweep"))
        except BaseException as err:
            _SHARED["error"] = repr(err)
            raise
    return _SHARED["sweep"]


def _built_once(tmp_path_factory) -> SharedSweep:
    """The sweep, built by whichever worker of this run asks first (:func:`once_per_run`)."""
    def build(folder: Path) -> dict:
        built = _run_shared(folder)
        return {"folder": str(folder), "port": built.project.port, "sweep_id": built.sweep_id,
                "hashes": built.hashes, "messages": built.messages}

    data = once_per_run(tmp_path_factory, "shared-sweep", build)
    folder = Path(data["folder"])
    project = Project(root=folder / "project", state=folder / "state", outputs=folder / "outputs",
                      port=data["port"])
    return SharedSweep(project=project, sweep_id=data["sweep_id"], messages=data["messages"],
                       hashes=data["hashes"])


def _copy_of(shared: SharedSweep, folder: Path) -> SharedSweep:
    """A copy of the finished project to change at will: its params, state and store (the
    cells' run folders stay where the sweep wrote them, and are only read)."""
    original = shared.project
    shutil.copytree(original.root, folder / "project", symlinks=True)
    if original.state.exists():
        shutil.copytree(original.state, folder / "state")
    (folder / "outputs").mkdir()
    for path in original.outputs.glob("ddlab.sqlite*"):  # with its WAL, if any
        shutil.copy2(path, folder / "outputs" / path.name)
    hosts = folder / "project" / "params" / "hosts" / "local.yaml"
    hosts.write_text(yaml.safe_dump({"state_dir": str(folder / "state")}))
    project = Project(root=folder / "project", state=folder / "state", outputs=folder / "outputs",
                      port=original.port)
    return dataclasses.replace(shared, project=project, messages=list(shared.messages))


def _run_shared(folder: Path) -> SharedSweep:
    from ddlab.sweeps.store import Store
    from ddlab.sweeps.plan import SweepOptions, plan_sweep
    from ddlab.sweeps.run import run_sweep

    project = make_project(folder)
    with using(project), said() as messages:
        plan = plan_sweep("local", SHARED_GRID, extra=[[REPLAY_FAULT]])
        with Store(project.store_path) as store:
            sweep = run_sweep(plan, host="local",  # with the baselines bracketed
                              options=SweepOptions(**{**FAST_OPTIONS, "bracket": True}),
                              store=store)
    assert sweep.status == "done", messages[-5:]
    return SharedSweep(project=project, sweep_id=sweep.sweep_id, messages=messages,
                       hashes=[c.hash for c in plan.cells])


def synthetic_sweep(path: Path, outcomes: list, *, grid: dict | None = None, extra=(),
                    sweep_id: str = "synthetic", status: str = "done", fixed=(),
                    baseline: bool = True, options: dict | None = None) -> list:
    """A sweep in the store at ``path`` without running anything: the plan is real
    (real configs and hashes), each cell's outcome is given, in plan order, as
    ``("measured", {metrics})``, ``("crashed", kind)``, ``("timeout", None)`` or
    ``("pending", None)``. Returns the plan's cells."""
    from ddlab.sweeps.store import Store
    from ddlab.sweeps.plan import plan_sweep

    plan = plan_sweep("local", grid or SHARED_GRID, extra=list(extra), fixed=fixed,
                      baseline=baseline)
    assert len(plan.cells) == len(outcomes), [c.label for c in plan.cells]
    with Store(path) as store:
        store.add_sweep(sweep_id, host="local", base="local", grid=plan.inputs(),
                        options=options or {})
        for cell, (state, detail) in zip(plan.cells, outcomes):
            store.plan_cell(sweep_id, config_hash=cell.hash, name=cell.variant.name,
                            position=cell.position, point=cell.point, role=cell.role,
                            config=cell.variant.to_dict())
            if state == "pending":
                continue
            run_id = store.add_run(variant=cell.variant.name, config_hash=cell.hash, host="local",
                                   config=cell.variant.to_dict(), sweep_id=sweep_id,
                                   run_dir=f"/runs/{cell.label}")
            verdict = {"state": "ready" if state == "measured" else state, "phase": "serving",
                       "kind": detail if state == "crashed" else None,
                       "cause": f"{detail} cause" if state == "crashed" else None,
                       "suggestion": "try --disable-cuda-graph" if state == "crashed" else None}
            store.finish_run(run_id, state=state, verdict=verdict,
                             metrics=detail if state == "measured" else None, cell=True)
        store.set_sweep_status(sweep_id, status)
    return plan.cells


def bracket_run(path: Path, sweep_id: str, cell, state: str, verdict: dict,
                metrics: dict | None = None) -> None:
    """A baseline ``cell`` measured again after the grid, as ``ddlab.sweeps.run.bracket_baselines``
    stores it: ``state`` ``bracket`` (measured: ``metrics``), or how it failed."""
    from ddlab.sweeps.store import Store

    with Store(path) as store:
        run_id = store.add_run(variant=cell.variant.name, config_hash=cell.hash, host="local",
                               config=cell.variant.to_dict(), sweep_id=sweep_id,
                               run_dir=f"/runs/bracket-{cell.label}")
        store.finish_run(run_id, state=state, verdict=verdict, metrics=metrics)


def once_per_run(tmp_path_factory, name: str, build) -> dict:
    """``build(folder)``'s JSON-able dict, built once per test run in a fresh ``folder``:
    under pytest-xdist the first worker to ask builds it, the others wait on a file lock
    and read the same dict (as :func:`shared_sweep`'s sweep). For a module fixture whose
    tests only read what it built: worksteal may split a module's tests over workers,
    and each worker would build a module fixture of its own. A build that fails leaves
    no record: the next worker to ask builds again, and fails the same way."""
    import fcntl
    import json
    import tempfile

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # gw0, gw1...: their parent is this run's
        base = base.parent
    record = base / f"{name}.json"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.is_file():
            folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
            record.write_text(json.dumps(build(folder)))
    return json.loads(record.read_text())
