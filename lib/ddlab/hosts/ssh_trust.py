"""Who an SSH host is and whether to trust it: ssh config resolution and host keys.

``resolve_hops(profile, config)`` turns a profile into the hops ssh would use:
the ProxyJump chain (the first hop's own ProxyJump applies too, as in
OpenSSH) and then the target, each with HostName, User, Port and IdentityFile
from ``~/.ssh/config`` unless the profile sets them. Each key file is checked before
anything connects (:func:`check_identity_files`): the profile's must be a private key
file; an ssh config's that does not exist is left out, as ssh does. A ``.pub``, a
folder, a PuTTY ``.ppk`` or a device is one clear error, never a connection retried.

Host keys follow paramiko's default, not fabric's auto-add: an unknown key is
refused (:class:`UnknownKeyPolicy`) with the exact line that would trust it,
unless the profile opts into trust on first use, which appends the key to
known_hosts. A changed key is refused by paramiko before any policy runs;
:func:`changed_key_error` makes that loud.
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import paramiko

from ddlab.core.errors import ConfigError, HostKeyError
from ddlab.hosts.profiles import HostProfile

__all__ = ["Hop", "load_ssh_config", "resolve_hops", "known_hosts_path", "UnknownKeyPolicy",
           "changed_key_error", "check_identity_file", "check_identity_files"]

log = logging.getLogger("ddlab.ssh")


@dataclass(frozen=True)
class Hop:
    """One SSH endpoint after ssh-config resolution (a jump host or the target)."""

    alias: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


def load_ssh_config(path: str | None) -> paramiko.SSHConfig:
    """The parsed ssh config (``~/.ssh/config`` by default); an absent file is empty."""
    file = Path(path or "~/.ssh/config").expanduser()
    if not file.is_file():
        if path:
            raise ConfigError(f"ssh_config={path!r}: no such file", fix="fix or remove `ssh_config:`",
                              key="ssh_config", value=path)
        return paramiko.SSHConfig()
    try:
        return paramiko.SSHConfig.from_path(str(file))
    except Exception as exc:  # paramiko raises bare ConfigParseError/ValueError subclasses
        raise ConfigError(f"{file}: cannot be parsed: {exc}", fix="fix the ssh config",
                          value=str(file)) from None


def resolve_hops(profile: HostProfile, config: paramiko.SSHConfig) -> list[Hop]:
    """The jump hosts (in order) and then the target, as ssh would resolve them."""
    options = config.lookup(profile.hostname)
    target = _hop(profile.hostname, config, user=profile.user, port=profile.port,
                  identity=profile.identity_file)
    jump = profile.proxy_jump if profile.proxy_jump is not None else options.get("proxyjump")
    return _jumps(jump, config, {profile.hostname}, profile) + [target]


def _jumps(spec: str | None, config, seen: set, profile: HostProfile) -> list[Hop]:
    if not spec or spec.strip().lower() == "none":
        return []
    hops: list[Hop] = []
    for index, part in enumerate(p.strip() for p in spec.split(",")):
        user, host, port = _parse_jump(part)
        if host in seen or len(seen) > 8:
            raise ConfigError(f"proxy_jump={spec!r}: {host} loops back or nests too deep",
                              fix="check ProxyJump in the profile and ~/.ssh/config", value=spec)
        if index == 0:  # like ssh: only the first hop's own ProxyJump applies
            hops += _jumps(config.lookup(host).get("proxyjump"), config, seen | {host}, profile)
        hops.append(_hop(host, config, user=user, port=port,
                         identity=None if config.lookup(host).get("identityfile")
                         else profile.identity_file))
    return hops


def _parse_jump(part: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` (``[v6]:port`` too) -> (user, host, port)."""
    user, _, hostport = part.rpartition("@")
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = hostport.partition(":")
    if not host or (port and not port.isdigit()):
        raise ConfigError(f"proxy_jump hop {part!r}: must be [user@]host[:port]",
                          fix="e.g. proxy_jump: admin@bastion:22", value=part)
    return user or None, host, int(port) if port else None


def _hop(alias: str, config, *, user=None, port=None, identity=None) -> Hop:
    options = config.lookup(alias)
    if options.get("proxycommand") and options["proxycommand"].lower() != "none":
        raise ConfigError(f"{alias}: ~/.ssh/config gives it ProxyCommand "
                          f"{options['proxycommand']!r}, which ddlab does not run",
                          fix="reach it with ProxyJump (proxy_jump: in the host profile, or in "
                              "ssh_config), or an ssh_config alias without ProxyCommand",
                          value=options["proxycommand"])
    # like ssh: a configured key file that does not exist is skipped; the profile's is
    # kept and checked before connecting (check_identity_files), as a missing one is an error
    files = [identity] if identity else [f for f in options.get("identityfile", [])
                                         if Path(f).expanduser().exists()]
    return Hop(alias=alias, hostname=options.get("hostname", alias),
               port=int(port or options.get("port", 22)),
               user=user or options.get("user") or getpass.getuser(),
               identity_files=tuple(str(Path(f).expanduser()) for f in files))


def check_identity_files(hops: list[Hop], host: str) -> None:
    """Every hop's key files hold private keys (:func:`check_identity_file`); called
    before anything connects, so a wrong file is one error, never a retried handshake."""
    for hop in hops:
        for path in hop.identity_files:
            check_identity_file(path, where=f"host {host!r} ({hop.alias}): identity_file")


MAX_KEY_BYTES = 64 * 1024  # an RSA-16384 private key is under 13 KiB
_PUBLIC_KEY = re.compile(rb"\s*(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+) AAAA")


def check_identity_file(path: str, *, where: str = "identity_file") -> str:
    """``path`` (``~`` expanded) when it holds a private key ssh can offer, else a
    ConfigError that says what it holds instead and what to give; reads at most
    :data:`MAX_KEY_BYTES` (``/dev/zero`` is refused by its type, never read)."""
    file = Path(path).expanduser()
    fix = ("give the private key, such as ~/.ssh/id_ed25519 (not the .pub beside it); "
           "an encrypted one must be loaded with ssh-add")
    try:
        info = file.stat()
    except FileNotFoundError:
        raise ConfigError(f"{where} {path}: no such file", fix=fix, key="identity_file",
                          value=path) from None
    except OSError as err:
        raise ConfigError(f"{where} {path}: cannot be read ({err.strerror})", fix=fix,
                          key="identity_file", value=path) from None
    if stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{where} {path}: is a folder, not a key file", fix=fix,
                          key="identity_file", value=path)
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{where} {path}: not a regular file (a device or a pipe)", fix=fix,
                          key="identity_file", value=path)
    if info.st_size > MAX_KEY_BYTES:
        raise ConfigError(f"{where} {path}: {info.st_size} bytes, too large for a private key "
                          f"(at most {MAX_KEY_BYTES})", fix=fix, key="identity_file", value=path)
    try:
        head = file.read_bytes()
    except OSError as err:
        raise ConfigError(f"{where} {path}: cannot be read ({err.strerror})", fix=fix,
                          key="identity_file", value=path) from None
    what = _not_a_private_key(head, file)
    if what:
        raise ConfigError(f"{where} {path}: {what}", fix=fix, key="identity_file", value=path)
    return str(file)


def _not_a_private_key(head: bytes, file: Path) -> str:
    """What the file holds when it is not a private key; "" when it is one."""
    if head.startswith(b"PuTTY-User-Key-File"):
        return (f"a PuTTY key (.ppk), which ssh cannot read; convert it: puttygen {file} "
                f"-O private-openssh -o {file.with_suffix('')}")
    if _PUBLIC_KEY.match(head):
        private = file.with_suffix("") if file.suffix == ".pub" else None
        return "a public key, not a private key" + (
            f" (the private one is probably {private})" if private else "")
    if re.search(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----", head[:4096]) is None:
        return "not a private key (no -----BEGIN ... PRIVATE KEY----- line)"
    return ""


def known_hosts_path(profile: HostProfile, config: paramiko.SSHConfig) -> Path:
    """The profile's known_hosts, else the ssh config's UserKnownHostsFile, else ~/.ssh/known_hosts."""
    if profile.known_hosts:
        return Path(profile.known_hosts).expanduser()
    configured = config.lookup(profile.hostname).get("userknownhostsfile")
    return Path((configured or "~/.ssh/known_hosts").split()[0]).expanduser()


class UnknownKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Refuse an unknown host key with how-to-trust, or record it when the profile opts in."""

    def __init__(self, profile: HostProfile, hop: Hop, known: Path):
        self.profile, self.hop, self.known = profile, hop, known

    def missing_host_key(self, client, hostname, key):
        fingerprint = key.fingerprint
        if not self.profile.trust_on_first_use:
            raise HostKeyError(
                f"{self.hop}: host key {key.get_name()} {fingerprint} is not in {self.known}: "
                "unknown hosts are refused",
                fix=f"check the fingerprint, then trust it: ssh-keyscan -p {self.hop.port} "
                    f"-t {key.get_name()} {self.hop.hostname} >> {self.known}  "
                    f"(or set `trust_on_first_use: true` in the {self.profile.name!r} profile)",
                host=self.profile.name, hostname=hostname, fingerprint=fingerprint)
        self.known.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.known, "a", opener=lambda p, f: os.open(p, f, 0o600)) as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)
        log.warning("%s: trusted on first use: recorded %s %s in %s", self.hop, key.get_name(),
                    fingerprint, self.known)


def changed_key_error(profile: HostProfile, hop: Hop, known: Path, exc) -> HostKeyError:
    name = f"[{hop.hostname}]:{hop.port}" if hop.port != 22 else hop.hostname
    return HostKeyError(
        f"WARNING: the host key of {hop} HAS CHANGED: {known} has "
        f"{exc.expected_key.get_name()} {exc.expected_key.fingerprint}, the host now offers "
        f"{exc.key.get_name()} {exc.key.fingerprint}. Someone may be intercepting the "
        "connection, or the host was reinstalled; refused",
        fix=f"if you know why it changed, remove the old key (ssh-keygen -R '{name}' -f {known}) "
            "and trust the new one",
        host=profile.name, changed=True, hostname=name)
