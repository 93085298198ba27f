"""What ddlab installed on a host: the only services it may overwrite or remove.

``<state_dir>/installed.json`` on the host records each service ddlab
installed (a variant's unit, or a process service's spec) with the sha256 of
the definition it wrote (read bounded, :mod:`ddlab.hosts.statefiles`: one that cannot
be read is an error before anything is stopped, never a record). Production is sacred: before ddlab writes a service
whose name exists there, and before it removes one, the host's current
definition must be in this record with the same hash, so ddlab never writes
over, nor deletes, a unit someone else installed (the baseline promoted from an
old variant, a unit named by a hand-edited ``lock.json``), nor one changed by
hand since ddlab wrote it. The file is written whole (temp file + rename).

A service is recorded *pending* just before it is written (:meth:`Installs.intend`),
so a ddlab killed between writing it and recording its hash (kill -9) still owns
what it wrote: the name was checked to hold nothing foreign before the intent.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

from ddlab.hosts.statefiles import read_state
from ddlab.hosts.transport import Transport

__all__ = ["Installs", "digest", "PENDING"]

PENDING = "pending"  # the sha256 of a service ddlab is writing right now


def digest(definition: str | bytes) -> str:
    """The sha256 of a service's definition (its unit file, or its spec)."""
    data = definition.encode() if isinstance(definition, str) else definition
    return hashlib.sha256(data).hexdigest()


@dataclass
class Installs:
    """The record of one host (see the module docstring)."""

    transport: Transport
    state_dir: str

    @property
    def path(self) -> str:
        return f"{self.transport.expand_path(self.state_dir).rstrip('/')}/installed.json"

    def read(self) -> dict[str, dict]:
        """The record ({} when there is none); :class:`StateFileError` when the file cannot
        be read (too big, a symbolic link, not JSON: :mod:`ddlab.hosts.statefiles`), so
        that nothing is decided on it: deploy calls this before it stops anything."""
        data = read_state(self.transport, self.path) or {}
        return {k: v for k, v in data.items() if isinstance(v, dict) and "sha256" in v}

    def owns(self, name: str, definition: str | bytes | None) -> bool:
        """True when ddlab installed ``name`` and its definition is still what ddlab wrote
        (or it is gone already)."""
        record = self.read().get(name)
        if record is None:
            return False
        return definition is None or record["sha256"] in (PENDING, digest(definition))

    def intend(self, name: str, *, variant: str = "") -> None:
        """Record that ddlab is about to write ``name`` (nothing foreign is there: the
        caller checked); :meth:`add` replaces it with the hash once written."""
        record = self.read()
        record[name] = {"sha256": PENDING, "variant": variant,
                        "installed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write(record)

    def add(self, name: str, definition: str | bytes, *, variant: str = "") -> None:
        record = self.read()
        record[name] = {"sha256": digest(definition), "variant": variant,
                        "installed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write(record)

    def forget(self, name: str) -> None:
        record = self.read()
        if record.pop(name, None) is not None:
            self._write(record)

    def _write(self, record: dict) -> None:
        self.transport.make_private_dir(self.path.rsplit("/", 1)[0])
        self.transport.write_file(self.path, (json.dumps(record, indent=2, sort_keys=True)
                                              + "\n").encode(), mode=0o600)
