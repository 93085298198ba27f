"""Keep secrets out of everything ddlab writes: run folders, the store,
executed notebooks, HTML reports and printed text.

A name looks secret when it contains TOKEN, KEY, PASSWORD, PASSWD, SECRET or
CREDENTIAL (any case, any separator): ``HF_TOKEN``, ``api-key``,
``OPENAI_API_KEY``. Its value is replaced by :data:`MASK` wherever it appears
as a mapping value, as the argument after a ``--flag`` in an argv, or as a
``NAME=value`` assignment. Values themselves are never guessed at: a secret
hiding under an innocent name is not found, so name secrets as secrets.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MASK", "looks_secret", "redact", "redact_argv", "redact_text"]

MASK = "***"
# A name is split into words (on separators and camelCase); it is secret when a
# word ends with one of these. "max_new_tokens" is not secret; "HF_TOKEN" is.
_SECRET_ENDINGS = ("token", "key", "keys", "password", "passwd", "secret", "secrets",
                   "credential", "credentials")
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_VALUE = r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s\"',;}]+)"
# NAME=value, "name": "value", name: value, and --name value.
_PAIR = re.compile(
    r"(?P<name>--[A-Za-z0-9][A-Za-z0-9_\-]*|(?<![#\w-])[A-Za-z_][A-Za-z0-9_.\-]*)"
    r"(?P<sep>=|[\"']?[ \t]*:[ \t]*|(?<=[A-Za-z0-9])[ \t]+(?=[^\s-]))" + _VALUE)


def looks_secret(name: str) -> bool:
    """True for names such as HF_TOKEN, --api-key, dbPassword; False for max_new_tokens."""
    return any(word.lower().endswith(_SECRET_ENDINGS) for word in _WORDS.findall(str(name)))


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (dicts, lists, strings) with secret-named values masked."""
    if isinstance(obj, dict):
        return {k: (MASK if looks_secret(k) and v not in (None, False, True) else redact(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, str) for x in obj):
            return redact_argv(list(obj))
        return [redact(x) for x in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def redact_argv(argv: list[str]) -> list[str]:
    """Mask the value after a secret-named flag, and secret ``NAME=value`` items."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            out.append(MASK)
            mask_next = False
        elif arg.startswith("--") and "=" not in arg and looks_secret(arg):
            out.append(arg)
            mask_next = True
        else:
            out.append(redact_text(arg))
    return out


def redact_text(text: str) -> str:
    """Mask values of secret-named pairs in free text (logs, units, commands).

    A pair whose name is not secret is stepped into, not over: its value may hold
    one (``server_args=ServerArgs(api_key='...')``, SGLang's own log line)."""
    out, pos = [], 0
    while (match := _PAIR.search(text, pos)) is not None:
        name, sep, value = match.group("name", "sep", "value")
        out.append(text[pos:match.start()])
        pos = match.end()
        quote = value[0] if value[:1] in "\"'" else ""
        prose = sep.strip() == "" and not name.startswith("--")  # "word value": not a pair
        inner = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", value[1:]) if quote else None
        if not prose and looks_secret(name):
            out.append(f"{name}{sep}{quote}{MASK}{quote}")
        elif not prose and inner and looks_secret(inner.group(1)):  # Environment="HF_TOKEN=a b"
            out.append(f"{name}{sep}{quote}{inner.group(1)}={MASK}{quote}")
        else:
            out.append(text[match.start():match.end("sep")])
            pos = match.end("sep")
    out.append(text[pos:])
    return "".join(out)
