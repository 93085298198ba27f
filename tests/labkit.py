"""Shared parts of the deploy, watch, lock and CLI tests (a helper, not a test module).

Real parts only: the variant is ddlab's own target server (``python -m
ddlab.target``); a :class:`Site` is one way of running it — systemd units on
the test host over SSH, detached processes on the test host over SSH, or
detached processes on this machine — with a *baseline* service of its own
(a small long-running process) that ddlab must stop and put back.

Isolation, because other engineers run tests on this machine at the same time:
every site has its own ``state_dir`` (lock, pid and log files) under a test
temp dir, run folders go to a temp ``DDLAB_OUTPUTS``, every variant gets a
free port, and every name created on the test host starts with ``ddlab-test-``
(the base config is a copy of ``params/base/local.yaml`` named ``test``, so
variant units are ``ddlab-test-<changes>.service``). On the test host units go
to its own /run/systemd/system (``testhost.host.UNIT_DIR``): :meth:`Site.sweep`
removes whatever a test left there, and the site's teardown removes its baseline.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import yaml

from ddlab.config.variants import Variant, make_variant
from ddlab.hosts import connect, manager_for
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.services import ServiceSpec
from testhost.ports import free_port  # noqa: F401 (re-exported: the tests import it from here)

REPO = Path(__file__).resolve().parents[1]
DDLAB = str(Path(sys.executable).with_name("ddlab"))  # the installed console script
KINDS = ("systemd-ssh", "process-ssh", "process-local")
# SGLang 0.5.23's own replay crash: a verify batch without positions dies in
# _copy_replay_inputs (decode_cuda_graph_runner.py:1908-1917); a dropped
# num_token_non_padded is skipped there (fill_from), so it needs debug_drop_verify_mode=raise
# (the fork's crash) to crash: FIELD_CRASH
REPLAY_FAULT = "debug_drop_verify_field=positions"
FIELD_CRASH = ("debug_drop_verify_field=num_token_non_padded", "debug_drop_verify_mode=raise")
KV_OOM = "mem_fraction_static=0.001"


def kinds(*only: str, check: tuple[str, ...] | None = None) -> list:
    """``parametrize`` values for site kinds; the SSH ones need (and are marked) testhost. Over
    all kinds (no ``only``), process-ssh is in make test only: its halves, the process manager
    and the SSH transport, are each in make check's other two kinds. ``check`` names the kinds
    make check keeps; the others are marked slow (make test only)."""
    def slow(kind):
        return kind not in check if check is not None else kind == "process-ssh" and not only

    def marks(kind):
        return ([pytest.mark.testhost] if kind.endswith("-ssh") else []) + ([pytest.mark.slow] if slow(kind) else [])

    return [pytest.param(kind, marks=marks(kind)) if marks(kind) else kind for kind in (only or KINDS)]


@contextlib.contextmanager
def said(callback=None):
    """The messages ddlab logs (``ddlab.*`` loggers) during the block, as a list of
    strings; ``callback(message)`` is also called with each, as it comes."""
    import logging

    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())
            if callback is not None:
                callback(record.getMessage())

    handler = Collect(level=logging.DEBUG)
    logger = logging.getLogger("ddlab")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def write_base(folder: Path) -> Path:
    """``folder/test.yaml``: the local base (the target), named so units read ddlab-test-*."""
    path = Path(folder) / "test.yaml"
    shutil.copyfile(REPO / "params" / "base" / "local.yaml", path)
    return path


class Site:
    """One host + service manager + baseline, for the tests of one module."""

    def __init__(self, kind: str, folder: Path, testhost=None):
        self.kind, self.folder, self.testhost = kind, Path(folder), testhost
        self.baseline = f"ddlab-test-baseline-{uuid.uuid4().hex[:6]}"
        tag = uuid.uuid4().hex[:6]
        if kind == "process-local":
            data = {"state_dir": str(self.folder / "state"), "baseline_service": self.baseline}
        else:
            manager = "systemd" if kind == "systemd-ssh" else "process"
            data = testhost.profile(service_manager=manager, baseline_service=self.baseline,
                                    state_dir=str(testhost.shared_dir / f"state-{kind}-{tag}"))
        if kind == "systemd-ssh":
            self.baseline += ".service"
            data["baseline_service"] = self.baseline
        self.name = f"site-{kind}"
        self.profile = HostProfile.from_dict(data, name=self.name)
        self.yaml = self.folder / f"{self.name}.yaml"  # the same profile, for the CLI
        self.yaml.write_text(yaml.safe_dump(data))
        self.base = write_base(self.folder)
        self.transport = connect(self.profile)
        self.manager = manager_for(self.transport)
        self.made: list[str] = []

    # -- setting up and tearing down ---------------------------------------------------

    def start_baseline(self) -> None:
        """Install (once) and start the baseline: a process that just keeps running."""
        argv = [sys.executable, "-c", "import time; time.sleep(3600)"]
        self.manager.install(ServiceSpec(self.baseline, argv, workdir="/"))
        self.manager.start(self.baseline)
        wait_for(lambda: self.baseline_active(), what=f"{self.baseline} to run")

    def sweep(self) -> None:
        """Remove what a test left: its variants, the lock; the baseline running again."""
        for service in self.made:
            if self.installed(service):
                self.manager.remove(service)
        self.made.clear()
        self.transport.run(["rm", "-f", "--", self.lock_path])
        if not self.baseline_active():
            self.manager.start(self.baseline)

    def close(self) -> None:
        self.sweep()
        self.manager.remove(self.baseline)
        self.transport.close()

    # -- what tests ask ----------------------------------------------------------------

    def variant(self, *overrides: str, port: int | None = None) -> Variant:
        """A target variant on a free port; remembered so that :meth:`sweep` removes it."""
        variant = make_variant(self.base, [f"port={port or free_port()}", *overrides])
        self.made.append(variant.unit_name)
        return variant

    def set_args(self, variant: Variant) -> list[str]:
        """``--base FILE --set K=V ...`` for ``ddlab deploy`` of the same variant."""
        args = ["--base", str(self.base)]
        for key, (_old, new) in variant.changes.items():
            args += ["--set", f"{key}={new}"]
        return args

    def baseline_active(self) -> bool:
        return self.manager.state(self.baseline).active_state == "active"

    def installed(self, service: str) -> bool:
        """True while the service exists on the host (unit file, or process folder)."""
        if self.kind == "systemd-ssh":  # the unit file, in the test host's own /run
            return self.transport.run(["test", "-e", self.manager._path(service)],
                                      check=False).exit_code == 0
        return self.manager.state(service).load_state != "not-found"

    def assert_put_back(self, service: str) -> None:
        """The host as ddlab found it: baseline running, the variant gone, no lock."""
        assert self.baseline_active(), "the baseline runs again"
        assert not self.installed(service), f"{service} is removed"
        assert self.lock() is None, "the lock is released"

    @property
    def lock_path(self) -> str:
        return f"{self.profile.state_dir.rstrip('/')}/lock.json"

    def lock(self) -> dict | None:
        """The host's lock file as JSON, or None when there is none."""
        try:
            return json.loads(self.transport.read_file(self.lock_path))
        except FileNotFoundError:
            return None

    def died_at(self, service: str) -> tuple[float, float]:
        return died_at(self, self.kind, service)


def died_at(where, kind: str, service: str) -> tuple[float, float]:
    """(when the service's main process died, now), on one clock of this machine;
    ``where``: a Site or a Lab (its transport, manager and profile).

    systemd: ``ExecMainExitTimestampMonotonic`` against ``time.monotonic()``
    (the test host shares this kernel's CLOCK_MONOTONIC: no time namespace).
    process: the mtime of the ``status`` file its wrapper writes when the
    server ends, against ``time.time()``."""
    if kind == "systemd-ssh":
        now = time.monotonic()
        show = where.transport.run(["systemctl", "show", "-p", "ExecMainExitTimestampMonotonic",
                                    "--value", service]).stdout.strip()
        return int(show) / 1e6, now
    now = time.time()
    status = f"{where.manager._dir(service)}/status"
    stat = where.transport.run([where.profile.python, "-c",
                                "import os, sys; print(os.stat(sys.argv[1]).st_mtime)", status])
    return float(stat.stdout), now


@contextlib.contextmanager
def open_site(kind: str, folder: Path, testhost=None):
    """A started site for a module; everything it made is removed afterwards."""
    site = Site(kind, folder, testhost)
    try:
        site.start_baseline()
        yield site
    finally:
        site.close()


def site_fixture(*only: str, check: tuple[str, ...] | None = None):
    """A module-scoped ``site`` fixture over these kinds (all by default); an SSH kind
    boots (or shares) the session's test host. ``check``: as in :func:`kinds`."""

    @pytest.fixture(scope="module", params=kinds(*only, check=check), ids=str)
    def site(request, tmp_path_factory):
        kind = request.param
        folder = tmp_path_factory.mktemp(f"{request.module.__name__}-{kind}")
        testhost = request.getfixturevalue("testhost") if kind.endswith("-ssh") else None
        with outputs_in(folder / "outputs"), open_site(kind, folder, testhost) as site:
            yield site

    return site


@pytest.fixture
def clean(site):
    """The site as a test finds it (baseline running, no lock); swept afterwards."""
    assert site.baseline_active() and site.lock() is None
    yield site
    site.sweep()


@contextlib.contextmanager
def outputs_in(folder: Path):
    """``DDLAB_OUTPUTS`` pointed at a temp folder (for module-scoped fixtures)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DDLAB_OUTPUTS", str(folder))
        yield Path(folder)


def wait_for(predicate, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.05)


def ddlab(*args: str, env: dict | None = None, timeout_s: float = 120) -> subprocess.CompletedProcess:
    """Run the real ``ddlab`` command; text out."""
    return subprocess.run([DDLAB, *args], capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def last_json(stdout: str) -> dict:
    """The last line of a command's stdout, which must be one JSON object."""
    lines = stdout.rstrip("\n").splitlines()
    assert lines, "no output"
    return json.loads(lines[-1])


def holder_script(profile_yaml: Path, *, deploy: str = "", force: bool = False) -> list[str]:
    """argv of a separate ddlab run that takes the host's lock (and, with ``deploy`` =
    a base YAML, deploys it with ``deployed()``; with ``force``, from whoever holds it),
    says so on stdout and waits."""
    code = textwrap.dedent(f"""
        import sys, time
        from ddlab.lab.deploy import Lab, deployed
        from ddlab.config.variants import make_variant
        if {deploy!r}:
            context = deployed({str(profile_yaml)!r}, make_variant({deploy!r}, sys.argv[1:]),
                               what="a test's other run", force={force!r})
        else:
            context = Lab({str(profile_yaml)!r}, what="a test's other run", force={force!r})
        with context:
            print("holding", flush=True)
            time.sleep(600)
    """)
    return [sys.executable, "-c", code]
