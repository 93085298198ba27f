"""The benches most reliability modules share: one per module, so that a module's
leftovers (a lock, a unit) can never meet another module's tests."""

import faultkit as fk
import pytest


@pytest.fixture(scope="module")
def th(testhost, tmp_path_factory, request):
    """A bench on the real test host (systemd over SSH, quick baseline)."""
    with fk.bench_for(tmp_path_factory.mktemp(f"{request.module.__name__}-th"), testhost) as bench:
        yield bench


@pytest.fixture(scope="module")
def local(tmp_path_factory, request):
    """A bench on this machine (process manager, quick baseline)."""
    with fk.bench_for(tmp_path_factory.mktemp(f"{request.module.__name__}-local")) as bench:
        yield bench
