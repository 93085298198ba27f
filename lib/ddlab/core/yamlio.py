"""YAML as ddlab reads it: YAML 1.2 booleans, no aliases, bounded size.

Every YAML ddlab reads (base configs, host profiles, ``--set`` and ``-p``
values, parameter files) goes through :func:`load`, because PyYAML's
``safe_load`` reads YAML 1.1, and that hurts here twice:

- YAML 1.1 reads ``on``, ``off``, ``yes``, ``no``, ``y`` and ``n`` as booleans, so
  ``--set kv_cache_dtype=off`` or ``restart: no`` would quietly become
  ``False`` (a removed flag, an unset field). Here only ``true`` and ``false``
  (any case) are booleans, as in YAML 1.2; ``off`` stays the string ``off``
  (and ``2026-01-01`` a string, not a date).
- YAML 1.1 reads ``010`` as octal 8, ``0123456`` as 42798, ``3.10`` as 3.1 and
  ``45:00`` as 2700: a number's text is rewritten. With ``keep_text=True`` (what
  ddlab reads flag values with: ``--set``, ``-p``, base configs, a host's
  ``overrides``) a plain scalar that reads as a number is that number only when
  its text is the number's own spelling (``32``, ``-1``, ``0.85``); otherwise it
  stays the text as written (``"010"``, ``"3.10"``, ``"1e-3"``), and the flag's
  own type reads it later (:func:`ddlab.config.flags.check_value`).
- Aliases let a few hundred bytes expand to gigabytes (a "billion laughs"
  bomb): a config has no use for them, so an alias is refused, as is a
  document over ``MAX_BYTES``.

Errors are ``ValueError`` with a one-line reason; callers turn them into
:class:`ddlab.core.errors.ConfigError` with their own context.
"""

from __future__ import annotations

import re

import yaml

__all__ = ["load", "MAX_BYTES"]

MAX_BYTES = 1_000_000  # far above any config, far below harm


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2's booleans and no aliases."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"found an alias (*{event.anchor}): ddlab's YAML takes none",
                event.start_mark)
        return super().compose_node(parent, index)


_DROPPED = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")  # YAML 1.1's, not 1.2's
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _DROPPED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                              re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


class _TextLoader(_Loader):
    """:class:`_Loader`, numbers kept as text unless written in their own spelling."""

    def construct_yaml_int(self, node):
        value = super().construct_yaml_int(node)
        return value if str(value) == node.value else node.value

    def construct_yaml_float(self, node):
        value = super().construct_yaml_float(node)
        return value if repr(value) == node.value else node.value


_TextLoader.add_constructor("tag:yaml.org,2002:int", _TextLoader.construct_yaml_int)
_TextLoader.add_constructor("tag:yaml.org,2002:float", _TextLoader.construct_yaml_float)


def load(text: str, *, keep_text: bool = False):
    """The value of one YAML document (see the module docstring); ValueError if refused.
    ``keep_text``: a number not written in its own spelling stays its text."""
    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise ValueError(f"{len(text)} characters: over ddlab's {MAX_BYTES}-byte limit for YAML")
    try:
        return yaml.load(text, Loader=_TextLoader if keep_text else _Loader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        raise ValueError(" ".join(str(err).split())) from None
