"""A config variant as a systemd service unit, with systemd's quoting rules.

``render_unit(variant)`` writes the unit a host installs: a Description that
says what changed against the base, ``Type=simple``, ``ExecStart=`` with every
argument quoted for systemd, ``Environment=`` lines, ``WorkingDirectory=``,
``Restart=no`` unless asked (a crash must be seen, not hidden by a restart),
``KillMode=control-group`` and an ``[Install]`` section; the fields come from
:mod:`ddlab.config.unit_fields`.

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
"""

from __future__ import annotations

import re

from ddlab.config.unit_fields import UNIT_FIELDS
from ddlab.config.variants import Variant
from ddlab.core.checks import check_env_name
from ddlab.core.errors import UnitError
from ddlab.core.redact import looks_secret

__all__ = ["render_unit", "exec_quote", "exec_words", "env_assignment", "environment_lines", "env_file_text"]

_BARE = re.compile(r"[A-Za-z0-9_@+=:,./-]+")  # needs no quoting in ExecStart=
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# --- unit fields --------------------------------------------------------------------


_DEFAULTS = {"restart": "no", "kill_mode": "control-group", "wanted_by": ["multi-user.target"]}


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


def exec_words(line: str) -> list[str]:
    """The arguments of an ``ExecStart=`` value written by :func:`exec_quote` (bare
    words and double-quoted ones), back as they were; ``%%`` and ``$$`` read once."""
    words, i = [], 0
    while i < len(line):
        if line[i].isspace():
            i += 1
            continue
        word = []
        if line[i] == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                if line[i] == "\\" and line[i + 1:i + 2] == "x":
                    word.append(chr(int(line[i + 2:i + 4], 16)))
                    i += 4
                    continue
                if line[i] == "\\":
                    i += 1
                elif line[i] in "%$" and line[i + 1:i + 2] == line[i]:
                    i += 1
                word.append(line[i:i + 1])
                i += 1
            i += 1
        else:
            while i < len(line) and not line[i].isspace():
                word.append(line[i])
                i += 1
        words.append("".join(word))
    return words


def env_assignment(key: str, value: str) -> str:
    """``"KEY=value"`` for ``Environment=``: quoted, ``\\`` ``"`` escaped, ``%`` doubled.

    ``$`` stays as it is: ``Environment=`` does no variable expansion.
    """
    check_env_name(key, error=UnitError)
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


def render_unit(variant: Variant, *, python: str | None = None,
                description: str | None = None, env_file: str | None = None,
                extra_env: dict | None = None) -> str:
    """The unit file text for ``variant``.

    ``python``: the interpreter when the config leaves it null (the host
    profile's). ``description``: replaces the generated Description.
    ``env_file``: where the host keeps this unit's secret-named variables
    (:func:`env_file_text`); they are then left out of ``Environment=`` and
    read from there (``EnvironmentFile=``). ``extra_env``: variables the deploy adds
    (the probes' hook folder and list), over the config's own.
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
    lines += environment_lines({**config.env, **(extra_env or {})}, env_file)
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
        check_env_name(key, error=UnitError)
        if not isinstance(value, str):
            raise UnitError(f"env.{key}: must be a string", fix="quote the value", key=key)
        _refuse_unwritable(f"env.{key}", value)
        escaped = "".join("\\" + c if c in '\\"$`' else c for c in value)
        lines.append(f'{key}="{escaped}"')
    return "\n".join(lines) + "\n"


def _describe(variant: Variant) -> str:
    base = variant.base
    if not variant.changes:
        text = f"ddlab base {base.base}"
        return f"{text}: {base.description}" if base.description else text
    return f"ddlab variant {variant.name} of {base.base}: {variant.describe_changes()}"


def _exec_lines(executable: str, config) -> str:
    """ExecStart's value, ``config.argv()`` quoted: the command on the first line,
    one flag per continued line (a trailing backslash joins them, systemd.syntax(7))."""
    groups = [f"{_executable(executable)} -m {exec_quote(config.module)}"]
    for words in config.family.command_groups(config):  # one flag a line
        groups.append(" ".join(exec_quote(a) for a in words))
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
