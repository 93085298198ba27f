"""Hosts: how ddlab reaches a machine and runs a server there.

Profiles (:mod:`.profiles`) say how to reach a host; transports
(:mod:`.transport` for this machine, :mod:`.ssh` over one persistent,
verified SSH connection with :mod:`.remote_exec` and :mod:`.tunnels`) run
argv lists and move files; service managers (:mod:`.systemd`,
:mod:`.processes`, :mod:`.slurm`) start, stop, observe and read the logs of one
server; the host lock (:mod:`.lock`) records what ddlab changed. :func:`connect`
and :func:`manager_for` pick the implementation a profile names.
"""

from __future__ import annotations

from ddlab.hosts.processes import ProcessManager
from ddlab.hosts.profiles import HostProfile, load_host
from ddlab.hosts.services import ServiceManager
from ddlab.hosts.slurm import SlurmManager
from ddlab.hosts.systemd import SystemdManager
from ddlab.hosts.transport import LocalTransport, Transport

__all__ = ["connect", "manager_for"]


def connect(profile: HostProfile | str = "local") -> Transport:
    """A transport for the profile (or profile name); SSH connects lazily, on first use."""
    if isinstance(profile, str):
        profile = load_host(profile)
    if profile.transport == "local":
        return LocalTransport(profile)
    from ddlab.hosts.ssh import SSHTransport  # paramiko only when a host needs it

    return SSHTransport(profile)


def manager_for(transport: Transport) -> ServiceManager:
    """The manager the transport's host profile names: ``scheduler: slurm`` (batch jobs
    submitted on a login host), else ``service_manager``."""
    profile = transport.profile
    if profile.scheduler == "slurm":
        return SlurmManager(transport, profile)
    if profile.service_manager == "systemd":
        return SystemdManager(transport, profile.unit_dir, profile.state_dir)
    return ProcessManager(transport, f"{profile.state_dir.rstrip('/')}/services")
