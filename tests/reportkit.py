"""Reading a ddlab report as a person would, by its landmarks (a helper, not a test
module): the stable element ids every report has (ddlab.report.html.IDS), in order."""

from __future__ import annotations

import re

IDS = ["ddlab-verdict", "ddlab-provenance", "ddlab-table", "ddlab-figures"]


def landmarks(html: str) -> list[str]:
    """The report ids in the order they appear (each may appear once at most)."""
    found = {}
    for name in IDS:
        hits = [m.start() for m in re.finditer(f"id=['\"]{name}['\"]", html)]
        assert len(hits) <= 1, f"{name} appears {len(hits)} times"
        if hits:
            found[name] = hits[0]
    return sorted(found, key=found.get)


def first_in_body(html: str) -> str:
    """The attributes of the first element inside <body>."""
    body = html[html.index("<body"):]
    return re.search(r"<body[^>]*>\s*<(\w+)([^>]*)>", body).group(2)


def section(html: str, name: str, until: str | None = None) -> str:
    """The html from landmark ``name`` to landmark ``until`` (default: the end)."""
    start = re.search(f"id=['\"]{name}['\"]", html).start()
    end = re.search(f"id=['\"]{until}['\"]", html).start() if until else len(html)
    return html[start:end]


def figures_block(html: str) -> str:
    """The ddlab-figures block, to its closing tag."""
    block = section(html, "ddlab-figures")
    return block[:block.index("</div>")]


# --- one small `ddlab run sweep`, shared by the modules that only read it ------------------

SMALL_RUN_SWEEP = ["-p", "budget", "4", "-p", "topk_cap", "1", "-p", "cuda_graph", "false",
                   "-p", "requests", "2", "-p", "max_new_tokens", "16", "-p", "max_rounds", "3",
                   "-p", "bracket", "False"]


def small_run_sweep(tmp_path_factory):
    """``(project, run_dir)``: a temp project (``sweepkit.Project``) holding one real
    ``ddlab run sweep`` of SMALL_RUN_SWEEP (2 cells on local) and then one ``ddlab plot`` of
    it, nothing else; ``run_dir`` the sweep's notebook run folder. Built once per test run
    (under pytest-xdist the first worker to ask runs it, the others wait on a file lock), so
    its users only read it: tests/report/test_runs.py (``ddlab runs`` over it) and
    tests/report/test_browser.py (its report in a browser)."""
    import subprocess
    from pathlib import Path

    import sweepkit
    from labkit import DDLAB, REPO

    def build(folder: Path) -> dict:
        project = sweepkit.make_project(folder)

        def ddlab(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([DDLAB, *args], capture_output=True, text=True, cwd=REPO,
                                  env=project.env(), timeout=300)

        swept = ddlab("run", "sweep", *SMALL_RUN_SWEEP)
        assert swept.returncode == 0, \
            f"ddlab run sweep failed:\n{swept.stdout[-2000:]}\n{swept.stderr[-3000:]}"
        plotted = ddlab("plot")
        assert plotted.returncode == 0, plotted.stderr[-3000:]
        return {"folder": str(folder), "port": project.port,
                "run_dir": str(Path(swept.stdout.splitlines()[-1]).parent)}

    data = sweepkit.once_per_run(tmp_path_factory, "small-run-sweep", build)
    folder = Path(data["folder"])
    project = sweepkit.Project(root=folder / "project", state=folder / "state",
                               outputs=folder / "outputs", port=data["port"])
    return project, Path(data["run_dir"])
