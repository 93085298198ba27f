"""What the server's own parser would make of a variant's command, before it runs.

A variant that SGLang refuses at argparse (a removed flag, an ambiguous
abbreviation, a value outside its choices) costs a deploy, a baseline stopped
and a crash to read; ddlab says it first. :func:`check_command` reads the
command with the parser table of the release the host runs
(:mod:`ddlab.config.sglang`): for ``sglang.*`` modules the release's table
(plus the fork overlay and private flags the base declares), for the embedded
target its own argparse parser, for anything else nothing (the flags pass as
they are, and the check says so).

Which release: the one the config declares (``sglang.version``), else the host
profile's ``sglang_version``, else what the host has installed (asked once per
host and interpreter, :func:`installed_sglang`), else the newest release ddlab
has a table of, and the check's notes say which it was
(:func:`sglang_version_on`; ``deploy``, ``deploy --dry-run`` and ``ddlab unit
--host`` all ask this way, :func:`ask_sglang_version` connecting for the last
two; when the host cannot say or cannot be reached, the notes say why).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlab.config.bases import Config
from ddlab.config.sglang import Finding, FlagTable, flag_table, parse_version, table_of_parser
from ddlab.core.errors import ConfigError, HostError
from ddlab.core.log import get_logger

__all__ = ["CommandCheck", "check_command", "installed_sglang", "sglang_version_on",
           "ask_sglang_version", "TARGET_MODULE"]

log = get_logger(__name__)

TARGET_MODULE = "ddlab.target"
_ASKED: dict[tuple, tuple] = {}  # (host, python, path) -> (version | None, why), per process
# One command on the host, its answer the last line of stdout. The installed
# distribution's metadata first (no import of sglang). Without metadata (a source
# checkout on PYTHONPATH, as a fork may run), the package is located with
# find_spec, which imports nothing, and a literal ``__version__ = '...'`` is read
# from its ``_version.py`` (written by the build, 0.5.10+) or ``version.py``
# (0.4.x). Only when neither has one is sglang imported, stdout kept clean: on
# 0.5.23 that pulls transformers, torch, numpy, IPython, aiohttp (seconds).
# A development placeholder (0.0.0.dev0) is no version.
_VERSION_PROBE = """\
import importlib.metadata as m, sys
try:
    version = m.version('sglang')
except m.PackageNotFoundError:
    version = None
if version:
    print(version)
    sys.exit(0)
import ast, contextlib, importlib.util, os
spec = importlib.util.find_spec('sglang')
if spec is None:
    sys.exit("ModuleNotFoundError: No module named 'sglang'")
def literal(path):
    try:
        tree = ast.parse(open(path, encoding='utf-8').read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and any(getattr(t, 'id', None) == '__version__' for t in node.targets)):
            return node.value.value
version = next((v for d in spec.submodule_search_locations or ()
                for v in (literal(os.path.join(d, f)) for f in ('_version.py', 'version.py'))
                if v), None)
if version is None:
    with contextlib.redirect_stdout(sys.stderr):
        import sglang
    version = str(getattr(sglang, '__version__', '') or '')
where = list(spec.submodule_search_locations or ())[:1] or [spec.origin]
if not version or version.startswith('0.0.0'):
    sys.exit(f"sglang at {where[0]} has no version ({version or 'none'}): no metadata, "
             "no _version.py; name it in the host profile (sglang_version)")
print(version)
"""


@dataclass
class CommandCheck:
    """The findings of one command against one parser table (or none)."""

    table: FlagTable | None
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
    config's own ``sglang.version``. Nothing touches a host."""
    declared = config.sglang.get("version")
    source = version_source if version else ("declared by the config" if declared
                                            else version_source or "the newest with a table: "
                                            "the host's own version was not asked")
    table = _table_for(config, version or declared)
    if table is None:
        return CommandCheck(None, version_source=source)
    findings = table.check(config.argv(python="python")[3:])
    findings += _since(config, table)
    return CommandCheck(table, findings, version_source=source if table.product == "SGLang"
                        else "its own parser")


def _table_for(config: Config, version: str | None) -> FlagTable | None:
    extra = config.sglang.get("extra_flags", ())
    if config.module == TARGET_MODULE:
        from ddlab.target.args import build_parser  # the target's argparse, no torch

        return table_of_parser(build_parser(), name=f"ddlab's target (python -m {TARGET_MODULE})",
                               extra_flags=extra)
    if config.module.split(".")[0] != "sglang":
        return None
    fork = config.sglang.get("fork")
    return flag_table(version, overlays=[fork] if fork else (), extra_flags=extra)


def _since(config: Config, table: FlagTable) -> list[Finding]:
    since = config.sglang.get("since")
    if not since or table.product != "SGLang" or not table.asked:
        return []
    if parse_version(table.asked) >= parse_version(since):
        return []
    return [Finding("error", "sglang.since", f"base {config.base} is for SGLang {since} or newer, "
                    f"and the host runs {table.asked}", "use a base written for that release")]


def sglang_version_on(config: Config, profile, transport=None) -> tuple[str | None, str]:
    """``(version, where it came from)`` for checking ``config``'s command on the host of
    ``profile``: the config's ``sglang.version``, the profile's ``sglang_version``, else
    the unit's own python asked through ``transport`` (None: not asked). No version
    (the newest table is used) comes with why; a module that is no SGLang has none."""
    if config.sglang.get("version"):
        return config.sglang["version"], "declared by the config"
    if config.module.split(".")[0] != "sglang":
        return None, ""
    if profile.sglang_version:
        return profile.sglang_version, "named by the host profile"
    if transport is None:
        return None, ""
    python = config.python or profile.python
    version, why = _ask(transport, python, config.env.get("PYTHONPATH", ""))
    if version:
        return version, f"{python} on {profile.name} says so"
    return None, (f"the newest with a table: could not read the SGLang version of {python} "
                  f"on {profile.name}: {why}")


def ask_sglang_version(config: Config, profile) -> tuple[str | None, str]:
    """:func:`sglang_version_on`, connecting to the host only when it must be asked (one
    command); a host that cannot be reached is said in the answer, not raised."""
    version, source = sglang_version_on(config, profile)
    if version or config.module.split(".")[0] != "sglang":
        return version, source
    from ddlab.hosts import connect  # the connection only when a host is asked

    try:
        with connect(profile) as transport:
            return sglang_version_on(config, profile, transport)
    except HostError as err:
        said = str(err).splitlines()[0][:200]
        return None, (f"the newest with a table: could not reach {profile.name} to ask its "
                      f"SGLang version: {said}")


def installed_sglang(transport, python: str, pythonpath: str = "") -> str | None:
    """The SGLang version ``python`` on the host has (one command, asked once per host,
    interpreter and path in this process): the installed distribution's, else, for a source
    checkout on its path, the package's own ``__version__`` (see ``_VERSION_PROBE``);
    None, with a warning, when it cannot say. ``pythonpath``: the unit's own PYTHONPATH,
    so a checkout that only the unit puts on the path is the one asked."""
    return _ask(transport, python, pythonpath)[0]


def _ask(transport, python: str, pythonpath: str) -> tuple[str | None, str]:
    """``(version, "")``, or ``(None, why)`` (logged as a warning once)."""
    key = (transport.profile.name, transport.profile.hostname, python, pythonpath)
    if key not in _ASKED:
        argv = [python, "-c", _VERSION_PROBE]
        if pythonpath:
            argv = ["env", f"PYTHONPATH={pythonpath}", *argv]
        done = transport.run(argv, check=False, timeout_s=30)
        lines = done.stdout.strip().splitlines() if done.exit_code == 0 else []
        version = lines[-1].strip() if lines else None
        why = ""
        if version is None:
            said = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
            why = f"exit {done.exit_code}: {said}"
            log.warning(f"{transport.profile.name}: could not read the SGLang version of {python} "
                        f"({why}); the newest table ddlab has is used")
        _ASKED[key] = (version, why)
    return _ASKED[key]
