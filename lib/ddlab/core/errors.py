"""One base exception for everything ddlab refuses or fails at.

Every error keeps its facts as attributes (the value given, the host, the unit,
the exit code, the journal tail...) and renders them in one grammar: what was
given, what is allowed, what to do. The CLI prints ``str(err)`` and exits 1
(2 for a :class:`UsageError`); notebooks show the same text, the fix in the
caller's words (:mod:`ddlab.core.caller`: ``-p budget 32``, ``--set budget=32``,
``budget=32``).

    DdlabError
    ├── ConfigError          a base config, override, parameter or host profile is wrong
    │   └── UnitError        a value cannot be written into a systemd unit
    ├── HostError            a host could not be reached or refused us
    │   ├── HostKeyError     its key is unknown or changed
    │   └── CommandError     a command on it failed (argv, exit code, output tail)
    ├── LockError            another ddlab run holds the host (it answered: no
    │   │                    connection fault, and nothing of ours to put back)
    │   └── Preempted        another ddlab run took it from this one (exit code 9)
    ├── ServiceError         a service could not be installed, started or stopped
    ├── StateFileError       a ddlab state file on a host cannot be read (too big, a
    │                        symbolic link, not JSON, nested too deep): never trusted
    ├── StoreError           the results store is unusable
    └── UsageError           the command line itself is wrong (exit code 2)

    KeyboardInterrupt
    └── Interrupted          Ctrl-C (or SIGTERM) ended a job that had a result by then

:class:`Interrupted` is a KeyboardInterrupt, so every clean-up that an interrupt
runs still runs; it carries what the job knew when it stopped as declared
fields, never as attributes pinned on afterwards. Every name in ``__all__`` is in
``ddlab.__all__``: a notebook catches ``ddlab.ConfigError`` or ``ddlab.LockError``.
"""

from __future__ import annotations

from ddlab.core.caller import speak

__all__ = [
    "DdlabError",
    "ConfigError",
    "UnitError",
    "HostError",
    "HostKeyError",
    "CommandError",
    "LockError",
    "Preempted",
    "ServiceError",
    "StateFileError",
    "StoreError",
    "UsageError",
    "Interrupted",
]


class DdlabError(Exception):
    """Base of every ddlab error.

    ``message`` says what was given and what is allowed; ``fix`` says what to
    do. Any other keyword becomes an attribute (``err.host``, ``err.value``)
    so callers and tests can read the facts without parsing text. ``result`` is what
    the job had when it failed (a bisect's or an envelope's report), when it had one.
    """

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None, result=None, **facts):
        if "exit_code" in facts:  # ddlab's own exit code is the class's; a fact never hides it
            raise TypeError("a DdlabError fact may not be called exit_code")
        self.message = message
        self.fix = fix
        # what the job knew when it failed (a search's report): the CLI prints its JSON line
        # last, as it does for a job that ends; set by the job that owns it, None otherwise
        self.result = result
        self.facts = facts
        for key, value in facts.items():
            setattr(self, key, value)
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.message
        if self.fix:  # in the caller's words: -p budget 32, --set budget=32, budget=32
            text = f"{text}; {speak(self.fix)}"
        return text


class ConfigError(DdlabError):
    """A base config, an override, a notebook parameter or a host profile is wrong."""


class UnitError(ConfigError):
    """A value cannot be written into a systemd unit (newline, NUL...)."""


class HostError(DdlabError):
    """A host could not be reached, or refused the connection."""


class HostKeyError(HostError):
    """The host's key is not in known_hosts, or differs from the recorded one."""


class CommandError(HostError):
    """A command on a host failed; keeps the argv, the command's own exit status
    (``command_exit``: never ddlab's exit code, which stays 1) and the output tail."""

    def __init__(self, message: str, *, argv=(), command_exit=None, stdout: str = "",
                 stderr: str = "", fix: str | None = None, **facts):
        super().__init__(message, fix=fix, argv=list(argv), command_exit=command_exit,
                         stdout=stdout, stderr=stderr, **facts)

    def __str__(self) -> str:
        text = super().__str__()
        tail = _tail(self.stderr or self.stdout)
        if tail:
            text = f"{text}\n  last output:\n" + "\n".join(f"    {line}" for line in tail)
        return text


class LockError(DdlabError):
    """Another ddlab run holds the host's lock; the message names the holder. Not a
    :class:`HostError`: the host answered, and a lost connection is another story."""


class Preempted(LockError):
    """Another ddlab run took the host this one held (``--force``, or the lock removed):
    never a crash. ``by`` (the holder that took it, as the lock file names it: user,
    controller, pid, command, since; empty when unknown), ``at`` (when), ``how``, and
    ``verdict`` (the watch's, as a dict, when one saw it). The CLI exits 9."""

    exit_code = 9


class ServiceError(DdlabError):
    """A service could not be installed, started or stopped."""


class StateFileError(DdlabError):
    """A ddlab state file on a host (``lock.json``, ``installed.json``) cannot be read:
    ``path``, ``why``. Raised before anything is stopped."""


class StoreError(DdlabError):
    """The results store cannot be opened or written."""


class UsageError(DdlabError):
    """The command line is wrong; the CLI exits 2."""

    exit_code = 2


class Interrupted(KeyboardInterrupt):
    """A job was interrupted after it had a result: ``verdict`` (a watch's
    :class:`ddlab.lab.watch.Verdict`, already written to its run folder)."""

    def __init__(self, message: str = "interrupted", *, verdict=None):
        super().__init__(message)
        self.verdict = verdict


def _tail(text: str, lines: int = 8) -> list[str]:
    return [line for line in (text or "").strip().splitlines()][-lines:]
