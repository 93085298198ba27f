"""Notebooks headless: papermill and ``ddlab run``, with real kernels, real sweeps on
``local`` (in a temp project, see ``sweepkit``) and the reports they leave.

Requests are few and short (``-p requests 2 -p max_new_tokens 32``) and the
grids small, so each sweep here is two or three cells.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

import sweepkit
from ddlab.core.errors import ConfigError
from ddlab.sweeps.store import DONE_STATES, Store
from ddlab.report import notebooks as runner
from ddlab.report.parameters import parse_parameters
from ddlab.core.version import __version__
from labkit import DDLAB, REPO, wait_for
from reportkit import IDS, first_in_body, landmarks, section

SMALL = ["-p", "requests", "2", "-p", "max_new_tokens", "32", "-p", "max_rounds", "3"]
# the page, the progress lines and the interrupt are under test, not the figures: one round a
# cell (no re-measuring to an interval), the baselines not measured again after the grid
ONE_ROUND = ["-p", "ci_target", "0", "-p", "bracket", "false"]


def _outputs(nb: dict) -> list[dict]:
    return [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]


def _text(output: dict) -> str:
    data = output.get("data", {}).get("text/plain", output.get("text", ""))
    return "".join(data) if isinstance(data, list) else data


def _run(*args: str, project, timeout_s: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([DDLAB, "run", *args], capture_output=True, text=True, cwd=REPO,
                          env=project.env(), timeout=timeout_s)


def _banner(html: str) -> str:
    """The text of the first element inside <body>: the status banner."""
    body = html[html.index("<body"):]
    return re.sub(r"<[^>]+>", " ", re.search(r"<body[^>]*>\s*(<div.*?</h2>)", body, re.S).group(1))


def test_papermill_with_a_mistyped_parameter_fails_in_seconds_saying_which(project, tmp_path):
    """`papermill notebooks/sweep.ipynb out.ipynb -p budgett 32`: papermill only warns and
    runs on with the default budget; the notebook's first call refuses the name, naming
    the one meant, before anything touches the host."""
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("papermill")), "notebooks/sweep.ipynb",
                           str(tmp_path / "out.ipynb"), "-p", "budgett", "32"],
                          capture_output=True, text=True, cwd=REPO, env=project.env(), timeout=240)
    took_s = time.monotonic() - started
    assert done.returncode != 0
    assert "parameter(s) budgett: not declared by sweep.ipynb" in done.stderr, done.stderr[-2000:]
    assert "did you mean -p budget 32?" in done.stderr
    assert not project.state.exists() and not project.store_path.exists(), "the host untouched"
    assert took_s < 60, f"{took_s:.0f} s"  # a kernel start, not a sweep


def _papermill(*args: str, project, timeout_s: float = 240) -> subprocess.CompletedProcess:
    """The user's own command, from the repo root, with a user's environment (not
    pytest's, which would stop ipykernel forwarding the kernel's stderr)."""
    env = {k: v for k, v in project.env().items() if k != "PYTEST_CURRENT_TEST"}
    return subprocess.run([str(Path(sys.executable).with_name("papermill")), *args],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout_s)


@pytest.mark.slow
def test_papermill_errors_speak_in_p_words(project, tmp_path):
    """A papermill user who typed `-p budget 0` is told `-p budget 32`, not the CLI's
    `--set speculative_ddtree_budget=32`; nothing touched the host."""
    done = _papermill("notebooks/sweep.ipynb", str(tmp_path / "out.ipynb"), "-p", "budget", "0",
                      project=project, timeout_s=120)
    assert done.returncode != 0
    assert "budget=0: must be an integer >= 1; try -p budget 32" in done.stderr, \
        done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if "must be an integer >= 1" in line]
    assert said and not any("--set" in line for line in said), said
    assert not project.state.exists() and not project.runs(), "validation stopped it first"


def _page(html: str) -> str:
    """The page less its embedded PNGs (base64 text holds any letters)."""
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:", html)


def _one_page(html: str, *, title: str, headline: str, machine: list[Path]) -> list[str]:
    """The ddlab page's contract (docs/DESIGN.md, report): the landmarks in order, titled by
    what ran, the headline once, nothing missing shown as NaN or <NA>, the table in a box
    of its own, nothing fetched from the network, no widget state, no path of this machine.
    Returns its headings."""
    text = _page(html)
    assert landmarks(html) == IDS and "ddlab-verdict" in first_in_body(html)
    assert re.search(r"<title>([^<]*)</title>", text).group(1) == title
    assert text.count(headline) == 1, "the headline once: in the banner"
    assert not re.search(r"NaN|&lt;NA&gt;|<NA>|>None<", text), re.findall(r".{80}(?:NaN|NA&gt;|>None<).{20}", text)
    assert re.search(r"<section id='ddlab-table' class='ddlab-scroll'>", text), "its own scroll box"
    assert "<script" not in text and "<link" not in text and "<iframe" not in text
    assert not re.search(r"""(src|href)=['"]?(https?:)?//""", text), "nothing from the network"
    assert "widget-state" not in text and "widget-view" not in text
    for path in machine:
        assert str(path) not in text, f"{path} in the page: {re.findall(f'.{{60}}{re.escape(str(path))}.{{20}}', text)}"
    figures = section(text, "ddlab-figures")
    assert re.match(r"id='ddlab-figures'[^>]*><h2>", figures), "a heading above the figures"
    return re.findall(r"<h2>([^<]+)</h2>", text)


def _keeps_the_notebook_report_data_and_index(project, done) -> None:
    """What `ddlab run sweep -p budget 4 -p topk_cap 4` (graphs on and off: 2 baselines and
    2 grid cells) leaves: the notebook, the report, the data, the provenance, the index."""
    run_dir = project.runs()[-1]
    assert done.stdout.splitlines()[-1] == str(run_dir / "report.html"), "the last line: the report"
    assert re.match(r"(OK|WARNINGS): SWEEP DONE: 4 cells, 4 measured", done.stdout), done.stdout
    assert "[sweep] cell 4/4: measured" in done.stderr, "the sweep's progress, in the terminal"
    assert "[IPKernelApp]" not in done.stderr, "the kernel's own log reads as an error: kept quiet"
    assert {p.name for p in run_dir.iterdir()} >= {"sweep.ipynb", "report.html", "run.json",
                                                   "cells.csv", "verdict.json"}
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["parameters"]["budget"] == 4
    assert record["headline"].startswith("SWEEP DONE")
    assert len((run_dir / "cells.csv").read_text().strip().splitlines()) == 5, "header + 4 cells"

    nb = json.loads((run_dir / "sweep.ipynb").read_text())
    assert _text(_outputs(nb)[0]).startswith("SWEEP DONE"), "the verdict is the first output"
    html = (run_dir / "report.html").read_text()
    assert _banner(html).split()[1:3] == ["SWEEP", "DONE:"], "the status banner comes first"
    assert _banner(html).split()[0] in ("OK:", "WARNINGS:"), "a busy host warns"
    assert "ddlab.sweep(" not in html and "import ddlab" not in html, "inputs hidden"
    assert html.count("<img") >= 3, "the figures"
    assert landmarks(html) == IDS and "ddlab-verdict" in first_in_body(html)
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["ddlab"] == __version__ and provenance["host"] == "local"
    assert provenance["command"] == ("ddlab run sweep -p budget 4 -p topk_cap 4 -p requests 2 "
                                     "-p max_new_tokens 32 -p max_rounds 3 -p ci_target 0 "
                                     "-p bracket false")
    assert provenance["command"] in html and record["provenance"] == provenance
    assert html.count("<details") == 1 and "[sweep] cell 4/4: measured" in html, "progress, folded"
    index = (project.outputs / "index.html").read_text()
    assert f"href='{run_dir.name}/report.html'" in index and record["headline"][:40] in index
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_ddlab_run_plain_papermill_and_ddlab_run_plot_give_one_page(project, tmp_path):
    """Issue 22: `ddlab run` reports were nbconvert's (titled "Notebook", NaN and <NA>, a table
    cut at 1280 px, widget state, CDN scripts, absolute paths) and differed from plain
    papermill's; now all three paths write the one ddlab page. And `ddlab run sweep` keeps
    the notebook, its report, its data and the index entry (one sweep for both checks)."""
    machine = [project.root, project.outputs, tmp_path, REPO, Path.home()]
    ran = _run("sweep", "-p", "budget", "4", "-p", "topk_cap", "4", *SMALL, *ONE_ROUND,
               project=project)
    assert ran.returncode == 0, ran.stderr[-3000:]
    _keeps_the_notebook_report_data_and_index(project, ran)
    out = tmp_path / "out.ipynb"
    pm = _papermill("notebooks/sweep.ipynb", str(out), "-p", "budget", "16", "-p", "topk_cap", "4",
                    "-p", "cuda_graph", "false", *SMALL, *ONE_ROUND, project=project)
    assert pm.returncode == 0, pm.stderr[-3000:]
    plotted = _run("plot", project=project)
    assert plotted.returncode == 0, plotted.stderr[-3000:]
    swept, papermilled, plot = project.runs()
    headings = {}
    for run_dir, title, said in [
            (swept, "sweep local b4 x cap4 x graphs — ddlab", ran.stdout + ran.stderr),
            (papermilled, "sweep local b16 x cap4 x nograph — ddlab", pm.stderr),
            (plot, "plot local b16 x cap4 x nograph — ddlab", plotted.stdout + plotted.stderr)]:
        verdict = json.loads((run_dir / "verdict.json").read_text())
        headline = verdict["headline"]
        assert len(headline) <= 160 and said.count(headline) == 1, "once in the terminal"
        html = (run_dir / "report.html").read_text()
        headings[run_dir.name] = _one_page(html, title=title, headline=headline, machine=machine)
        size_kb = len(html.encode()) / 1024
        print(f"{run_dir.name}: {size_kb:.0f} KB")
    assert all(h[:2] == ["Cells", "Acceptance length, throughput, speedup"]
               for h in headings.values()), headings
    record = json.loads((papermilled / "run.json").read_text())
    assert record["output_notebook"] == str(out), "run.json keeps the path; the page says ../../"
    assert "../../out.ipynb" in (papermilled / "report.html").read_text()
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_ddlab_run_piped_to_a_file_says_each_cell_as_it_ends_then_the_total(project):
    """`ddlab run sweep ... 2>&1 | tee log` (CI): no bar (it sat at "30% 3/10" for minutes
    with a false ETA), a line per sweep cell with k/N, the time elapsed and left, as the
    cell ends, and how long the whole run took."""
    started = time.monotonic()
    arrived = []
    with subprocess.Popen([DDLAB, "run", "sweep", "-p", "budget", "[4, 16]", "-p", "topk_cap", "4",
                           "-p", "cuda_graph", "true", *SMALL, *ONE_ROUND],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                          env=project.env()) as proc:
        for line in proc.stdout:
            arrived.append((time.monotonic() - started, line.rstrip("\n")))
        proc.wait(timeout=300)
    ended = time.monotonic() - started
    text = "\n".join(line for _, line in arrived)
    assert proc.returncode == 0, text[-3000:]
    assert "Executing" not in text and "\r" not in text, "no bar in a pipe"
    cells = [(t, line) for t, line in arrived if re.match(r"\[sweep\] cell \d/3: measured; ", line)]
    assert [line.split(":")[0] for _, line in cells] == [f"[sweep] cell {n}/3" for n in (1, 2, 3)]
    for _, line in cells[:2]:
        assert re.search(r"; \d+s elapsed, about \d+s left$", line), line
    assert re.search(r"; done in \d+s$", cells[2][1]), cells[2][1]
    assert cells[2][0] - cells[0][0] > 1 and ended - cells[0][0] > 2, \
        "each line came as its cell ended, not all at the end"
    assert re.search(r"\[sweep\] \S+: done in \d+s; 3 of 3 cells finished", text)
    lines = [line for _, line in arrived]
    assert re.fullmatch(r"took (\d+m)?\d+s \(sweep.ipynb\)", lines[-2]), lines[-3:]
    assert lines[-1] == str(project.runs()[-1] / "report.html")
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_a_crash_report_opens_with_the_verdict_then_the_provenance(project):
    deployed = _run("deploy", "-p", "overrides", "{mem_fraction_static: 0.001}", project=project)
    assert deployed.returncode == 0, deployed.stderr[-3000:]
    polled = _run("poll", "-p", "timeout_s", "90", project=project)
    assert polled.returncode == 3, polled.stdout + polled.stderr[-3000:]
    run_dir = project.runs()[-1]
    html = (run_dir / "report.html").read_text()
    assert "ddlab-verdict" in first_in_body(html), "the verdict is the first thing in <body>"
    assert landmarks(html) == ["ddlab-verdict", "ddlab-provenance"]
    verdict = re.sub(r"<[^>]+>", " ", section(html, "ddlab-verdict", "ddlab-provenance"))
    assert "CRASHED" in verdict and "kv_pool_oom" in verdict and "next step" in verdict
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["command"] == "ddlab run poll -p timeout_s 90"
    assert provenance["host"] == "local" and provenance["ddlab"] == __version__
    assert provenance["command"] in section(html, "ddlab-provenance")
    sweepkit.assert_host_put_back(project)


@pytest.mark.slow
def test_a_failed_run_still_writes_its_report_marked_failed(project):
    done = _run("sweep", "-p", "budget", "0", project=project)
    assert done.returncode == 1
    assert done.stdout.startswith("FAILED: ConfigError: budget=0")
    run_dir = project.runs()[-1]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed" and "budget=0" in record["error"]
    assert _banner((run_dir / "report.html").read_text()).split()[0] == "FAILED:"
    assert (run_dir / "sweep.ipynb").is_file(), "the executed notebook, with its traceback"
    assert ">failed</td>" in (project.outputs / "index.html").read_text()
    assert not project.state.exists(), "validation stopped it before the host"


def test_unknown_parameter_names_are_refused_before_the_kernel_starts(project):
    with pytest.raises(ConfigError) as info:
        runner.run_notebook("sweep", {"budgett": 32, "topk_cap": 4})
    assert str(info.value).startswith("parameter(s) budgett: not declared by sweep.ipynb; "
                                      "did you mean budget=32? its parameters are: host, base, budget")
    done = _run("plot", "-p", "metrik", "accept_length", project=project)
    assert done.returncode == 2 and "did you mean -p metric accept_length?" in done.stderr
    assert not project.outputs.exists(), "no run folder: nothing started"


def test_parameters_from_pairs_and_files(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("budget: [4, 16]\nrequests: 4\n")
    params = parse_parameters([("requests", "2"), ("cuda_graph", "false"), ("resume", "")],
                                     [path])
    assert params == {"budget": [4, 16], "requests": 2, "cuda_graph": False, "resume": ""}
    path.write_text("- not a mapping\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        parse_parameters([], [path])


@pytest.mark.slow
def test_the_plot_notebook_runs_headless_on_a_finished_sweep(tmp_path_factory):
    shared = sweepkit.shared_sweep(tmp_path_factory)
    started = time.monotonic()
    done = _run("plot", "-p", "sweep", shared.sweep_id, "-p", "metric", "accept_length",
                project=shared.project, timeout_s=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 60
    run_dir = Path(done.stdout.splitlines()[-1]).parent
    nb = json.loads((run_dir / "plot.ipynb").read_text())
    outputs = _outputs(nb)
    assert _text(outputs[0]).startswith("SWEEP DONE: 7 cells, 6 measured, 1 crashed (cuda_graph_replay)")
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 5, \
        "four static figures, and its configs with their intervals (compare_sweeps)"
    assert _text(outputs[-1]) == "(interactive controls: open this notebook in JupyterLab to " \
                                 "filter and switch metrics)"
    html = (run_dir / "report.html").read_text()
    assert html.count("<img") >= 4 and "cuda_graph_replay" in html
    assert landmarks(html) == IDS, "verdict, provenance, table, figures"
    assert "Explore" not in html and "interactive controls" not in html, "no empty widget section"
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["command"] == f"ddlab run plot -p sweep {shared.sweep_id} -p metric accept_length"
    assert provenance["model"].startswith("ddlab-tiny") and provenance["ddlab"] == __version__


@pytest.mark.slow
def test_ctrl_c_interrupts_a_sweep_run_which_then_resumes_from_the_notebook(project):
    # the interrupt and the resume are under test, not the probe (READY comes after it)
    args = ["sweep", "-p", "budget", "[4, 16]", "-p", "topk_cap", "4", "-p", "cuda_graph", "false",
            *SMALL, *ONE_ROUND, "-p", "probe", "False"]
    with subprocess.Popen([DDLAB, "run", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=REPO, env=project.env()) as proc:
        try:
            wait_for(lambda: _cells_done(project) >= 1, timeout_s=120, what="a first finished cell")
            os.kill(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted: finished cells are kept" in out
    run_dir = project.runs()[-1]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    assert record["headline"].startswith("SWEEP INTERRUPTED: 3 cells")
    assert _banner((run_dir / "report.html").read_text()).split()[0] == "INTERRUPTED:"
    with Store(project.store_path) as store:
        sweep_id = store.latest_sweep_id()
        assert store.sweep(sweep_id)["status"] == "interrupted"
        done_before = {h for h, s in store.cell_status(sweep_id).items() if s in DONE_STATES}
    assert 1 <= len(done_before) < 3
    sweepkit.assert_host_put_back(project)

    resumed = _run("sweep", "-p", "resume", "latest", project=project)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert re.match(r"(OK|WARNINGS): SWEEP DONE: 3 cells, 3 measured", resumed.stdout), resumed.stdout
    counts = sweepkit.run_counts(project.store_path, sweep_id)
    assert all(sum(counts[h].values()) == 1 for h in done_before), counts
    assert all(n.get("measured") == 1 for n in counts.values()), counts
    sweepkit.assert_host_put_back(project)


def _cells_done(project) -> int:
    if not project.store_path.exists():
        return 0
    with Store(project.store_path) as store:
        sweep_id = store.latest_sweep_id()
        return sum(s in DONE_STATES for s in store.cell_status(sweep_id).values()) if sweep_id else 0


STUCK = """import os, signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
open({pidfile!r}, "w").write(str(os.getpid()))
time.sleep(600)"""


@pytest.mark.slow
def test_the_runner_gives_up_on_a_kernel_that_ignores_the_interrupt(tmp_path):
    pidfile = tmp_path / "kernel.pid"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("seconds = 1  # a parameter", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(STUCK.format(pidfile=str(pidfile)))]
    nbformat.write(nb, tmp_path / "stuck.ipynb")
    code = textwrap.dedent(f"""
        import ddlab.report.notebooks as runner
        runner.INTERRUPT_GRACE_S = 2
        result = runner.run_notebook({str(tmp_path / "stuck.ipynb")!r}, progress=False)
        print(result.status, result.report.is_file())
    """)
    env = {**os.environ, "DDLAB_OUTPUTS": str(tmp_path / "outputs")}
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            wait_for(lambda: pidfile.is_file() and pidfile.read_text(), timeout_s=60,
                     what="the kernel to be in its stuck cell")
            os.kill(proc.pid, signal.SIGINT)
            started = time.monotonic()
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert out.split() == ["interrupted", "True"], err[-2000:]
    assert "did not finish within 2 s of the interrupt; stopping it" in err
    assert time.monotonic() - started < 30
    kernel = int(pidfile.read_text())
    wait_for(lambda: not Path(f"/proc/{kernel}").exists() or _zombie(kernel), timeout_s=10,
             what="the stuck kernel to be gone")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
