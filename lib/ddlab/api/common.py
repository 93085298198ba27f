"""What the verb families of the front door share: a host given by name or profile,
and the checks of the options every job with a host takes, before anything touches it."""

from __future__ import annotations

from ddlab.core.checks import check_number
from ddlab.hosts.profiles import HostProfile, load_host

__all__ = ["profile_of", "check_wait", "check_positive", "RESTORE_CHOICES"]

# When a job puts the host's baseline back (deploy's ``restore``; the CLI's ``--restore``).
RESTORE_CHOICES = ("auto", "always", "never")


def profile_of(host: str | HostProfile) -> HostProfile:
    """The host's profile: itself, or the one named."""
    return host if isinstance(host, HostProfile) else load_host(host)


def check_wait(wait_s) -> None:
    """``wait_s``: None or 0 (do not wait), else a finite number of seconds."""
    if wait_s is not None:
        check_number("wait_s", wait_s, seconds=True, note="0: do not wait")


def check_positive(**values) -> None:
    """Durations that must pass (a timeout, a grace, a heartbeat): nan would never time out."""
    for name, value in values.items():
        check_number(name, value, above=True, seconds=True,
                     example=600 if name == "timeout_s" else 5)
