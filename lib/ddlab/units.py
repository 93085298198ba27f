"""A config variant as a systemd service unit, with systemd's quoting rules.

``render_unit(variant)`` writes the unit a host installs: a Description that
says what changed against the base, ``Type=simple``, ``ExecStart=`` with every
argument quoted for systemd, ``Environment=`` lines, ``WorkingDirectory=``,
``Restart=no`` unless asked (a crash must be seen, not hidden by a restart),
``KillMode=control-group`` and an ``[Install]`` section.

Why the quoting is its own code: systemd does not parse ``ExecStart=`` like a
shell. Per systemd.syntax(7) and systemd.service(5), each word is unquoted
(``"..."``/``'...'``, C escapes, so every backslash must be doubled), then
``%`` specifiers are expanded (``%%`` is a literal ``%``), and at exec time
``$VAR``/``${VAR}`` are expanded (``$$`` is a literal ``$``); a lone ``;``
separates commands; a line ending in a backslash continues on the next line.
``Environment=`` is unquoted and specifier-expanded too, but ``$`` is literal
there. Secret-named variables can go to an ``EnvironmentFile=`` instead
(``render_unit(..., env_file=PATH)``, :func:`env_file_text`): a unit file is
world-readable, and ``systemctl show`` prints its ``Environment=`` to any user.
``WorkingDirectory=`` and ``Description=`` are not unquoted at all. A newline,
CR or NUL cannot be written into a unit value: :class:`UnitError`.

``UNIT_FIELDS`` is the registry of unit fields a config may set (``unit:`` in a
base file, ``--set unit.FIELD=...``), each with its section, systemd key and
check. Adding one is one entry.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ddlab.errors import ConfigError, UnitError
from ddlab.flags import closest, render_flag
from ddlab.redact import MASK, looks_secret

if TYPE_CHECKING:
    from ddlab.params import Variant

__all__ = ["UnitField", "UNIT_FIELDS", "RESTART_VALUES", "render_unit", "exec_quote",
           "env_assignment", "environment_lines", "env_file_text", "check_unit_fields",
           "unit_field_name", "describe_changes"]

RESTART_VALUES = ("no", "always", "on-success", "on-failure", "on-abnormal", "on-abort",
                  "on-watchdog")
KILL_MODES = ("control-group", "mixed", "process", "none")
_UNIT_SUFFIXES = ("service", "socket", "target", "device", "mount", "automount", "swap",
                  "path", "timer", "slice", "scope")
_UNIT_NAME = re.compile(r"[A-Za-z0-9:_.\\@-]+\.(" + "|".join(_UNIT_SUFFIXES) + ")")
_TIMESPAN = re.compile(r"infinity|(\d+(\.\d+)?\s*(us|usec|ms|msec|s|sec|seconds?|m|min|"
                       r"minutes?|h|hr|hours?|d|days?|w|weeks?)?\s*)+")
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}|\d+")
_BARE = re.compile(r"[A-Za-z0-9_@+=:,./-]+")  # needs no quoting in ExecStart=
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# --- unit fields --------------------------------------------------------------------


@dataclass(frozen=True)
class UnitField:
    """A settable unit field: where it goes, and the check that normalises its value."""

    section: str
    key: str
    check: Callable
    help: str
    example: str


def _text(field, value) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _field_error(field, value, "must be a string")
    return str(value)


def _check_choice(choices):
    def check(field, value):
        text = "no" if value is False else _text(field, value)  # YAML 1.1 reads `no` as false
        if text not in choices:
            raise _field_error(field, value, "must be one of " + ", ".join(choices))
        return text
    return check


def _check_timespan(field, value) -> str:
    text = _text(field, value).strip()
    if not _TIMESPAN.fullmatch(text):
        raise _field_error(field, value, "must be a time span like 5, 30s, 2min or infinity")
    return text


def _check_limit(field, value) -> str:
    text = _text(field, value).strip()
    if not re.fullmatch(r"(infinity|\d+)(:(infinity|\d+))?", text):
        raise _field_error(field, value, "must be a count, infinity, or SOFT:HARD")
    return text


def _check_user(field, value) -> str:
    text = _text(field, value)
    if not _USER.fullmatch(text):
        raise _field_error(field, value, "must be a user/group name or a numeric id")
    return text


def _check_units(field, value) -> list[str]:
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise _field_error(field, value, "must be a unit name or a list of unit names")
    for item in items:
        if not isinstance(item, str) or not _UNIT_NAME.fullmatch(item):
            raise _field_error(field, value, "must be unit names like network-online.target")
    return list(items)


def _check_directory(field, value) -> str:
    text = _text(field, value)
    normal = text == "~" or (text.startswith("/") and posixpath.normpath(text) == text
                             and "//" not in text)
    if not normal or _CONTROL.search(text) or text != text.strip() or text.endswith("\\"):
        raise _field_error(field, value, "must be an absolute, normalised path (or ~) "
                           "without control characters or edge whitespace")
    return text


def _check_identifier(field, value) -> str:
    text = _text(field, value)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        raise _field_error(field, value, "must be letters, digits, '_', '.' or '-'")
    return text


UNIT_FIELDS: dict[str, UnitField] = {
    "after": UnitField("Unit", "After", _check_units, "start after these units",
                       "network-online.target"),
    "wants": UnitField("Unit", "Wants", _check_units, "also start these units",
                       "network-online.target"),
    "requires": UnitField("Unit", "Requires", _check_units, "fail without these units",
                          "network-online.target"),
    "working_directory": UnitField("Service", "WorkingDirectory", _check_directory,
                                   "the server's working directory", "/opt/sglang"),
    "user": UnitField("Service", "User", _check_user, "run as this user", "sglang"),
    "group": UnitField("Service", "Group", _check_user, "run as this group", "sglang"),
    "restart": UnitField("Service", "Restart", _check_choice(RESTART_VALUES),
                         "restart policy (default no: a crash must be seen)", "no"),
    "restart_sec": UnitField("Service", "RestartSec", _check_timespan,
                             "wait before a restart", "5s"),
    "timeout_start_sec": UnitField("Service", "TimeoutStartSec", _check_timespan,
                                   "start timeout", "10min"),
    "timeout_stop_sec": UnitField("Service", "TimeoutStopSec", _check_timespan,
                                  "stop timeout before SIGKILL", "30s"),
    "kill_mode": UnitField("Service", "KillMode", _check_choice(KILL_MODES),
                           "which processes a stop kills", "control-group"),
    "limit_nofile": UnitField("Service", "LimitNOFILE", _check_limit, "open files limit",
                              "65535"),
    "limit_memlock": UnitField("Service", "LimitMEMLOCK", _check_limit,
                               "locked memory limit (RDMA/NCCL)", "infinity"),
    "syslog_identifier": UnitField("Service", "SyslogIdentifier", _check_identifier,
                                   "journal tag of the server's lines", "sglang"),
    "wanted_by": UnitField("Install", "WantedBy", _check_units, "enable under these targets",
                           "multi-user.target"),
}
_DEFAULTS = {"restart": "no", "kill_mode": "control-group", "wanted_by": ["multi-user.target"]}


def _field_error(field: str, value, allowed: str) -> ConfigError:
    example = UNIT_FIELDS[field].example if field in UNIT_FIELDS else "..."
    return ConfigError(f"unit.{field}={value!r}: {allowed}",
                       fix=f"try --set unit.{field}={example}", key=f"unit.{field}", value=value)


def unit_field_name(raw: str) -> str:
    """The registry name of a unit field: snake, kebab or systemd's own spelling
    (``WorkingDirectory``) accepted; unknown -> ConfigError with did-you-mean."""
    text = str(raw).strip()
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", text).lower().replace("-", "_")
    snake = {"limit_no_file": "limit_nofile", "limit_mem_lock": "limit_memlock"}.get(snake, snake)
    if snake in UNIT_FIELDS:
        return snake
    guess = closest(snake, UNIT_FIELDS) or next(
        (f for f in UNIT_FIELDS if snake and f.startswith(snake)), None)
    hint = f"did you mean unit.{guess}? " if guess else ""
    raise ConfigError(f"unit.{raw}: not a unit field ddlab sets; known: "
                      + ", ".join(UNIT_FIELDS), fix=f"{hint}see ddlab.units.UNIT_FIELDS",
                      key=f"unit.{raw}", suggestion=guess)


def check_unit_fields(given: dict) -> dict:
    """``{field: normalised value}`` (str or list of str); None values dropped."""
    out = {}
    for raw, value in given.items():
        name = unit_field_name(raw)
        if value is not None:
            out[name] = UNIT_FIELDS[name].check(name, value)
    return out


# --- quoting ------------------------------------------------------------------------


def _refuse_unwritable(what: str, text: str) -> None:
    if "\n" in text or "\r" in text or "\0" in text:
        kind = "a NUL" if "\0" in text else "a line break"
        raise UnitError(f"{what}={text!r}: contains {kind}, which no systemd unit value "
                        "can hold", fix="remove it from the value", key=what, value=text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UnitError(f"{what}={text!r}: is not valid UTF-8 text",
                        fix="remove the undecodable characters", key=what, value=text) from None


def exec_quote(arg: str) -> str:
    """One argument as an ``ExecStart=`` word that systemd turns back into ``arg`` exactly.

    Plain words stay bare; anything else is double-quoted with ``\\`` and ``"``
    backslash-escaped, control characters as ``\\xHH``, ``%`` as ``%%``
    (specifiers) and ``$`` as ``$$`` (variable expansion). A lone ``;`` is
    quoted, so it is an argument, not a command separator.
    """
    if not isinstance(arg, str):
        raise UnitError(f"argument {arg!r}: must be a string", fix="render values as text",
                        value=arg)
    _refuse_unwritable("argument", arg)
    return arg if _BARE.fullmatch(arg) else _quoted(arg, doubled="%$")


def env_assignment(key: str, value: str) -> str:
    """``"KEY=value"`` for ``Environment=``: quoted, ``\\`` ``"`` escaped, ``%`` doubled.

    ``$`` stays as it is: ``Environment=`` does no variable expansion.
    """
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise UnitError(f"env name {key!r}: must match [A-Za-z_][A-Za-z0-9_]*",
                        fix="rename the variable, e.g. SGLANG_DDTREE_MAX_TOPK", key=key)
    if not isinstance(value, str):
        raise UnitError(f"env.{key}={value!r}: must be a string", fix="quote the value",
                        key=key, value=value)
    _refuse_unwritable(f"env.{key}", value)
    return _quoted(f"{key}={value}", doubled="%")


def _quoted(text: str, doubled: str) -> str:
    """``text`` in double quotes: ``\\`` and ``"`` backslash-escaped, control characters
    as ``\\xHH``, each character in ``doubled`` written twice."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch in doubled:
            out.append(ch * 2)
        elif _CONTROL.match(ch):
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _executable(path) -> str:
    """The interpreter as ExecStart's first word; systemd wants an absolute, plain path."""
    if not isinstance(path, str) or not path.startswith("/") or path.endswith("/") \
            or re.search(r"[\x00-\x1f\x7f\\\"'$]", path):
        raise UnitError(
            f"python={path!r}: ExecStart needs an absolute path to an executable, without "
            "quotes, backslashes, '$' or control characters",
            fix="try --set python=/opt/sglang/.venv/bin/python (or set the host "
                "profile's python)", key="python", value=path)
    return exec_quote(path)


def _plain(text: str) -> str:
    """Text for a value that systemd does not unquote (Description=): ``%`` doubled,
    no trailing backslash (it would continue the line)."""
    _refuse_unwritable("description", text)
    text = " ".join(_CONTROL.sub(" ", text).split())
    if text.endswith("\\"):
        raise UnitError(f"description={text!r}: ends with a backslash, which would "
                        "continue the line", fix="drop the trailing backslash", value=text)
    return text.replace("%", "%%")


# --- rendering ----------------------------------------------------------------------


def render_unit(variant: "Variant", *, python: str | None = None,
                description: str | None = None, env_file: str | None = None) -> str:
    """The unit file text for ``variant``.

    ``python``: the interpreter when the config leaves it null (the host
    profile's). ``description``: replaces the generated Description.
    ``env_file``: where the host keeps this unit's secret-named variables
    (:func:`env_file_text`); they are then left out of ``Environment=`` and
    read from there (``EnvironmentFile=``).
    """
    config = variant.config
    unit = {**_DEFAULTS, **config.unit}
    said = description if description is not None else _describe(variant)
    lines = [f"# Generated by ddlab: variant {variant.name}, config hash {variant.hash}.",
             "# Edit the base config or the overrides and render again, not this file.",
             "[Unit]", f"Description={_plain(said)}"]
    lines += _fields(unit, "Unit")
    lines += ["", "[Service]", "Type=simple"]
    lines += _fields(unit, "Service", only=("working_directory", "user", "group"))
    lines += environment_lines(config.env, env_file)
    lines.append("ExecStart=" + _exec_lines(config.argv(python=python)[0], config))
    lines += _fields(unit, "Service", skip=("working_directory", "user", "group"))
    lines += ["", "[Install]"]
    lines += _fields(unit, "Install")
    return "\n".join(lines) + "\n"


def environment_lines(env: dict, env_file: str | None = None) -> list[str]:
    """``Environment=`` lines; with ``env_file``, secret-named variables are left out
    and one ``EnvironmentFile=`` line reads them (only when there are some)."""
    secret = {k for k in env if looks_secret(k)} if env_file else set()
    assignments = {k: env_assignment(k, v) for k, v in env.items()}  # every value checked
    lines = [f"Environment={text}" for k, text in assignments.items() if k not in secret]
    if secret:
        if not env_file.startswith("/") or re.search(r"[\s\\\"']|[\x00-\x1f\x7f]", env_file):
            raise UnitError(f"env_file={env_file!r}: must be an absolute path without spaces, "
                            "quotes, backslashes or control characters",
                            fix="set the host profile's state_dir to a plain path", value=env_file)
        lines.append(f"EnvironmentFile={env_file.replace('%', '%%')}")
    return lines


def env_file_text(env: dict) -> str:
    """An ``EnvironmentFile=`` body: ``KEY="value"`` lines that systemd reads back exactly.

    Inside double quotes systemd drops a backslash before a backslash, a double
    quote, a dollar sign or a backtick, and expands nothing (no variables, no
    ``%`` specifiers: a file is not a unit setting), so those four characters are
    escaped and the rest is written as is. A line break or NUL cannot be written
    (:class:`UnitError`).
    """
    lines = []
    for key, value in env.items():
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise UnitError(f"env name {key!r}: must match [A-Za-z_][A-Za-z0-9_]*",
                            fix="rename the variable", key=key)
        if not isinstance(value, str):
            raise UnitError(f"env.{key}: must be a string", fix="quote the value", key=key)
        _refuse_unwritable(f"env.{key}", value)
        escaped = "".join("\\" + c if c in '\\"$`' else c for c in value)
        lines.append(f'{key}="{escaped}"')
    return "\n".join(lines) + "\n"


def _describe(variant: "Variant") -> str:
    base = variant.base
    if not variant.changes:
        text = f"ddlab base {base.base}"
        return f"{text}: {base.description}" if base.description else text
    return f"ddlab variant {variant.name} of {base.base}: {variant.describe_changes()}"


def describe_changes(changes: dict) -> str:
    """``speculative-ddtree-budget 16 -> 32, disable-cuda-graph -> on``; secrets masked,
    odd text JSON-quoted (so it never ends in a backslash)."""
    return ", ".join(_describe_change(k, old, new) for k, (old, new) in changes.items())


def _describe_change(key: str, old, new) -> str:
    before = "" if old is None else f"{_shown(key, old)} "
    after = _shown(key, new) if new is not None else ("off" if old is True else "unset")
    return f"{key} {before}-> {after}"


def _shown(key: str, value) -> str:
    if value is not None and looks_secret(key.rpartition(".")[2]):
        return MASK
    if value is True:
        return "on"
    if isinstance(value, list):
        return ",".join(_shown(key, v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    if isinstance(value, str) and re.fullmatch(r"[\w.,:/+@=-]+", value):
        return value
    return json.dumps(value, ensure_ascii=False)


def _exec_lines(executable: str, config) -> str:
    """ExecStart's value, ``config.argv()`` quoted: the command on the first line,
    one flag per continued line (a trailing backslash joins them, systemd.syntax(7))."""
    groups = [f"{_executable(executable)} -m {exec_quote(config.module)}"]
    for name, value in config.flags.items():
        groups.append(" ".join(exec_quote(a) for a in render_flag(name, value)))
    return " \\\n    ".join(groups)


def _fields(unit: dict, section: str, only=None, skip=()) -> list[str]:
    lines = []
    for field, spec in UNIT_FIELDS.items():
        if spec.section != section or field in skip or (only and field not in only):
            continue
        value = unit.get(field)
        if value is None:
            continue
        text = " ".join(value) if isinstance(value, list) else value
        _refuse_unwritable(f"unit.{field}", text)
        lines.append(f"{spec.key}={text.replace('%', '%%')}")
    return lines
