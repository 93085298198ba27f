"""Whose words an error's fix is written in.

The same advice reads ``-p budget 32`` to a papermill (or ``ddlab run``) user,
``--set budget=32`` on ddlab's CLI and ``budget=32`` in Python. Fix texts are
written in two canonical forms, ``-p NAME VALUE`` for a notebook parameter and
``--set KEY=VALUE`` for an override, and :func:`speak` rewrites them when an
error is shown (:class:`ddlab.core.errors.DdlabError`):

=============  ==========================  ===============================================
caller         ``-p NAME VALUE``           ``--set KEY=VALUE``
=============  ==========================  ===============================================
``papermill``  as is                       ``-p PARAM VALUE`` when a parameter of the
                                           running notebook sets KEY, else ``KEY=VALUE``
``cli``        ``--NAME VALUE`` (kebab,    ``--PARAM VALUE`` when an option of the verb
               ``_s`` dropped)             sets KEY (``ddlab sweep --budget 0``), else
                                           as is
``python``     ``NAME=VALUE``              ``KEY=VALUE``
=============  ==========================  ===============================================

The fix's KEY is already the one the user typed (``--set topk-cap=4``, not the
flag's own name: :func:`ddlab.config.overrides.in_words_given`). The caller is
what :func:`set_caller` said (the CLI does, per verb, and names the verb's
options that set a key the way the sweep notebook's parameters do), else what
the kernel says: a notebook run headless (plain papermill, ``ddlab run``) is
``papermill``; JupyterLab, a script and the tests are ``python``.
"""

from __future__ import annotations

import re

from ddlab.core.kernel import in_kernel, launcher

__all__ = ["CALLERS", "PARAMETER_OF", "caller", "set_caller", "set_notebook_parameters", "speak"]

CALLERS = ("python", "cli", "papermill")

# Override key (snake case) -> the sweep notebook's parameter that sets it: the
# aliases of ddlab.config.overrides.ALIASES that are notebook parameters (a test
# keeps the two in step). cuda_graph is its own (false means disable-cuda-graph).
PARAMETER_OF = {"budget": "budget", "speculative_ddtree_budget": "budget",
                "topk_cap": "topk_cap", "speculative_ddtree_topk_cap": "topk_cap",
                "cuda_graph": "cuda_graph"}

_STATE = {"caller": "", "parameters": frozenset()}

_VALUE = r"('[^']*'|[^\s,;)]+)"
_PARAMETER = re.compile(r"(?<![\w-])-p ([A-Za-z_][\w.]*) " + _VALUE)
_OVERRIDE = re.compile(r"(?<![\w-])--set ([A-Za-z_][\w.-]*)=" + _VALUE)
# a whole `ddlab run NOTEBOOK -p NAME VALUE ...` command (a resume command): it parses as
# written in every caller's hands, so it is never rewritten (`ddlab run sweep --resume X`,
# what the CLI's rewrite made of it, is a usage error)
_RUN_COMMAND = re.compile(r"ddlab run [\w./-]+(?: -p [A-Za-z_][\w.]* " + _VALUE + r")*")


def set_caller(name: str) -> str:
    """Say who calls (one of ``CALLERS``; "" to infer it again); returns who was said
    before, to put back."""
    if name and name not in CALLERS:
        raise ValueError(f"caller {name!r}: must be one of {', '.join(CALLERS)}")
    previous, _STATE["caller"] = _STATE["caller"], name
    return previous


def set_notebook_parameters(names) -> frozenset:
    """The parameters the running notebook declares (a fix may name them with ``-p``), or
    the running CLI verb's options that set an override key (``budget`` of ``ddlab sweep
    --budget``); returns those said before, to put back."""
    previous, _STATE["parameters"] = _STATE["parameters"], frozenset(names)
    return previous


def caller() -> str:
    """``papermill``, ``cli`` or ``python``: see the module docstring."""
    if _STATE["caller"]:
        return _STATE["caller"]
    return "papermill" if in_kernel() and launcher() != "jupyter" else "python"


def speak(text: str | None, who: str | None = None) -> str | None:
    """``text`` with its ``-p`` and ``--set`` snippets in the words of ``who`` (default:
    :func:`caller`)."""
    if not text:
        return text
    who = who or caller()
    out, last = [], 0
    for command in _RUN_COMMAND.finditer(text):  # kept as written (see _RUN_COMMAND)
        out += [_spoken(text[last:command.start()], who), command[0]]
        last = command.end()
    return "".join([*out, _spoken(text[last:], who)])


def _spoken(text: str, who: str) -> str:
    text = _PARAMETER.sub(lambda m: _parameter(who, m[1], m[2]), text)
    return _OVERRIDE.sub(lambda m: _override(who, m[1], m[2]), text)


def _parameter(who: str, name: str, value: str) -> str:
    if who == "cli":
        return f"--{name.removesuffix('_s').replace('_', '-')} {value}"
    if who == "python":
        return f"{name}={_unquoted(value)}"
    return f"-p {name} {value}"


def _override(who: str, key: str, value: str) -> str:
    param = PARAMETER_OF.get(key.replace("-", "_"))
    if who == "cli":
        if param in _STATE["parameters"]:
            return f"--{param.replace('_', '-')} {value}"
        return f"--set {key}={value}"
    if who == "papermill" and param in _STATE["parameters"]:
        return f"-p {param} {value}"
    return f"{key}={_unquoted(value)}"


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] == "'" else value
