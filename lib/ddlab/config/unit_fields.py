"""The unit fields a config may set, each with its section, systemd key and check.

``UNIT_FIELDS`` is the registry (``unit:`` in a base file, ``--set
unit.FIELD=...``): the field's ``[Section]``, systemd's key, a check that
normalises the value and refuses what systemd would misread, a help line and an
example for error messages. Names are accepted in snake, kebab or systemd's own
spelling (``WorkingDirectory``). Adding a field is one entry.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Callable

from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError

__all__ = ["UnitField", "UNIT_FIELDS", "RESTART_VALUES", "check_unit_fields",
           "unit_field_name"]

RESTART_VALUES = ("no", "always", "on-success", "on-failure", "on-abnormal", "on-abort",
                  "on-watchdog")
KILL_MODES = ("control-group", "mixed", "process", "none")
_UNIT_SUFFIXES = ("service", "socket", "target", "device", "mount", "automount", "swap",
                  "path", "timer", "slice", "scope")
_UNIT_NAME = re.compile(r"[A-Za-z0-9:_.\\@-]+\.(" + "|".join(_UNIT_SUFFIXES) + ")")
_TIMESPAN = re.compile(r"infinity|(\d+(\.\d+)?\s*(us|usec|ms|msec|s|sec|seconds?|m|min|"
                       r"minutes?|h|hr|hours?|d|days?|w|weeks?)?\s*)+")
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}|\d+")
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
                      + ", ".join(UNIT_FIELDS), fix=f"{hint}see ddlab.config.unit_fields.UNIT_FIELDS",
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


# --- rendering ----------------------------------------------------------------------


