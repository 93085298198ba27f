"""HTML reports: answer first, details after.

- :func:`render_html`: an executed notebook as the ddlab page
  (:mod:`ddlab.report.page`), read from its outputs (not nbconvert's page: that one
  fetched its scripts from a CDN, carried the widgets' state, showed NaN and <NA>
  and was titled "Notebook"): inputs hidden; the notebook's own title cell left
  out (the page's title says what ran); the verdict the notebook displayed left out,
  since the banner says it (its lines beyond the headline go into the banner);
  progress (the cells' stderr, heartbeat lines) folded away in a ``<details>``; the
  live explorer (``ddlab.explorer``, empty without a kernel) and its heading left
  out, since the static figures hold its data; each heading above its figures.
- :func:`write_index`: ``outputs/index.html``, every run with its verdict,
  however it was started (``ddlab run``, plain papermill, JupyterLab).

Every report has the same landmarks, by stable element ids (browser tests and
readers rely on them): ``ddlab-verdict`` (the first thing in ``<body>``),
``ddlab-provenance`` (a table), and in a sweep's or a plot's report
``ddlab-table`` (the cells) and ``ddlab-figures`` (its ``<img>`` are the figures),
in that order.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from ddlab.core.paths import outputs_dir
from ddlab.core.redact import redact_text
from ddlab.core.run_folders import write_text
from ddlab.report.notebook_libs import without_iri_grammar
from ddlab.report.page import (
    IDS,
    STATUS_COLOURS,
    Block,
    Page,
    banner_html,
    banner_title,
    banner_word,
    figures_html,
    markdown_blocks,
    provenance_html,
    render_page,
)

__all__ = ["render_html", "notebook_blocks", "write_index", "banner_html", "banner_title",
           "banner_word", "provenance_html", "figures_html", "STATUS_COLOURS", "IDS"]


def render_html(notebook: Path, html: Path, *, banner: dict, provenance: dict | None = None,
                title: str = "", run_dir: Path | None = None) -> Path:
    """``notebook`` (executed) as the ddlab page at ``html``: ``banner`` (status, headline,
    ``_verdict``, facts) first, then ``provenance``, then its outputs as the module
    docstring says; paths relative to ``run_dir`` (default ``html``'s folder). The
    notebook file is left as it is."""
    without_iri_grammar()
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    blocks, extra = notebook_blocks(nb, redact_text(str(banner.get("headline") or "")),
                                    said=bool((banner.get("_verdict") or {}).get("details")))
    page = Page(title=title, banner={**banner, "_extra": extra}, provenance=provenance or {},
                blocks=blocks, run_dir=run_dir or Path(html).parent)
    return render_page(page, html)


# --- a notebook's outputs, as blocks ----------------------------------------------------

_WIDGET = "application/vnd.jupyter.widget-view+json"


def notebook_blocks(nb, headline: str = "", *, said: bool = False) -> tuple[list[Block], list[str]]:
    """The page's body from a notebook's cells, and the verdict's lines beyond its
    headline (for the banner; none when the banner's verdict ``said`` its details): the
    output whose first line is ``headline`` is the verdict, shown by the banner."""
    blocks, extra = [], []
    cells = _without_explorer(nb.cells)
    if cells and cells[0].cell_type == "markdown" and cells[0].source.lstrip().startswith("# "):
        cells = cells[1:]  # the notebook's title and how to run it: the page's title says
    for cell in cells:
        if cell.cell_type == "markdown":
            blocks += markdown_blocks(cell.source)
        elif cell.cell_type == "code":
            blocks += _cell_blocks(cell.get("outputs", []), headline, extra, said)
    return blocks, extra


def _cell_blocks(outputs: list, headline: str, extra: list, said: bool) -> list[Block]:
    """A code cell's outputs; its progress in one folded block where the first of it was."""
    blocks, progress, at = [], [], None
    for output in outputs:
        text = _progress_text(output)
        if text is not None:
            progress.append(text if text.endswith("\n") else text + "\n")
            at = len(blocks) if at is None else at
            continue
        plain = _plain(output)
        if headline and plain.splitlines()[:1] == [headline]:  # the verdict: in the banner
            if not said:
                extra += [line for line in plain.splitlines()[1:]
                          if line.strip() and not line.startswith("next step:")]
            continue
        block = _output_block(output, plain)
        if block is not None:
            blocks.append(block)
    if progress:
        blocks.insert(at, Block("progress", "".join(progress)))
    return blocks


def _output_block(output, plain: str) -> Block | None:
    kind = output.get("output_type")
    if kind == "error":
        trace = _ANSI.sub("", "\n".join(output.get("traceback") or []))
        return Block("error", f"{output.get('ename')}: {output.get('evalue')}\n\n{trace}")
    if kind == "stream":
        return Block("text", output.get("text", "")) if output.get("text", "").strip() else None
    data = output.get("data", {})
    if _WIDGET in data:
        return None
    if "image/png" in data:
        return Block("figure", _joined(data["image/png"]).replace("\n", ""))
    html = _joined(data.get("text/html", ""))
    if 'class="dataframe' in html:
        return Block("table", html)
    if html:
        return Block("html", html)
    return Block("text", plain) if plain.strip() else None


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _plain(output) -> str:
    return redact_text(_joined(output.get("data", {}).get("text/plain", "")))


def _without_explorer(cells):
    """Cells less the live explorer (its widgets need a running kernel) and the
    heading that introduces it."""
    out = []
    for cell in cells:
        live = cell.cell_type == "code" and (
            "ddlab.explorer(" in cell.source
            or any(_WIDGET in o.get("data", {}) for o in cell.get("outputs", [])))
        if live:
            if out and out[-1].cell_type == "markdown" and "explore" in out[-1].source.lower():
                out.pop()
            continue
        out.append(cell)
    return out


_HEARTBEAT = re.compile(r"\[[^\]\n]+\] +\d+\.\d(/\d+)?s  ")  # Heartbeat.line's shape


def _progress_text(output) -> str | None:
    """The text of an output that is progress (stderr, a heartbeat line), else None."""
    if output.get("output_type") == "stream" and output.get("name") == "stderr":
        return output.get("text", "")
    data = output.get("data", {})
    text = _joined(data.get("text/plain"))
    if output.get("output_type") == "display_data" and set(data) == {"text/plain"} \
            and text and _HEARTBEAT.match(text):
        return text
    return None


# --- the index --------------------------------------------------------------------------

def write_index(root: Path | None = None) -> Path:
    """``outputs/index.html``: every run that left a ``run.json`` under ``root`` (newest
    first) with its kind (``ddlab run``, ``papermill``, ``jupyter``) and verdict."""
    root = Path(root) if root else outputs_dir()
    runs = []
    for path in sorted(root.glob("*/run.json"), reverse=True):
        try:
            runs.append((path.parent, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
    rows = "".join(_index_row(folder, run) for folder, run in runs)
    html = ("<!doctype html><meta charset='utf-8'><title>ddlab runs</title>"
            "<body style='font-family:sans-serif'><h1>ddlab runs</h1>"
            "<table cellpadding='6' style='border-collapse:collapse'>"
            "<tr><th>started (UTC)</th><th>kind</th><th>notebook</th><th>status</th>"
            "<th>verdict</th>"
            f"<th>report</th></tr>{rows}</table></body>")
    return write_text(root / "index.html", html)


def _index_row(folder: Path, run: dict) -> str:
    status = run.get("outcome") or run.get("status", "?")  # a poll that found a crash: crashed
    colour = STATUS_COLOURS.get(status, "#57606a")
    link = f"{folder.name}/report.html"
    return (f"<tr style='border-top:1px solid #ddd'><td>{escape(str(run.get('started_utc', '')))}</td>"
            f"<td>{escape(str(run.get('kind') or 'ddlab run'))}</td>"
            f"<td>{escape(str(run.get('notebook', '')))}</td>"
            f"<td style='color:{colour};font-weight:bold'>{escape(status)}</td>"
            f"<td>{escape(redact_text(str(run.get('headline') or '')))}</td>"
            f"<td><a href='{escape(link)}'>report</a></td></tr>")
