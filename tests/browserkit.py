"""A real browser and a real Jupyter server for the tests (a helper, not a test module).

Playwright drives Debian's Chromium as its executable (``make hostdeps`` installs it as
root through tests/report/install-chromium.sh; ``playwright install`` is not used, so
this works offline). Where Chromium is missing or cannot start, :func:`chromium` skips
and says why. Playwright adds ``--no-sandbox`` itself, so Chromium starts as root too.
(tests/report/test_browser.py keeps its own copy of these parts.)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from ddlab.lab import http_client

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")  # as install-chromium.sh
VIEWPORT = {"width": 1280, "height": 800}


def chromium():
    """Yields a headless Chromium (Debian's) under Playwright; skips, saying why, where it
    cannot start. Use it as a fixture body: ``yield from browserkit.chromium()``."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError as err:
        pytest.skip(f"Playwright is not installed ({err}); it is in the test extras: "
                    "pip install -e '.[test]'")
    executable = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
    if not executable:
        pytest.skip(f"no Chromium on PATH (looked for {', '.join(CHROMIUM_NAMES)}); as root, "
                    "`make hostdeps` installs Debian's (apt-get install chromium)")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=executable, timeout=60_000)
        except Error as err:
            pytest.skip(f"Chromium at {executable} cannot start: {_launch_failure(err)}")
        yield browser
        browser.close()


def _launch_failure(err: Exception) -> str:
    """Playwright's first line and the last lines Chromium wrote to stderr."""
    text = str(err)
    said = [line.split("[err]", 1)[1].strip() for line in text.split("Call log:")[0].splitlines()
            if "[err]" in line]
    return "; ".join([text.splitlines()[0], *said[-3:]])


@contextlib.contextmanager
def jupyter_server(argv: list[str], *, cwd: Path, env: dict, log: Path, url: str, token: str):
    """A Jupyter server started by ``argv`` (``jupyter lab ...`` or ``make lab ...``), up
    (its API answers) within 120 s; shut down at the end through its API, else its
    process group is killed."""
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait(lambda: proc.poll() is not None or answers(f"{url}/api/status", token), 120,
             lambda: f"Jupyter did not answer on {url}; its log:\n{log.read_text()[-3000:]}")
        assert proc.poll() is None, f"Jupyter exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
        yield proc
    finally:
        with contextlib.suppress(httpx.HTTPError):
            http_client.post(f"{url}/api/shutdown", headers={"Authorization": f"token {token}"}, timeout=10)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def answers(url: str, token: str) -> bool:
    try:
        return http_client.get(url, headers={"Authorization": f"token {token}"}, timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def wait(predicate, timeout_s: float, failure) -> None:
    """Until ``predicate()`` is true; past ``timeout_s`` the test fails with ``failure()``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(failure())
        time.sleep(0.3)
