"""Notebook parameters as text: what ``ddlab run -p/-f`` and plain papermill pass.

``ddlab run -p NAME VALUE`` reads VALUE as YAML (``32``, ``[4, 16]``, ``true``), over
``-f`` YAML files (:func:`parse_parameters`). Plain ``papermill -p cuda_graph true``
passes the *string* ``'true'`` and ``-p budget [4,16]`` the string ``'[4,16]'``: the
sweep's, bisect's and envelope's readers take either (:func:`parameter_grid`,
:func:`parameter_value`, :func:`parameter_extras`). A name the notebook does not
declare is refused before anything touches a host, with the closest declared name
(:func:`check_declared` before a run, :func:`check_namespace` inside a running
notebook); ``run_dir`` is ddlab's to set. Only the front door reads these: the
library below takes typed values.
"""

from __future__ import annotations

import json
from pathlib import Path

from ddlab.core import yamlio
from ddlab.core.caller import set_notebook_parameters
from ddlab.core.checks import closest
from ddlab.core.errors import ConfigError
from ddlab.core.literals import literal_eval
from ddlab.core.paths import project_root
from ddlab.report.notebook_libs import without_iri_grammar

__all__ = ["RUN_DIR_PARAMETER", "parse_parameters", "check_declared", "check_namespace",
           "host_and_base", "parameter_grid", "parameter_value", "parameter_extras"]

RUN_DIR_PARAMETER = "run_dir"  # a notebook that declares it is told its run folder


def parse_parameters(pairs=(), files=()) -> dict:
    """``-p K V`` pairs (values parsed as YAML, like papermill) over ``-f`` YAML files;
    a number keeps its text unless written in its own spelling (``-p budget 010``
    reaches argv as ``010``; papermill's own ``-p`` reads it as 10: use ``-r``)."""
    params: dict = {}
    for file in files:
        try:
            data = yamlio.load(Path(file).read_text(), keep_text=True) or {}
        except (OSError, ValueError) as err:
            raise ConfigError(f"parameter file {str(file)!r}: {err}".replace("\n", " "),
                              fix="give a readable YAML mapping", value=str(file)) from None
        if not isinstance(data, dict):
            raise ConfigError(f"parameter file {str(file)!r}: must hold a mapping",
                              fix="write `name: value` lines", value=str(file))
        params.update(data)
    for key, value in pairs:
        try:
            params[key] = yamlio.load(value, keep_text=True) if value != "" else ""
        except ValueError:
            params[key] = value
    return params


def check_declared(notebook: Path, params: dict) -> dict:
    """Unknown parameter names are refused before the kernel starts; ``run_dir``
    is ddlab's to set. Returns the notebook's declared parameters."""
    without_iri_grammar()
    import papermill

    declared = papermill.inspect_notebook(str(notebook))
    if RUN_DIR_PARAMETER in params:
        raise ConfigError(f"parameter {RUN_DIR_PARAMETER}: set by ddlab run (the run folder)",
                          fix=f"leave -p {RUN_DIR_PARAMETER} out", value=params[RUN_DIR_PARAMETER])
    unknown = sorted(set(params) - set(declared))
    if unknown:
        near = [m for m in (closest(name, declared) for name in unknown) if m]
        hint = f"did you mean {', '.join(near)}? " if near else ""
        if len(unknown) == len(near) == 1:  # the command again, the name mended: -p budget 32
            hint = f"did you mean -p {near[0]} {_shown(params[unknown[0]])}? "
        raise ConfigError(f"parameter(s) {', '.join(unknown)}: not declared by {notebook.name}",
                          fix=f"{hint}its parameters are: {', '.join(declared)}", value=unknown)
    return declared


def _shown(value) -> str:
    """A parameter's value as typed after ``-p NAME`` (YAML; quoted when it has a space)."""
    text = value if isinstance(value, str) else json.dumps(value)  # JSON is YAML
    return f"'{text}'" if not text or any(c in text for c in " ,;)'") else text


_DATA = (bool, int, float, str, list, dict, type(None))  # what papermill injects
_KERNEL_NAMES = {"In", "Out", "exit", "quit", "get_ipython", "open"}


def check_namespace(notebook: str, namespace: dict) -> None:
    """The variables of a running notebook (``globals()``) that look injected by
    papermill (plain data, not ``_``-named) but are not declared by ``notebook``
    (``sweep`` or a path): a ConfigError naming each with the closest declared name."""
    path = Path(notebook)
    if path.suffix != ".ipynb":
        path = project_root() / "notebooks" / f"{notebook}.ipynb"
    injected = {k: v for k, v in namespace.items() if not k.startswith("_")
                and k not in _KERNEL_NAMES and k != RUN_DIR_PARAMETER and isinstance(v, _DATA)}
    set_notebook_parameters(check_declared(path, injected))  # fixes may say -p NAME


def host_and_base(params: dict, declared: dict) -> dict:
    """The host profile and base config a run uses: its parameters', else the notebook's
    defaults ("" is the host's default)."""
    found = {}
    for key in ("host", "base"):
        value = params.get(key, _default(declared.get(key)))
        if isinstance(value, str) and value:
            found[key] = value
    return found


def _default(spec: dict | None):
    try:
        return literal_eval(spec["default"]) if spec else None
    except (ValueError, SyntaxError, KeyError):
        return None



# --- the sweep's, bisect's and envelope's values, typed or papermill's text --------


def parameter_grid(budget, topk_cap, cuda_graph, more: dict | None) -> dict:
    """The grid from the sweep notebook's parameters: the three built-in dimensions
    (None or [] leaves one out) and ``more``; values may be YAML text (papermill's)."""
    grid = {"budget": budget, "topk_cap": topk_cap, "cuda_graph": cuda_graph}
    more = _read_value("grid", more) or {}
    if not isinstance(more, dict):
        raise ConfigError(f"grid={more!r}: must map override keys to values",
                          fix="e.g. {'speculative_num_draft_tokens': [8, 16]}", value=more)
    grid.update(more)
    grid = {k: _read_value(k, v) for k, v in grid.items()}
    return {k: v for k, v in grid.items() if v is not None and v != []}


def _read_value(name: str, value):
    """A string read as YAML, the way ``ddlab run -p`` reads values: plain
    ``papermill -p cuda_graph true`` passes the string 'true', and ``-p budget
    [4,16]`` the string '[4,16]'."""
    if not isinstance(value, str):
        return value
    try:
        return yamlio.load(value, keep_text=True) if value.strip() else value
    except ValueError as err:
        raise ConfigError(f"{name}={value!r}: not a value or a list ({err})",
                          fix=f"e.g. -p {name} 16, or -p {name} '[4, 16]'", key=name,
                          value=value) from None


def parameter_value(name: str, value):
    """``fixed`` / ``extra`` given as YAML text (``-p extra '[{budget: 8}]'``);
    a plain ``KEY=VALUE`` string stays one override."""
    if isinstance(value, str) and value.lstrip().startswith(("[", "{")):
        return _read_value(name, value)
    return value


def parameter_extras(extra) -> list:
    """``extra`` as a list of override lists or mappings (one string or mapping: one cell)."""
    extra = parameter_value("extra", extra)
    if isinstance(extra, (str, dict)):
        extra = [extra]
    return [[item] if isinstance(item, str) else item for item in extra or ()]
