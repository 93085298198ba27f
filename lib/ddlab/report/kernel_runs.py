"""Run folders for sweeps nobody else keeps records of: plain papermill, JupyterLab.

``ddlab run`` makes a run folder and hands it to the notebook (``run_dir``). A
user's own ``papermill notebooks/sweep.ipynb out.ipynb -p budget 32``, or a
sweep cell run in JupyterLab, passes no ``run_dir``; then the sweep keeps a
folder of its own, ``outputs/<UTC time>-<notebook>-<kind>-<parameters>/``,
with what a ``ddlab run`` folder has: ``run.json`` (``kind`` papermill or
jupyter, status, headline, start and end, the output notebook and the command
that reproduces the run, read from papermill's own command line),
``verdict.json``, ``cells.csv``, ``provenance.json`` and a ``report.html``
rendered from the sweep's report (:mod:`ddlab.report.sweep_page`); the index
(``outputs/index.html``) lists it. Under plain papermill the report's path and
the verdict (headline, then the next step) are the last lines the terminal gets
from ddlab. A kernel run by ``ddlab run`` or by a script is left alone
(:func:`ddlab.core.kernel.launcher`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ddlab.core.kernel import launcher, papermill_args, parent_argv, to_terminal
from ddlab.core.log import get_logger
from ddlab.core.paths import outputs_dir
from ddlab.core.redact import redact, redact_text
from ddlab.core.run_folders import new_run_dir, plain_text, utc_stamp, write_json
from ddlab.report.html import write_index
from ddlab.report.notebooks import run_exit_code, run_outcome
from ddlab.report.parameters import parse_parameters
from ddlab.report.page import Page, banner_title, banner_word, page_title, render_page
from ddlab.report.provenance import PROVENANCE_FILE, command_line, gather, load_average

if TYPE_CHECKING:  # pandas and matplotlib load when a sweep is reported, not on import
    from ddlab.report.verdicts import SweepReport

__all__ = ["KernelRun", "open_kernel_run", "close_kernel_run", "keep_sweep_records",
           "papermill_command"]

log = get_logger(__name__)

# papermill's options that take values (papermill --help), and how many
_VALUES = {"-p": 2, "--parameters": 2, "-r": 2, "--parameters_raw": 2, "-f": 1,
           "--parameters_file": 1, "-y": 1, "--parameters_yaml": 1, "-b": 1,
           "--parameters_base64": 1, "--engine": 1, "--autosave-cell-every": 1, "-k": 1,
           "--kernel": 1, "-l": 1, "--language": 1, "--cwd": 1, "--stdout-file": 1,
           "--stderr-file": 1, "--log-level": 1, "--start-timeout": 1, "--start_timeout": 1,
           "--execution-timeout": 1}


@dataclass
class KernelRun:
    """An open run folder of a sweep in a kernel (see the module docstring)."""

    run_dir: Path
    kind: str
    record: dict = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


@dataclass
class PapermillCommand:
    """What papermill was told: the notebook, the output notebook, the ``-p`` pairs."""

    notebook: str = ""
    output: str = ""
    pairs: list = field(default_factory=list)


def papermill_command(args: list[str]) -> PapermillCommand:
    """Read papermill's arguments (what follows ``papermill``) as its CLI does."""
    found, positional, i = PapermillCommand(), [], 0
    while i < len(args):
        arg = args[i]
        if arg in _VALUES:
            if arg in ("-p", "--parameters", "-r", "--parameters_raw"):
                found.pairs.append(tuple(args[i + 1:i + 3]))
            i += 1 + _VALUES[arg]
            continue
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
        i += 1
    found.notebook, found.output = (positional + ["", ""])[:2]
    return found


def open_kernel_run(what: str = "sweep") -> KernelRun | None:
    """A new run folder when this kernel is plain papermill's or JupyterLab's, else None
    (also when it cannot be made: the sweep runs all the same)."""
    kind = launcher()
    if kind not in ("papermill", "jupyter"):
        return None
    try:
        return _open(kind, what)
    except OSError as err:
        log.warning(f"sweep: no run folder of its own ({type(err).__name__}: {err}); it runs "
                    "without a report")
        return None


def _open(kind: str, what: str) -> KernelRun:
    record = {"kind": kind, "status": "running", "started_utc": utc_stamp(),
              "command": command_line(), "load_at_start": load_average()}
    if kind == "papermill":
        command = papermill_command(papermill_args(parent_argv()) or [])
        cwd = _parent_cwd()
        params = _parameters(command.pairs)
        record.update(notebook=Path(command.notebook).name, parameters=redact(params),
                      output_notebook=_absolute(command.output, cwd), cwd=cwd)
    else:
        session = os.environ.get("JPY_SESSION_NAME", "")
        params = {}
        record.update(notebook=Path(session).name if session else "", parameters={})
    stem = Path(record["notebook"]).stem or what
    words = "-".join(f"{k}={v}" for k, v in params.items() if not isinstance(v, (list, dict)))
    run_dir = new_run_dir(plain_text(f"{stem}-{kind}{'-' + words if words else ''}")[:120],
                          parent=outputs_dir())
    record["run_dir"] = str(run_dir)
    write_json(run_dir / "run.json", record)
    return KernelRun(run_dir=run_dir, kind=kind, record=record)


def keep_sweep_records(own: KernelRun | None, report: SweepReport | None, *, host=None,
                       base: str | None = None, sweep_folder: Path | None = None,
                       run_dir=None, status: str = "ok", error: str = "", pool=()) -> dict:
    """After a sweep: its provenance (returned) kept with it (``sweep_folder``, where
    :func:`ddlab.report.provenance.sweep_provenance` finds it again) and in
    ``run_dir``; ``own`` (the kernel's own run folder, if any) closed with its report.
    ``pool``: a pool sweep's hosts (the host facts are the first one's; the provenance
    names them all). Nothing for a sweep that ran no cell and has no folder of its own."""
    try:
        return _keep_sweep_records(own, report, host, base, sweep_folder, run_dir, status, error,
                                   list(pool))
    except Exception as err:  # noqa: BLE001 - records never hide the sweep's own outcome
        log.warning(f"sweep: its records could not all be written: {type(err).__name__}: {err}")
        return {}


def _keep_sweep_records(own, report, host, base, sweep_folder, run_dir, status, error,
                        pool) -> dict:
    ran = sweep_folder is not None and Path(sweep_folder).is_dir()
    if not ran and own is None:
        return {}
    provenance = gather(host, base=base, command=own.record["command"] if own else "",
                        load_at_start=own.record["load_at_start"] if own else "",
                        probe_host=ran and report is not None and report.verdict.status != "failed")
    if len(pool) > 1:  # the facts above are the first host's; each cell's host is in its row
        said = (f"{len(pool)} hosts: {', '.join(pool)} (host, device and server here are the "
                "first one's; the table's host column says where each cell ran)")
        provenance = {k: v for key, value in provenance.items()
                      for k, v in ([(key, value), ("pool", said)] if key == "host"
                                   else [(key, value)])}
    for folder in (sweep_folder if ran else None, run_dir):
        if folder and Path(folder).is_dir():
            write_json(Path(folder) / PROVENANCE_FILE, provenance)
    if own is not None:
        close_kernel_run(own, report, status=status, error=error, provenance=provenance)
    return provenance


def close_kernel_run(run: KernelRun, report: SweepReport | None, *, status: str,
                     error: str = "", provenance: dict | None = None) -> Path:
    """Finish ``run``: run.json, report.html, the index; then, under plain papermill,
    the report's path and the verdict on the terminal. Returns the report's path."""
    verdict = report.verdict.to_dict() if report is not None else {
        "state": "failed", "headline": error or "no verdict"}
    provenance = provenance or {}
    record = run.record
    record.update(status=status, outcome=run_outcome(status, verdict),
                  exit_code=run_exit_code(status, verdict), error=error,
                  headline=verdict.get("headline") or error, next_step=verdict.get("next_step", ""),
                  ended_utc=utc_stamp(), duration_s=round(time.monotonic() - run.started, 1),
                  provenance=provenance)
    write_json(run.run_dir / "run.json", record)
    path = run.run_dir / "report.html"
    banner = {"status": record["outcome"], "headline": record["headline"],
              "next step": record["next_step"], "error": error, "kind": run.kind,
              "output notebook": record.get("output_notebook"), "folder": run.run_dir.name,
              "_verdict": verdict}
    if report is not None:
        from ddlab.report.sweep_page import render_sweep_page

        render_sweep_page(report, path, banner=banner, provenance=provenance,
                          run_dir=run.run_dir)
    else:
        render_page(Page(title=page_title(Path(record.get("notebook") or "sweep").stem, verdict,
                                          record), banner=banner, provenance=provenance,
                         run_dir=run.run_dir), path)
    write_index(outputs_dir())
    if run.kind == "jupyter":  # below the cell, where the notebook's user looks
        log.info(f"[sweep] report: {path}")
    to_terminal(f"report: {path}")
    word = banner_word(record["outcome"], verdict)[0]
    for line in [banner_title(word, record["headline"]), *(verdict.get("details") or [])]:
        to_terminal(redact_text(line))
    if record["next_step"]:
        to_terminal(redact_text(f"next: {record['next_step']}"))
    return path


def _parameters(pairs: list) -> dict:
    try:
        return parse_parameters([p for p in pairs if len(p) == 2])
    except Exception:  # noqa: BLE001 - the record of a run never stops it
        return {}


def _parent_cwd() -> str:
    try:
        return os.readlink(f"/proc/{os.getppid()}/cwd")
    except OSError:
        return os.getcwd()


def _absolute(path: str, cwd: str) -> str:
    if not path or path == "-":
        return path
    return str(Path(cwd, path).resolve()) if not os.path.isabs(path) else path
