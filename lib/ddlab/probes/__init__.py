"""Probes: see inside a function on a server's path without editing the installed files.

A probe (``DOTTED.PATH[:MODE]``, :mod:`ddlab.probes.spec`) is checked here, on the
ddlab side, before anything touches a host. On the host, two files written by
:func:`install_files` -- a ``sitecustomize.py`` and the standalone
``ddlab_probe_hook.py`` (:mod:`ddlab.probes.hook`) -- and the environment from
:func:`probe_env` wrap the target in the server and in every process it spawns.
The hook writes ``DDLAB_PROBE {json}`` lines to stderr; :func:`probe_records`
reads them (and the field's ``DFLASH_DIAG`` lines) back out of the log, and
:func:`none_fields` says which attributes were None when the target raised, and
:func:`not_armed` which probes never wrapped their target (a path that resolves nowhere).

The hook is never imported here: it arms itself on import when DDLAB_PROBES is set.
"""

from __future__ import annotations

from ddlab.probes.install import install_files, probe_env, probe_files
from ddlab.probes.records import none_fields, not_armed, probe_records
from ddlab.probes.spec import ProbeSpec, parse_probe, parse_probes

__all__ = ["ProbeSpec", "install_files", "none_fields", "not_armed", "parse_probe", "parse_probes",
           "probe_env", "probe_files", "probe_records"]
