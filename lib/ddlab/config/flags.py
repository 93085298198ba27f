"""The server flags ddlab knows: names, types, ranges, short names. A registry.

``FLAGS`` maps a flag's kebab name (no leading dashes) to a :class:`Flag`.
Known flags are validated before anything touches a host; unknown flags pass
through verbatim, because users run private SGLang forks with flags that no
public SGLang has (``--speculative-ddtree-shadow-linear``). A name that is a
near miss of a known flag (``speculative-ddtree-budgt``) is refused with
"did you mean ...?": silently passing a typo through would start a server with
the default, which is the one failure a lab notebook must not have. The bound
is tight (one edit for short names, two for long ones) so that real, different
flags are never caught; to pass a near miss on purpose, mark it explicit
(``--set flags.NAME=...`` or a ``"--NAME"`` key in a base file).

Values: ``True`` is a switch (``--flag``), ``False``/``None`` mean absent, a
list renders as one flag followed by its values (``--cuda-graph-bs 1 2 4``).
The registry order is the canonical order of variant names
(``ddtree-b32-k8-nograph``): the flags people vary most come first.

Adding a flag is one entry in ``_REGISTRY``: name, kind, short name, help.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from ddlab.config.sglang import (OVERLAYS, flag_table, human_readable_int, known_option_names,
                                 releases)
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError

__all__ = ["Flag", "FLAGS", "normalize_name", "resolve_name", "spelled_like", "check_value",
           "render_flag", "render_value", "graphs_on", "typed_value", "takes_null",
           "table_switch", "SWITCH_ON"]

# word: a name that the release's table checks (its choices change between releases);
# human_int: an integer, or SGLang's human-readable form (32k, 32Ki) where a release takes it.
_KINDS = ("int", "float", "str", "choice", "word", "human_int", "switch", "int_list")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


@dataclass(frozen=True)
class Flag:
    """One known flag. ``short`` is its token in variant names (``b`` -> ``b32``);
    ``off`` the token when a switch is turned off or the flag removed."""

    name: str
    kind: str
    short: str
    help: str
    min: float | None = None
    max: float | None = None
    min_open: bool = False          # True: min itself is not allowed (0 < x)
    choices: tuple[str, ...] = ()
    example: object = None
    off: str | None = None
    upper: bool = False             # a word whose canonical spelling is upper case (DFLASH)
    pow2: bool = False              # a size searched in powers of two (ddlab envelope)

    @property
    def snake(self) -> str:
        return self.name.replace("-", "_")

    @property
    def off_token(self) -> str:
        return self.off or f"no{self.short}"

    def allowed(self) -> str:
        """What values are allowed, in words (the middle part of an error message)."""
        if self.kind == "switch":
            return "must be true, on or yes (present) or false/null (absent)"
        if self.kind == "choice":
            return "must be one of " + ", ".join(self.choices)
        if self.kind == "word":
            return "must be a name (letters, digits, _ . + -)"
        if self.kind == "str":
            return "must be a non-empty string"
        noun = {"int": "an integer", "float": "a number", "int_list": "a non-empty list of integers",
                "human_int": "an integer (or 32k, 32Ki)"}[self.kind]
        return f"must be {noun}{self._range()}"

    def _range(self) -> str:
        lo, hi = self.min, self.max
        if lo is not None and hi is not None:
            if self.min_open:
                return f" in ({_num(lo)}, {_num(hi)}]"
            return f" in {_num(lo)}..{_num(hi)}"
        if lo is not None:
            return f" {'>' if self.min_open else '>='} {_num(lo)}" + (
                " each" if self.kind == "int_list" else "")
        return ""


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _f(name, kind, short, help, **kw) -> Flag:
    assert kind in _KINDS, kind
    return Flag(name, kind, short, help, **kw)


_POS = {"min": 1}

_REGISTRY = (
    _f("speculative-algorithm", "word", "", "speculative decoding algorithm (the release's "
       "table says which it has)", example="DFLASH", off="nospec", upper=True),
    _f("speculative-ddtree-budget", "int", "b", "DDTree non-root tree nodes B (verify uses B+1)",
       example=32, **_POS),
    _f("speculative-ddtree-topk-cap", "int", "k", "DDTree per-depth top-k cap (private fork)",
       example=8, **_POS),
    _f("disable-cuda-graph", "switch", "nograph", "run without CUDA graphs", off="graph"),
    _f("mem-fraction-static", "float", "mem", "fraction of GPU memory for weights + KV pool",
       min=0, max=1, min_open=True, example=0.85),
    _f("context-length", "human_int", "ctx", "maximum context length", example=32768,
       pow2=True, **_POS),
    _f("cuda-graph-max-bs", "int", "gbs", "largest batch size captured in a CUDA graph",
       example=16, pow2=True, **_POS),
    _f("cuda-graph-bs", "int_list", "gbsl", "batch sizes captured in CUDA graphs",
       example="[1,2,4]", **_POS),
    _f("speculative-dflash-block-size", "int", "blk", "DFlash block size", example=16, **_POS),
    _f("speculative-num-draft-tokens", "int", "nd", "draft tokens per step", example=16, **_POS),
    _f("speculative-num-steps", "int", "steps", "draft steps (EAGLE)", example=4, **_POS),
    _f("speculative-eagle-topk", "int", "etopk", "EAGLE top-k", example=4, **_POS),
    _f("max-running-requests", "int", "mrr", "maximum running requests", example=48, **_POS),
    _f("model-path", "str", "model", "target model (hub id or path)", example="Qwen/Qwen3-8B"),
    _f("speculative-draft-model-path", "str", "draft", "drafter model (hub id or path)",
       example="z-lab/Qwen3-8B-DFlash-b16"),
    _f("cuda-graph-max-bs-decode", "int", "gbsd", "newest upstream name of cuda-graph-max-bs",
       example=16, pow2=True, **_POS),
    _f("cuda-graph-bs-decode", "int_list", "gbsld", "newest upstream name of cuda-graph-bs",
       example="[1,2,4]", **_POS),
    _f("cuda-graph-backend-decode", "word", "gbackend", "decode graphs: full, breakable, disabled",
       example="disabled"),
    _f("cuda-graph-backend-prefill", "word", "gbackendp", "prefill graphs: full, breakable, "
       "disabled", example="disabled"),
    _f("disable-cuda-graph-padding", "switch", "nopad", "no padding to captured batch sizes"),
    _f("disable-piecewise-cuda-graph", "switch", "nopiece", "no piecewise CUDA graphs"),
    _f("enable-torch-compile", "switch", "compile", "torch.compile the model"),
    _f("disable-radix-cache", "switch", "noradix", "no prefix cache"),
    _f("chunked-prefill-size", "int", "chunk", "prefill chunk size (-1 disables)",
       min=-1, example=8192),
    _f("max-total-tokens", "human_int", "maxtok", "KV pool size in tokens", example=65536,
       pow2=True, **_POS),
    _f("max-prefill-tokens", "human_int", "maxpre", "tokens in one prefill batch", example=16384,
       pow2=True, **_POS),
    _f("tp-size", "int", "tp", "tensor parallel size", example=1, **_POS),
    _f("dp-size", "int", "dp", "data parallel size", example=1, **_POS),
    _f("pp-size", "int", "pp", "pipeline parallel size", example=1, **_POS),
    _f("ep-size", "int", "ep", "expert parallel size", example=1, **_POS),
    _f("mamba-full-memory-ratio", "float", "mamba", "hybrid Mamba memory ratio",
       min=0, min_open=True, example=0.9),
    _f("mamba-scheduler-strategy", "word", "msched", "hybrid Mamba scheduler (before 0.5.20)",
       example="auto"),
    _f("mamba-radix-cache-strategy", "word", "mradix", "hybrid Mamba radix cache strategy",
       example="extra_buffer"),
    _f("dtype", "word", "dtype", "weight dtype", example="bfloat16"),
    _f("kv-cache-dtype", "word", "kvdtype", "KV cache dtype", example="auto"),
    _f("attention-backend", "word", "attn", "attention kernel backend", example="fa3"),
    _f("trust-remote-code", "switch", "trc", "allow model code from the hub"),
    _f("enable-metrics", "switch", "metrics", "serve Prometheus /metrics"),
    _f("decode-log-interval", "int", "logint", "decode steps between Decode batch lines",
       example=40, **_POS),
    _f("random-seed", "int", "seed", "random seed", min=0, example=0),
    _f("served-model-name", "str", "served", "model name the API reports", example="qwen3-8b"),
    _f("log-level", "str", "log", "server log level", example="info"),
    _f("host", "str", "host", "address to listen on", example="127.0.0.1"),
    _f("port", "int", "port", "port to listen on", min=1, max=65535, example=30000),
    # ddlab.target's own flags (the embedded stand-in server).
    _f("device-memory-gb", "float", "devmem", "ddlab.target: simulated device memory (GB)",
       min=0, min_open=True, example=8),
    _f("debug-drop-verify-field", "str", "drop",
       "ddlab.target: drop this field from the batch the verify graph is filled from",
       example="seq_lens"),
    _f("debug-drop-verify-mode", "choice", "dropmode",
       "ddlab.target: a dropped field raises (<= 0.5.10) or is skipped, the graph then "
       "reading a stale buffer (0.5.14+: wrong tokens, no crash)", choices=("raise", "skip")),
    _f("log-format", "choice", "logfmt", "ddlab.target: the SGLang log lines it writes",
       choices=("0.5.23", "0.4")),
    _f("debug-graph-tokens-per-req", "int", "gtpr",
       "ddlab.target: tokens per request the verify graph is sized for", example=16, **_POS),
)

FLAGS: dict[str, Flag] = {flag.name: flag for flag in _REGISTRY}


def graphs_on(flags: dict) -> bool:
    """Whether a command with these flags decodes with CUDA graphs: not when
    ``--disable-cuda-graph`` (every release) nor ``--cuda-graph-backend-decode
    disabled`` (0.5.14+: sglang/srt/server_args.py:1925 there, "Allowed backends
    per phase: full, breakable, tc_piecewise, disabled") says otherwise."""
    if flags.get("disable-cuda-graph") in (True, "true", "True"):
        return False
    return str(flags.get("cuda-graph-backend-decode", "")).lower() != "disabled"


def normalize_name(raw: str) -> tuple[str, bool]:
    """``(kebab name, explicit)``: snake -> kebab; a leading ``--`` marks it explicit."""
    if not isinstance(raw, str):
        raise ConfigError(f"flag name {raw!r}: must be a string",
                          fix="write flag names as text, e.g. speculative-ddtree-budget",
                          key=raw)
    explicit = raw.startswith("--")
    name = raw[2:] if explicit else raw
    name = name.strip().replace("_", "-")
    if not NAME.fullmatch(name):
        raise ConfigError(f"flag name {raw!r}: must be letters, digits and dashes "
                          "(snake or kebab case, no leading dash)",
                          fix="write it like speculative-ddtree-budget", key=raw)
    return name, explicit


def resolve_name(raw: str, *, explicit: bool = False,
                 extra: tuple[str, ...] = ()) -> tuple[str, Flag | None]:
    """Normalise a flag name; refuse a near miss of a known one unless explicit.

    ``extra`` are more names the near-miss check compares with (params' aliases).
    Returns ``(name, Flag)`` for a known flag, ``(name, None)`` for an unknown one.
    """
    name, marked = normalize_name(raw)
    if name in FLAGS:
        return name, FLAGS[name]
    if not (explicit or marked or name in known_option_names()):  # a real flag is no typo
        guess = closest(name, (*FLAGS, *extra))
        if guess is not None:
            shown = f"--{guess}" if guess in FLAGS else spelled_like(raw, guess)
            raise ConfigError(
                f"{raw}: not a known flag, but a near miss of {shown}",
                fix=f"did you mean {shown}? try --set {spelled_like(raw, guess)}=VALUE, "
                    f"or --set flags.{name}=VALUE to pass --{name} verbatim",
                key=raw, suggestion=guess)
    return name, None


def spelled_like(given: str, name: str) -> str:
    """``name`` in the spelling of ``given``: kebab (``topk-cap``) when the user wrote
    dashes and no underscore, else snake (``topk_cap``), as hints repeat what was typed."""
    kebab = "-" in given.removeprefix("--") and "_" not in given
    return name.replace("_", "-") if kebab else name.replace("-", "_")


# --- values -------------------------------------------------------------------------


def check_value(name: str, value):
    """The validated value of flag ``name`` (None: the flag is absent).

    Known flags: type and range checked from the text as SGLang's argparse reads
    it; a number's text is kept unless it is the number's own spelling (``"32"``
    -> 32, ``"010"`` stays ``"010"``: argv is what the user typed). A switch takes
    ``true``, ``on``, ``yes``. Unknown flags: any scalar or a list of scalars; one
    that a release's parser has as a switch takes ``on``/``yes`` as true too, and
    ``null`` is the text ``null`` for a flag whose choices have it
    (``--disaggregation-mode null``), else it removes the flag.
    """
    if value is None and takes_null(name):
        return "null"
    if value is None or value is False:
        return None
    flag = FLAGS.get(name)
    if flag is None:
        if isinstance(value, str) and value.strip().lower() in SWITCH_ON and table_switch(name):
            return True
        return _check_unknown(name, value)
    checked = _CHECKS[flag.kind](flag, value)
    if checked is _BAD:
        raise _value_error(flag, value)
    return checked


_BAD = object()


@functools.cache
def _table_action(name: str) -> dict | None:
    """``--name``'s argparse action in the newest release table (or overlay) that has it."""
    for release in reversed(releases()):
        action = flag_table(release, overlays=OVERLAYS).action(f"--{name}")
        if action is not None:
            return action
    return None


def table_switch(name: str) -> bool:
    """Whether a release's parser has ``--name`` as a switch (store_true: no value)."""
    action = _table_action(name)
    return action is not None and action.get("nargs") == 0


def takes_null(name: str) -> bool:
    """Whether ``null`` is one of ``--name``'s own values (its choices have it)."""
    action = _table_action(name)
    return action is not None and "null" in (action.get("choices") or ())


def typed_value(name: str, value):
    """A flag's value as its type reads it (``"010"`` -> 10, ``"3.10"`` -> 3.1), for
    frames and plots; the config keeps the text."""
    flag = FLAGS.get(name)
    if not isinstance(value, str) or flag is None or flag.kind not in ("int", "float"):
        return value
    try:
        return int(value) if flag.kind == "int" else float(value)
    except ValueError:
        return value


def _value_error(flag: Flag, value) -> ConfigError:
    shown = render_value(value) if isinstance(value, (str, int, float, list)) else repr(value)
    fix = f"try --set {flag.snake}={render_value(flag.example)}"
    if flag.kind == "choice" and isinstance(value, str):
        guess = closest(value, flag.choices, bound=2)
        if guess:
            fix = f"did you mean {guess}? try --set {flag.snake}={guess}"
    elif flag.kind == "switch":
        fix = f"try --set {flag.snake}=true"
    return ConfigError(f"{flag.name}={shown}: {flag.allowed()}", fix=fix,
                       key=flag.name, value=value)


def _as_int(value):
    """An int as argparse's ``int`` reads the text (``010`` is 10, ``1_000`` 1000)."""
    if isinstance(value, bool):
        return _BAD
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return _BAD
    return _BAD  # 32.0 for an integer flag is a slip: say so rather than guess


def _as_typed(value, x):
    """What reaches argv: the number ``x`` when ``value`` was it or its own spelling
    (``32``, ``0.85``: config hashes stay as they were), else the text as given
    (``010``, ``3.10``, ``1e-3``: the command is what the user typed)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if isinstance(x, int) or re.fullmatch(r"-?\d+", text):
        return int(text) if re.fullmatch(r"0|-?[1-9]\d*", text) else text
    return x if repr(x) == text else text


def _in_range(flag: Flag, x) -> bool:
    if flag.min is not None and (x < flag.min or (flag.min_open and x == flag.min)):
        return False
    return flag.max is None or x <= flag.max


def _check_int(flag: Flag, value):
    x = _as_int(value)
    return _as_typed(value, x) if x is not _BAD and _in_range(flag, x) else _BAD


def _check_float(flag: Flag, value):
    """An int stays an int (``8`` reaches argv as ``8``, not ``8.0``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return _BAD
    try:
        x = float(value)
    except ValueError:
        return _BAD
    return _as_typed(value, x) if math.isfinite(x) and _in_range(flag, x) else _BAD


def _check_str(flag: Flag, value):
    """Text as given; ``true`` (a YAML boolean) is the text ``true``."""
    if value is True:
        return "true"
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return _BAD
    text = value if isinstance(value, str) else render_value(value)
    return text if text.strip() else _BAD


def _check_word(flag: Flag, value):
    return value if isinstance(value, str) and _WORD.fullmatch(value) else _BAD


def _check_human_int(flag: Flag, value):
    if isinstance(value, str) and not re.fullmatch(r"\s*[-+]?\d+\s*", value):
        try:
            x = human_readable_int(value)
        except (ValueError, ArithmeticError):
            return _BAD
        return value.strip() if _in_range(flag, x) else _BAD
    return _check_int(flag, value)


def _check_choice(flag: Flag, value):
    return value if isinstance(value, str) and value in flag.choices else _BAD


SWITCH_ON = ("true", "on", "yes")   # text a switch takes as on, any case (as YAML 1.1 did)


def _check_switch(flag: Flag, value):
    on = value is True or (isinstance(value, str) and value.strip().lower() in SWITCH_ON)
    return True if on else _BAD


def _check_int_list(flag: Flag, value):
    items = value if isinstance(value, list) else [value]
    out = [_check_int(flag, item) for item in items]
    return out if out and _BAD not in out else _BAD


_CHECKS = {"int": _check_int, "float": _check_float, "str": _check_str, "word": _check_word,
           "human_int": _check_human_int, "choice": _check_choice, "switch": _check_switch,
           "int_list": _check_int_list}


def _check_unknown(name: str, value):
    def scalar(v) -> bool:
        if isinstance(v, float):
            return math.isfinite(v)
        return isinstance(v, (str, int))

    if value is True or (scalar(value) and not isinstance(value, bool)):
        return value
    if isinstance(value, list) and value and all(map(scalar, value)):
        return list(value)
    raise ConfigError(
        f"{name}={value!r}: an unknown flag's value must be true, false/null, "
        "a string or finite number, or a non-empty list of them",
        fix=f"try --set flags.{name}=VALUE", key=name, value=value)


def render_value(value) -> str:
    """One value as an argument: ``true``/``false``, ``32``, ``0.85``, text as is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ",".join(render_value(v) for v in value) + "]"
    return value if isinstance(value, str) else repr(value)


def render_flag(name: str, value) -> list[str]:
    """The argv words of one flag: ``["--name"]``, ``["--name", "v"]`` or ``["--name", *vs]``."""
    if value is True:
        return [f"--{name}"]
    values = value if isinstance(value, list) else [value]
    return [f"--{name}", *(render_value(v) for v in values)]
