"""``ddlab run NOTEBOOK``: a notebook executed headless, kept with its report.

Each run gets ``outputs/<UTC time>-<notebook>-<name>/`` holding the executed
notebook (secrets masked: its injected parameters and outputs), ``report.html``
(inputs hidden, status banner first, then the provenance), ``run.json`` (kind
``ddlab run``, parameters with secrets masked, status, timings, the verdict's
headline, the command that reproduces it), ``provenance.json``
(:mod:`ddlab.report.provenance`: the notebook's own, a sweep's, else gathered here)
and whatever the notebook's library calls write there: a notebook that
declares a ``run_dir`` parameter gets the folder's path injected by papermill,
and passes it on to ``ddlab.sweep(..., run_dir=run_dir)`` and the like. A failed or interrupted run still writes all of it,
marked so, and so does a run whose kernel died (killed, out of memory);
``outputs/index.html`` is rewritten after every run. With
``progress``, the terminal shows papermill's bar over the notebook's cells
and, as they come, the lines the kernel writes to stderr (a sweep's cell by
cell progress, with the time elapsed and left), since one notebook cell may run
for many minutes; where stderr is no terminal (CI, ``| tee log``) there is no
bar, which would sit at "30% 3/10" for minutes with a false ETA, only those
lines. The result says how long the run took, above the report's path.

Ctrl-C (SIGINT) is forwarded to the kernel, which raises KeyboardInterrupt
inside the running cell, so the library's own clean-up (putting the
baseline back) runs there; the run then ends as ``interrupted``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.core.errors import ConfigError
from ddlab.core.interrupts import from_interrupt
from ddlab.core.log import get_logger
from ddlab.core.paths import outputs_dir, project_root
from ddlab.core.progress import duration_words
from ddlab.core.redact import redact, redact_text
from ddlab.core.run_folders import new_run_dir, plain_text, utc_stamp, write_json
from ddlab.report.html import render_html, write_index
from ddlab.report.page import Page, banner_title, banner_word, page_title, render_page
from ddlab.report.notebook_libs import without_iri_grammar
from ddlab.report.parameters import RUN_DIR_PARAMETER, check_declared, host_and_base
from ddlab.report.provenance import load_average, notebook_run_provenance, run_command

__all__ = ["NotebookRun", "NotebookRuns", "run_notebook", "find_notebook", "EXIT_CODES"]

log = get_logger(__name__)


EXIT_CODES = {"ok": 0, "failed": 1, "interrupted": 130}
# A verdict without an exit code of its own (a sweep's): the states that are no success.
VERDICT_EXITS = {"failed": 1, "error": 1, "interrupted": 130, "preempted": 9}


@dataclass
class NotebookRun:
    """One notebook run by ``ddlab run``: its folder, status and report, the verdict it left
    (``verdict.json``), how long it took; ``render()`` is what ``ddlab run`` prints."""

    run_dir: Path
    status: str          # ok | failed | interrupted
    report: Path
    notebook: Path
    error: str = ""
    headline: str = ""
    next_step: str = ""  # the verdict's: what to try next (how to resume, ...)
    verdict: dict = field(default_factory=dict)  # the run folder's verdict.json
    duration_s: float | None = None  # start to end, kernel start included

    @property
    def exit_code(self) -> int:
        """The run's (1 failed, 130 interrupted); a run that went through ends with its
        verdict's own code when it has one (``ddlab run poll`` on a crash: 3, as ``ddlab
        watch``), or 1 / 130 for a failed / interrupted one (``ddlab run plot`` of a
        failed sweep), so a script never reads a crash as a success."""
        return run_exit_code(self.status, self.verdict)

    @property
    def outcome(self) -> str:
        """What the run found: its status, but for a run that went through to a verdict
        that is no success, the verdict's state (``ddlab run poll`` on a crash:
        ``crashed``, never ``ok``): the banner's word and colour."""
        return run_outcome(self.status, self.verdict)

    @property
    def word(self) -> str:
        """The banner's word (:func:`ddlab.report.page.banner_word`): OK, WARNINGS, CRASHES,
        FAILED, CRASHED..."""
        return banner_word(self.outcome, self.verdict)[0]

    def render(self) -> str:
        """The word and the headline (one line), the verdict's details, what to do next,
        then the report's path (last line)."""
        rows = [banner_title(self.word, self.headline or self.notebook.name)]
        rows += [redact_text(line) for line in self.verdict.get("details") or []]
        if self.next_step:
            rows.append(f"next: {self.next_step}")
        if self.status == "interrupted":
            rows.append("interrupted: finished cells are kept; the next step above says how to go on")
        elif self.error.startswith("DeadKernelError"):
            rows.append("the kernel died: finished cells are kept; a sweep resumes with "
                        "`ddlab run sweep -p resume latest`, which takes over the lock it left")
        if self.duration_s is not None:
            rows.append(f"took {duration_words(self.duration_s)} ({self.notebook.name})")
        rows.append(str(self.report))
        return "\n".join(rows)


def run_exit_code(status: str, verdict: dict) -> int:
    """A run's exit code from its status and its verdict (see :attr:`NotebookRun.exit_code`)."""
    if status != "ok":
        return EXIT_CODES.get(status, 1)
    code = verdict.get("exit_code")
    return code if isinstance(code, int) else VERDICT_EXITS.get(verdict.get("state"), 0)


def run_outcome(status: str, verdict: dict) -> str:
    """A run's status; for one that went through but whose verdict is no success (its
    exit code is not 0), the verdict's state: ``crashed``, ``timeout``, ``failed``..."""
    if status != "ok" or run_exit_code(status, verdict) == 0:
        return status
    state = str(verdict.get("state") or "")
    return "failed" if state in ("", "ok", "ready", "done") else state  # ready, a probe failed


class NotebookRuns(list):
    """Runs made one after the other (``make demo``: the sweep, then its plot)."""

    @property
    def exit_code(self) -> int:
        return max((run.exit_code for run in self), default=0)

    def render(self) -> str:
        """One block per run, the last report's path as the last line."""
        return "\n".join(f"{run.notebook.stem}: {run.render()}" for run in self)


def find_notebook(name: str) -> Path:
    """``sweep`` -> notebooks/sweep.ipynb; a path works too."""
    path = Path(name)
    if path.suffix == ".ipynb" and path.is_file():
        return path.resolve()
    candidate = project_root() / "notebooks" / f"{path.stem}.ipynb"
    if candidate.is_file():
        return candidate
    known = sorted(p.stem for p in (project_root() / "notebooks").glob("*.ipynb"))
    raise ConfigError(f"notebook {name!r}: not found", fix=f"choose one of: {', '.join(known)}",
                      value=name)


def _run_name(params: dict, name: str | None) -> str:
    if name:
        return name
    words = [f"{k}={v}" for k, v in params.items() if not isinstance(v, (list, dict))]
    return plain_text("-".join(words)[:60] or "default")


def run_notebook(notebook: str | Path, parameters: dict | None = None, *, name: str | None = None,
                 outputs: Path | None = None, progress: bool = True) -> NotebookRun:
    """Execute ``notebook`` with ``parameters`` into a new run folder; see the module docstring."""
    without_iri_grammar()
    import papermill

    source = find_notebook(str(notebook))
    params = dict(parameters or {})
    declared = check_declared(source, params)
    root = Path(outputs) if outputs else outputs_dir()
    run_dir = new_run_dir(f"{source.stem}-{_run_name(params, name)}"[:120], parent=root)
    executed = run_dir / source.name
    record = {"kind": "ddlab run", "notebook": source.name, "parameters": redact(params),
              "status": "running", "started_utc": utc_stamp(), "run_dir": str(run_dir),
              "command": run_command(source.stem, params, name), "load_at_start": load_average(),
              **host_and_base(params, declared)}
    write_json(run_dir / "run.json", record)
    started = time.monotonic()
    status, error = "ok", ""
    if RUN_DIR_PARAMETER in declared:  # where the notebook's calls leave the verdict, CSV...
        params[RUN_DIR_PARAMETER] = str(run_dir)
    bar = progress and sys.stderr.isatty()  # in a pipe, a bar only sits still: lines only
    with _forward_interrupts() as interrupted:
        try:
            papermill.execute_notebook(str(source), str(executed), parameters=params,
                                       cwd=str(project_root()), progress_bar=bar,
                                       stderr_file=(_AboveTheBar() if bar else sys.stderr)
                                       if progress else None,
                                       kernel_name="python3", extra_arguments=_KERNEL_QUIET)
        except papermill.PapermillExecutionError as err:
            status = "interrupted" if interrupted or err.ename == "KeyboardInterrupt" else "failed"
            error = f"{err.ename}: {err.evalue}"
        except KeyboardInterrupt:
            status, error = "interrupted", "KeyboardInterrupt"
        except Exception as err:  # the kernel died (DeadKernelError), a timeout...: still report
            status = "interrupted" if from_interrupt(err) else "failed"  # a Ctrl-C threading turned into this
            error = f"{type(err).__name__}: {err}"
    return _finish(run_dir, source, executed, record, status, error, time.monotonic() - started)


# The kernel's own log (not the notebook's output, nor its errors, which papermill
# reports): its start-up warning about TCP on loopback and a KeyboardInterrupt
# line at shutdown read as failures at the end of every good run.
_KERNEL_QUIET = ["--IPKernelApp.log_level=CRITICAL"]


class _AboveTheBar:
    """The kernel's stderr in our terminal, written above papermill's cell bar."""

    def write(self, text: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(text, file=sys.stderr, end="")

    def flush(self) -> None:
        sys.stderr.flush()


def _finish(run_dir: Path, source: Path, executed: Path, record: dict, status: str, error: str,
            duration_s: float) -> NotebookRun:
    verdict = _read_json(run_dir / "verdict.json")
    provenance = notebook_run_provenance(run_dir, record, verdict, status)
    record.update(status=status, error=error, duration_s=round(duration_s, 1),
                  headline=verdict.get("headline") or error or "", ended_utc=utc_stamp(),
                  outcome=run_outcome(status, verdict),
                  exit_code=run_exit_code(status, verdict), provenance=provenance)
    write_json(run_dir / "run.json", record)
    report = run_dir / "report.html"
    banner = {"status": record["outcome"], "headline": record["headline"],
              "next step": verdict.get("next_step"), "error": error,
              "notebook": source.name, "parameters": json.dumps(record["parameters"]),
              "started (UTC)": record["started_utc"], "duration": f"{duration_s:.1f} s",
              "folder": run_dir.name, "_verdict": verdict}
    title = page_title(source.stem, verdict, record)
    if executed.is_file():
        _mask_notebook(executed)
        render_html(executed, report, banner=banner, provenance=provenance, title=title,
                    run_dir=run_dir)
    else:  # the kernel never started: still leave a report that says so
        banner["headline"] = error or "no output"
        render_page(Page(title=title, banner=banner, provenance=provenance, run_dir=run_dir),
                    report)
    write_index(run_dir.parent)
    return NotebookRun(run_dir=run_dir, status=status, report=report, notebook=executed,
                     error=error, headline=record["headline"],
                     next_step=redact_text(verdict.get("next_step") or ""), verdict=verdict,
                     duration_s=duration_s)


def _mask_notebook(path: Path) -> None:
    """Secrets out of the executed notebook: papermill wrote the parameters into it
    (a cell and the metadata), and outputs may quote them."""
    without_iri_grammar()
    import nbformat

    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata.get("papermill", {})
    if "parameters" in meta:
        meta["parameters"] = redact(meta["parameters"])
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.source = redact_text(cell.source)
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = redact_text(output["text"])
            for mime, value in output.get("data", {}).items():
                if isinstance(value, str) and not mime.startswith("image/"):
                    output["data"][mime] = redact_text(value)
            if "evalue" in output:
                output["evalue"] = redact_text(output["evalue"])
                output["traceback"] = [redact_text(line) for line in output.get("traceback", [])]
    nbformat.write(nb, path)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


INTERRUPT_GRACE_S = 180.0  # after a Ctrl-C, how long the kernel may take to clean up


@contextlib.contextmanager
def _forward_interrupts(grace_s: float | None = None):
    """SIGINT/SIGTERM to us -> SIGINT to our child processes (the kernel, which
    jupyter_client starts in its own session, out of the terminal's reach).
    The kernel then cleans up and the run ends; if it has not within
    ``grace_s`` (default ``INTERRUPT_GRACE_S``), we stop waiting: a
    KeyboardInterrupt here, and papermill shuts the kernel down."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # only the main thread may handle signals
        return
    grace_s = INTERRUPT_GRACE_S if grace_s is None else grace_s
    gave_up = threading.Event()
    main = threading.main_thread().ident

    def give_up():
        log.warning(f"ddlab run: the kernel did not finish within {grace_s:.0f} s of the "
                    "interrupt; stopping it")
        gave_up.set()
        # A real signal, so that a blocking wait in the main thread wakes up; the
        # handler below then raises instead of forwarding once more.
        signal.pthread_kill(main, signal.SIGINT)

    watchdog = threading.Timer(grace_s, give_up)
    watchdog.daemon = True

    def forward(signum, frame):
        if gave_up.is_set():
            raise KeyboardInterrupt
        received.append(signum)
        children = _children()
        log.warning(f"ddlab run: interrupt: asking the kernel "
                    f"({', '.join(map(str, children)) or 'none'}) to stop; finished work is "
                    "kept and the baseline is put back first")
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
        if not children:
            raise KeyboardInterrupt
        if len(received) == 1:
            watchdog.start()

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        watchdog.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _children() -> list[int]:
    me = os.getpid()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            found.append(int(stat.parent.name))
    return found
