"""The user-path tier (issue 22): the user's own commands on the clone as it is, with no
``DDLAB_*`` variable anywhere.

Every other test points ddlab at a temp project through ``DDLAB_ROOT`` /
``DDLAB_OUTPUTS`` (tests/conftest.py sets ``DDLAB_OUTPUTS`` for the whole session),
so none of them walks the path a user walks: ddlab finding its project from the
current folder (JupyterLab's kernels run in ``notebooks/``). This tier does:

- :class:`User` is one copy of the checkout per test run, made of
  ``git ls-files -co --exclude-standard`` (tracked files and untracked ones git does
  not ignore, modification times kept), in a temp folder, with ``.venv`` a link to
  the venv these tests run in: the user's venv, an editable install of the real
  checkout (checked first; the tier skips, saying why, where it is not). Commands run
  inside the copy, so ddlab finds the copy from the current folder, never the checkout
  it was installed from. Under pytest-xdist the first worker makes it, the others wait
  on a file lock and use it.
- Processes the tier starts get the tests' environment less every ``DDLAB_*``,
  ``MAKE*`` (no sub-make of ``make test``) and ``PYTEST_*`` variable, with the venv
  activated (``VIRTUAL_ENV``, its ``bin/`` first on ``PATH``) and ``HOME`` a temp
  folder of the tier's own: ``local``'s lock and process files (``~/.cache/ddlab``)
  and JupyterLab's settings and workspaces never meet the machine's. Its JupyterLab
  settings are two answers a user gives once: start the preferred kernel (the "Always
  start the preferred kernel" box of the kernel dialog) and no news.
  ``OMP_NUM_THREADS=1`` (tests/conftest.py) stays: one compute thread per server.
- The built-in ``local`` host serves on port 30000 (params/base/local.yaml) with its
  lock in that ``HOME``: the tier's tests that deploy hold :meth:`User.local`, a file
  lock across xdist workers, so they take turns.
- At the end the venv must still be an editable install of the real checkout: ``make
  lab`` in the copy (whose stamp rule reinstalls when pyproject.toml is newer) must never
  have pointed it at the copy.

Tests here are marked ``userpath`` and ``slow`` (tests/conftest.py), so they are in
``make test`` (and CI) but not in ``make check``, and are scheduled first.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

from labkit import REPO

LOCAL_PORT = 30000  # params/base/local.yaml: where the user's `local` target serves
STRIPPED = ("DDLAB_", "MAKE", "PYTEST_")
LAB_SETTINGS = {  # HOME/.jupyter/lab/user-settings/<plugin>.jupyterlab-settings
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}


@dataclass(frozen=True)
class User:
    """The copy of the checkout, the user's venv and the tier's HOME (module docstring)."""

    clone: Path
    venv: Path
    home: Path
    folder: Path   # the tier's temp folder (the copy, HOME, locks, an outside folder)

    @property
    def outside(self) -> Path:
        """A folder with no ddlab project in it or above it."""
        return self.folder / "outside"

    def env(self, **extra: str) -> dict:
        """The environment of the user's shell (module docstring)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED)}
        env.pop("PYTHONHOME", None)
        env.update(HOME=str(self.home), VIRTUAL_ENV=str(self.venv),
                   PATH=os.pathsep.join([str(self.venv / "bin"), env.get("PATH", "")]))
        env.update(extra)
        return env

    def shell(self, command: str, *, cwd: Path, timeout_s: float = 120,
              env: dict | None = None) -> subprocess.CompletedProcess:
        """``command`` as the user types it, in bash, in ``cwd``; text out."""
        return subprocess.run(["bash", "-c", command], cwd=cwd, env=env or self.env(),
                              capture_output=True, text=True, timeout=timeout_s)

    def once(self, name: str, make) -> str:
        """``make()``'s answer (a string), made by the first test of this run to ask and kept
        in the tier's folder for the others (across xdist workers: a file lock)."""
        record = self.folder / f"{name}.txt"
        with open(self.folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not record.is_file():
                record.write_text(make())
        return record.read_text()

    @property
    def lock_file(self) -> Path:
        """``local``'s host lock (the built-in profile's ``state_dir`` is ``~/.cache/ddlab``)."""
        return self.home / ".cache" / "ddlab" / "lock.json"

    @contextlib.contextmanager
    def local(self):
        """The ``local`` host to the calling test alone (tests of the tier take turns); it
        must be free when given, and the test must leave it free."""
        with open(self.folder / "local.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            assert not self.lock_file.exists(), (
                f"local is still held by an earlier test: {self.lock_file.read_text()}")
            assert not _listening(LOCAL_PORT), (
                f"port {LOCAL_PORT} (local's) is taken by another process: the tier needs it")
            try:
                yield
            finally:
                left = self.lock_file.read_text() if self.lock_file.exists() else ""
                if left:  # put local back for the next test
                    self.shell("ddlab restore --host local", cwd=self.clone)
            assert not left, f"the test left local held: {left}"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _editable_source() -> Path | None:
    """The folder the running venv's ddlab was installed from in editable mode, if so.
    Every distribution named ddlab is looked at: the checkout's own ``lib/ddlab.egg-info``
    (which the editable install leaves there, without ``direct_url.json``) may come first
    on ``sys.path`` in a test process (a fresh clone's ``make test`` skipped the tier so)."""
    for dist in metadata.distributions(name="ddlab"):
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        if url.get("dir_info", {}).get("editable") and url.get("url", "").startswith("file://"):
            return Path(url["url"].removeprefix("file://"))
    return None


def _copy_checkout(clone: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout
    for name in filter(None, listed.split(b"\0")):
        source = REPO / os.fsdecode(name)
        if not (source.exists() or source.is_symlink()):  # deleted in the working tree
            continue
        target = clone / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


def _make(folder: Path) -> None:
    clone, home = folder / "clone", folder / "home"
    _copy_checkout(clone)
    (clone / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    for plugin, values in LAB_SETTINGS.items():
        path = home / ".jupyter" / "lab" / "user-settings" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    (folder / "outside").mkdir()
    (folder / "ready").touch()


@pytest.fixture(scope="session")
def user(tmp_path_factory) -> User:
    """The tier's :class:`User`, one per test run (module docstring)."""
    source = _editable_source()
    if source is None or source.resolve() != REPO.resolve():
        pytest.skip(f"the user-path tier runs in the checkout's own venv (make venv), where ddlab "
                    f"is installed editable from {REPO}; this Python ({sys.prefix}) has it from "
                    f"{source or 'a non-editable install'}")
    if not (REPO / ".git").exists():
        pytest.skip(f"{REPO} is not a git checkout: the tier copies `git ls-files -co` of one")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # gw0, gw1...: their parent is this run's
        base = base.parent
    folder = base / "userpath"
    folder.mkdir(exist_ok=True)
    with open(base / "userpath.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "ready").exists():
            _make(folder)
    yield User(clone=folder / "clone", venv=Path(sys.prefix), home=folder / "home", folder=folder)
    after = _editable_source()
    assert after is not None and after.resolve() == REPO.resolve(), (
        f"the venv's ddlab now comes from {after}, not {REPO}: a command of the tier reinstalled "
        f"it (make's venv rule?); fix with: make -C {REPO} -B venv")
