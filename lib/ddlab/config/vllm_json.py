"""The JSON inside ``--speculative-config`` and ``--compilation-config``, checked against
the real config classes' fields as a release's table records them.

Both classes are pydantic dataclasses with ``extra="forbid"``
(vllm/config/utils.py:72 (0.34.0)): a key that is no field stops vLLM. What
each reads, and when: ``--compilation-config`` is validated into
``CompilationConfig`` by the parser itself (``parse_dataclass``,
vllm/engine/arg_utils.py:368 (0.34.0)); ``--speculative-config`` is only
``json.loads`` at parse time and becomes ``SpeculativeConfig(**dict)`` when
the engine config is made, after its keys' dashes are read as underscores
(vllm/engine/arg_utils.py:2159 (0.34.0)). Values are judged as pydantic's lax
mode reads them: ``"010"`` is an integer, ``3`` a float, an enum by its name
(``cudagraph_mode`` upper-cased first: vllm/config/compilation.py:1028
(0.34.0)). The ``method`` must be one of the release's ``SpeculativeMethod``
literal; a per-model MTP name (``deepseek_mtp``) is accepted with vLLM's own
warning that it is replaced with ``mtp``; from 0.34.0 a method a plugin
registers is allowed too, when the caller names it.

What no table knows (docs/vllm.md): cross-field rules checked when the engine
starts (``tensor_parallel_size`` refused in favour of
``draft_tensor_parallel_size``, which options a method supports) and what the
checkpoints allow.
"""

from __future__ import annotations

import re

from ddlab.config.sglang import Finding
from ddlab.core.checks import closest

__all__ = ["check_json_config", "human_readable_int"]


def check_json_config(section: dict, value, option: str, label: str, *,
                      custom_methods=(), deprecated=None) -> list[Finding]:
    """Findings for one JSON config value against a table's section for its class;
    ``deprecated``: field name -> what the release says (the help of its shortcut flag)."""
    cls, fields = section["class"], section["fields"]
    where = f"{cls}, {section['where']}"
    if not isinstance(value, dict):
        return [Finding("error", option, f"{option} {value!r}: not a JSON object of {where} "
                        f"fields ({label})", f"e.g. {option} '{{\"{next(iter(fields))}\": ...}}'")]
    findings = []
    for key, item in value.items():
        name = key.replace("-", "_") if cls == "SpeculativeConfig" else key
        field = fields.get(name)
        if field is None:
            findings.append(_unknown_key(option, key, fields, where, label))
        elif not field["init"] or field.get("skip_validation"):
            findings.append(Finding("error", option, f"{option} key {key!r}: set by vLLM "
                                    f"itself, not by the user ({where}; {label})",
                                    f"drop {key!r}"))
        elif name == "method" and "methods" in section:
            findings += _method(section, item, option, label, custom_methods)
        else:
            problem = _problem(field, item)
            if not problem and name in (deprecated or {}):
                findings.append(Finding("warning", option, f"{option} key {key!r}: deprecated "
                                        f"in {label} ({deprecated[name]})",
                                        "see the field's help for what replaces it"))
            if problem:
                findings.append(Finding("error", option, f"{option} {key}={item!r}: {problem} "
                                        f"({cls}.{name}: {field['annotation']}, "
                                        f"{field['where']}; {label})",
                                        f"give {key} {_allowed(field)}"
                                        + _bound_words(field.get("bounds"))))
    return findings


def _unknown_key(option: str, key: str, fields: dict, where: str, label: str) -> Finding:
    known = [n for n, f in fields.items() if f["init"] and not f.get("skip_validation")]
    guess = closest(key.replace("-", "_"), known)
    return Finding("error", option, f"{option} key {key!r}: not a field of {label}'s "
                   f"{where} (extra fields forbidden); its fields: {', '.join(known)}",
                   f"did you mean {guess}?" if guess else "use one of its fields")


def _method(section: dict, name, option: str, label: str, custom) -> list[Finding]:
    methods = section["methods"]["SpeculativeMethod"]
    known, where = methods["values"], methods["where"]
    mtp = section["methods"].get("MTPModelTypes", {}).get("values", [])
    takes_str = "str" in section["fields"]["method"]["kinds"]
    if name is None or (name in known and not (name in mtp and name != "mtp")):
        return []
    if name in known and section.get("mtp_aliases"):
        return [Finding("warning", option, f"{option} method {name!r}: vLLM warns it is "
                        f"deprecated and replaced with mtp ({section['mtp_aliases']['where']}; "
                        f"{label})", "write method mtp")]
    if name in known:
        return []
    if takes_str and name in custom:
        return [Finding("warning", option, f"{option} method {name!r}: no builtin of {label}; "
                        "it starts only if a plugin registers it", "check the plugin is installed")]
    guess = closest(str(name), known)
    plugin = (" or one a vLLM plugin registers (name it in custom_methods)" if takes_str
              else "")
    return [Finding("error", option, f"{option} method {name!r}: not a speculative method of "
                    f"{label} (SpeculativeMethod, {where}); its methods: {', '.join(known)}"
                    + plugin, f"did you mean {guess}?" if guess else "use one of its methods")]


# --- one value against a field's kinds --------------------------------------------------


def _problem(field: dict, value) -> str | None:
    """None when pydantic (lax) would take ``value`` for the field, else why not."""
    kinds = field["kinds"]
    if "any" in kinds or any(_fits(kind, value) for kind in kinds):
        return _bounds(field.get("bounds"), value)
    return f"not {_allowed(field)}"


def _fits(kind, value) -> bool:
    if isinstance(kind, dict):
        if "literal" in kind:
            return value in kind["literal"]
        if "enum" in kind:
            return isinstance(value, str) and value.upper() in kind["members"]
        if "list" in kind:
            return isinstance(value, list) and all(
                any(_fits(k, v) for k in kind["list"]) for v in value)
        return "config" in kind and isinstance(value, dict)
    return _SCALARS.get(kind, lambda v: False)(value)


def _is_int(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) or (isinstance(value, str)
                                      and re.fullmatch(r"\s*[-+]?\d+\s*", value) is not None)


def _is_float(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return isinstance(value, (int, float))


_SCALARS = {"none": lambda v: v is None, "bool": lambda v: isinstance(v, bool),
            "int": _is_int, "float": _is_float, "str": lambda v: isinstance(v, str),
            "dict": lambda v: isinstance(v, dict), "list": lambda v: isinstance(v, list)}


def _bounds(bounds: dict | None, value) -> str | None:
    if not bounds or not _is_float(value):
        return None
    x = float(value)
    tests = {"gt": (x.__gt__, ">"), "ge": (x.__ge__, ">="), "lt": (x.__lt__, "<"),
             "le": (x.__le__, "<=")}
    for key, limit in bounds.items():
        ok, sign = tests[key]
        if not ok(limit):
            return f"must be {sign} {limit}"
    return None


def _bound_words(bounds: dict | None) -> str:
    signs = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    return "".join(f" {signs[k]} {v}" for k, v in (bounds or {}).items())


def _allowed(field: dict) -> str:
    """The field's kinds in words: ``an integer or null``, ``one of NONE, FULL, ...``."""
    words = []
    for kind in field["kinds"]:
        if isinstance(kind, dict):
            if "literal" in kind or "enum" in kind:
                words.append("one of " + ", ".join(map(str, kind.get("literal")
                                                       or kind.get("members"))))
            elif "list" in kind:
                words.append("a list")
            else:
                words.append(f"a JSON object ({kind.get('config') or kind.get('other')})")
        else:
            words.append({"none": "null", "bool": "true or false", "int": "an integer",
                          "float": "a number", "str": "a string", "dict": "a JSON object",
                          "list": "a list", "any": "any value"}[kind])
    return " or ".join(words)


def human_readable_int(text: str) -> int:
    """vLLM's own reading (vllm/utils/argparse_utils.py:30 (0.34.0)): ``25.6k`` = 25600,
    ``1K`` = 1024 (k m g t decimal, K M G T binary); a binary suffix takes no decimals."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text.strip())
    if not match:
        return int(text.strip())
    number, suffix = match.groups()
    if suffix.islower():
        return int(float(number) * 10 ** (3 * (1 + "kmgt".index(suffix))))
    if "." in number:
        raise ValueError(f"{text}: decimals are not allowed with binary suffixes like {suffix}")
    return int(number) * 2 ** (10 * (1 + "KMGT".index(suffix)))
