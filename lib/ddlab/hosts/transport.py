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
- Output is bounded: a command's stdout and stderr come back as their first
  MB and last few MB at most (:data:`ddlab.hosts.remote_exec.MAX_OUT_BYTES`), read
  in chunks; ``Completed.skipped`` says how many bytes were left out, and where.
  A command that prints a gigabyte costs a few tens of MB here and on the host.
- ``write_file`` is atomic (temp file + rename) and the file never exists with
  looser permissions than ``mode``; ``read_file`` raises FileNotFoundError.
- ``http_base(port)`` is a URL on *this* machine that reaches the host's
  ``127.0.0.1:port`` (through the SSH connection by default, so the server
  never has to listen on a public address); ``http_base(port, host=NODE)``
  reaches ``NODE:port`` as the host sees it (a Slurm job's node, through the
  login host).

Why profiles are strict (unknown keys, wrong types and unknown names raise
:class:`ConfigError` naming the choices): a typo in a profile would otherwise
send a command to the wrong machine, or quietly disable host-key checking.
Validation happens before anything touches a host.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.core.errors import CommandError, ConfigError
from ddlab.core.redact import redact_argv
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.remote_exec import close_pipes, communicate

__all__ = ["Transport", "LocalTransport", "Completed", "url_host"]

log = logging.getLogger("ddlab.hosts")


@dataclass(frozen=True)
class Completed:
    """What a finished command left: its argv, exit code (128+N for signal N
    locally, -1 when a remote reports only a signal), output and duration;
    ``stdout_bytes``, stdout as read (the text is decoded with replacement), and
    ``skipped``: (at, n), n bytes of stdout left out after its first ``at`` (bounded)."""

    argv: list
    exit_code: int
    stdout: str
    stderr: str
    elapsed_s: float
    stdout_bytes: bytes = field(default=b"", repr=False, compare=False)
    skipped: tuple = (0, 0)

    @classmethod
    def read(cls, argv, code: int, out: bytes, err: bytes, elapsed_s: float,
             skipped=((0, 0), (0, 0))) -> "Completed":
        """From raw output and what each stream left out (stderr's gap marked in its text)."""
        (out_at, out_n), (err_at, err_n) = (tuple(s) for s in skipped)
        err_text = _text(err) if not err_n else (
            f"{_text(err[:err_at])}\n[... {err_n} bytes of output left out ...]\n"
            f"{_text(err[err_at:])}")
        return cls(argv, code, _text(out), err_text, elapsed_s, out, (out_at, out_n))

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class Transport:
    """Runs commands and moves files on one host; a context manager that closes itself."""

    def __init__(self, profile: HostProfile):
        self.profile = profile
        # when the host stopped answering for good (monotonic time), else None: what runs
        # after that (releasing the lock, closing) should not wait for it again
        self.down_since: float | None = None

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

    def http_base(self, port: int, host: str | None = None) -> str:
        """A URL here that reaches ``host:port`` as the host sees it (``host`` None:
        its own 127.0.0.1)."""
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
    return CommandError(message, fix=fix, argv=redact_argv(done.argv), command_exit=done.exit_code,
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
        # held before its constructor runs: a Ctrl-C can land inside it after the fork
        # (CPython 3.11.7 Lib/subprocess.py:1026-1044 closes the pipes and re-raises, the
        # child never waited), and only this reference can still kill and reap that child
        proc = subprocess.Popen.__new__(subprocess.Popen)
        try:
            try:
                proc.__init__(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            except OSError as exc:  # like a shell: 127 not found, 126 not executable
                code = 127 if isinstance(exc, FileNotFoundError) else 126
                return Completed(argv, code, "", f"{argv[0]}: {exc.strerror}\n", time.monotonic() - start)
            out, err, timed_out = communicate(proc, data, timeout_s)
        except BaseException:  # Ctrl-C mid-command: no child, zombie or pipe is left behind
            if getattr(proc, "pid", None) is not None:
                _kill_group(proc)
                _reap(proc)
            raise
        (out, out_skipped), (err, err_skipped) = out.value(), err.value()
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        code = code if code >= 0 else 128 - code
        done = Completed.read(argv, code, out, err, time.monotonic() - start,
                              (out_skipped, err_skipped))
        if timed_out:
            raise command_error(self.profile, done, timed_out=True, timeout_s=timeout_s)
        return done

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

    def http_base(self, port, host=None):
        return f"http://{url_host(host or '127.0.0.1')}:{int(port)}"

    def expand_path(self, path):
        return os.path.expanduser(path)


def url_host(host: str) -> str:
    """``host`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the command's session, and to the command itself while it is not reaped
    (its pid still its own): a child interrupted before its setsid has no group yet."""
    kills = (os.killpg, os.kill) if proc.returncode is None else (os.killpg,)
    for kill in kills:
        try:
            kill(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(proc: subprocess.Popen) -> None:
    """Close a killed command's pipes and collect its exit status (bounded: SIGKILL is
    seen at once), so that it leaves no zombie and no open file: an interrupt can land
    before :func:`communicate` has closed them."""
    close_pipes(proc)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
