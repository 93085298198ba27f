"""ddlab's probe hook: see inside a function of a running server without editing its files.

Contract. Imported with env ``DDLAB_PROBES`` set -- a JSON list of
``{"target": "pkg.mod.Class.method", "mode": "error" | "first" | "time", "n": N | null}``
-- it wraps each target function where it is defined: at once if its module is
already imported, else when that module is first imported (a ``sys.meta_path``
finder whose loader runs a callback after the module's code). Every process
started with the same environment does the same, through the ``sitecustomize``
that ddlab puts first on ``PYTHONPATH``: multiprocessing *spawn* children
(SGLang's scheduler and TP workers) import everything again, this hook first.

Each record is one flushed stderr line ``DDLAB_PROBE {json}``; keys ``pid``,
``rank`` (env RANK / LOCAL_RANK / SGLANG_TP_RANK, else an SGLang scheduler's process
title: ``sglang::scheduler_TP3`` is 3; else null), ``target``,
``mode``, ``event`` and ``call`` (the call's 1-based index in this process, or
null), and by event:

- ``armed``: the target is wrapped in this process (``module``, ``aliases``:
  other names in the same namespace bound to the same function, wrapped too);
- ``raised`` (mode error): ``summaries`` and ``error`` = {"type", "message"}
  (an ``Exception``'s; KeyboardInterrupt and SystemExit pass unrecorded);
- ``call`` (mode first=N): ``summaries``, taken as the call starts;
- ``time`` (mode time): ``seconds`` (host wall time; GPU work may still be
  queued), and ``error`` when the call raised;
- ``missing``: the module is imported but the path does not resolve: ``error``
  and ``closest`` (the path with the nearest existing name, or null);
- ``failed``: the probe itself could not work here (``error``);
- ``stopped``: :data:`LIMIT` records were written for this target in this
  process; there will be no more (``limit``).

``summaries`` = {"args": [summary...], "subject": name | null, "fields": [summary...]}:
every argument, and the attributes of the first argument after ``self`` / ``cls``
(of ``args[0]`` for a plain function or staticmethod). A summary is
{"name", "type"} and, by value: None -> "value": null; bool/int/float -> "value";
str/bytes/containers -> "len"; tensor-like (has shape and dtype) -> "shape",
"dtype", "device"; str/bytes under a name containing key/token/password/secret ->
"secret": true and not even the length; unreadable -> "unreadable". Numbers are
shown whatever their name (``num_token_non_padded`` is evidence, not a secret).
At most 128 arguments and 128 fields ("more_fields": how many were left out); if
summarizing fails, "summaries" is null and "probe_error" says why.

A probe never changes what the server does: the target's return value and
exceptions pass through untouched (a bare ``raise``), methods stay methods
(staticmethod and classmethod kept), ``functools.wraps`` keeps names and
signatures; anything failing in the probe's own code is swallowed (at most a
record says so). Metadata only: never tensor values or string contents. Bounded:
at most :data:`LIMIT` records per target per process (``armed``, ``missing`` and
``failed``, once each per process, not counted).

What is replaced is the name where the target is defined (and its aliases
there): a copy taken earlier by ``from mod import f`` keeps the original, and a
module run as ``__main__`` is never imported under its name.

Standalone: standard library only -- it is copied onto hosts as
``ddlab_probe_hook.py``, where ddlab need not be installed.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import inspect
import itertools
import json
import math
import os
import pkgutil
import re
import sys
import threading
import time

ENV = "DDLAB_PROBES"
TAG = "DDLAB_PROBE"
LIMIT = 50           # records per target per process
MAX_ITEMS = 128      # arguments or attributes summarized per record
MAX_MESSAGE = 300    # characters of an exception's message
MODES = ("error", "first", "time")
RANK_VARS = ("RANK", "LOCAL_RANK", "SGLANG_TP_RANK")
SECRET_WORDS = ("key", "token", "password", "secret")
_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
_SIZED = (str, bytes, bytearray, list, tuple, dict, set, frozenset)
_ABSENT = object()


class Unsupported(Exception):
    """The target resolves, but to something a probe cannot wrap without changing it."""


# --- records ---------------------------------------------------------------------------


def emit(record: dict) -> None:
    """Write one ``DDLAB_PROBE {json}`` line to stderr and flush; never raises."""
    try:
        line = f"{TAG} {json.dumps(record, separators=(',', ':'), default=str)}\n"
        if sys.stderr is None:
            os.write(2, line.encode("utf-8", "replace"))
        else:
            sys.stderr.write(line)
            sys.stderr.flush()
    except Exception:  # a closed or broken stderr: the probe goes quiet, the server goes on
        pass


def rank():
    """This process's rank from RANK / LOCAL_RANK / SGLANG_TP_RANK, else from an SGLang
    scheduler's process title (:func:`title_rank`), else None."""
    for name in RANK_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return int(value) if value.lstrip("-").isdigit() else value
    try:
        with open("/proc/self/cmdline", "rb") as f:
            title = f.read(200).split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        return None
    return title_rank(title)


def title_rank(title: str):
    """The rank an SGLang scheduler's process title tells. SGLang sets no rank variable in
    its scheduler processes; it titles them ``sglang::scheduler`` plus its log prefix with
    ``_`` for spaces: ``_DP0``, ``_PP1``, ``_ATTN_CP0``, ``_MOE_DP0``, ``_TP3``, ``_EP3``
    (0.5.23 ``sglang/srt/managers/scheduler.py:6279-6294``). The TP rank as an int; the
    tags as written when there is no TP (``"DP1"``); 0 for a bare ``sglang::scheduler``
    (one rank); None for any other process."""
    if not title.startswith("sglang::scheduler"):
        return None
    tags = title[len("sglang::scheduler"):].strip("_")
    tp = re.search(r"(?:^|_)TP(\d+)(?:_|$)", tags)
    if tp:
        return int(tp.group(1))
    return tags or 0


def error_info(exc: BaseException) -> dict:
    """{"type", "message"}: the exception's class name and its first 300 characters."""
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    return {"type": type(exc).__name__, "message": message[:MAX_MESSAGE]}


def looks_secret(name) -> bool:
    return any(word in str(name).lower() for word in SECRET_WORDS)


def summary(name, value) -> dict:
    """Metadata of one value (module docstring); never its contents."""
    out = {"name": str(name), "type": type(value).__name__}
    try:
        if value is None:
            out["value"] = None
        elif _tensor_like(value):
            out.update(_tensor_meta(value))
        elif isinstance(value, (bool, int, float)):
            out["value"] = _number(value)
        elif looks_secret(name) and isinstance(value, (str, bytes, bytearray)):
            out["secret"] = True
        elif isinstance(value, _SIZED):
            out["len"] = len(value)
    except Exception as exc:
        out["unreadable"] = error_info(exc)
    return out


def _tensor_like(value) -> bool:
    return not isinstance(value, type) and hasattr(value, "shape") and hasattr(value, "dtype")


def _tensor_meta(value) -> dict:
    try:
        shape = [int(d) for d in value.shape]
    except Exception:  # symbolic or odd shapes
        shape = str(value.shape)
    device = getattr(value, "device", None)
    return {"shape": shape, "dtype": str(value.dtype),
            "device": None if device is None else str(device)}


def _number(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def attributes(obj) -> list[tuple[str, object]]:
    """(name, value) of ``obj``'s attributes: dataclass fields, ``__slots__`` (unset ones
    left out), then ``vars()``; no dunders."""
    if obj is None or isinstance(obj, (type, bool, int, float) + _SIZED) or _tensor_like(obj):
        return []
    names = [f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj) else []
    names += [n for n in _slot_names(type(obj)) if n not in names]
    own = getattr(obj, "__dict__", None)
    own = own if isinstance(own, dict) else {}
    names += [n for n in own if n not in names]
    out = []
    for name in names:
        if not (name.startswith("__") and name.endswith("__")):
            value = own[name] if name in own else getattr(obj, name, _ABSENT)
            if value is not _ABSENT:
                out.append((name, value))
    return out


def _slot_names(cls) -> list[str]:
    names = []
    for klass in reversed(cls.__mro__):
        slots = vars(klass).get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else slots:
            if name.startswith("__") and not name.endswith("__"):  # stored name-mangled
                name = f"_{klass.__name__.lstrip('_')}{name}"
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def named_args(signature, args, kwargs) -> list[tuple[str, object]]:
    """The call's arguments with their parameter names (``args[i]`` where none binds)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except Exception:  # no signature, or a call the function itself will refuse
        return [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    out = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out += list(value.items())
        else:
            out.append((name, value))
    return out


def summaries(signature, skip: int, args, kwargs) -> dict:
    """Every argument, and the attributes of the first one after ``skip`` (self / cls)."""
    named = named_args(signature, args, kwargs)
    out = {"args": [summary(n, v) for n, v in named[:MAX_ITEMS]], "subject": None, "fields": []}
    if len(named) > skip:
        name, subject = named[skip]
        fields = attributes(subject)
        out["subject"] = name
        out["fields"] = [summary(n, v) for n, v in fields[:MAX_ITEMS]]
        if len(fields) > MAX_ITEMS:
            out["more_fields"] = len(fields) - MAX_ITEMS
    return out


# --- one probe -------------------------------------------------------------------------


class Probe:
    """One target in this process: its counters, its bound, and what it records."""

    def __init__(self, target: str, mode: str, n: int | None = None):
        self.target, self.mode = target, mode
        self.n = min(n, LIMIT) if mode == "first" else None
        self.parts = target.split(".")
        self.key = f"{target}:{mode}:{self.n}"
        self.calls = itertools.count(1)
        self.records = 0
        self.idle = False          # bound reached (or first=N done): calls pass straight through
        self.reported = False      # missing / failed already said in this process
        self.lock = threading.Lock()

    def base(self, event: str, call=None) -> dict:
        return {"pid": os.getpid(), "rank": rank(), "target": self.target, "mode": self.mode,
                "event": event, "call": call}

    def record(self, event: str, call, **fields) -> None:
        """Emit one counted record; after the LIMIT-th, one ``stopped`` and silence."""
        with self.lock:
            if self.records >= LIMIT:
                return
            self.records += 1
            last = self.records == LIMIT
            if last:
                self.idle = True
        emit({**self.base(event, call), **fields})
        if last:
            emit({**self.base("stopped", call), "limit": LIMIT})

    def once(self, event: str, **fields) -> None:
        """A record said at most once per process (missing, failed)."""
        if not self.reported:
            self.reported = True
            emit({**self.base(event), **fields})


class Site:
    """A wrapped function's side of a probe: how to name its arguments and which is the subject."""

    def __init__(self, probe: Probe, func, skip: int):
        self.probe, self.skip = probe, skip
        try:
            self.signature = inspect.signature(func)
        except (TypeError, ValueError):
            self.signature = None

    def enter(self, args, kwargs) -> int:
        """Count the call; in first=N mode record it. Never raises."""
        call = next(self.probe.calls)
        probe = self.probe
        try:
            if probe.mode == "first" and call <= probe.n:
                if call == probe.n:
                    probe.idle = True
                probe.record("call", call, **self._summaries(args, kwargs))
        except Exception:
            pass
        return call

    def leave(self, call: int, start: float, args, kwargs, exc) -> None:
        """Record a raise (error mode) or the time (time mode). Never raises."""
        seconds = time.perf_counter() - start
        probe = self.probe
        try:
            if probe.mode == "error" and exc is not None:
                probe.record("raised", call, **self._summaries(args, kwargs),
                             error=error_info(exc))
            elif probe.mode == "time":
                extra = {"error": error_info(exc)} if exc is not None else {}
                probe.record("time", call, seconds=seconds, **extra)
        except Exception:
            pass

    def _summaries(self, args, kwargs) -> dict:
        try:
            return {"summaries": summaries(self.signature, self.skip, args, kwargs)}
        except Exception as exc:
            return {"summaries": None, "probe_error": error_info(exc)}


# --- wrapping --------------------------------------------------------------------------


def wrap(func, probe: Probe, skip: int):
    """``func`` wrapped for ``probe``, or None if this probe already wraps it."""
    if probe.key in getattr(func, "__ddlab_probes__", ()):
        return None
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise Unsupported("a generator function; probe the function that consumes it")
    site = Site(probe, func, skip)
    maker = _async_wrapper if inspect.iscoroutinefunction(func) else _sync_wrapper
    wrapper = functools.wraps(func)(maker(func, site))
    wrapper.__ddlab_probes__ = frozenset(getattr(func, "__ddlab_probes__", ())) | {probe.key}
    return wrapper


def _sync_wrapper(func, site: Site):
    probe = site.probe

    def probe_wrapper(*args, **kwargs):
        if probe.idle:
            return func(*args, **kwargs)
        call = site.enter(args, kwargs)
        start = time.perf_counter()
        try:
            result = func(*args, **kwargs)
        except Exception as exc:
            site.leave(call, start, args, kwargs, exc)
            raise
        site.leave(call, start, args, kwargs, None)
        return result

    return probe_wrapper


def _async_wrapper(func, site: Site):
    probe = site.probe

    async def probe_wrapper(*args, **kwargs):
        if probe.idle:
            return await func(*args, **kwargs)
        call = site.enter(args, kwargs)
        start = time.perf_counter()
        try:
            result = await func(*args, **kwargs)
        except Exception as exc:
            site.leave(call, start, args, kwargs, exc)
            raise
        site.leave(call, start, args, kwargs, None)
        return result

    return probe_wrapper


def wrapped_attribute(owner, name: str, probe: Probe):
    """(the object found, its replacement or None if already wrapped) for ``owner.name``."""
    if not isinstance(owner, type):
        raw = getattr(owner, name)
        if isinstance(raw, type) or not callable(raw):
            raise Unsupported(f"a {type(raw).__name__}, not a function")
        return raw, wrap(raw, probe, skip=0)
    raw = next((vars(k)[name] for k in owner.__mro__ if name in vars(k)), _ABSENT)
    if raw is _ABSENT:
        raise Unsupported(f"{owner.__name__}.{name} is not defined on the class or its bases")
    if isinstance(raw, staticmethod):
        inner = wrap(raw.__func__, probe, skip=0)
        return raw, inner and staticmethod(inner)
    if isinstance(raw, classmethod):
        inner = wrap(raw.__func__, probe, skip=1)
        return raw, inner and classmethod(inner)
    if not inspect.isfunction(raw):
        raise Unsupported(f"a {type(raw).__name__} on a class; probes wrap functions, "
                          "methods, staticmethods and classmethods")
    return raw, wrap(raw, probe, skip=1)


def arm(probe: Probe, owner, name: str) -> None:
    """Replace ``owner.name`` (and its aliases in ``owner``) by the probe's wrapper."""
    raw, replacement = wrapped_attribute(owner, name, probe)
    if replacement is None:
        return
    aliases = [k for k, v in list(vars(owner).items()) if v is raw and k != name]
    for each in [name, *aliases]:
        setattr(owner, each, replacement)
    emit({**probe.base("armed"), "module": _module_name(owner), "aliases": aliases})


def _module_name(owner) -> str | None:
    return owner.__name__ if inspect.ismodule(owner) else getattr(owner, "__module__", None)


# --- finding the target ----------------------------------------------------------------


def resolve(parts: list[str], loaded: str | None = None):
    """Walk the target's path from its deepest imported module: ("found", owner, name),
    ("missing", message, closest), or None while the module may still come. ``loaded``:
    a module whose code has just finished (its import is still marked in progress)."""
    for i in range(len(parts) - 1, 0, -1):
        obj = sys.modules.get(".".join(parts[:i]))
        if obj is not None:
            break
    else:
        return None
    for j in range(i, len(parts)):
        name, nxt = parts[j], getattr(obj, parts[j], _ABSENT)
        if nxt is _ABSENT:
            if _may_still_come(obj, ".".join(parts[:j + 1]), loaded):
                return None
            return _missing(parts, j, obj)
        if j == len(parts) - 1:
            return ("found", obj, name)
        obj = nxt
    return None


def _may_still_come(obj, dotted: str, loaded: str | None) -> bool:
    """A module still running its code, or a package with that submodule not yet imported."""
    if not inspect.ismodule(obj):
        return False
    if obj.__name__ != loaded and getattr(getattr(obj, "__spec__", None), "_initializing", False):
        return True
    return hasattr(obj, "__path__") and importlib.util.find_spec(dotted) is not None


def _missing(parts: list[str], j: int, obj) -> tuple:
    names = dir(obj)
    if inspect.ismodule(obj) and hasattr(obj, "__path__"):
        names += [m.name for m in pkgutil.iter_modules(obj.__path__)]
    guess = difflib.get_close_matches(parts[j], names, n=1)
    where = ".".join(parts[:j])
    message = f"{where} has no attribute {parts[j]!r}"
    closest = ".".join([*parts[:j], guess[0], *parts[j + 1:]]) if guess else None
    if closest:
        message += f"; did you mean {closest}?"
    return ("missing", message, closest)


def try_arm(probe: Probe, loaded: str | None = None) -> None:
    """Wrap the target if it can be found now; say once if it cannot. Never raises."""
    try:
        found = resolve(probe.parts, loaded)
        if found is None:
            return
        if found[0] == "missing":
            probe.once("missing", error={"type": "AttributeError", "message": found[1]},
                       closest=found[2])
            return
        arm(probe, found[1], found[2])
    except Unsupported as exc:
        probe.once("failed", error={"type": "Unsupported", "message": str(exc)[:MAX_MESSAGE]})
    except Exception as exc:
        probe.once("failed", error=error_info(exc))


# --- the import hook -------------------------------------------------------------------


class Loader:
    """Another loader, run as is, then the probes of the module it loaded are tried."""

    def __init__(self, loader, name: str, on_loaded):
        self.loader, self.name, self.on_loaded = loader, name, on_loaded

    def create_module(self, spec):
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        module.__loader__ = self.loader  # the module sees its real loader, as without the hook
        if getattr(module, "__spec__", None) is not None and module.__spec__.loader is self:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.on_loaded(self.name)

    def __getattr__(self, name):
        if name == "loader":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)


class Finder:
    """A ``sys.meta_path`` finder that asks the others, and wraps the loader of modules on a
    target's path; for any other module it answers None at the cost of one dict lookup."""

    _ddlab_probe_finder = True

    def __init__(self, probes: list[Probe]):
        self.watch: dict[str, list[Probe]] = {}
        for probe in probes:
            for i in range(1, len(probe.parts)):
                self.watch.setdefault(".".join(probe.parts[:i]), []).append(probe)
        self.local = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.watch or getattr(self.local, "busy", False):
            return None
        self.local.busy = True
        try:
            spec = self._others(fullname, path, target)
        finally:
            self.local.busy = False
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = Loader(spec.loader, fullname, self.loaded)
        return spec

    def _others(self, fullname, path, target):
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if find is None or getattr(finder, "_ddlab_probe_finder", False):
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def loaded(self, name: str) -> None:
        for probe in self.watch.get(name, ()):
            try_arm(probe, loaded=name)

    def invalidate_caches(self):
        pass


def probes_from(entries) -> list[Probe]:
    """Probes from ``DDLAB_PROBES`` entries; a bad entry is one ``failed`` record, skipped."""
    out = []
    for entry in entries if isinstance(entries, list) else [entries]:
        target = entry.get("target") if isinstance(entry, dict) else None
        mode = entry.get("mode", "error") if isinstance(entry, dict) else None
        n = entry.get("n") if isinstance(entry, dict) else None
        ok = (isinstance(target, str) and _TARGET.fullmatch(target) and mode in MODES
              and (mode != "first" or (type(n) is int and n > 0)))
        if ok:
            out.append(Probe(target, mode, n))
        else:
            emit({"pid": os.getpid(), "rank": rank(), "target": str(target), "mode": str(mode),
                  "event": "failed", "call": None,
                  "error": {"type": "BadProbe", "message": f"{ENV} entry {entry!r}"[:MAX_MESSAGE]}})
    return out


def install(entries=None) -> list[Probe]:
    """Arm ``entries`` (default: JSON from env DDLAB_PROBES): a finder first on
    ``sys.meta_path``, and the targets whose modules are imported already wrapped now.
    Once per process: with a probe finder installed already, nothing more happens."""
    if any(getattr(f, "_ddlab_probe_finder", False) for f in sys.meta_path):
        return []
    if entries is None:
        text = os.environ.get(ENV, "").strip()
        if not text:
            return []
        try:
            entries = json.loads(text)
        except ValueError as exc:
            emit({"pid": os.getpid(), "rank": rank(), "target": None, "mode": None,
                  "event": "failed", "call": None, "error": error_info(exc)})
            return []
    probes = probes_from(entries)
    if probes:
        sys.meta_path.insert(0, Finder(probes))
        for probe in probes:
            if not _top_level_exists(probe):
                continue
            try_arm(probe)
    return probes


def _top_level_exists(probe: Probe) -> bool:
    """False, after one ``missing`` record naming the closest top-level module, when no
    finder knows the target's top-level module: it can never be imported, so waiting for
    it would leave the probe silent. ``find_spec`` of a top-level name imports nothing."""
    top = probe.parts[0]
    try:
        if top in sys.modules or importlib.util.find_spec(top) is not None:
            return True
        guess = difflib.get_close_matches(top, [m.name for m in pkgutil.iter_modules()]
                                          + list(sys.builtin_module_names), n=1)
    except Exception as exc:  # a broken finder on the host: say so, never fail the start
        probe.once("failed", error=error_info(exc))
        return False
    closest = ".".join([guess[0], *probe.parts[1:]]) if guess else None
    message = f"no module named {top!r}" + (f"; did you mean {closest}?" if closest else "")
    probe.once("missing", error={"type": "ModuleNotFoundError", "message": message},
               closest=closest)
    return False


if os.environ.get(ENV, "").strip():
    install()
