"""The user's own words (issue 22): plain papermill on the sweep notebook, from
``notebooks/`` and from the copy's root, with the venv's papermill and no ``DDLAB_*``.

Each run lands in the copy's ``outputs/``: one new run folder (``run.json`` of kind
papermill naming the command as typed, ``verdict.json``, ``cells.csv``,
``report.html``), an entry in ``outputs/index.html``, and the report's path in what
papermill's terminal shows; nothing in ``notebooks/outputs/``. The first run is the
user's words from ``notebooks/``; the second from the root, and reads
what its terminal shows (a line per cell, the total, the verdict last, the headline once). Before the
fix, from ``notebooks/`` the sweep failed with "base 'local': not found; available:
none" and its run folder went to notebooks/outputs/.
"""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.timeout(900)  # after its turn on `local`

# The user's command, with -p options a user adds to shrink the grid to one cell and its
# baseline: the grid's size is not what this tier tests (the notebook's default grid at
# budget 32 took 146-330 s of the suite's 10 minutes; the grids of tests/sweepkit.py's shared
# sweep, graphs on and off with the baselines bracketed, and of tests/api/test_demo.py run
# the rest of what it ran).
SMALL = ("-p topk_cap 1 -p cuda_graph False -p requests 2 -p max_new_tokens 16 -p max_rounds 3 "
         "-p bracket False")
RUNS = {
    "from-notebooks": ("notebooks", f"cd notebooks && papermill sweep.ipynb out.ipynb -p budget 32 {SMALL}",
                       f"papermill sweep.ipynb out.ipynb -p budget 32 {SMALL}"),
    "from-the-root": (".", f"papermill notebooks/sweep.ipynb out.ipynb -p budget 32 {SMALL}", None),
}


@pytest.mark.parametrize("how", list(RUNS))
def test_papermill_sweep_lands_in_the_projects_outputs(user, how):
    where, typed, recorded = RUNS[how]
    outputs = user.clone / "outputs"
    with user.local():  # other tests' runs land in outputs/ too, but not meanwhile
        before = {p.parent for p in outputs.glob("*/run.json")}
        done = user.shell(typed, cwd=user.clone, timeout_s=1200)
        new = sorted({p.parent for p in outputs.glob("*/run.json")} - before)
    out_notebook = user.clone / where / "out.ipynb"
    try:
        assert done.returncode == 0, f"{typed}: exit {done.returncode}\n{done.stderr[-4000:]}"
        assert out_notebook.is_file(), f"papermill wrote no {out_notebook}"
    finally:
        out_notebook.unlink(missing_ok=True)  # the copy's notebooks/ as it was
    assert not (user.clone / "notebooks" / "outputs").exists(), "the run wrote notebooks/outputs/"

    assert len(new) == 1, f"run folders made in the copy's outputs/: {new}"
    run_dir = new[0]
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["kind"], run["status"], run["parameters"]["budget"]) == ("papermill", "ok", 32), run
    assert run["command"] == (recorded or typed), run["command"]
    assert (run_dir / "report.html").is_file() and (run_dir / "cells.csv").is_file()
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["headline"].startswith("SWEEP DONE"), verdict["headline"]
    assert run_dir.name in (outputs / "index.html").read_text(), "outputs/index.html lists no such run"
    assert f"report: {run_dir / 'report.html'}" in done.stderr, done.stderr[-2000:]
    if how == "from-the-root":
        _reads_as_a_terminal_run(done.stderr, run_dir, verdict)


def _reads_as_a_terminal_run(stderr: str, run_dir, verdict: dict) -> None:
    """What the terminal shows and what the run folder keeps, for the small run from the root
    (it replaced tests/report/test_notebooks.py's copy of this run, which set DDLAB_ROOT):
    a line per cell and the total, heartbeats, no kernel warning or KeyboardInterrupt; the
    verdict is the last word, its headline once; the page names the command with its paths
    relative to the run folder and lists the cells; the index row is of kind papermill."""
    lines = [line.strip() for line in re.split(r"[\r\n]+", re.sub(r"\x1b\[K", "", stderr))]
    lines = [line for line in lines if line and not line.startswith("Executing")]
    cells = [line for line in lines if line.startswith("[sweep] cell 2/2: measured; ")]
    assert cells and re.search(r"; done in \d+s$", cells[0]), "a line per cell, as it ends"
    assert re.search(r"\[sweep\] \S+: done in \d+s; 2 of 2 cells finished", stderr), "the total"
    assert any(line.startswith("[watch ") and "READY" in line for line in lines), "heartbeats"
    assert not re.search(r"WARNING(?!S: SWEEP DONE)", stderr), "no kernel warning"
    assert "KeyboardInterrupt" not in stderr, stderr[-2000:]
    said = lines[lines.index(f"report: {run_dir / 'report.html'}"):]
    assert said == [f"report: {run_dir / 'report.html'}",
                    f"{'WARNINGS' if verdict['warnings'] else 'OK'}: {verdict['headline']}",
                    *verdict["details"], f"next: {verdict['next_step']}"], \
        "the verdict is the last word: its headline, details and next step"
    assert stderr.count(verdict["headline"]) == 1, "the headline once in the terminal"
    assert len((run_dir / "cells.csv").read_text().strip().splitlines()) == 3, "header + 2 cells"
    html = (run_dir / "report.html").read_text()
    assert RUNS["from-the-root"][1] in html, "the command as typed"
    assert str(run_dir.parent.parent) not in html, "no path of this machine in the page"
    index = (run_dir.parent / "index.html").read_text()
    row = re.search(f"<tr[^>]*>(?:(?!</tr>).)*{re.escape(run_dir.name)}(?:(?!</tr>).)*</tr>", index)
    assert row and "<td>papermill</td>" in row.group(0), "an index row, of kind papermill"
