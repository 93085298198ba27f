"""Logs, units, notebooks, the embedded server and the demo, from the front door.

:func:`diagnose` reads a server log; :func:`render_unit` shows a variant's unit;
:func:`run_notebook` is ``ddlab run`` (its parameters as text:
:func:`notebook_parameters`; inside a notebook, :func:`check_parameters`);
:func:`serve_target` is ``ddlab target``; :func:`demo` is ``make demo``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from ddlab.api.common import profile_of
from ddlab.config.units import render_unit as _render_unit
from ddlab.config.variants import make_variant
from ddlab.core.redact import redact_text
from ddlab.diagnosis.diagnosis import Diagnosis, read_log
from ddlab.diagnosis.diagnosis import diagnose as _diagnose
from ddlab.hosts.profiles import HostProfile
from ddlab.lab.commands import ask_sglang_version, check_command
from ddlab.report.notebooks import NotebookRun, NotebookRuns
from ddlab.report.notebooks import run_notebook as _run_notebook
from ddlab.report.parameters import check_namespace as _check_namespace
from ddlab.report.parameters import parse_parameters

__all__ = ["diagnose", "render_unit", "run_notebook", "notebook_parameters", "check_parameters",
           "serve_target", "demo", "DEMO_PARAMETERS"]


def diagnose(log_text: str | os.PathLike, *, patterns=(), sglang_version: str | None = None,
             algorithm: str | None = None, family: str | None = None,
             vllm_version: str | None = None) -> Diagnosis:
    """Crashed or not, the kind, the phase, the cause and the next step, from a server
    log: its text, or a path to a saved log (``Path("-")`` reads stdin). The advice is
    written for ``sglang_version`` and ``algorithm`` (None: what the log says, else
    neutral). ``family`` is the server that wrote the log (``sglang`` | ``vllm``; None: told
    from the text); a vLLM log's advice is written for ``vllm_version`` and its speculative
    method (``algorithm``)."""
    text = read_log(os.fspath(log_text)) if isinstance(log_text, os.PathLike) else log_text
    return _diagnose(text, patterns=patterns, version=(vllm_version or sglang_version or None),
                     algorithm=algorithm or None, family=family or None)

def render_unit(base: str = "local", overrides=(), *, host: str | HostProfile = "local") -> str:
    """The systemd unit ``deploy`` would install for base + overrides on ``host``
    (validated; nothing changes on a host). The command is checked against the SGLang
    release ``deploy`` would check it with: for an SGLang module whose config and profile
    name none, ``host`` is asked (one command; the first comment lines say which release,
    or why the host could not say). Secret values are masked, and then a comment line
    says so."""
    profile = profile_of(host)
    variant = make_variant(base, overrides)
    text = _render_unit(variant, python=profile.python)  # a value no unit can hold, first
    version, source = ask_sglang_version(variant.config, profile)  # as deploy asks the host
    check = check_command(variant.config, version=version, version_source=source)
    check.raise_errors(variant.name)
    shown = redact_text(text)
    notes = check.notes()
    if shown != text:
        notes.append("secret values are masked (***): ddlab deploy installs the real ones")
    return "".join(f"# {note}\n" for note in notes) + shown

def run_notebook(notebook: str | Path, parameters: dict | None = None, *,
                 name: str | None = None) -> NotebookRun:
    """Execute a notebook headless into ``outputs/<time>-<notebook>-<name>/`` with its
    HTML report (``ddlab run``); unknown parameters are refused first."""
    return _run_notebook(notebook, parameters, name=name)

def notebook_parameters(pairs=(), files=()) -> dict:
    """``-p NAME VALUE`` pairs (values read as YAML) over ``-f`` YAML files: ddlab run's."""
    return parse_parameters(pairs, files)

def check_parameters(notebook: str, namespace: dict) -> None:
    """In a notebook run by plain papermill (``papermill notebooks/sweep.ipynb out.ipynb
    -p budgett 32``), a parameter the notebook does not declare becomes a variable no
    cell reads; called with ``globals()`` right after the parameters, this refuses it
    with the closest declared name, before anything touches a host."""
    _check_namespace(notebook, namespace)

def serve_target(argv: list[str], *, prog: str = "python -m ddlab.target") -> int:
    """Run ddlab's own tree-speculative server (SGLang's flags) in this process."""
    from ddlab import target  # torch, only when serving

    return target.main(argv, prog=prog)

DEMO_PARAMETERS = {
    "host": "local",
    "budget": [4, 16, 32],
    "topk_cap": [1, 4],
    "cuda_graph": [True, False],
    # the field's crash: a fork whose copy does not skip the None (0.5.23's skips it: wrong tokens)
    "extra": [{"debug_drop_verify_field": "num_token_non_padded", "debug_drop_verify_mode": "raise"}],
    "requests": 4,
    "max_new_tokens": 64,
    "min_time_s": 3,  # every measured cell at least 3 s: a figure with an interval
    "timeout_s": 180,
}

def demo() -> NotebookRuns:
    """``make demo``: the main job on the embedded default. A sweep of the local target
    over budget {4, 16, 32} x top-k cap {1, 4} x CUDA graphs {on, off}, the
    no-speculation baseline and one variant carrying the field's replay fault, then
    the plot notebook over it; both through ``ddlab run``. Returns the runs (the
    plot's is missing when the sweep failed)."""
    params = {**DEMO_PARAMETERS, "fixed": {"port": _free_port()}}
    swept = run_notebook("sweep", params, name="demo")
    if swept.status != "ok":
        return NotebookRuns([swept])
    sweep_id = swept.verdict.get("sweep_id") or "latest"
    return NotebookRuns([swept, run_notebook("plot", {"sweep": sweep_id}, name="demo")])

def _free_port() -> int:
    """A TCP port free on loopback now (the demo must not collide with a real server)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
