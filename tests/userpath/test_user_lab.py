"""JupyterLab as a user meets it (issue 22): ``make lab`` in the copy of the clone, every
notebook in ``notebooks/`` opened from the file browser and run with Run > Run All Cells,
on ``local``, in a real browser, with no ``DDLAB_*`` variable.

``make lab`` runs in the copy as the Makefile has it (its ``lab`` target: JupyterLab at
the copy's root, ``--allow-root`` as root), with ``LABFLAGS`` for what a test needs
(loopback, a free port, a known token, no browser of its own) and ``-o
.venv/.ddlab-installed``: the venv is taken as it is (the copy's pyproject.toml may be
newer than the venv's stamp, and the stamp's rule would install the copy into the
user's venv). A fresh JupyterLab starts at the root: the test double-clicks
``notebooks``, then each notebook, in the order a user runs them (deploy before poll,
sweep before plot; notebooks this test does not know come last, with their defaults),
edits the parameters cell where a user would shrink the job (typing lines at its end),
runs all cells from the Run menu, waits until no cell is queued or running, and saves
(Ctrl+S). A notebook passes when every code cell ran and none has an error output or a
traceback on stderr (read from the saved file). After plot's Run All the explorer (its
last cell) redraws when its metric changes. The kernel and the server see no
``DDLAB_*`` variable; nothing lands in ``notebooks/outputs/``; the copy's notebooks
are put back as they were when the walk ends.

A screenshot of each notebook after Run All, the call's output at the top, goes to the
test's temp folder, and with ``USERPATH_SCREENSHOTS=docs/screenshots`` also there
(docs/screenshots.md). Before the fix, plot's first cell said "no such sweep in
.../notebooks/outputs/ddlab.sqlite" and deploy, poll and sweep "base 'local': not
found; available: none".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import browserkit
from labkit import REPO, free_port

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

NOTEBOOKS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
USER_ORDER = ("deploy", "poll", "sweep", "plot", "envelope", "bisect")
# What a user types at the end of the parameters cell on `local` to keep the job small
# (the defaults are a GPU host's). Bisect's defaults are already two short trials.
SMALL = {
    "sweep": "budget = [4]\ntopk_cap = [1]\ncuda_graph = [False]\nrequests = 2\n"
             "max_new_tokens = 16\nmax_rounds = 3\nbracket = False\n",
    "envelope": 'search = {"max_running_requests": "4..8"}\n',
}
RUN_ALL_S = 300  # one notebook's Run All on a loaded 2-core machine, at most
PROMPTS = ("[...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell "
           ".jp-InputPrompt')].map(e => e.textContent.trim())")
KERNEL = "document.querySelector(\"[title^='Change kernel for']\")?.textContent.trim()"


def user_order(names) -> list[str]:
    return [n for n in USER_ORDER if n in names] + sorted(n for n in names if n not in USER_ORDER)


@pytest.fixture(scope="module")
def chromium():
    yield from browserkit.chromium()


def test_the_notebooks_cover_the_users_jobs():
    assert set(USER_ORDER) <= set(NOTEBOOKS), f"notebooks/ holds {NOTEBOOKS}"
    assert set(SMALL) <= set(NOTEBOOKS)


def test_run_all_in_jupyterlab_for_every_notebook(user, chromium, tmp_path):
    kept = {p: p.read_bytes() for p in (user.clone / "notebooks").glob("*.ipynb")}
    problems: dict[str, list[str]] = {}
    with user.local():
        try:
            with _make_lab(user, tmp_path) as (url, token):
                page = chromium.new_context(viewport=browserkit.VIEWPORT).new_page()
                page.set_default_timeout(30_000)
                page.goto(f"{url}/lab?token={token}")
                _open_in_file_browser(page, "notebooks", first=True)
                for name in user_order(NOTEBOOKS):
                    problems[name] = _run_all(page, user, name, tmp_path)
                    if name == "plot" and not problems[name]:
                        problems["explorer"] = _explorer_redraws(page)
                    _screenshot(page, name, tmp_path)
                    if "environment" not in problems:  # the server and the first kernel
                        problems["environment"] = _ddlab_variables(url, token)
                page.context.close()
        finally:
            for path, text in kept.items():
                path.write_bytes(text)
            shutil.rmtree(user.clone / "notebooks" / ".ipynb_checkpoints", ignore_errors=True)
    failed = {name: said for name, said in problems.items() if said}
    assert not failed, "\n\n".join(f"{name}:\n  " + "\n  ".join(said) for name, said in failed.items())
    assert not (user.clone / "notebooks" / "outputs").exists(), "a kernel wrote notebooks/outputs/"
    assert list((user.clone / "outputs").glob("*-sweep-jupyter/report.html")), (
        "the sweep run in JupyterLab left no run folder with a report in the copy's outputs/")


@contextlib.contextmanager
def _make_lab(user, tmp_path):
    """``make lab`` in the copy (module docstring); yields its URL and token."""
    port, token = free_port(), secrets.token_hex(16)
    flags = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token={token}"
    argv = ["make", "--no-print-directory", "-o", ".venv/.ddlab-installed", "lab", f"LABFLAGS={flags}"]
    plan = subprocess.run([*argv[:2], "-n", *argv[2:]], cwd=user.clone, env=user.env(),
                          capture_output=True, text=True, timeout=30)
    assert plan.returncode == 0 and "pip" not in plan.stdout and "jupyter lab" in plan.stdout, (
        f"`make -n lab` in the copy would run:\n{plan.stdout}{plan.stderr}")
    url = f"http://127.0.0.1:{port}"
    with browserkit.jupyter_server(argv, cwd=user.clone, env=user.env(), log=tmp_path / "lab.log",
                                   url=url, token=token):
        yield url, token


def _open_in_file_browser(page, name: str, *, first: bool = False) -> None:
    """Double-click ``name`` in JupyterLab's file browser."""
    item = page.locator(".jp-DirListing-item").filter(
        has=page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$")))
    item.wait_for(timeout=90_000 if first else 30_000)
    item.dblclick()


def _run_all(page, user, name: str, tmp_path) -> list[str]:
    """Open ``name``.ipynb, shrink it for `local` (SMALL), Run All, wait, save; what went
    wrong, if anything."""
    from playwright.sync_api import TimeoutError as Timeout

    path = user.clone / "notebooks" / f"{name}.ipynb"
    code_cells = sum(c["cell_type"] == "code" for c in json.loads(path.read_text())["cells"])
    started = time.monotonic()
    try:
        _open_in_file_browser(page, f"{name}.ipynb")
        page.wait_for_function(f"n => {PROMPTS}.length === n", arg=code_cells)
        page.wait_for_function(f"() => /^Python 3 .*\\| Idle$/.test({KERNEL})", timeout=90_000)
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        if name in SMALL:
            panel.locator(".jp-CodeCell").first.locator(".cm-content").click()
            page.keyboard.press("Control+End")
            page.keyboard.press("Enter")
            page.keyboard.type(SMALL[name])
        page.locator("li.lm-MenuBar-item", has_text="Run").click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        page.wait_for_function(f"() => {PROMPTS}.some(s => s === '[*]:') || "
                               f"{PROMPTS}.every(s => /^\\[\\d+\\]:$/.test(s))", timeout=10_000)
        page.wait_for_function(f"() => !{PROMPTS}.some(s => s === '[*]:')", timeout=RUN_ALL_S * 1000)
        before = path.stat().st_mtime_ns
        page.keyboard.press("Control+s")
        browserkit.wait(lambda: path.stat().st_mtime_ns != before, 30, lambda: f"{name}: not saved")
        time.sleep(0.5)  # the save's rename done
    except Timeout as err:
        page.screenshot(path=tmp_path / f"{name}-timeout.png")
        outputs = "\n".join(page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
                            .all_inner_texts())
        return [f"{str(err).splitlines()[0]} after {time.monotonic() - started:.0f} s; "
                f"the outputs shown:\n{outputs[-3000:]}"]
    return _saved_problems(path)


def _saved_problems(path: Path) -> list[str]:
    """Code cells that did not run, error outputs, tracebacks on stderr."""
    said = []
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).strip().splitlines() or [""]
        source = next((line for line in lines if not line.startswith("import ")), lines[0])[:60]
        if cell.get("execution_count") is None:
            said.append(f"cell {index} did not run: {source}")
        for out in cell.get("outputs", []):
            if out["output_type"] == "error":
                said.append(f"cell {index} ({source}) raised {out['ename']}: {out['evalue'][:500]}")
            elif out["output_type"] == "stream" and "Traceback" in "".join(out["text"]):
                said.append(f"cell {index} ({source}) wrote a traceback:\n{''.join(out['text'])[-1500:]}")
    return said


def _explorer_redraws(page) -> list[str]:
    """The explorer (plot's last cell) draws its figure, and draws it anew when the metric
    changes: ipywidgets from the installed lab extension, no CDN."""
    from playwright.sync_api import TimeoutError as Timeout

    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    image = panel.locator(".jp-OutputArea-output img.widget-image")
    try:
        image.wait_for(state="visible", timeout=60_000)
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=image.element_handle())
        before_src, before_png = image.get_attribute("src"), image.screenshot()
        panel.locator(".widget-dropdown select").select_option("accept_length")
        page.wait_for_function("([i, src]) => i.src !== src && i.complete && i.naturalWidth > 0",
                               arg=[image.element_handle(), before_src])
    except Timeout as err:
        return [f"the explorer did not draw, or did not redraw on a new metric: {str(err).splitlines()[0]}"]
    return [] if image.screenshot() != before_png else ["the explorer's new figure looks as the old"]


def _screenshot(page, name: str, tmp_path) -> None:
    """The notebook after Run All, its call's output at the top (plot: the explorer)."""
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")
    cell = cells.last if name == "plot" else cells.nth(min(1, cells.count() - 1))
    cell.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=shot)
    if folder := os.environ.get("USERPATH_SCREENSHOTS"):
        target = REPO / folder / shot.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)


def _ddlab_variables(url: str, token: str) -> list[str]:
    """``DDLAB_*`` variables in the environment of the Jupyter server and its kernels (read
    from /proc), and whether both were found."""
    from ddlab.lab import http_client

    sessions = http_client.get(f"{url}/api/sessions", headers={"Authorization": f"token {token}"}).json()
    wanted = {"server": ("jupyter", f"--port={url.rsplit(':', 1)[1]}"),
              **{f"kernel of {s['path']}": (f"kernel-{s['kernel']['id']}.json",) for s in sessions}}
    seen, said = set(), []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace")
            whose = [who for who, marks in wanted.items() if all(m in argv for m in marks)]
            environ = (cmdline.parent / "environ").read_bytes().decode(errors="replace") if whose else ""
        except OSError:
            continue
        seen.update(whose)
        said += [f"{whose[0]} (pid {cmdline.parent.name}) has {v.split('=')[0]}"
                 for v in environ.split("\0") if v.startswith("DDLAB_")]
    missing = sorted(set(wanted) - seen)
    return said + ([f"no process found for {missing}"] if missing or len(wanted) < 2 else [])
