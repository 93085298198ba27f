"""The argparse parser of an SGLang wheel, built by the wheel's own code, without installing it.

Contract::

    python -I -S tools/sglang_slice.py WHEEL MSGSPEC_DIR
    # prints {"options": [one dict per argparse action], "stand_ins": [module names]}

``describe_parser(ServerArgs.add_cli_args)`` is the part that does not care
where ``ServerArgs`` came from: run it after a real ``import
sglang.srt.server_args`` and the output is comparable line for line (that is
how this module was checked; see docs/sglang.md).

Why a *sliced import*: importing ``sglang.srt.server_args`` for real pulls
~150 sglang modules and torch, triton, transformers, zmq, pydantic, ... The
parser needs a few hundred lines of them. So sglang modules are loaded from the
wheel lazily: when a name of a module is first asked for, only the top-level
statements that bind or change that name run, plus (transitively) those that
bind the names their code reads. ``ServerArgs`` itself is followed only
through ``add_cli_args`` and its class-level fields, not through its other
methods. What runs is the wheel's code, unmodified, under its own file names
and line numbers, against the real ``argparse``. Run it as ``python -I -S``
so that nothing installed leaks in: stdlib, the wheel, and ``msgspec`` (real:
0.5.20+ declares its arguments as msgspec records) are all there is. A module
that sglang imports and nothing provides becomes an inert stand-in; its name is
reported, so a table says what was stood in for. ``importlib.util.find_spec``
probes see such a module as absent, as on a minimal install.

Locations (``where``: the ``add_argument`` call or record field; ``type_where``:
the type function). Code of the sglang package is ``sglang/PATH.py:LINE``, the
path inside the wheel. Code outside it (standard library, third-party) is its
dotted Python name with no file and no line: ``argparse.ArgumentParser.__init__``
(``-h/--help``), ``json.loads`` (a JSON-valued flag's type). Its file would be a
path on the machine that generated the table, and its line depends on the
Python build, so neither belongs in a committed table.
"""

from __future__ import annotations
import __future__  # compiler flags for the wheel's own `from __future__` lines

import abc
import argparse
import ast
import builtins
import functools
import importlib
import importlib.abc
import importlib.machinery
import json
import logging
import re
import sys
import types
import zipfile

__all__ = ["describe_parser", "inspect_wheel"]

SERVER_ARGS = "sglang.srt.server_args"


# --- which top-level statements a name needs ---------------------------------------


def _names(node: ast.AST, ctx=ast.Load) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _bound(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (a compound statement: in any branch)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
        inner = [n for n in ast.walk(stmt) if isinstance(n, (ast.Lambda, ast.comprehension))]
        return _names(stmt, ast.Store) - set().union(*(_names(n, ast.Store) for n in inner))
    out: set[str] = set()
    for child in ast.iter_child_nodes(stmt):
        if isinstance(child, ast.stmt):
            out |= _bound(child)
        elif isinstance(child, ast.ExceptHandler):
            out |= {child.name} - {None} | set().union(*map(_bound, child.body))
    return out


def _changed(stmt: ast.stmt) -> set[str]:
    """Names a statement changes without binding them: ``X.a = 1``, ``X[k] = 1``, ``f(X)``."""
    if isinstance(stmt, ast.Expr):
        return _names(stmt)
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = getattr(stmt, "targets", None) or [stmt.target]
        return set().union(*(_names(t) for t in targets
                             if isinstance(t, (ast.Attribute, ast.Subscript))))
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                         ast.Import, ast.ImportFrom)):
        return set()
    return set().union(*(_changed(c) for c in ast.iter_child_nodes(stmt)
                         if isinstance(c, ast.stmt)))


def _read(stmt: ast.stmt, shallow_class: str | None) -> set[str]:
    """Names a statement's code may read; ``shallow_class`` only through add_cli_args."""
    if not (isinstance(stmt, ast.ClassDef) and stmt.name == shallow_class):
        return _names(stmt)
    kept = [*stmt.bases, *stmt.keywords, *stmt.decorator_list]
    for item in stmt.body:
        method = isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        kept += item.decorator_list if method and item.name != "add_cli_args" else [item]
    return set().union(*map(_names, kept))


def _future_flags(stmts: list[ast.stmt]) -> int:
    return sum(getattr(__future__, alias.name).compiler_flag for stmt in stmts
               if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
               for alias in stmt.names)


class _Slice:
    """The top-level statements of one module, each run once, when first needed."""

    def __init__(self, module: types.ModuleType, source: str, filename: str):
        self.module, self.filename = module, filename
        self.stmts = ast.parse(source, filename).body
        shallow = "ServerArgs" if module.__name__ == SERVER_ARGS else None
        bound = [_bound(s) for s in self.stmts]
        self.keys = [b | _changed(s) for b, s in zip(bound, self.stmts)]
        self.reads = [_read(s, shallow) for s in self.stmts]
        self.defined = set().union(*bound) | set(dir(builtins))
        self.stars = [s for s in self.stmts if isinstance(s, ast.ImportFrom)
                      and any(a.name == "*" for a in s.names)]
        self.flags = _future_flags(self.stmts)
        self.done: set[int] = set()

    def run_for(self, wanted: set[str]) -> None:
        """Run, in file order, the statements ``wanted`` needs that have not run yet."""
        needed, chosen = set(wanted), set()
        grew = True
        while grew:
            grew = False
            for i, keys in enumerate(self.keys):
                if i not in chosen and i not in self.done and keys & needed:
                    chosen.add(i)
                    needed |= self.reads[i]
                    grew = True
        self._import_from_stars(needed - self.defined)
        self.done |= chosen
        body = [self.stmts[i] for i in sorted(chosen)]
        code = compile(ast.Module(body=body, type_ignores=[]), self.filename, "exec",
                       flags=self.flags, dont_inherit=True)
        exec(code, self.module.__dict__)  # the wheel's own statements, in its module

    def _import_from_stars(self, names: set[str]) -> None:
        """``from X import *``: take from X only the names this module lacks."""
        for stmt in self.stars:
            source = importlib.import_module("." * stmt.level + (stmt.module or ""),
                                             self.module.__package__)
            for name in names - set(self.module.__dict__):
                if hasattr(source, name):
                    self.module.__dict__[name] = getattr(source, name)


class _SlicedModule(types.ModuleType):
    """A wheel module whose names come into being when first asked for."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        self.__dict__["__slice__"].run_for({name})
        if name in self.__dict__:
            return self.__dict__[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")


# --- stand-ins for what sglang imports and nothing provides ---------------------------


class _StandIn(abc.ABCMeta):
    """An inert class: attributes, calls, indexing, ``|`` give stand-ins; falsy, empty."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand_in(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator: keep what it decorates
        return cls

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __or__

    def __bool__(cls):
        return False

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0


def _stand_in(qualname: str) -> type:
    return _StandIn(qualname, (), {"__module__": "stand_in"})


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name == "__version__":
            return "0.0.0"  # torch_release = parse(torch.__version__).release, at import
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand_in(f"{self.__name__}.{name}")


class _WheelFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """sglang.* from the wheel as sliced modules; what sglang imports and no one has, a stand-in."""

    def __init__(self, wheel: zipfile.ZipFile):
        self.wheel, self.files = wheel, set(wheel.namelist())
        self.folders = {f.rsplit("/", n)[0] for f in self.files for n in range(1, f.count("/") + 1)}
        self.stand_ins: set[str] = set()

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] == "sglang":
            base = fullname.replace(".", "/")
            for file, package in ((f"{base}/__init__.py", True), (f"{base}.py", False)):
                if file in self.files:
                    spec = importlib.machinery.ModuleSpec(fullname, self, is_package=package)
                    spec.origin, spec.has_location = file, True
                    return spec
            if base in self.folders:  # a namespace package: sglang/srt has no __init__.py
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if not _imported_by_sglang():
            return None
        self.stand_ins.add(fullname.split(".")[0])
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        if spec.name.split(".")[0] != "sglang":
            module = _StandInModule(spec.name)
        else:
            module = (_SlicedModule if spec.origin else types.ModuleType)(spec.name)
        if spec.submodule_search_locations is not None:
            module.__path__ = []
        return module

    def exec_module(self, module):
        if isinstance(module, _SlicedModule):
            file = module.__spec__.origin
            module.__dict__["__slice__"] = _Slice(module, self.get_source(module.__name__), file)

    def get_source(self, fullname):
        return self.wheel.read(sys.modules[fullname].__spec__.origin).decode("utf-8")


def _imported_by_sglang() -> bool:
    """Whether sglang code imports it (not a find_spec probe, not stdlib code)."""
    frame = sys._getframe(2)
    while (frame.f_code.co_filename.startswith("<frozen importlib")
           or frame.f_globals.get("__name__") == "importlib"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "").startswith("sglang")


def inspect_wheel(wheel: str, msgspec_dir: str) -> dict:
    """The described parser of ``wheel``, and the top-level modules stood in for."""
    sys.path.insert(0, msgspec_dir)
    finder = _WheelFinder(zipfile.ZipFile(wheel))
    sys.meta_path.append(finder)
    server_args = importlib.import_module(SERVER_ARGS)
    options = describe_parser(server_args.ServerArgs.add_cli_args)
    return {"options": options, "stand_ins": sorted(finder.stand_ins)}


# --- describing the parser --------------------------------------------------------


_ACTIONS = {argparse._StoreAction: "store", argparse._StoreTrueAction: "store_true",
            argparse._StoreFalseAction: "store_false", argparse._StoreConstAction: "store_const",
            argparse._AppendAction: "append", argparse._CountAction: "count",
            argparse._HelpAction: "help", argparse._VersionAction: "version"}


def describe_parser(add_cli_args) -> list[dict]:
    """Run ``add_cli_args`` on a plain parser (as prepare_server_args does); a dict per action."""
    sites: dict[int, str] = {}
    original = argparse._ActionsContainer.add_argument

    def add_argument(container, *args, **kwargs):
        action = original(container, *args, **kwargs)
        sites[id(action)] = _call_site(sys._getframe(1))
        return action

    argparse._ActionsContainer.add_argument = add_argument
    logging.disable(logging.CRITICAL)
    try:
        parser = argparse.ArgumentParser(prog="sglang.launch_server")
        add_cli_args(parser)
    finally:
        argparse._ActionsContainer.add_argument = original
    return sorted((_describe(a, sites.get(id(a))) for a in parser._actions),
                  key=lambda d: d["options"][0] if d["options"] else d["dest"])


def _call_site(frame) -> str | None:
    """Where an add_argument call is (see :func:`_location`); for a record field
    (0.5.20+), where the field is declared."""
    if frame.f_code.co_name == "add_cli_args_from_dataclass":
        return _field_site(frame.f_locals["cls"], frame.f_locals["field"].name)
    return _location(frame.f_globals.get("__name__", ""), frame.f_code, frame.f_lineno)


def _location(module: str, code, line: int) -> str:
    """``sglang/...py:LINE`` for code of the sglang package; anything else (the
    standard library, a third-party package) by its dotted Python name and no line,
    e.g. ``json.loads``, ``argparse.ArgumentParser.__init__``: its file lies
    wherever that machine's Python lives, and its line numbers change with the
    Python build, so neither belongs in a committed table."""
    if _in_sglang(module):
        return f"{_wheel_path(code.co_filename)}:{line}"
    return f"{module}.{getattr(code, 'co_qualname', code.co_name)}"


def _in_sglang(module: str) -> bool:
    return module == "sglang" or module.startswith("sglang.")


def _wheel_path(filename: str) -> str:
    return filename[filename.rindex("sglang/"):] if "sglang/" in filename else filename


def _field_site(record: type, name: str) -> str | None:
    for owner in (*getattr(record, "_NAMESPACES", ()), *record.__mro__):
        site = _declared_fields(owner.__module__, owner.__qualname__).get(name)
        if site:
            return site
    return None


@functools.cache
def _declared_fields(module_name: str, class_name: str) -> dict[str, str]:
    module = sys.modules.get(module_name)
    if not _in_sglang(module_name) or not isinstance(getattr(module, "__file__", None), str):
        return {}
    tree = ast.parse(module.__loader__.get_source(module_name))
    path = _wheel_path(module.__file__)
    return {item.target.id: f"{path}:{item.lineno}"
            for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}


def _describe(action: argparse.Action, site: str | None) -> dict:
    return {"options": list(action.option_strings), "dest": action.dest,
            "action": _ACTIONS.get(type(action), type(action).__name__),
            "type": _type_name(action), "type_where": _type_where(action.type),
            "choices": _plain(action.choices), "nargs": action.nargs,
            "default": _plain(action.default), "const": _plain(action.const),
            "metavar": _plain(action.metavar), "required": action.required,
            "deprecated": _deprecation(action), "help": _first_line(action.help),
            "where": site}


def _type_name(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "switch"
    if action.type is None:
        return "str"
    return getattr(action.type, "__name__", type(action.type).__name__)


def _type_where(fn) -> str | None:
    """Where a type function is defined (see :func:`_location`); None for a class."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return _location(getattr(fn, "__module__", None) or "", code, code.co_firstlineno)


def _plain(value):
    """A JSON value: sets sorted, enums by name, anything else as ``{"repr": ...}``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (set, frozenset)):
        return sorted(map(_plain, value), key=repr)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, type({}.keys()))):
        return [_plain(v) for v in value]
    if hasattr(value, "name") and hasattr(value, "value"):
        return str(value.name)
    return {"repr": repr(value)}


def _first_line(text) -> str | None:
    lines = str(text or "").strip().splitlines()
    return lines[0].strip() if lines else None


_SAYS_DEPRECATED = re.compile(r"\W*deprecated\b", re.IGNORECASE)
_POINTS_TO = re.compile(r"\b(?:[Uu]se|[Aa]lias for)\s+'?(--[^\s',)]+)")


def _deprecation(action: argparse.Action) -> dict | None:
    """A ``Deprecated*`` action class (its ``new_flag``), or a help text opening "Deprecated"."""
    by_class = type(action).__name__.startswith("Deprecated")
    if not (by_class or _SAYS_DEPRECATED.match(action.help or "")):
        return None
    hint = _POINTS_TO.search(action.help or "")
    return {"by": type(action).__name__ if by_class else "help",
            "replacement": getattr(action, "new_flag", None) or (hint and hint.group(1)),
            "on_use": _on_use(action)}


def _on_use(action: argparse.Action) -> str:
    """What passing the flag does: ``stores`` a value, is ``ignored``, or ``errors``."""
    class Parser:
        def error(self, message):
            raise SystemExit(2)

    namespace = argparse.Namespace()
    values = [] if action.nargs == 0 else ["1"] if action.nargs in ("+", "*") else "1"
    try:
        action(Parser(), namespace, values, (action.option_strings or ["?"])[0])
    except (Exception, SystemExit):  # whatever it raises, the launch stops there
        return "errors"
    return "stores" if vars(namespace) else "ignored"


if __name__ == "__main__":
    print(json.dumps(inspect_wheel(sys.argv[1], sys.argv[2])))
