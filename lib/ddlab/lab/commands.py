"""What the server's own parser would make of a variant's command, before it runs.

A variant that the server refuses at argparse (a removed flag, an ambiguous
abbreviation, a value outside its choices, a bad key inside vLLM's
``--speculative-config``) costs a deploy, a baseline stopped and a crash to read;
ddlab says it first. :func:`check_command` reads the command with the parser table
of the release the host runs, by the config's family
(:mod:`ddlab.config.families`): SGLang, for ``sglang.*`` modules, the release's
table (:mod:`ddlab.config.sglang`, plus the fork overlay and private flags the base
declares), for the embedded target (:data:`TARGET_MODULE`) its own argparse parser;
vLLM, for ``vllm.*`` modules and the embedded target alike (``python -m ddlab.target
--dialect vllm`` takes ``vllm serve``'s flags), the release's ``vllm serve`` table
(:mod:`ddlab.config.vllm`); for any other module nothing (the flags pass as they
are, and the check says so).

Which release: the one the config declares (``sglang.version`` / ``vllm.version``),
else, for SGLang, the host profile's ``sglang_version``, else what the host has
installed (asked once per host, interpreter and package, :func:`installed_version`:
the family's ``version_probe``), else the newest release ddlab has a table of, and
the check's notes say which it was (:func:`server_version_on`; ``deploy``, ``deploy
--dry-run`` and ``ddlab unit --host`` all ask this way, :func:`ask_server_version`
connecting for the last two; when the host cannot say or cannot be reached, the
notes say why). ``sglang_version_on``, ``ask_sglang_version`` and
``installed_sglang`` are the same functions under their first names.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ddlab.config.bases import Config
from ddlab.config.families import FAMILIES, TARGET_MODULE
from ddlab.config.sglang import Finding, FlagTable, flag_table, parse_version, table_of_parser
from ddlab.config.vllm import VllmTable, vllm_table
from ddlab.core.errors import ConfigError, HostError
from ddlab.core.log import get_logger

__all__ = ["CommandCheck", "check_command", "installed_version", "server_version_on",
           "ask_server_version", "installed_sglang", "sglang_version_on", "ask_sglang_version",
           "TARGET_MODULE"]

log = get_logger(__name__)

# (host, hostname, python, path, package) -> (version | None, why), per process
_ASKED: dict[tuple, tuple] = {}
@dataclass
class CommandCheck:
    """The findings of one command against one parser table (or none)."""

    table: FlagTable | VllmTable | None
    findings: list[Finding] = field(default_factory=list)
    version_source: str = ""   # where the release came from: declared, profile, host, newest

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "warning"]

    @property
    def against(self) -> str:
        """``flags checked against SGLang 0.5.23 (asked the host)``, in one line."""
        if self.table is None:
            return "flags not checked: ddlab has no parser table for this module"
        return f"flags checked against {self.table.label} ({self.version_source})"

    def notes(self) -> list[str]:
        return [self.against, *(f"warning: {w}" for w in self.warnings)]

    def raise_errors(self, name: str) -> None:
        """A ConfigError naming every error (the first one's fix), when there are any."""
        if not self.errors:
            return
        first = self.errors[0]
        listed = "; ".join(f.message for f in self.errors)
        raise ConfigError(f"variant {name}: {self.table.label} would refuse its command: {listed}",
                          fix=first.fix, key=first.option, findings=[str(f) for f in self.errors])


def check_command(config: Config, *, version: str | None = None,
                  version_source: str = "") -> CommandCheck:
    """Check ``config``'s command; ``version`` (with where it came from) wins over the
    config's own ``sglang.version`` / ``vllm.version``. Nothing touches a host."""
    declared = config.release.get("version")
    source = version_source if version else ("declared by the config" if declared
                                            else version_source or "the newest with a table: "
                                            "the host's own version was not asked")
    table = _table_for(config, version or declared)
    if table is None:
        return CommandCheck(None, version_source=source)
    findings = table.check(config.family.parser_words(_as_server_reads(config)))
    findings += _since(config, table)
    return CommandCheck(table, findings, version_source=source if table.product in ("SGLang",
                                                                                    "vLLM")
                        else "its own parser")


def _as_server_reads(config: Config) -> Config:
    """The config whose words the server's own parser reads: on the embedded target in
    another family's dialect, without the target's own switches (its faults, its device:
    ``family.target_switches``), which that family's real server would refuse."""
    switches = getattr(config.family, "target_switches", ())
    if config.module != TARGET_MODULE or not any(k in config.flags for k in switches):
        return config
    return dataclasses.replace(config, flags={k: v for k, v in config.flags.items()
                                              if k not in switches})


def _table_for(config: Config, version: str | None) -> FlagTable | VllmTable | None:
    if config.family.name == "vllm":  # the target in vLLM's dialect is checked as vLLM
        return vllm_table(version) if _runs_family(config) else None
    extra = config.sglang.get("extra_flags", ())
    if config.module == TARGET_MODULE:
        from ddlab.target.args import build_parser  # the target's argparse, no torch

        return table_of_parser(build_parser(), name=f"ddlab's target (python -m {TARGET_MODULE})",
                               extra_flags=extra)
    if config.module.split(".")[0] != "sglang":
        return None
    fork = config.sglang.get("fork")
    return flag_table(version, overlays=[fork] if fork else (), extra_flags=extra)


def _runs_family(config: Config) -> bool:
    """Whether the command runs the family's own server (its package's module), or the
    embedded target speaking its dialect; anything else has no table."""
    return config.module == TARGET_MODULE or \
        config.module.split(".")[0] == config.family.package


def _since(config: Config, table) -> list[Finding]:
    since = config.release.get("since")
    if not since or table.product != config.family.label or not table.asked:
        return []
    if parse_version(table.asked) >= parse_version(since):
        return []
    section, label = config.family.name, config.family.label
    return [Finding("error", f"{section}.since", f"base {config.base} is for {label} {since} or "
                    f"newer, and the host runs {table.asked}",
                    "use a base written for that release")]


def server_version_on(config: Config, profile, transport=None) -> tuple[str | None, str]:
    """``(version, where it came from)`` for checking ``config``'s command on the host of
    ``profile``: the config's ``sglang.version`` / ``vllm.version``, for SGLang the
    profile's ``sglang_version``, else the unit's own python asked through ``transport``
    (None: not asked). No version (the newest table is used) comes with why; a module
    that is not the family's server (the embedded target, another program) has none."""
    family = config.family
    if config.release.get("version"):
        return config.release["version"], "declared by the config"
    if config.module.split(".")[0] != family.package:
        return None, ""
    if family.name == "sglang" and profile.sglang_version:
        return profile.sglang_version, "named by the host profile"
    if transport is None:
        return None, ""
    python = config.python or profile.python
    version, why = _ask(transport, python, config.env.get("PYTHONPATH", ""), family.name)
    if version:
        return version, f"{python} on {profile.name} says so"
    return None, (f"the newest with a table: could not read the {family.label} version of "
                  f"{python} on {profile.name}: {why}")


def ask_server_version(config: Config, profile) -> tuple[str | None, str]:
    """:func:`server_version_on`, connecting to the host only when it must be asked (one
    command); a host that cannot be reached is said in the answer, not raised."""
    version, source = server_version_on(config, profile)
    if version or config.module.split(".")[0] != config.family.package:
        return version, source
    from ddlab.hosts import connect  # the connection only when a host is asked

    try:
        with connect(profile) as transport:
            return server_version_on(config, profile, transport)
    except HostError as err:
        said = str(err).splitlines()[0][:200]
        return None, (f"the newest with a table: could not reach {profile.name} to ask its "
                      f"{config.family.label} version: {said}")


def installed_version(transport, python: str, pythonpath: str = "",
                      family: str = "sglang") -> str | None:
    """The version of ``family``'s server that ``python`` on the host has (one command,
    asked once per host, interpreter, path and family in this process): the installed
    distribution's, else, for a source checkout on its path, the package's own
    ``__version__`` (the family's ``version_probe``); None, with a warning, when it
    cannot say. ``pythonpath``: the unit's own PYTHONPATH, so a checkout that only the
    unit puts on the path is the one asked."""
    return _ask(transport, python, pythonpath, family)[0]


def installed_sglang(transport, python: str, pythonpath: str = "") -> str | None:
    """:func:`installed_version` of SGLang (its first name)."""
    return installed_version(transport, python, pythonpath, "sglang")


sglang_version_on = server_version_on   # their first names, when SGLang was the only family
ask_sglang_version = ask_server_version


def _ask(transport, python: str, pythonpath: str, family: str = "sglang") -> tuple[str | None, str]:
    """``(version, "")``, or ``(None, why)`` (logged as a warning once)."""
    key = (transport.profile.name, transport.profile.hostname, python, pythonpath, family)
    if key not in _ASKED:
        argv = [python, "-c", FAMILIES[family].version_probe]
        if pythonpath:
            argv = ["env", f"PYTHONPATH={pythonpath}", *argv]
        done = transport.run(argv, check=False, timeout_s=30)
        lines = done.stdout.strip().splitlines() if done.exit_code == 0 else []
        version = lines[-1].strip() if lines else None
        why = ""
        if version is None:
            said = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
            why = f"exit {done.exit_code}: {said}"
            log.warning(f"{transport.profile.name}: could not read the "
                        f"{FAMILIES[family].label} version of {python} ({why}); the newest "
                        "table ddlab has is used")
        _ASKED[key] = (version, why)
    return _ASKED[key]
