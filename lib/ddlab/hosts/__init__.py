"""Hosts: how ddlab reaches a machine and runs a server there.

Profiles (:mod:`.profiles`) say how to reach a host; transports
(:mod:`.transport` for this machine, :mod:`.ssh` over one persistent,
verified SSH connection with :mod:`.remote_exec` and :mod:`.tunnels`) run
argv lists and move files; service managers (:mod:`.systemd`,
:mod:`.processes`, :mod:`.slurm`) start, stop, observe and read the logs of one
server; the host lock (:mod:`.lock`) records what ddlab changed. :func:`connect`
and :func:`manager_for` pick the implementation a profile names from two tables,
``TRANSPORTS`` and ``MANAGERS`` (a new kind of host is a row there, and its name
among a profile's choices).
"""

from __future__ import annotations

from typing import Callable

from ddlab.hosts.processes import ProcessManager
from ddlab.hosts.profiles import HostProfile, load_host
from ddlab.hosts.services import ServiceManager
from ddlab.hosts.slurm import SlurmManager
from ddlab.hosts.systemd import SystemdManager
from ddlab.hosts.transport import LocalTransport, Transport

__all__ = ["connect", "manager_for", "TRANSPORTS", "MANAGERS"]


def _ssh(profile: HostProfile) -> Transport:
    from ddlab.hosts.ssh import SSHTransport  # paramiko only when a host needs it

    return SSHTransport(profile)


# A profile's ``transport`` -> how to reach the host (SSH connects lazily, on first use).
TRANSPORTS: dict[str, Callable[[HostProfile], Transport]] = {
    "local": LocalTransport,
    "ssh": _ssh,
}

# A profile's ``scheduler`` (when set), else its ``service_manager`` -> what runs the
# server there: batch jobs submitted on a login host, systemd units, or plain processes.
MANAGERS: dict[str, Callable[[Transport, HostProfile], ServiceManager]] = {
    "slurm": SlurmManager,
    "systemd": lambda transport, profile: SystemdManager(transport, profile.unit_dir,
                                                         profile.state_dir),
    "process": lambda transport, profile: ProcessManager(
        transport, f"{profile.state_dir.rstrip('/')}/services"),
}


def connect(profile: HostProfile | str = "local") -> Transport:
    """A transport for the profile (or profile name), as ``TRANSPORTS`` names it."""
    if isinstance(profile, str):
        profile = load_host(profile)
    return TRANSPORTS[profile.transport](profile)


def manager_for(transport: Transport) -> ServiceManager:
    """The manager the transport's host profile names in ``MANAGERS``: its ``scheduler``
    (``slurm``: batch jobs submitted on a login host), else its ``service_manager``."""
    profile = transport.profile
    return MANAGERS[profile.scheduler or profile.service_manager](transport, profile)
