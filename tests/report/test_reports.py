"""Reports a colleague can read: the verdict, then provenance, then the cells table,
then the figures, by stable element ids; progress folded; no empty widget section;
an index of every run however it was started. Real stores, real nbconvert, real
matplotlib; no kernel here (tests/report/test_kernel_runs.py runs real ones)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import nbformat
import pytest

import sweepkit
from ddlab.core.version import __version__
from ddlab.sweeps.results import load_cells, sweep_words
from ddlab.sweeps.store import Store
from ddlab.report import html as report_html
from ddlab.report.kernel_runs import papermill_command
from ddlab.report.provenance import gather
from ddlab.report.sweep_page import render_sweep_page
from ddlab.report.verdicts import SweepReport, sweep_verdict
from reportkit import IDS, figures_block, first_in_body, landmarks, section

def _rounds(*samples) -> dict:
    from ddlab.lab.stats import median_ci

    median, low, high = median_ci(samples)
    return {"output_tok_s": median, "output_tok_s_ci_low": low, "output_tok_s_ci_high": high,
            "output_tok_s_samples": list(samples), "accept_length": 3.5}


@pytest.fixture
def report(tmp_path) -> SweepReport:
    """A sweep of the shared grid in a real store: two baselines, three measured
    cells and one that crashed replaying CUDA graphs."""
    path = tmp_path / "ddlab.sqlite"
    base = _rounds(100.0, 101.0, 99.0)
    outcomes = [("measured", base), ("measured", base), ("crashed", "cuda_graph_replay"),
                ("measured", _rounds(150.0, 151.0, 149.0)), ("measured", _rounds(190.0, 188.0, 192.0)),
                ("measured", _rounds(230.0, 229.0, 231.0))]
    sweepkit.synthetic_sweep(path, outcomes)
    frame = load_cells(store=path)
    with Store(path) as store:
        what = sweep_words(store.sweep("synthetic"))
    return SweepReport(sweep_id="synthetic", frame=frame,
                       verdict=sweep_verdict(frame, sweep_id="synthetic", status="done", what=what))


@pytest.mark.slow  # four figures drawn: about 9 s on 2 busy cores
def test_a_sweep_report_reads_verdict_provenance_table_figures_in_that_order(report, tmp_path):
    verdict = report.verdict
    page = render_sweep_page(report, tmp_path / "report.html", provenance=gather(
        "local", command="papermill notebooks/sweep.ipynb out.ipynb -p budget 32"), banner={
            "status": "ok", "headline": verdict.headline, "next step": verdict.next_step})
    html = page.read_text()
    assert landmarks(html) == IDS
    assert "ddlab-verdict" in first_in_body(html), "the verdict is the first thing in <body>"
    assert "SWEEP DONE: 6 cells, 5 measured, 1 crashed (cuda_graph_replay)" in html
    assert f"next step</th><td>{verdict.next_step}" in html.replace("&#x27;", "'")
    assert "<title>sweep local b4.16 x cap4 x graphs — ddlab</title>" in html
    provenance = section(html, "ddlab-provenance", "ddlab-table")
    for fact in (f"<code>{__version__}</code>", "papermill notebooks/sweep.ipynb out.ipynb -p budget 32",
                 "ddlab-tiny", "ddlab.target"):
        assert fact in provenance, fact
    images = re.findall(r"<img[^>]*src=['\"]data:image/png;base64,([^'\"]+)['\"]", figures_block(html))
    assert len(images) == 4, "accept length, throughput, speedup, heatmap"
    assert all(base64.b64decode(png)[:4] == b"\x89PNG" for png in images)
    table = section(html, "ddlab-table", "ddlab-figures")
    assert table.count("<tr") == 1 + 6 and ">crashed<" in table and ">None<" not in table
    crashes = section(html, "ddlab-verdict", "ddlab-provenance")
    assert "1 crashed cell</summary>" in crashes and "cuda_graph_replay cause" in crashes, \
        "the crash, with its cause, in the verdict"


def test_a_sweep_that_measured_nothing_still_has_every_landmark_and_says_why(tmp_path):
    path = tmp_path / "ddlab.sqlite"
    sweepkit.synthetic_sweep(path, [("crashed", "kv_pool_oom")] * 2 + [("pending", None)] * 4,
                             status="interrupted")
    frame = load_cells(store=path)
    report = SweepReport("synthetic", frame, sweep_verdict(frame, sweep_id="synthetic",
                                                           status="interrupted"))
    html = render_sweep_page(report, tmp_path / "r.html", banner={"status": "interrupted"}).read_text()
    assert landmarks(html) == IDS
    assert "no figures: no cell was measured" in figures_block(html)
    assert "not recorded" in section(html, "ddlab-provenance", "ddlab-table"), "never empty"


def _png(colour: str) -> str:
    from matplotlib.figure import Figure

    import io

    figure = Figure(figsize=(1, 1))
    figure.add_subplot().set_facecolor(colour)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode()


def _executed(path):
    """A notebook as papermill leaves it: the verdict, the sweep's progress (stderr and
    heartbeat lines), a table, two figures, and the live explorer section."""
    out = nbformat.v4.new_output
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Sweep"),
        nbformat.v4.new_code_cell("report = ddlab.sweep()", outputs=[
            out("display_data", {"text/plain": "SWEEP DONE: 2 cells", "text/html": "<b>SWEEP DONE</b>"}),
            out("stream", name="stderr", text="[sweep] cell 1/2: local-b4\n"),
            out("display_data", {"text/plain": "[watch local-b4]    5.3/600s  READY: local-b4"}),
            out("stream", name="stderr", text="[sweep] cell 2/2: measured\n")]),
        nbformat.v4.new_code_cell("report.table()", outputs=[out("execute_result", {
            "text/plain": "table", "text/html": '<table border="1" class="dataframe"><tr><td>1</td></tr></table>'},
            execution_count=2)]),
        nbformat.v4.new_code_cell("ddlab.speedup_vs_budget(report.frame)", outputs=[
            out("display_data", {"image/png": _png("red"), "text/plain": "<Figure>"})]),
        nbformat.v4.new_code_cell("ddlab.heatmap(report.frame)", outputs=[
            out("display_data", {"image/png": _png("blue"), "text/plain": "<Figure>"})]),
        nbformat.v4.new_markdown_cell("## Explore (JupyterLab)"),
        nbformat.v4.new_code_cell("ddlab.explorer(report.frame, metric)", outputs=[
            out("display_data", {"application/vnd.jupyter.widget-view+json": {
                "model_id": "abc", "version_major": 2, "version_minor": 0},
                "text/plain": "(interactive controls: open this notebook in JupyterLab)"})]),
    ]
    nbformat.write(nb, path)
    return path


def test_a_notebook_report_folds_progress_gathers_figures_and_drops_the_live_widgets(tmp_path):
    notebook = _executed(tmp_path / "sweep.ipynb")
    before = notebook.read_text()
    html = report_html.render_html(notebook, tmp_path / "report.html", banner={
        "status": "ok", "headline": "SWEEP DONE: 2 cells", "next step": "narrow the grid"},
        provenance={"ddlab": __version__, "command": "ddlab run sweep"}).read_text()
    assert landmarks(html) == IDS
    assert "ddlab-verdict" in first_in_body(html)
    assert html.count("<details") == 1, "one cell's progress, folded in one block"
    details = html[html.index("<details"):html.index("</details>")]
    assert "progress (3 lines)" in details and "[sweep] cell 2/2: measured" in details
    assert "READY: local-b4" in details, "the heartbeat line is progress too"
    assert "output_stderr" not in html, "progress is not styled as an error"
    assert len(re.findall("<img", figures_block(html))) == 2
    assert "Explore" not in html and "interactive controls" not in html and "widget-view" not in html
    assert notebook.read_text() == before, "the executed notebook itself is kept as it ran"


def test_the_index_lists_every_run_however_it_was_started(tmp_path):
    for name, record in [("20260101T000000Z-sweep-a", {"notebook": "sweep.ipynb"}),
                         ("20260102T000000Z-sweep-papermill", {"kind": "papermill",
                                                               "notebook": "sweep.ipynb"}),
                         ("20260103T000000Z-sweep-jupyter", {"kind": "jupyter"})]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps(
            {**record, "status": "ok", "started_utc": name[:16], "headline": f"SWEEP DONE {name}"}))
    html = report_html.write_index(tmp_path).read_text()
    rows = re.findall(r"<tr style[^>]*>(.*?)</tr>", html)
    kinds = [re.findall(r"<td>([^<]*)</td>", row)[1] for row in rows]
    assert kinds == ["jupyter", "papermill", "ddlab run"], "newest first, each with its kind"
    assert "<th>kind</th>" in html
    assert "href='20260102T000000Z-sweep-papermill/report.html'" in html


@pytest.mark.parametrize("args, notebook, output, pairs", [
    (["notebooks/sweep.ipynb", "out.ipynb", "-p", "budget", "32"], "notebooks/sweep.ipynb",
     "out.ipynb", [("budget", "32")]),
    (["-p", "budget", "32", "--cwd", "/x", "-k", "python3", "in.ipynb", "--log-output", "o.ipynb",
      "-r", "name", "a b", "-y", "x: 1"], "in.ipynb", "o.ipynb", [("budget", "32"), ("name", "a b")]),
    (["in.ipynb"], "in.ipynb", "", []),
], ids=["issue-command", "options-first", "no-output"])
def test_papermill_command_is_read_as_papermill_reads_it(args, notebook, output, pairs):
    command = papermill_command(args)
    assert (command.notebook, command.output, command.pairs) == (notebook, output, pairs)


def test_provenance_says_what_where_and_with_what():
    facts = gather("local", command="ddlab sweep --budget 32")
    assert facts["ddlab"] == __version__
    assert re.fullmatch(r"[0-9a-f]{12}(\+dirty)?", facts["commit"]), facts["commit"]
    assert facts["host"] == "local" and facts["machine"]
    assert facts["model"].startswith("ddlab-tiny (draft ddlab-tiny-drafter")
    assert facts["server"].startswith(f"ddlab.target {__version__}")
    assert facts["device"] in ("cpu",) or facts["device"].startswith("cuda")
    assert facts["torch"] != "unknown" and facts["python"].count(".") == 2
    assert facts["command"] == "ddlab sweep --budget 32"
    assert re.fullmatch(r"[\d.]+ [\d.]+ [\d.]+ \(\d+ cores\) at the end", facts["load average"])
    unknown = gather("nosuch")
    assert unknown["host"].startswith("nosuch (ConfigError: host='nosuch'"), "a report, not a crash"


def test_a_vllm_base_on_local_names_the_vllm_release_its_target_reports():
    from ddlab.target.vllm_lines import VERSION

    vllm, sglang = gather("local", base="vllm-eagle3"), gather("local")
    assert vllm["server"] == (f"ddlab.target {__version__} (ddlab's embedded server, vLLM's API, "
                              f"reporting vLLM {VERSION})")
    assert "sglang" not in json.dumps(vllm).lower()
    assert sglang["server"] == f"ddlab.target {__version__} (ddlab's embedded server, SGLang's API)"


def test_a_vllm_hosts_version_comes_from_the_familys_probe(tmp_path, monkeypatch):
    """On a host that runs vLLM itself, its release as the vLLM family's version probe reads it
    (here a checkout without metadata: vllm/_version.py, as vllm/_version.py:21 (0.34.0)
    writes it); an SGLang base on the same host asks for SGLang, which it has not."""
    from ddlab.config.bases import load_base
    from ddlab.hosts.profiles import load_host
    from ddlab.report.provenance import _host_facts, _server

    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("raise ImportError('the probe must not import vllm')\n")
    (tmp_path / "vllm" / "_version.py").write_text("__version__ = version = '0.34.0'\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    profile, vllm, sglang = load_host("local"), load_base("vllm-eagle3"), load_base("ddtree")
    facts = _host_facts(profile, vllm)
    assert facts["server"] == "0.34.0" and facts["torch"]
    assert _server(profile, vllm, facts) == "vLLM 0.34.0 (installed on the host)"
    assert _server(profile, vllm, {}) == "vLLM (version unknown)"
    assert "server" not in _host_facts(profile, sglang)  # no sglang here
    assert _server(profile, sglang, {}) == "SGLang (version unknown)"


@pytest.mark.parametrize("text, shown", [
    ("report: /m/x/outputs/run/report.html", "report: report.html"),
    ("papermill notebooks/sweep.ipynb /m/x/out.ipynb -p budget 32",
     "papermill notebooks/sweep.ipynb ../../out.ipynb -p budget 32"),
    ("stored in /m/x/outputs/ddlab.sqlite.", "stored in ../ddlab.sqlite."),
    ('File "/repo/lib/ddlab/x.py", line 7', 'File "../../../../repo/lib/ddlab/x.py", line 7'),
    ("http://127.0.0.1:30000/generate at 12 tok/s, cell 1/2, a / b",
     "http://127.0.0.1:30000/generate at 12 tok/s, cell 1/2, a / b"),
    ("python: /opt/sglang/.venv/bin/python", "python: /opt/sglang/.venv/bin/python"),
], ids=["run-folder", "beside-it", "sentence-end", "a-root", "not-paths", "a-hosts-path"])
def test_a_page_writes_this_machines_paths_relative_to_its_run_folder(text, shown):
    from ddlab.report.page import relative_paths

    assert relative_paths(text, Path("/m/x/outputs/run"), roots=[Path("/repo")]) == shown


@pytest.mark.parametrize("kind, verdict, record, title", [
    ("sweep", {"what": "local b4.16 x cap4 x graphs"}, {}, "sweep local b4.16 x cap4 x graphs"),
    ("poll", {"variant": "local-b8", "host": "gpu1"}, {}, "poll local-b8 on gpu1"),
    ("envelope", {"search_id": "20261201T014500Z-local-envelope-ctx"}, {}, "envelope local-envelope-ctx"),
    ("deploy", {}, {"host": "local"}, "deploy local"),
    ("sweep", {}, {}, "sweep"),
], ids=["sweep", "poll", "search", "host-only", "nothing-known"])
def test_a_page_is_titled_by_what_ran(kind, verdict, record, title):
    from ddlab.report.page import page_title

    assert page_title(kind, verdict, record) == title
