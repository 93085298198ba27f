"""Keep secrets out of everything ddlab writes: run folders, the store,
executed notebooks, HTML reports and printed text — and nothing else.

Which values are secret: those ddlab is given under a secret name. A name is
secret when one of its words ends in token, key, password, passwd, secret or
credential (``HF_TOKEN``, ``api-key``, ``dbPassword``; not ``max_new_tokens``):
:func:`looks_secret` decides it for the keys of a mapping (a config's env and
flags, notebook parameters, the store's records), where a key is a name by
construction. Each such value is remembered (:func:`remember_secret`, done by
:func:`redact` and by the config itself), and from then on it is masked
wherever it appears, in any text.

Free text (a server's log, a unit file, a printed command) is masked by value,
not by looking for words: a log line whose words merely look secret (a unit
named ``...-num-token-non-padded-...``, ``KeyError: 'lm_head.token_weight'``,
``#full token: 512``) is evidence and stays whole. Besides the remembered
values, the values of pairs named by a well-known secret name
(:data:`KNOWN_NAMES`, e.g. ``HF_TOKEN=...``, ``--api-key X``, ``'api_key':
'...'`` in SGLang's own ``server_args`` line) and by the secret names ddlab has
been given are masked. Values shorter than :data:`MIN_VALUE` characters are
only masked in such pairs: a 2-letter "secret" would mask half of every log.
"""

from __future__ import annotations

import re
import threading
from typing import Any

__all__ = ["MASK", "KNOWN_NAMES", "MIN_VALUE", "looks_secret", "remember_secret", "holds_secret", "redact",
           "redact_argv", "redact_text"]

MASK = "***"
MIN_VALUE = 4
# Secret names that are secret whoever gave them (credentials of the hubs and APIs an
# inference host talks to, and SGLang's own key flags); compared without case, - and _.
KNOWN_NAMES = frozenset({
    "hf_token", "hugging_face_hub_token", "huggingface_hub_token", "hf_api_token",
    "openai_api_key", "anthropic_api_key", "wandb_api_key", "github_token",
    "aws_secret_access_key", "aws_session_token", "api_key", "admin_api_key"})
_SECRET_ENDINGS = ("token", "key", "keys", "password", "passwd", "secret", "secrets",
                   "credential", "credentials")
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_VALUE = r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s\"',;})]+)"
# NAME=value, "name": "value", name: value, and --name value.
_PAIR = re.compile(
    r"(?P<name>--[A-Za-z0-9][A-Za-z0-9_\-]*|(?<![#\w-])[A-Za-z_][A-Za-z0-9_.\-]*)"
    r"(?P<quote>[\"']?)(?P<sep>=|[ \t]*:[ \t]*|(?<=[A-Za-z0-9])[ \t]+(?=[^\s-]))" + _VALUE)

_lock = threading.Lock()
_values: set[str] = set()      # secret values ddlab was given
_names: set[str] = set()       # and the names they came under (normalised)


def looks_secret(name: str) -> bool:
    """True for names such as HF_TOKEN, --api-key, dbPassword; False for max_new_tokens,
    and for names where a secret word is not the last (``token_usage_max``, a decode
    figure; ``num_token_non_padded``, a field): the last word says what a name holds."""
    words = _WORDS.findall(str(name))
    return bool(words) and words[-1].lower().endswith(_SECRET_ENDINGS)


def _norm(name: str) -> str:
    return str(name).lstrip("-").lower().replace("-", "_")


def remember_secret(name: str, value) -> None:
    """Mask ``value`` from now on wherever it appears (and pairs named ``name``)."""
    if value in (None, True, False) or isinstance(value, (dict, list, tuple)):
        return
    text = str(value)
    with _lock:
        _names.add(_norm(name))
        # a number is no secret's value: masking "0.01" everywhere would destroy figures
        if len(text) >= MIN_VALUE and text != MASK and not isinstance(value, (int, float)):
            _values.add(text)


def _secret_name(name: str) -> bool:
    key = _norm(name)
    return key in KNOWN_NAMES or key in _names


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (dicts, lists, strings) with secret values masked; the values of
    secret-named keys are remembered (:func:`remember_secret`) as they are masked."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if looks_secret(key) and value not in (None, False, True) \
                    and not isinstance(value, (dict, list, tuple)):
                remember_secret(key, value)
                out[key] = MASK
            else:
                out[key] = redact(value)
        return out
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, str) for x in obj):
            return redact_argv(list(obj))
        return [redact(x) for x in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def redact_argv(argv: list[str]) -> list[str]:
    """Mask the value after a secret-named flag (``--api-key X``, ``--hf-token X``) and
    every remembered value."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            if arg != MASK and not isinstance(arg, (int, float)):
                remember_secret("argv", arg)
            out.append(MASK)
            mask_next = False
        elif arg.startswith("--") and "=" not in arg and looks_secret(arg):
            out.append(arg)
            mask_next = True
        elif arg.startswith("--") and looks_secret(arg.split("=", 1)[0]):  # --api-key=X
            name, value = arg.split("=", 1)
            remember_secret(name, value)
            out.append(f"{name}={MASK}")
        else:
            out.append(redact_text(arg))
    return out


def holds_secret(value) -> bool:
    """Whether ``value``'s text holds a remembered secret value, in any case (a name
    made from it would carry it: ``/models/sk-AB`` -> ``models-sk-ab``)."""
    text = str(value).lower()
    with _lock:
        return any(secret.lower() in text for secret in _values)


def redact_text(text: str) -> str:
    """``text`` with every remembered secret value masked, and the values of pairs named
    by a known or given secret name (module docstring)."""
    with _lock:
        values = sorted(_values, key=len, reverse=True)  # a longer secret before its parts
    lowered = text.lower()
    for value in values:
        if value.lower() in lowered:  # as given, or lowered or slugged into a name
            text = re.sub(re.escape(value), MASK, text, flags=re.IGNORECASE)
            lowered = text.lower()
    return _mask_pairs(text)


_EMPTY = frozenset({"None", "null", "''", '""'})


def _mask_pairs(text: str) -> str:
    """The values of secret-named pairs masked. A pair whose name is not secret is
    stepped into, not over: its value may hold one (``Environment="HF_TOKEN=x"``)."""
    out, pos = [], 0
    while (match := _PAIR.search(text, pos)) is not None:
        name, quote, sep, value = match.group("name", "quote", "sep", "value")
        prose = sep.strip() == "" and not name.startswith("--")  # "word value": not a pair
        out.append(text[pos:match.start()])
        inner = value[:1] if value[:1] in "\"'" else ""
        assigned = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", value[1:]) if inner else None
        if not prose and _secret_name(name) and value not in _EMPTY:  # api_key=None hides nothing
            out.append(f"{name}{quote}{sep}{inner}{MASK}{inner}")
            pos = match.end()
        elif not prose and assigned and _secret_name(assigned.group(1)):  # "HF_TOKEN=a b"
            out.append(f"{name}{quote}{sep}{inner}{assigned.group(1)}={MASK}{inner}")
            pos = match.end()
        else:
            out.append(text[match.start():match.end("sep")])
            pos = match.end("sep") + (1 if value[:1] in "\"'" else 0)
            out.append(text[match.end("sep"):pos])
    out.append(text[pos:])
    return "".join(out)
