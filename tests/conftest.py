"""Shared fixtures. The real-host fixture (`testhost`) lives in tests/testhost/.

``testhost`` boots one private systemd + sshd on loopback per test session
(about 0.3 s) and shuts it down at the end, also on Ctrl-C (pytest runs
session teardown) and at interpreter exit (atexit). Tests that use it are
marked ``testhost`` automatically, so ``-m "not testhost"`` leaves them out. Under
pytest-xdist each worker boots its own test host: their systemds run in cgroups of
their own and keep units in their own /run (tests/testhost/host.py), so they do
not meet. Tests under ``tests/reliability/`` are marked ``reliability``.
It skips, saying why, only where the machine cannot boot it. ``slurm_cluster`` is
a real one-node Slurm per session (tests/testhost/slurm.py); its tests are marked
``testhost`` too (root, daemons of their own). Tests under ``tests/userpath/`` are
marked ``userpath`` and ``slow`` and collected first (tests/userpath/conftest.py).
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from ddlab.report.notebook_libs import without_iri_grammar

USERPATH = Path(__file__).resolve().parent / "userpath"  # the user-path tier (tests/userpath)

# The tests read notebooks in-process too (nbformat): without jsonschema's RFC 3987 grammar,
# as ddlab itself reads them (ddlab/report/notebook_libs.py: 0.7 s of CPU per process).
without_iri_grammar()

# The suite runs several target servers at once (pytest-xdist workers) on a few cores:
# one compute thread each keeps them from fighting over the cores (they inherit this).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Run folders of tests that set no outputs of their own go to a temp folder, never
# into the checkout's outputs/ (a test's lock naming a foreign run folder made one there).
# The process that makes it removes it at exit; xdist workers inherit it from that one.
if "DDLAB_OUTPUTS" not in os.environ:
    os.environ["DDLAB_OUTPUTS"] = tempfile.mkdtemp(prefix="ddlab-test-outputs-")
    atexit.register(shutil.rmtree, os.environ["DDLAB_OUTPUTS"], ignore_errors=True)
# Started in the background by a non-interactive shell (`make test &`), a process
# inherits SIGINT ignored, and so would every ddlab the tests interrupt: the interrupt
# tests need Ctrl-C to mean Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def testhost():
    """The booted test host (tests/testhost/host.py); session-scoped. Imported here, not at
    the top: a run of the GPU tests alone needs no paramiko (the GPU machine has none)."""
    from testhost.host import TestHost, unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(f"real test host unavailable: {reason}")
    host = TestHost().start()
    try:
        yield host
    finally:
        host.shutdown()


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real one-node Slurm (tests/testhost/slurm.py: slurmctld, slurmd and munged of its
    own, about 0.3 s to start), one per test session; skipped with the reason where it
    cannot start. Tests leave no job behind (each checks that itself)."""
    from testhost.slurm import SlurmCluster

    reason = SlurmCluster.skip_reason()
    if reason:
        pytest.skip(f"real Slurm unavailable: {reason}")
    cluster = SlurmCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def slurm_host(slurm_cluster, tmp_path, monkeypatch):
    """A host profile factory: this machine as the cluster's login host (local transport,
    ``SLURM_CONF`` naming the test cluster). Afterwards no job may be left in squeue."""
    from ddlab.hosts.profiles import HostProfile

    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))

    def profile(**keys) -> HostProfile:
        return HostProfile.from_dict({"scheduler": "slurm", "state_dir": str(tmp_path / "state"),
                                      **keys}, name="slurm-login")

    yield profile
    left = slurm_cluster.run(["squeue", "-h", "-o", "%A %T %j"]).stdout.strip()
    slurm_cluster.cancel_all()
    slurm_cluster.wait_idle()
    assert not left, f"jobs left in squeue: {left}"


def pytest_collection_modifyitems(items):
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "testhost" in names or "slurm_cluster" in names or item.get_closest_marker("testhost"):
            item.add_marker(pytest.mark.testhost)
        if "reliability" in item.path.parts:
            item.add_marker(pytest.mark.reliability)
        if item.path.parent == USERPATH:
            item.add_marker(pytest.mark.userpath)
            item.add_marker(pytest.mark.slow)
    # The user-path tier first: its tests are long and take turns on `local`; pytest-xdist
    # hands tests out in this order, and a long test started last would end the run late.
    items.sort(key=lambda item: item.path.parent != USERPATH)


def pytest_collection_finish(session):
    # What collection made (the modules, the corpora, thousands of test items) lives to the
    # end: out of the collector's sight, the full collections during the run skip it.
    gc.freeze()


@pytest.fixture
def project(tmp_path):
    """A temp project in use for the test (tests/sweepkit.py's ``make_project``: its own
    DDLAB_ROOT with the repo's bases, the ``local`` host's state in tmp_path, a free port,
    outputs in tmp_path; DDLAB_ROOT and DDLAB_OUTPUTS point at it until the test ends)."""
    import sweepkit  # loads ddlab's sweeps: only for the tests that ask for a project

    project = sweepkit.make_project(tmp_path)
    with sweepkit.using(project):
        yield project
