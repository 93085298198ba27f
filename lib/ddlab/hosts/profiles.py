"""Host profiles: how to reach a machine and how it runs services, read and checked.

A host profile is ``params/hosts/NAME.yaml`` or the built-in ``local``: the address,
user and port (or none, for this machine), host-key checking, the service manager
(systemd, plain processes, Slurm), where units and state live, a baseline to put back,
a pool of other hosts, overrides for every config deployed there. :func:`load_host`
reads one into a :class:`HostProfile`; :func:`available_hosts` lists them. What a
profile is used for, the transport that runs commands on the host, is
:mod:`ddlab.hosts.transport`'s.

Why profiles are strict (unknown keys, wrong types and unknown names raise
:class:`ConfigError` naming the choices): a typo in a profile would otherwise
send a command to the wrong machine, or quietly disable host-key checking.
Validation happens before anything touches a host.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.core import yamlio
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError
from ddlab.core.paths import params_dir, project_root

__all__ = ["HostProfile", "load_host", "available_hosts"]


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_CHOICES = {"transport": ("local", "ssh"), "service_manager": ("systemd", "process"),
            "http": ("tunnel", "direct"), "scheduler": ("", "slurm")}
_POSITIVE = ("port", "baseline_port", "connect_timeout_s", "command_timeout_s", "max_jobs")
# what a pool profile may hold besides `pool`: it only names other profiles
POOL_KEYS = ("pool", "description", "base")


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
    sglang_version: str = ""  # the release the host runs; "" means deploy asks the host
    # overrides every variant gets on this host only, at deploy time (a GPU of a
    # shared machine: port, env.CUDA_VISIBLE_DEVICES); never part of a cell's identity
    overrides: dict = field(default_factory=dict)
    # a pool profile: the names of the host profiles a sweep spreads its cells over
    pool: list = field(default_factory=list)
    # scheduler: slurm -> each variant is a batch job submitted on this (login) host
    scheduler: str = ""
    partition: str = ""
    account: str = ""
    gres: str = ""                 # per job, e.g. gpu:1 (or gpu:h200:1)
    time_limit: str = ""           # per job, sbatch --time (e.g. 30:00, 1:00:00)
    sbatch_options: list = field(default_factory=list)   # more sbatch options, one per item
    log_dir: str = ""              # jobs' logs, on storage the login host and the nodes share
    max_jobs: int = 1              # cells queued or running at once (slurm)
    source: str = field(default="", compare=False)  # the YAML file it came from, if any
    slot: int = 0  # a pool's i-th place on this host (hosts.pools.slots); never from YAML

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
        if values.get("pool"):
            more = sorted(set(values) - set(POOL_KEYS))
            if more:
                raise ConfigError(f"{where}: a pool profile (pool: {values['pool']}) holds "
                                  f"{', '.join(more)}: a pool only names host profiles",
                                  fix="put those keys in the hosts' own profiles", key=more[0],
                                  value=values[more[0]])
        profile = cls(name=name, source=source, **values)
        if profile.transport == "ssh" and not profile.hostname:
            raise ConfigError(f"{where}: transport=ssh without hostname: hostname is required",
                              fix="add `hostname: HOST` (an alias from ~/.ssh/config works)",
                              key="hostname", value=None)
        _check_scheduler(profile, where)
        return profile

    def to_dict(self) -> dict:
        """The profile's keys and values (JSON-ready); ``name`` included."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in ("source", "slot")}

    @property
    def handle(self) -> str:
        """What ``--host`` takes to find this profile again: its name when that
        resolves to the same file (or to the built-in ``local``), else its path."""
        own = params_dir() / "hosts" / f"{self.name}.yaml"
        if (self.source and Path(self.source) == own) or (self.name == "local" and not own.is_file()):
            return self.name
        return self.source or self.name

    @property
    def label(self) -> str:
        """``name (user@host:port)`` for messages."""
        if self.transport == "local":
            return self.name
        where = f"{self.user + '@' if self.user else ''}{self.hostname}"
        return f"{self.name} ({where}{':' + str(self.port) if self.port else ''})"


_KEYS = {f.name: f for f in dataclasses.fields(HostProfile)
         if f.name not in ("name", "source", "slot")}
# Values that reach a command line or name a place on the host: a narrow shape each, so a
# profile can neither inject an option (a hostname "-oProxyCommand=...") nor a command (a
# user "root;id") into a printed ssh hint, nor write outside its folders ("../../etc").
_PATH = re.compile(r"~?(/[\w.@+-]+)*/?|~")
_SHAPES = {
    "hostname": (re.compile(r"[A-Za-z0-9_\[][A-Za-z0-9_.:%\[\]-]*"),
                 "a host name, an address or an ssh_config alias (no leading '-')"),
    "user": (re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\$?"), "a user name (letters, digits, _ . -)"),
    "unit_dir": (re.compile(r"/[\w./-]+"), "an absolute path"),
    "state_dir": (_PATH, "an absolute or ~ path of plain names (no '..')"),
    "workdir": (_PATH, "an absolute or ~ path of plain names (no '..')"),
    "python": (re.compile(r"[\w./~+-]+"), "a path or a command name (no spaces or shell signs)"),
    "baseline_service": (re.compile(r"[A-Za-z0-9][A-Za-z0-9:_.@-]*"), "a unit name"),
    "log_dir": (_PATH, "an absolute or ~ path of plain names (no '..')"),
    "partition": (re.compile(r"[A-Za-z0-9_.,-]+"), "a Slurm partition name (or a list, commas)"),
    "account": (re.compile(r"[A-Za-z0-9_.-]+"), "a Slurm account name"),
    "gres": (re.compile(r"[A-Za-z0-9_:.,-]+"), "a Slurm gres spec such as gpu:1"),
    "time_limit": (re.compile(r"(\d+-)?\d+(:\d+){0,2}"), "a Slurm time such as 30:00 or 1-00:00:00"),
    "sglang_version": (re.compile(r"\d+(\.\d+){1,3}([.-]?(post|dev|rc)\d*)?"),
                       "a release number such as 0.5.23"),
}
# systemd loads units from these folders only (systemd.unit(5)); a variant's unit goes to one.
UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
             "/usr/lib/systemd/system", "/lib/systemd/system")


def _check(key: str, value, where: str):
    """One profile key's value, validated; the error says what is allowed."""
    if key not in _KEYS:
        close = closest(str(key), _KEYS)
        hint = f"did you mean {close!r}?" if close else f"known keys: {', '.join(_KEYS)}"
        raise ConfigError(f"{where}: unknown key {key!r}: not a host profile key",
                          fix=hint, key=key, value=value)
    kind = _KEYS[key].type
    if value is None and "None" in kind:
        return None
    if kind.startswith("dict"):
        return _check_overrides(value, where)
    if kind.startswith("list"):
        return _check_names(key, value, where)
    if "bool" in kind:
        ok, want = isinstance(value, bool), "true or false"
    elif "int" in kind:
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif "float" in kind:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        want = "a finite number"
    else:
        ok, want = isinstance(value, str), "a string"
    if ok and key in _CHOICES and value not in _CHOICES[key]:
        ok, want = False, " or ".join(repr(c) if not c else c for c in _CHOICES[key])
    if ok and key in _POSITIVE and not value > 0:
        ok, want = False, "a number > 0"
    if ok and key in ("port", "baseline_port") and value > 65535:
        ok, want = False, "a port number 1-65535"
    if ok and key in _SHAPES and value:
        pattern, want = _SHAPES[key]
        ok = bool(pattern.fullmatch(value)) and ".." not in value.split("/")
    if ok and key == "unit_dir" and value.rstrip("/") not in UNIT_DIRS:
        ok, want = False, "one of systemd's unit folders: " + ", ".join(UNIT_DIRS)
    if not ok:
        raise ConfigError(f"{where}: {key}={value!r}: must be {want}",
                          fix=f"set `{key}:` to {want}", key=key, value=value)
    return float(value) if "float" in kind else value


_SLURM_KEYS = ("partition", "account", "gres", "time_limit", "sbatch_options", "log_dir")


def _check_scheduler(profile: HostProfile, where: str) -> None:
    """A Slurm host has no baseline (its jobs are ephemeral: nothing runs there to stop
    and put back); Slurm keys without ``scheduler: slurm`` would be silently ignored."""
    if profile.scheduler == "slurm" and profile.baseline_service:
        raise ConfigError(f"{where}: scheduler=slurm with baseline_service="
                          f"{profile.baseline_service!r}: a Slurm host has no baseline (each "
                          "variant is a job of its own; nothing runs there to stop and put back)",
                          fix='remove baseline_service (or set it to "")', key="baseline_service",
                          value=profile.baseline_service)
    given = [key for key in _SLURM_KEYS if getattr(profile, key)]
    if not profile.scheduler and given:
        raise ConfigError(f"{where}: {given[0]}={getattr(profile, given[0])!r} is a Slurm setting, "
                          "but the profile has no scheduler", fix="add `scheduler: slurm`, or "
                          f"remove {', '.join(given)}", key=given[0], value=getattr(profile, given[0]))


def _check_overrides(value, where: str) -> dict:
    """``overrides``: a mapping of override keys (what ``--set`` takes) to scalar values;
    the keys themselves are checked against the flags when a variant is deployed."""
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool)))
            for k, v in value.items()):
        raise ConfigError(f"{where}: overrides={value!r}: must be a mapping of override keys to "
                          "plain values", fix="e.g. `overrides: {port: 30001, "
                          "env.CUDA_VISIBLE_DEVICES: '1'}`", key="overrides", value=value)
    return dict(value)


def _check_names(key: str, value, where: str) -> list:
    """``pool`` (profile names) and ``sbatch_options`` (one option each, e.g. ``--qos=high``)."""
    items = value if isinstance(value, list) else None
    if key == "pool":
        ok = items is not None and all(isinstance(v, str) and _NAME.fullmatch(v) for v in items) \
            and len(set(items)) == len(items)  # [] is no pool (what to_dict writes)
        want, example = "a list of distinct host profile names", "pool: [gpu1, gpu2, gpu3]"
    else:
        ok = items is not None and all(isinstance(v, str) and re.fullmatch(r"--?[A-Za-z][\w-]*(=\S+)?", v)
                                       for v in items)
        want, example = "a list of sbatch options, one each", "sbatch_options: [--qos=high]"
    if not ok:
        raise ConfigError(f"{where}: {key}={value!r}: must be {want}", fix=f"e.g. `{example}`",
                          key=key, value=value)
    return list(items)


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
        close = closest(name, choices)
        hint = f"did you mean {close!r}? " if close else ""
        raise ConfigError(f"host={name!r}: no such profile; available: {', '.join(choices)}",
                          fix=f"{hint}or add {path}", value=name, available=choices)
    return HostProfile.from_dict({**data, **overrides}, name=name,
                                 source=str(path) if path.is_file() else "")


def _read_yaml(path: Path) -> dict:
    try:
        text = path.read_text()
        data = yamlio.load(text)
        if isinstance(data, dict) and isinstance(data.get("overrides"), dict):
            # flag values keep their text (010, 3.10), as --set's do
            data["overrides"] = yamlio.load(text, keep_text=True)["overrides"]
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}",
                          fix="fix the file's syntax", value=str(path)) from None
    return {} if data is None else data


