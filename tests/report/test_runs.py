"""``ddlab runs``: every run in outputs/, newest first: the store's sweeps (what they varied,
their verdict, their best cell) and the run folders (notebook runs, plots, deploys), each
read for what it holds.

The sweep is real (``ddlab run sweep``, two cells on the embedded target, in a temp
project: see ``sweepkit``); the odd folders are written as their writers leave them.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import ddlab
import reportkit
import sweepkit
from ddlab.config.variants import make_variant
from ddlab.report.runs import RUN_COLUMNS, list_runs
from labkit import DDLAB, REPO



def _ddlab(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([DDLAB, *args], capture_output=True, text=True, cwd=REPO,
                          env=project.env(), timeout=300)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """A real sweep through its notebook (budget 4 x cap 1, graphs off), then ``ddlab plot``
    of it: built once per test run and shared with tests/report/test_browser.py, which
    only reads it (reportkit.small_run_sweep); nothing here adds a run to it."""
    return reportkit.small_run_sweep(tmp_path_factory)


@pytest.mark.slow
def test_ddlab_runs_shows_a_notebook_sweep_once_with_what_it_varied(ran):
    project, run_dir = ran
    listed = _ddlab(project, "runs")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    heads = [n for n, line in enumerate(lines) if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d  ", line)]
    assert [lines[n].split()[2] for n in heads] == ["plot", "sweep"], "newest first, one sweep"
    sweep = heads[1]
    assert re.search(r" sweep\s+done\s+local\s+\d{8}T\d{6}Z-local-b4-cap1-nograph$",
                     lines[sweep]), lines[sweep]  # the id says what was swept
    assert lines[sweep + 1].strip() == "budget 4 × cap 1 × graphs off"
    assert lines[sweep + 2].strip().startswith("SWEEP DONE: 2 cells, 2 measured, 0 crashed")
    assert "local-b4-k1-nograph" in lines[sweep + 2], "the best cell, by a readable name"


@pytest.mark.slow
def test_the_runs_frame_joins_the_sweep_to_its_notebook_folder(ran):
    project, run_dir = ran
    with sweepkit.using(project):
        frame = ddlab.runs()
    assert list(frame.columns) == RUN_COLUMNS and list(frame["kind"]) == ["plot", "sweep"]
    sweep = frame.iloc[1]
    assert (sweep["folder"], sweep["via"], sweep["host"], sweep["state"]) == (
        str(run_dir), "ddlab run", "local", "done")
    assert sweep["best"].startswith("local-b4-k1-nograph at ") and "tok/s" in sweep["best"]
    assert json.loads((run_dir / "verdict.json").read_text())["sweep_id"] == sweep["id"]
    plot = frame.iloc[0]
    assert plot["what"] == f"sweep {sweep['id']}" and Path(plot["folder"], "throughput.png").is_file()
    assert frame["when"].is_monotonic_decreasing


@pytest.mark.slow
def test_each_run_says_its_report_as_a_path_to_open_from_here(ran):
    project, run_dir = ran
    here = project.outputs.parent  # the folder holding outputs/ (and the project)
    listed = subprocess.run([DDLAB, "runs"], capture_output=True, text=True, cwd=here,
                            env=project.env(), timeout=120)
    assert listed.returncode == 0, listed.stderr
    report = f"    report: outputs/{run_dir.name}/report.html"
    assert report in listed.stdout.splitlines(), listed.stdout
    assert (here / report.split(": ", 1)[1]).is_file()
    plot = [line for line in listed.stdout.splitlines() if line.startswith("    folder: ")]
    assert len(plot) == 1 and (here / plot[0].split(": ", 1)[1] / "throughput.png").is_file()
    one_down = subprocess.run([DDLAB, "runs"], capture_output=True, text=True,
                              cwd=project.root, env=project.env(), timeout=120)
    assert f"    report: ../outputs/{run_dir.name}/report.html" in one_down.stdout


@pytest.mark.slow
def test_a_run_folders_name_opens_its_sweep_in_every_verb_that_takes_one(ran, tmp_path):
    project, run_dir = ran
    sweep_id = json.loads((run_dir / "verdict.json").read_text())["sweep_id"]
    by_id = _ddlab(project, "plot", sweep_id, "--out", str(tmp_path / "by-id"))
    by_folder = _ddlab(project, "plot", run_dir.name, "--out", str(tmp_path / "by-folder"))
    assert by_folder.returncode == 0, by_folder.stderr  # was: "no such sweep"
    assert by_folder.stdout.replace("by-folder", "by-id") == by_id.stdout
    resumed = _ddlab(project, "sweep", "--resume", run_dir.name, "--dry-run")
    assert resumed.returncode == 0, resumed.stderr
    assert f"sweep {sweep_id} on local" in resumed.stderr + resumed.stdout
    with sweepkit.using(project):
        assert ddlab.load_report(run_dir.name).sweep_id == sweep_id
        assert ddlab.load_report(str(run_dir)).sweep_id == sweep_id, "its path too"


def test_a_kind_no_run_can_have_is_an_error_naming_the_kinds(tmp_path):
    project = sweepkit.make_project(tmp_path)
    done = _ddlab(project, "runs", "--kind", "bogus")
    assert done.returncode == 2 and not done.stdout, (done.stdout, done.stderr)
    assert done.stderr.strip() == ("ddlab runs: error: kind='bogus': not a kind of run; choose "
                                   "one of: bisect, deploy, envelope, plot, poll, sweep")
    known = _ddlab(project, "runs", "--kind", "poll")
    assert known.returncode == 0 and known.stdout.startswith("no runs yet")


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_each_folder_is_read_for_what_it_holds(tmp_path):
    """Another writer's run.json (plain papermill: a ``kind``, few keys), a half-written
    one, a deploy that was watched and one that was not: listed, never an error."""
    out = tmp_path / "outputs"
    _write(out / "20261201T010000Z-sweep-papermill" / "run.json",
           {"kind": "papermill", "notebook": "sweep.ipynb", "status": "running"})
    _write(out / "20261201T020000Z-poll-default" / "run.json", '{"notebook": "poll.ip')
    for stamp, budget, verdict in (("030000", 32, {"state": "crashed", "host": "local",
                                                    "headline": "CRASHED: local-b32: kv_pool_oom"}),
                                   ("040000", 8, None)):
        variant = make_variant("local", {"budget": budget})
        folder = out / "runs" / f"20261201T{stamp}Z-{variant.name}"
        _write(folder / "config.json", {"host": "local", **variant.to_dict()})
        if verdict:
            _write(folder / "verdict.json", verdict)

    frame = list_runs(outputs=out)
    assert list(frame["id"]) == ["20261201T040000Z-local-b8", "20261201T030000Z-local-b32",
                                 "20261201T020000Z-poll-default",
                                 "20261201T010000Z-sweep-papermill"], "newest first"
    assert list(frame["kind"]) == ["deploy", "deploy", "poll", "sweep"]
    assert list(frame["state"]) == ["deployed", "crashed", "?", "running"]
    assert frame["what"][1] == "local-b32: speculative-ddtree-budget 16 -> 32"
    assert frame["headline"][0] == "deployed local-b8; not watched (yet)"
    assert (frame["via"][3], frame["host"][1]) == ("papermill", "local")
    assert list(list_runs(outputs=out, kind="deploy", last=1)["id"]) == ["20261201T040000Z-local-b8"]
    assert "20261201T030000Z-local-b32" in frame.render() and not (out / "ddlab.sqlite").exists()


def test_no_runs_says_so(tmp_path):
    assert list_runs(outputs=tmp_path).render().startswith("no runs yet")
