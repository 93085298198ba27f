"""systemd as a service manager (:class:`ddlab.hosts.services.ServiceManager`): units in
``unit_dir`` driven with ``systemctl``, logs from the journal.

A variant's unit is written from its :class:`ServiceSpec` (:func:`plain_unit`), its
secret-named variables apart in a 0600 ``EnvironmentFile``. ``state()`` is one
``systemctl show`` (:func:`parse_show`) over the transport's persistent connection: a
few ms, because a watcher polls it every ~0.2 s to see a crash within a second. The logs
of *this* start only come from ``journalctl`` matched on the start's invocation id, so an
earlier crash never pollutes a later diagnosis; ``read_logs(name, cursor=...)`` returns
only what is new since the cursor.
"""

from __future__ import annotations

import json
import re
import time

from ddlab.core.errors import ConfigError, ServiceError
from ddlab.core.redact import looks_secret
from ddlab.hosts.services import ServiceManager, ServiceSpec, ServiceState, bounded_lines, unit_name
from ddlab.hosts.transport import Transport, command_error

__all__ = ["SystemdManager", "parse_show", "plain_unit"]

_SHOW = ("LoadState", "ActiveState", "SubState", "Result", "ExecMainStatus", "ExecMainCode",
         "NRestarts", "InvocationID", "MainPID")
_EXIT_KINDS = {"1": "exited", "2": "killed", "3": "dumped"}  # ExecMainCode: CLD_* codes


class SystemdManager(ServiceManager):
    """Units in ``unit_dir`` driven with systemctl; logs from the journal by invocation id.

    A unit file is world-readable and ``systemctl show`` prints its ``Environment=``
    to any user, so secret-named variables (:func:`ddlab.core.redact.looks_secret`) go to
    ``<state_dir>/secrets/<unit>.env`` (0600, folder 0700), which the unit names
    in ``EnvironmentFile=`` (``render_unit(..., env_file=manager.env_file(name))``).
    """

    def __init__(self, transport: Transport, unit_dir: str = "/etc/systemd/system",
                 state_dir: str | None = None):
        super().__init__(transport)
        self.unit_dir = unit_dir.rstrip("/") or "/"
        self.state_dir = state_dir or transport.profile.state_dir

    def _path(self, name: str) -> str:
        return f"{self.unit_dir}/{unit_name(name)}"

    def env_file(self, name):
        folder = self.transport.expand_path(self.state_dir).rstrip("/")
        return f"{folder}/secrets/{unit_name(name)}.env"

    def install(self, spec):
        from ddlab.config.units import env_file_text

        secret = {k: v for k, v in spec.env.items() if looks_secret(k)}
        env_file = self.env_file(spec.name) if secret else None
        text = spec.unit_text if spec.unit_text is not None else plain_unit(spec, env_file)
        if env_file and f"EnvironmentFile={env_file}" in text:
            self.transport.make_private_dir(env_file.rsplit("/", 1)[0])
            self.transport.write_file(env_file, env_file_text(secret).encode(), mode=0o600)
        self.transport.write_file(self._path(spec.name), text.encode(), mode=0o644)
        self.transport.run(["systemctl", "daemon-reload"])

    def start(self, name):
        """Start the unit; its invocation id from systemd, or from the journal when the
        unit already ended and was unloaded (a clean quick exit is garbage-collected)."""
        unit = unit_name(name)
        mark = self._journal_cursor()
        self.transport.run(["systemctl", "reset-failed", unit], check=False)
        self.transport.run(["systemctl", "start", unit])
        invocation = self.state(unit).invocation_id
        deadline = time.monotonic() + 5
        while not invocation and time.monotonic() < deadline:
            invocation = self._journal_invocation(unit, after=mark)
            time.sleep(0.05)
        if not invocation:
            raise ServiceError(f"{unit}: started, but neither systemd nor the journal has its "
                               "invocation id", fix=f"look at: journalctl -u {unit}")
        return invocation

    def _journal_cursor(self) -> str | None:
        text = self.transport.run(["journalctl", "-n", "0", "--show-cursor", "-q", "--no-pager"],
                                  check=False).stdout
        return text.rpartition("-- cursor: ")[2].strip() or None

    def _journal_invocation(self, unit: str, *, after: str | None = None) -> str:
        """The first invocation of ``unit`` logged after the cursor (the last one without)."""
        argv = ["journalctl", f"UNIT={unit}", "+", f"_SYSTEMD_UNIT={unit}", "-o", "json",
                "--output-fields=INVOCATION_ID,_SYSTEMD_INVOCATION_ID", "-q", "--no-pager"]
        argv += [f"--after-cursor={after}"] if after else ["-n", "20"]
        ids = []
        for line in self.transport.run(argv, check=False).stdout.splitlines():
            entry = json.loads(line) if line.startswith("{") else {}
            ids.append(entry.get("INVOCATION_ID") or entry.get("_SYSTEMD_INVOCATION_ID") or "")
        ids = [i for i in ids if i]
        return (ids[0] if after else ids[-1]) if ids else ""

    def stop(self, name):
        self.transport.run(["systemctl", "stop", unit_name(name)],
                           timeout_s=max(self.transport.profile.command_timeout_s, 120))

    def remove(self, name):
        unit = unit_name(name)
        self.transport.run(["systemctl", "stop", unit], check=False,
                           timeout_s=max(self.transport.profile.command_timeout_s, 120))
        self.transport.run(["rm", "-f", "--", self._path(unit), self.env_file(unit)])
        self.transport.run(["systemctl", "daemon-reload"])
        self.transport.run(["systemctl", "reset-failed", unit], check=False)

    def reload(self):
        self.transport.run(["systemctl", "daemon-reload"])

    def definition_path(self, name):
        """The unit's file wherever systemd loads it from (FragmentPath), else ours."""
        unit = unit_name(name)
        done = self.transport.run(["systemctl", "show", "-p", "FragmentPath", "--value", "--", unit],
                                  check=False)
        path = done.stdout.strip()
        if path:
            return path
        ours = self._path(unit)
        return ours if self.transport.run(["test", "-e", ours], check=False).exit_code == 0 else None

    def state(self, name):
        unit = unit_name(name)
        done = self.transport.run(["systemctl", "show", "-p", ",".join(_SHOW), "--", unit])
        return parse_show(done.stdout)

    def read_logs(self, name, *, invocation=None, cursor=None):
        unit = unit_name(name)
        invocation = (invocation or self.state(unit).invocation_id
                      or self._journal_invocation(unit))
        if not invocation:
            return "", cursor
        if not re.fullmatch(r"[0-9a-f]{32}", invocation):
            raise ConfigError(f"invocation={invocation!r}: must be 32 hex digits",
                              fix="use the id start() returned", value=invocation)
        argv = ["journalctl", f"_SYSTEMD_INVOCATION_ID={invocation}", "+",
                f"INVOCATION_ID={invocation}", "-o", "short-iso", "--no-pager", "-q",
                "--show-cursor"]
        if cursor:
            argv.append(f"--after-cursor={cursor}")
        done = self.transport.run(argv, check=False)  # bounded: a huge journal is its first and last MB
        if done.exit_code == 1 and not done.stdout.strip() and not done.stderr.strip():
            # nothing of this start written yet: journalctl before systemd 254 exits 1 with no
            # word when --show-cursor has nothing to show (systemd/systemd#26899; Debian 12: 252)
            return "", cursor
        if done.exit_code != 0:
            raise command_error(self.transport.profile, done)
        text = bounded_lines(done.stdout_bytes, done.skipped)[0] if done.skipped[1] else done.stdout
        body, marker, rest = text.rpartition("-- cursor: ")
        if not marker:
            return text, cursor
        return body, rest.strip() or cursor


def parse_show(text: str) -> ServiceState:
    """A ServiceState from ``systemctl show -p ...`` output (``Key=Value`` lines)."""
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    code = values.get("ExecMainCode", "0")
    if values.get("LoadState") in (None, "not-found") and values.get("ActiveState") is None:
        raise ServiceError(f"systemctl show gave no state: {text.strip()[:200]!r}",
                           fix="check that systemd runs on the host")
    return ServiceState(
        active_state=values.get("ActiveState", ""), sub_state=values.get("SubState", ""),
        result=values.get("Result", ""),
        exit_status=int(values["ExecMainStatus"]) if code in _EXIT_KINDS else None,
        exit_kind=_EXIT_KINDS.get(code), n_restarts=int(values.get("NRestarts") or 0),
        invocation_id=values.get("InvocationID", ""), main_pid=int(values.get("MainPID") or 0),
        load_state=values.get("LoadState", ""))


def plain_unit(spec: ServiceSpec, env_file: str | None = None) -> str:
    """A minimal unit for ``spec`` (Type=simple, Restart=no), quoted by ddlab.units' rules;
    with ``env_file``, secret-named variables are read from there."""
    from ddlab.config.units import environment_lines, exec_quote

    lines = ["[Unit]", f"Description=ddlab service {unit_name(spec.name)}", "", "[Service]",
             "Type=simple"]
    if spec.workdir:
        lines.append(f"WorkingDirectory={spec.workdir}")
    lines += environment_lines(spec.env, env_file)
    lines += ["ExecStart=" + " ".join(exec_quote(a) for a in spec.argv), "Restart=no",
              "KillMode=control-group", ""]
    return "\n".join(lines)


