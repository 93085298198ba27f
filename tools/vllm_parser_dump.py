"""Describe a real vLLM release's ``vllm serve`` parser as JSON (run in that release's venv).

Run by ``tools/vllm_flags.py`` with the Python of a throwaway venv that holds
``torch==2.13.0`` (the local CPU build), ``vllm==VERSION`` installed with
``--no-deps`` and only the pure-Python packages its argument module imports
(``vllm_flags.py`` says which). Nothing here imports ddlab: this file runs in
that other interpreter, with ``VLLM_TARGET_DEVICE=cpu`` (a CUDA-less machine
otherwise stops ``DeviceConfig``'s default factory: "Failed to infer device
type", vllm/config/device.py:46 (0.34.0)).

What it does: builds the parser exactly as ``vllm serve`` does, the release's
own ``make_arg_parser(FlexibleArgumentParser(...))``
(vllm/entrypoints/cli/serve.py:172 (0.34.0)), with ``--help`` in ``sys.argv``
so that vLLM fills each option's help from its config docstrings
(``NEEDS_HELP``, vllm/engine/arg_utils.py:286 (0.34.0)); records where each
``add_argument`` call is (the first frame in the vllm package); then describes
every action of ``parser._actions`` and the fields of the two configs ddlab
writes as JSON, ``SpeculativeConfig`` and ``CompilationConfig``, read from the
imported classes (names, types, defaults, bounds), with their lines from the
source (``ast``). Prints one JSON document.
"""

import argparse
import ast
import dataclasses
import enum
import inspect
import json
import os
import re
import sys
import types
import typing
from pathlib import Path

sys.argv = ["vllm", "serve", "--help"]  # vLLM reads this at import: help texts on
CALL_SITES: dict[int, str] = {}
_add_argument = argparse._ActionsContainer.add_argument


def _recording_add_argument(self, *args, **kwargs):
    action = _add_argument(self, *args, **kwargs)
    CALL_SITES[id(action)] = _caller()
    return action


def _caller() -> str | None:
    """``vllm/path.py:LINE`` of the first frame in the vllm package outside argparse_utils."""
    frame = sys._getframe(2)
    while frame:
        where = _in_vllm(frame.f_code.co_filename)
        if where and not where.endswith("utils/argparse_utils.py"):
            return f"{where}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _in_vllm(filename: str) -> str | None:
    parts = Path(filename).parts
    return "/".join(parts[parts.index("vllm"):]) if "vllm" in parts else None


argparse._ActionsContainer.add_argument = _recording_add_argument

import vllm  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402

PARSER_MODULES = ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
                  "vllm.entrypoints.openai.cli_args")


def build_parser():
    """The parser ``vllm serve`` builds, and the module whose make_arg_parser built it."""
    for name in PARSER_MODULES:
        try:
            module = __import__(name, fromlist=["make_arg_parser"])
        except ModuleNotFoundError as err:
            if not name.startswith(err.name or "-"):
                raise
            continue
        parser = FlexibleArgumentParser(prog="vllm serve")
        return module.make_arg_parser(parser), module
    raise SystemExit(f"no make_arg_parser in any of {PARSER_MODULES}")


# --- one action ---------------------------------------------------------------------

ACTION_NAMES = {argparse._StoreAction: "store", argparse._StoreTrueAction: "store_true",
                argparse._StoreFalseAction: "store_false", argparse._AppendAction: "append",
                argparse._StoreConstAction: "store_const", argparse._CountAction: "count",
                argparse._HelpAction: "help", argparse._VersionAction: "version",
                argparse.BooleanOptionalAction: "boolean_optional"}
# A sentence saying the option itself is deprecated (not one of its choices, not a
# "deprecated metrics" switch): "--x is deprecated ...", "Deprecated: ...", "x has been
# replaced by y", "... will be removed in v0.34.0".
DEPRECATED = re.compile(r"^(Deprecated\b|\S+ is deprecated|\S+ has been replaced by)"
                        r"|will be removed in")


def describe_action(action, parser, group_of) -> dict:
    help_text = action.help if isinstance(action.help, str) else ""
    kind = ACTION_NAMES.get(type(action), type(action).__name__)
    # Every string argparse answers to: vLLM's EnableDisableAction hides --no-enable-x from
    # option_strings (help) but leaves it registered (vllm/utils/argparse_utils.py:151 (0.34.0))
    registered = [o for o, a in parser._option_string_actions.items() if a is action]
    hidden = [o for o in registered if o not in action.option_strings]
    row = {"options": list(action.option_strings) + hidden or [action.dest],
           "hidden": hidden, "dest": action.dest,
           "action": kind, "nargs": action.nargs, "const": plain(action.const),
           "default": plain(action.default), "choices": choices(action.choices),
           "metavar": plain(action.metavar), "group": group_of.get(id(action)),
           "where": CALL_SITES.get(id(action)), "help": first_sentence(help_text),
           "suppressed": action.help == argparse.SUPPRESS, "deprecated": None}
    row.update(describe_type(action.type))
    if kind == "EnableDisableAction" or isinstance(action, argparse.BooleanOptionalAction):
        row["negative"] = sorted(set(action.option_strings)
                                 - set(getattr(action, "visible_option_strings", ()))
                                 | set(getattr(action, "negative_option_strings", ())))
    said = next((s for s in sentences(help_text) if DEPRECATED.search(s)), None)
    if action in getattr(parser, "_deprecated", ()) or getattr(action, "deprecated", False):
        row["deprecated"] = {"how": "argparse deprecated=True (warns when used)", "says": said}
    elif said:
        row["deprecated"] = {"how": "help text", "says": said}
    return row


def describe_type(fn) -> dict:
    """``type`` (a name ddlab's reader knows), ``optional`` (``""``/``None`` read as None),
    ``json_class`` (a config dataclass pydantic validates at parse time), ``type_where``."""
    out = {"type": None, "optional": False, "json_class": None, "type_where": None}
    while fn is not None:
        cells = _closure(fn)
        name = getattr(fn, "__name__", type(fn).__name__)
        if name == "_optional_type":
            out["optional"], fn = True, cells["return_type"]
        elif name == "_parse_type":
            fn = cells["return_type"]
        elif name == "parse_dataclass":
            out["type"], out["json_class"] = "json", fn.__defaults__[0].__name__
            out["type_where"] = _source_of(fn)
            return out
        else:
            module = getattr(fn, "__module__", "") or ""
            out["type"] = "json" if (module, name) == ("json", "loads") else name
            out["type_where"] = _source_of(fn) if module.startswith("vllm") else None
            return out
    return out


def _closure(fn) -> dict:
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    return dict(zip(code.co_freevars, (c.cell_contents for c in cells))) if code else {}


def _source_of(obj) -> str | None:
    try:
        path, line = inspect.getsourcefile(obj), inspect.getsourcelines(obj)[1]
    except (TypeError, OSError):
        return None
    where = _in_vllm(path)
    return f"{where}:{line}" if where else None


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n\n", " ".join(text.split("\n")))
            if s.strip()]


def first_sentence(text: str) -> str:
    found = sentences(text.replace("%%", "%"))
    return found[0][:200] if found else ""


def choices(values) -> list | None:
    return None if values is None else [plain(v) for v in values]


def plain(value):
    """A JSON-safe picture of a value: enums by name, config objects by class name."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        return {"config": type(value).__name__}
    return {"repr": repr(value)[:120]}


# --- config classes written as JSON --------------------------------------------------


def describe_config(cls) -> dict:
    """The fields of a vLLM config dataclass (pydantic, ``extra="forbid"``)."""
    path = inspect.getsourcefile(cls)
    where = _in_vllm(path)
    tree = ast.parse(Path(path).read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    lines = {s.target.id: (s.lineno, ast.unparse(s.annotation)) for s in node.body
             if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {}
    for f in dataclasses.fields(cls):
        line, annotation = lines.get(f.name, (None, str(f.type)))
        fields[f.name] = {"annotation": annotation, "kinds": kinds(hints.get(f.name, f.type)),
                          "default": field_default(f), "init": f.init,
                          "bounds": bounds(f), "where": f"{where}:{line}" if line else None,
                          "skip_validation": "SkipValidation" in annotation}
    return {"class": cls.__name__, "where": f"{where}:{node.lineno}",
            "extra": "forbid", "fields": fields}


def kinds(hint) -> list:
    """The JSON shapes a field takes: none, bool, int, float, str, dict, ``{"list": [item
    kinds]}``,
    ``{"literal": [...]}``, ``{"enum": NAME, "members": [...]}``, ``{"config": NAME}``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return kinds(args[0])
    if origin in (typing.Union, types.UnionType):
        out = []
        for arg in args:
            out += [k for k in kinds(arg) if k not in out]
        return out
    if origin is typing.Literal:
        return [{"literal": [plain(a) for a in args]}]
    if hint is type(None):
        return ["none"]
    if hint in (bool, int, float, str):
        return [hint.__name__]
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set):
        items = []
        for arg in args:
            items += [k for k in kinds(arg) if k not in items] if arg is not Ellipsis else []
        return [{"list": items}] if items else ["list"]
    if origin is dict or hint is dict or (isinstance(hint, type) and issubclass(hint, dict)):
        return ["dict"]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return [{"enum": hint.__name__, "members": [m.name for m in hint]}]
    if dataclasses.is_dataclass(hint):
        return [{"config": hint.__name__}]
    if hint is typing.Any:
        return ["any"]
    return [{"other": getattr(hint, "__name__", str(hint))}]


def field_default(f):
    from pydantic.fields import FieldInfo

    default = f.default
    if isinstance(default, FieldInfo):
        default = default.default if default.default_factory is None else "<factory>"
    if default is dataclasses.MISSING:
        default = "<factory>" if f.default_factory is not dataclasses.MISSING else "<required>"
    return plain(default)


def bounds(f) -> dict | None:
    from pydantic.fields import FieldInfo

    if not isinstance(f.default, FieldInfo):
        return None
    out = {}
    for item in f.default.metadata:
        for key in ("gt", "ge", "lt", "le"):
            if getattr(item, key, None) is not None:
                out[key] = getattr(item, key)
    return out or None


def literal_where(module, name: str) -> str | None:
    """``vllm/config/x.py:LINE`` of ``NAME = Literal[...]`` in ``module``'s source."""
    path = inspect.getsourcefile(module)
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return f"{_in_vllm(path)}:{node.lineno}"
    return None


def speculative(module) -> dict:
    out = describe_config(module.SpeculativeConfig)
    literals = {name: {"values": list(typing.get_args(getattr(module, name))),
                       "where": literal_where(module, name)}
                for name in ("SpeculativeMethod", "MTPModelTypes", "EagleModelTypes")
                if hasattr(module, name)}
    out["methods"] = literals
    source = Path(inspect.getsourcefile(module)).read_text().splitlines()
    line = next((n for n, text in enumerate(source, 1)
                 if "deprecated and replaced with mtp" in text), None)
    out["mtp_aliases"] = None if line is None else {  # deepseek_mtp ... -> mtp, with a warning
        "replaced_with": "mtp", "where": f"{_in_vllm(inspect.getsourcefile(module))}:{line}"}
    specific = getattr(module, "_METHOD_SPECIFIC_OPTIONS", None)
    out["method_specific_options"] = None if specific is None else {
        "names": sorted(specific), "where": literal_where(module, "_METHOD_SPECIFIC_OPTIONS")}
    return out


def compilation(module) -> dict:
    out = describe_config(module.CompilationConfig)
    mode = module.CUDAGraphMode
    out["cudagraph_modes"] = {"members": [m.name for m in mode], "where": _source_of(mode),
                              "read_as": "name, upper-cased (field_validator cudagraph_mode)"}
    return out


def main() -> None:
    parser, module = build_parser()
    group_of = {id(a): g.title for g in parser._action_groups for a in g._group_actions}
    from vllm.config import compilation as compilation_module
    from vllm.config import speculative as speculative_module
    import torch

    make = getattr(module, "make_arg_parser")
    print(json.dumps({
        "vllm": vllm.__version__, "torch": torch.__version__,
        "python": sys.version.split()[0],
        "target_device": os.environ.get("VLLM_TARGET_DEVICE"),
        "parser": {"built_by": f"{module.__name__}.make_arg_parser", "where": _source_of(make),
                   "class": type(parser).__name__, "allow_abbrev": parser.allow_abbrev,
                   "where_class": _source_of(type(parser))},
        "options": [describe_action(a, parser, group_of) for a in parser._actions],
        "speculative_config": speculative(speculative_module),
        "compilation_config": compilation(compilation_module),
    }))


if __name__ == "__main__":
    main()
