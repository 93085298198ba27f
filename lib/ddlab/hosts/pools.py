"""Host pools: the hosts one sweep spreads its cells over.

A sweep's ``host`` is one profile name, a pool profile's name
(``params/hosts/NAME.yaml`` holding ``pool: [gpu1, gpu2]``), or a list of
names (``-p host '["gpu1", "gpu2"]'``, or ``gpu1,gpu2`` on a command line).
:func:`load_pool` resolves it to the member profiles, each validated, before
anything touches a host; :func:`slots` gives the places a cell can run at once:
one per host, and ``max_jobs`` per Slurm profile (its jobs are queued on the
cluster together; each slot has its own lock, and its own port through
``overrides``, since jobs may land on one node).
"""

from __future__ import annotations

import dataclasses

from ddlab.core import yamlio
from ddlab.core.errors import ConfigError
from ddlab.hosts.profiles import HostProfile, load_host

__all__ = ["load_pool", "pool_base", "pool_label", "slots"]


def load_pool(host) -> list[HostProfile]:
    """The profiles ``host`` names (see the module docstring), in order, each once;
    a pool profile's members are host profiles, not pools."""
    if isinstance(host, HostProfile):
        return [host] if not host.pool else _members(host.pool, host.name)
    if isinstance(host, str) and host.lstrip().startswith("["):  # -p host '["gpu1", "gpu2"]'
        try:
            host = yamlio.load(host)
        except ValueError as exc:
            raise ConfigError(f"host={host!r}: not a list: {exc}",
                              fix="e.g. -p host '[\"gpu1\", \"gpu2\"]'", value=host) from None
    elif isinstance(host, str) and "," in host:
        host = [h.strip() for h in host.split(",") if h.strip()]
    if isinstance(host, (list, tuple)):
        if not host or not all(isinstance(h, (str, HostProfile)) for h in host):
            raise ConfigError(f"host={host!r}: a pool is a non-empty list of host profile names",
                              fix="e.g. -p host '[\"gpu1\", \"gpu2\"]'", value=host)
        if len(host) == 1:
            return load_pool(host[0])
        return _members(host, "")
    profile = load_host(host or "local")
    return [profile] if not profile.pool else _members(profile.pool, profile.name)


def _members(names, pool: str) -> list[HostProfile]:
    where = f"pool {pool!r}" if pool else "the host list"
    profiles = [n if isinstance(n, HostProfile) else load_host(n) for n in names]
    seen: set[str] = set()
    for profile in profiles:
        if profile.pool:
            raise ConfigError(f"{where}: member {profile.name!r} is itself a pool",
                              fix="list its hosts instead", value=profile.name)
        if profile.name in seen:
            raise ConfigError(f"{where}: host {profile.name!r} is named twice: one host runs "
                              "one cell at a time", fix="name each host once", value=profile.name)
        seen.add(profile.name)
    return profiles


def pool_base(profiles: list[HostProfile]) -> str:
    """The base config a pool's hosts share (a sweep's cells are one plan for all)."""
    bases = sorted({p.base for p in profiles})
    if len(bases) > 1:
        raise ConfigError(f"the pool's hosts start from different bases ({', '.join(bases)}): "
                          "one sweep's cells are one plan for every host",
                          fix="name the base: -p base NAME (per-host settings such as a port go "
                              "in each host profile's `overrides:`)", value=bases)
    return bases[0]


def pool_label(profiles: list[HostProfile], given=None) -> str:
    """What the store and the sweep id call the pool: a pool profile's name, else the
    member names joined with ``,`` (:func:`load_pool` reads both back)."""
    if len(profiles) == 1:
        return profiles[0].name
    if isinstance(given, str) and "," not in given:
        return given
    if isinstance(given, HostProfile) and given.pool:
        return given.name
    return ",".join(p.name for p in profiles)


def slots(profiles: list[HostProfile]) -> list[HostProfile]:
    """Where cells run at once: each host once; a Slurm profile ``max_jobs`` times, slot
    ``i`` with its own ``state_dir`` (``.../slot-i``: its own lock) and the variant's port
    moved up by ``i`` (several jobs may share a node). Slots keep their host's name."""
    out = []
    for profile in profiles:
        n = profile.max_jobs if profile.scheduler == "slurm" else 1
        if n == 1:
            out.append(profile)
            continue
        for i in range(n):
            out.append(dataclasses.replace(
                profile, state_dir=f"{profile.state_dir.rstrip('/')}/slot-{i}", slot=i))
    return out
