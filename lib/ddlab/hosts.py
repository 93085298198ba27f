"""Host profiles and the transports that run commands on a host.

A host profile (``params/hosts/NAME.yaml``, or the built-in ``local``) says how
to reach a machine and how it runs services. ``connect(profile)`` gives a
:class:`Transport`: the one object every other module uses to touch a host.

Contract, for every transport:

- ``run(argv)`` takes an argv list, never a shell string; the SSH transport
  quotes it with ``shlex.join`` and nothing else builds command lines.
- Every command has a timeout (``command_timeout_s`` unless given); a command
  that outlives it is killed (its process group) and raises
  :class:`CommandError` with ``timed_out=True``. With ``check=True`` (the
  default) a non-zero exit raises :class:`CommandError` with the argv, exit
  code and output tail; argv values with secret-looking names are masked.
- ``write_file`` is atomic (temp file + rename) and the file never exists with
  looser permissions than ``mode``; ``read_file`` raises FileNotFoundError.
- ``http_base(port)`` is a URL on *this* machine that reaches the host's
  ``127.0.0.1:port`` (through the SSH connection by default, so the server
  never has to listen on a public address).

Why profiles are strict (unknown keys, wrong types and unknown names raise
:class:`ConfigError` naming the choices): a typo in a profile would otherwise
send a command to the wrong machine, or quietly disable host-key checking.
Validation happens before anything touches a host.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from ddlab.errors import CommandError, ConfigError
from ddlab.paths import params_dir, project_root
from ddlab.redact import redact_argv

__all__ = ["HostProfile", "load_host", "available_hosts", "connect", "Transport",
           "LocalTransport", "Completed"]

log = logging.getLogger("ddlab.hosts")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_CHOICES = {"transport": ("local", "ssh"), "service_manager": ("systemd", "process"),
            "http": ("tunnel", "direct")}
_POSITIVE = ("port", "baseline_port", "connect_timeout_s", "command_timeout_s")


@dataclass(frozen=True)
class HostProfile:
    """How to reach one host and run services on it (see ``params/hosts/example-gpu.yaml``).

    Defaults depend on ``transport``: ``local`` runs services as processes
    with this interpreter from the project root; ``ssh`` expects systemd,
    ``python3`` and the remote user's home. ``state_dir`` holds ddlab's lock,
    pid and log files on the host; its default ``~/.cache/ddlab`` is per
    machine and user, not per checkout, so two checkouts see one lock.
    ``~`` in host-side paths means the remote user's home.
    """

    name: str = "local"
    transport: str = "local"
    hostname: str = ""
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    proxy_jump: str | None = None
    ssh_config: str | None = None
    service_manager: str = ""
    unit_dir: str = "/etc/systemd/system"
    baseline_service: str = ""
    baseline_port: int | None = None
    python: str = ""
    workdir: str = ""
    state_dir: str = "~/.cache/ddlab"
    trust_on_first_use: bool = False
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 60.0
    http: str = ""
    description: str = ""
    base: str = ""

    def __post_init__(self):
        local = self.transport == "local"
        defaults = {"service_manager": "process" if local else "systemd",
                    "python": sys.executable if local else "python3",
                    "workdir": str(project_root()) if local else "~",
                    "http": "direct" if local else "tunnel",
                    "base": "local" if local else "ddtree"}
        for key, value in defaults.items():
            if not getattr(self, key):
                object.__setattr__(self, key, value)

    @classmethod
    def from_dict(cls, data: dict, *, name: str = "custom", source: str = "") -> "HostProfile":
        """Validate a mapping (YAML keys) into a profile; ConfigError names key, value, choices."""
        where = source or f"host profile {name!r}"
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: {type(data).__name__}: must be a mapping of keys",
                              fix="write `key: value` lines, see params/hosts/example-gpu.yaml",
                              value=data)
        values = {key: _check(key, value, where) for key, value in data.items()}
        profile = cls(name=name, **values)
        if profile.transport == "ssh" and not profile.hostname:
            raise ConfigError(f"{where}: transport=ssh without hostname: hostname is required",
                              fix="add `hostname: HOST` (an alias from ~/.ssh/config works)",
                              key="hostname", value=None)
        return profile

    def to_dict(self) -> dict:
        """The profile's keys and values (JSON-ready); ``name`` included."""
        return dataclasses.asdict(self)

    @property
    def label(self) -> str:
        """``name (user@host:port)`` for messages."""
        if self.transport == "local":
            return self.name
        where = f"{self.user + '@' if self.user else ''}{self.hostname}"
        return f"{self.name} ({where}{':' + str(self.port) if self.port else ''})"


_KEYS = {f.name: f for f in dataclasses.fields(HostProfile) if f.name != "name"}


def _check(key: str, value, where: str):
    """One profile key's value, validated; the error says what is allowed."""
    if key not in _KEYS:
        close = difflib.get_close_matches(str(key), _KEYS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(_KEYS)}"
        raise ConfigError(f"{where}: unknown key {key!r}: not a host profile key",
                          fix=hint, key=key, value=value)
    kind = _KEYS[key].type
    if value is None and "None" in kind:
        return None
    if "bool" in kind:
        ok, want = isinstance(value, bool), "true or false"
    elif "int" in kind:
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif "float" in kind:
        ok, want = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    else:
        ok, want = isinstance(value, str), "a string"
    if ok and key in _CHOICES and value not in _CHOICES[key]:
        ok, want = False, " or ".join(_CHOICES[key])
    if ok and key in _POSITIVE and not value > 0:
        ok, want = False, "a number > 0"
    if ok and key in ("port", "baseline_port") and value > 65535:
        ok, want = False, "a port number 1-65535"
    if not ok:
        raise ConfigError(f"{where}: {key}={value!r}: must be {want}",
                          fix=f"set `{key}:` to {want}", key=key, value=value)
    return float(value) if "float" in kind else value


def available_hosts() -> list[str]:
    """Profile names: ``local`` and every ``params/hosts/*.yaml``."""
    names = {path.stem for path in (params_dir() / "hosts").glob("*.yaml")}
    return sorted(names | {"local"})


def load_host(name: str = "local", **overrides) -> HostProfile:
    """The profile ``params/hosts/NAME.yaml`` (or a path to a YAML file).

    ``local`` is built in; a ``params/hosts/local.yaml``, if present, replaces it.

    ``overrides`` replace keys (validated the same way), e.g.
    ``load_host("local", state_dir=tmp)``.
    """
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        name = path.stem
    elif not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"host={name!r}: must be a profile name (letters, digits, . _ -)",
                          fix=f"choose one of: {', '.join(available_hosts())}", value=name)
    else:
        path = params_dir() / "hosts" / f"{name}.yaml"
    if path.is_file():
        data = _read_yaml(path)
    elif name == "local":
        data = {}
    else:
        choices = available_hosts()
        close = difflib.get_close_matches(name, choices, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(f"host={name!r}: no such profile; available: {', '.join(choices)}",
                          fix=f"{hint}or add {path}", value=name, available=choices)
    return HostProfile.from_dict({**data, **overrides}, name=name, source=str(path))


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}".replace("\n", " "),
                          fix="fix the file's syntax", value=str(path)) from None
    return {} if data is None else data


def connect(profile: HostProfile | str = "local") -> "Transport":
    """A transport for the profile (or profile name); SSH connects lazily, on first use."""
    if isinstance(profile, str):
        profile = load_host(profile)
    if profile.transport == "local":
        return LocalTransport(profile)
    from ddlab.ssh import SSHTransport

    return SSHTransport(profile)


@dataclass(frozen=True)
class Completed:
    """What a finished command left: its argv, exit code (128+N for signal N
    locally, -1 when a remote reports only a signal), output and duration."""

    argv: list
    exit_code: int
    stdout: str
    stderr: str
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class Transport:
    """Runs commands and moves files on one host; a context manager that closes itself."""

    def __init__(self, profile: HostProfile):
        self.profile = profile

    def run(self, argv, *, input: str | bytes | None = None, timeout_s: float | None = None,
            check: bool = True) -> Completed:
        """Run argv on the host; see the module docstring for the contract."""
        argv = _argv(argv)
        timeout_s = float(timeout_s or self.profile.command_timeout_s)
        data = input.encode() if isinstance(input, str) else input
        log.debug("%s: run %s", self.profile.name, redact_argv(argv))
        done = self._run(argv, data, timeout_s)
        if check and done.exit_code != 0:
            raise command_error(self.profile, done)
        return done

    def _run(self, argv: list[str], data: bytes | None, timeout_s: float) -> Completed:
        raise NotImplementedError

    def write_file(self, path: str, data: bytes, mode: int = 0o600) -> None:
        raise NotImplementedError

    def read_file(self, path: str) -> bytes:
        raise NotImplementedError

    def http_base(self, port: int) -> str:
        raise NotImplementedError

    def expand_path(self, path: str) -> str:
        """A host-side path with a leading ``~`` replaced by the user's home there."""
        raise NotImplementedError

    def make_private_dir(self, path: str) -> None:
        """``mkdir -p`` on the host under umask 077: the folder, and any parent it
        makes, are 0700 (state, secrets and service folders are nobody else's)."""
        self.run(["sh", "-c", 'umask 077 && mkdir -p -- "$1"', "sh", path])

    def close(self) -> None:
        """Release connections and tunnels; the transport reconnects if used again."""

    @property
    def link(self) -> tuple:
        """The connection's identity now; a different value later means it dropped in
        between (requests through it may have been lost, not refused by the server)."""
        return ()

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def command_error(profile: HostProfile, done: Completed, *, timed_out: bool = False,
                  timeout_s: float | None = None) -> CommandError:
    """The CommandError for a failed or timed-out command (argv masked for secrets)."""
    shown = shlex.join(redact_argv(done.argv))
    shown = shown if len(shown) <= 300 else shown[:300] + "..."
    if timed_out:
        message = f"{shown}: still running after {timeout_s:g} s on {profile.label}, killed"
        fix = "raise timeout_s (or command_timeout_s in the host profile) if it needs longer"
    else:
        message = f"{shown}: exited {done.exit_code} on {profile.label}"
        fix = None
    return CommandError(message, fix=fix, argv=redact_argv(done.argv), exit_code=done.exit_code,
                        stdout=done.stdout, stderr=done.stderr, host=profile.name,
                        timed_out=timed_out, elapsed_s=done.elapsed_s)


def _argv(argv) -> list[str]:
    if isinstance(argv, (str, bytes)) or not argv:
        raise ConfigError(f"argv={argv!r}: must be a non-empty list of arguments",
                          fix="pass a list such as ['systemctl', 'status', NAME]", value=argv)
    out = [os.fspath(a) if isinstance(a, os.PathLike) else a for a in argv]
    for arg in out:
        if isinstance(arg, int) and not isinstance(arg, bool):
            continue
        if not isinstance(arg, str) or "\0" in arg:
            raise ConfigError(f"argument {arg!r}: must be a string without NUL",
                              fix="pass text arguments", value=arg)
    return [str(a) for a in out]


class LocalTransport(Transport):
    """This machine: subprocess with argv lists, no shell; each command in its own session."""

    def _run(self, argv, data, timeout_s):
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:  # like a shell: 127 not found, 126 not executable
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            return Completed(argv, code, "", f"{argv[0]}: {exc.strerror}\n", time.monotonic() - start)
        try:
            out, err = proc.communicate(data, timeout=timeout_s)
        except BaseException as exc:
            _kill_group(proc)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                out, err = b"", b""
            if not isinstance(exc, subprocess.TimeoutExpired):
                raise
            done = Completed(argv, 128 + signal.SIGKILL, _text(out), _text(err), time.monotonic() - start)
            raise command_error(self.profile, done, timed_out=True, timeout_s=timeout_s) from None
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        return Completed(argv, code, _text(out), _text(err), time.monotonic() - start)

    def write_file(self, path, data, mode=0o600):
        path = Path(self.expand_path(str(path)))
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.ddlab-tmp-")
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def read_file(self, path):
        return Path(self.expand_path(str(path))).read_bytes()

    def http_base(self, port):
        return f"http://127.0.0.1:{int(port)}"

    def expand_path(self, path):
        return os.path.expanduser(path)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
