"""Server families: what ddlab knows of SGLang and of vLLM, behind one interface.

A base names its family (``family: sglang | vllm`` in ``params/base/*.yaml``;
none is ``sglang``). :data:`FAMILIES` holds one :class:`Family` per name; each
knows, for its server:

- its command: the flags a base may hold and their check (:meth:`Family.check_flags`),
  the argv words after ``python -m MODULE`` (:meth:`Family.command_groups`, one
  group per flag, as a systemd unit writes them) and the words its own parser
  reads (:meth:`Family.parser_words`); on the embedded target (``python -m
  ddlab.target``, :data:`TARGET_MODULE`) the words it takes in the family's
  dialect (:meth:`Family.embedded`);
- how to read its version on a host: the distribution ``package`` and
  :attr:`Family.version_probe`, a script the host's python runs (no import of the
  server unless nothing else tells; ``ddlab.lab.commands`` runs it);
- ``log_dialect``: the name of its log dialect (``ddlab.diagnosis`` reads by it);
- ``api``: its HTTP API for readiness, a request and metrics (:class:`HttpApi`,
  each path with the real source line that serves it);
- ``knobs``: what a sweep varies, each an override key and what it sets
  (:class:`Knob`); ``default_grid``; ``baseline``: the overrides that remove
  speculation for the no-speculation cell;
- ``acceptance``: the name of its acceptance figure.

Everything here is data and pure functions: nothing touches a host. The
registry is the extension point (as ``FLAGS``, ``TRANSPORTS``): a third family
is a module that makes a :class:`Family` and a row in :data:`FAMILIES`.
"""

from __future__ import annotations

from ddlab.config.families.family import (DEFAULT_FAMILY, EMBEDDED_MODELS, TARGET_MODULE,
                                          Family, HttpApi, Knob, MetricsCounters,
                                          version_probe)
from ddlab.config.families.sglang import SGLANG
from ddlab.config.families.vllm import VLLM
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError

__all__ = ["Family", "HttpApi", "Knob", "MetricsCounters", "FAMILIES", "DEFAULT_FAMILY",
           "TARGET_MODULE", "EMBEDDED_MODELS", "family_named", "version_probe"]

FAMILIES: dict[str, Family] = {family.name: family for family in (SGLANG, VLLM)}


def family_named(name) -> Family:
    """The family ``name`` names (None: sglang); a ConfigError naming the value, the
    families and the fix."""
    if name is None:
        return FAMILIES[DEFAULT_FAMILY]
    if isinstance(name, str) and name in FAMILIES:
        return FAMILIES[name]
    lower = str(name).lower()
    guess = (lower if lower in FAMILIES else closest(lower, list(FAMILIES))) \
        if isinstance(name, str) else None
    hint = f"did you mean {guess}? " if guess else ""
    raise ConfigError(f"family={name!r}: not a server family ddlab knows; known: "
                      + ", ".join(FAMILIES),
                      fix=f"{hint}write family: {' or family: '.join(FAMILIES)} in the base "
                          f"(none means {DEFAULT_FAMILY})", key="family", value=name)
