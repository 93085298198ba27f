"""A sweep in a kernel nobody keeps records for keeps its own run folder: here a real
Jupyter server process (``jupyter nbconvert --execute``, the way JupyterLab starts
kernels: as its children) runs a small sweep notebook on the embedded target.
Plain papermill's case is tests/report/test_notebooks.py's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import sweepkit
from ddlab.core import kernel
from labkit import REPO
from reportkit import IDS, landmarks

SWEEP = ('import ddlab\n'
         'report = ddlab.sweep(budget=4, topk_cap=1, cuda_graph=False, requests=2,\n'
         '                     max_new_tokens=16, max_rounds=2, bracket=False)\n'
         'report')


def test_outside_a_kernel_nobody_launched_one():
    assert not kernel.in_kernel() and kernel.launcher() == "" and kernel.terminal() is None
    assert kernel.to_terminal("nothing") is False


@pytest.mark.parametrize("argv, args", [
    (["/x/.venv/bin/python", "/x/.venv/bin/papermill", "in.ipynb", "-p", "a", "1"],
     ["in.ipynb", "-p", "a", "1"]),
    (["python3", "-m", "papermill", "in.ipynb"], ["in.ipynb"]),
    (["/x/.venv/bin/python", "/x/.venv/bin/ddlab", "run", "papermill"], None),
    (["/x/.venv/bin/python", "/x/.venv/bin/jupyter-lab"], None),
], ids=["script", "module", "ddlab-run", "jupyterlab"])
def test_a_papermill_command_line_is_told_from_others(argv, args):
    assert kernel.papermill_args(argv) == args


@pytest.mark.slow
def test_a_sweep_run_by_a_jupyter_server_keeps_a_run_folder_of_kind_jupyter(project, tmp_path):
    notebook = tmp_path / "mine.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(SWEEP)]
    nbformat.write(nb, notebook)
    env = {k: v for k, v in project.env().items() if k != "PYTEST_CURRENT_TEST"}
    done = subprocess.run([str(Path(sys.executable).with_name("jupyter")), "nbconvert", "--to",
                           "notebook", "--execute", str(notebook), "--output", "executed"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[sweep]" not in done.stderr and "report: " not in done.stderr, \
        "a Jupyter server's log gets none of the notebook's progress"
    [run_dir] = project.runs()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["kind"] == "jupyter" and record["status"] == "ok"
    assert record["headline"].startswith("SWEEP DONE: 2 cells, 2 measured")
    assert {"report.html", "verdict.json", "cells.csv", "provenance.json"} <= {
        p.name for p in run_dir.iterdir()}
    assert landmarks((run_dir / "report.html").read_text()) == IDS
    index = (project.outputs / "index.html").read_text()
    assert f"{run_dir.name}/report.html" in index and "<td>jupyter</td>" in index
    executed = json.loads((tmp_path / "executed.ipynb").read_text())
    shown = json.dumps(executed["cells"][0]["outputs"])
    assert "SWEEP DONE" in shown and f"report: {run_dir / 'report.html'}" in shown, \
        "the notebook's user is told where the report is"
    sweepkit.assert_host_put_back(project)


def test_a_pool_sweeps_provenance_names_every_host_after_the_first_ones_facts(tmp_path):
    """The host facts are gathered from one host; a pool sweep says it ran on more, and
    where the per-cell host is (issue 16: provenance named only the first host)."""
    from ddlab.hosts.profiles import load_host
    from ddlab.report.kernel_runs import keep_sweep_records

    folder = tmp_path / "sweep"
    folder.mkdir()
    kept = keep_sweep_records(None, None, host=load_host("local"), sweep_folder=folder,
                              pool=["h1", "h2", "h3"])
    keys = list(kept)
    assert keys[keys.index("host") + 1] == "pool", keys
    assert kept["pool"].startswith("3 hosts: h1, h2, h3") and "host column" in kept["pool"]
    assert json.loads((folder / "provenance.json").read_text())["pool"] == kept["pool"]
    one = keep_sweep_records(None, None, host=load_host("local"), sweep_folder=folder, pool=["h1"])
    assert "pool" not in one
