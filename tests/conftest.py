"""Shared fixtures. The real-host fixture (`testhost`) lives in tests/testhost/.

``testhost`` boots one private systemd + sshd on loopback per test session
(about 0.3 s) and shuts it down at the end, also on Ctrl-C (pytest runs
session teardown) and at interpreter exit (atexit). Tests that use it are
marked ``testhost`` automatically, so ``-m "not testhost"`` leaves them out.
It skips, saying why, only where the machine cannot boot it.
"""

from __future__ import annotations

import pytest

from testhost.host import TestHost, unavailable_reason


@pytest.fixture(scope="session")
def testhost():
    """The booted test host (tests/testhost/host.py); session-scoped."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"real test host unavailable: {reason}")
    host = TestHost().start()
    try:
        yield host
    finally:
        host.shutdown()


def pytest_collection_modifyitems(items):
    for item in items:
        if "testhost" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.testhost)
