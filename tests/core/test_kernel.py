"""ddlab's errors in a kernel: the notebook's own frames and the error, first and last.

Real kernels only: the user's own ``papermill notebooks/sweep.ipynb out.ipynb -p ...``
(the terminal it prints and the output notebook it saves), and a Jupyter server's
kernel (``jupyter nbconvert --execute``, whose kernel is a Jupyter app's child, as
JupyterLab's is). Before ddlab's handler, a typo's one-line error came after 68-119
lines of the library's frames.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from labkit import REPO

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BIN = Path(sys.executable).parent


def _errors(path: Path) -> list[dict]:
    """The error outputs of a saved notebook, their traceback lines without colours."""
    nb = json.loads(path.read_text())
    found = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    for output in found:
        output["lines"] = [line for text in output["traceback"]
                           for line in ANSI.sub("", text).splitlines() if line.strip()]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("params, last", [
    (["-p", "budget", "0"], "ConfigError: budget=0: must be an integer >= 1; try -p budget 32"),
    (["-p", "budgett", "32"], "ConfigError: parameter(s) budgett: not declared by sweep.ipynb; "
                              "did you mean -p budget 32? its parameters are: host, base, "),
], ids=["budget-0", "typo"])
def test_under_plain_papermill_a_ddlab_error_is_the_cells_line_and_the_error(project, tmp_path,
                                                                              params, last):
    out = tmp_path / "out.ipynb"
    done = subprocess.run([str(BIN / "papermill"), "notebooks/sweep.ipynb", str(out), *params],
                          capture_output=True, text=True, cwd=REPO, env=project.env(), timeout=240)
    assert done.returncode == 1, done.stderr[-2000:]
    shown = done.stderr[done.stderr.index('Exception encountered at "In [3]"'):]
    lines = [line for line in shown.splitlines() if line.strip()]
    assert lines[-1].startswith(last), lines[-1]
    assert "/ddlab/" not in shown, "no frame of the library in the terminal"
    assert len(lines) <= 16, f"{len(lines)} lines:\n{shown}"  # was 60-110
    assert any(line.startswith("Cell In[3], line ") for line in lines), "the cell's own line"

    (error,) = _errors(out)
    assert error["ename"] == "ConfigError" and error["lines"][-1].startswith(last)
    assert not any("/ddlab/" in line for line in error["lines"]), "nor in the output notebook"
    assert len(error["lines"]) <= 15, error["lines"]
    assert not project.state.exists(), "validation stopped it before the host"


def _notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_in_a_jupyter_servers_kernel_other_errors_and_tb_keep_every_frame(project, tmp_path):
    notebook = _notebook(tmp_path / "explore.ipynb",
                         "import ddlab\nddlab.sweep(budget=0, dry_run=True)",
                         "%tb",
                         'ddlab.heatmap(None, "output_tok_s")  # not a ddlab error: every frame')
    done = subprocess.run([str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute",
                           "--allow-errors", str(notebook), "--output", "ran.ipynb"],
                          capture_output=True, text=True, cwd=tmp_path, env=project.env(),
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    brief, whole, other = _errors(tmp_path / "ran.ipynb")
    assert brief["lines"][-1] == "ConfigError: budget=0: must be an integer >= 1; try budget=32", \
        "in Python's words there"
    assert not any("/ddlab/" in line for line in brief["lines"]) and len(brief["lines"]) <= 6
    assert any("ddlab/config/flags.py" in line for line in whole["lines"]), "%tb: every frame"
    assert whole["lines"][-1] == brief["lines"][-1]
    assert other["ename"] == "AttributeError"
    assert any("ddlab/report/plots.py" in line for line in other["lines"]), "not shortened"
