"""HTML reports: answer first, details after.

- :func:`render_html`: an executed notebook to ``report.html`` with inputs
  hidden (nbconvert), under a banner that states the run's status first, then
  the run's provenance; the notebook's outputs made readable for a colleague:
  progress (the cells' stderr) folded away in a ``<details>``, the live widget
  section (``ddlab.explorer``, empty offline) left out since the static figures
  hold its data, the figures gathered in one block.
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

__all__ = ["render_html", "write_index", "banner_html", "banner_title", "provenance_html",
           "figures_html", "STATUS_COLOURS", "IDS", "has_findings"]

IDS = {"verdict": "ddlab-verdict", "provenance": "ddlab-provenance", "table": "ddlab-table",
       "figures": "ddlab-figures"}

STATUS_COLOURS = {"ok": "#1a7f37", "done": "#1a7f37", "ready": "#1a7f37", "failed": "#cf222e",
                  "crashed": "#cf222e", "wrong_output": "#cf222e", "error": "#cf222e",
                  "interrupted": "#9a6700", "timeout": "#9a6700", "connection_lost": "#9a6700",
                  "scheduler_ended": "#9a6700", "preempted": "#9a6700"}



def render_html(notebook: Path, html: Path, *, banner: dict,
                provenance: dict | None = None) -> Path:
    """``notebook`` as HTML with inputs hidden, the run's status banner on top, then
    its provenance; outputs reshaped as the module docstring says (the file itself
    is left as it is)."""
    without_iri_grammar()
    import nbformat
    from nbconvert import HTMLExporter

    nb = _readable(nbformat.read(notebook, as_version=4))
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    marker = body.find(">", body.find("<body")) + 1  # just inside <body ...>
    head = banner_html(banner) + provenance_html(provenance or {})
    write_text(html, body[:marker] + head + body[marker:])
    return html


def provenance_html(provenance: dict) -> str:
    """The ``ddlab-provenance`` table: one row per fact (:mod:`ddlab.report.provenance`)."""
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>"
                   f"{escape(str(k))}</th><td><code>{escape(redact_text(str(v)))}</code></td></tr>"
                   for k, v in provenance.items() if v not in (None, ""))
    return (f"<div style='font-family:sans-serif;margin:0 1em 1em 1em'><b>Provenance</b>"
            f"<table id='{IDS['provenance']}' style='font-size:90%'>{rows or _NONE}</table></div>")


_NONE = "<tr><td>not recorded</td></tr>"


def figures_html(pngs: list[bytes | str]) -> str:
    """The ``ddlab-figures`` block: each PNG (bytes, or base64 text) as an embedded image."""
    import base64

    images = "".join(
        f"<img alt='figure {n}' style='max-width:100%;margin:0.5em 0' src='data:image/png;base64,"
        f"{png if isinstance(png, str) else base64.b64encode(png).decode()}'>"
        for n, png in enumerate(pngs, 1))
    return f"<div id='{IDS['figures']}'>{images}</div>"


# --- a notebook's outputs, readable ---------------------------------------------------

_WIDGET = "application/vnd.jupyter.widget-view+json"


def _readable(nb):
    """The notebook with progress folded, the live widgets left out, the cells table
    marked and the figures gathered into one block where the first one was."""
    nb.cells = _without_explorer(nb.cells)
    pngs, first, table = [], None, False
    for cell in nb.cells:
        kept = []
        for output in _folded(cell.get("outputs", [])):
            data = output.get("data", {})
            if "image/png" in data:
                pngs.append(data["image/png"].replace("\n", ""))
                if first is None:
                    first = output
                    kept.append(output)
                continue
            table = table or _mark_table(output)
            kept.append(output)
        if cell.cell_type == "code":
            cell.outputs = kept
    if first is not None:
        first.output_type, first.metadata = "display_data", {}
        first.data = {"text/html": figures_html(pngs)}
        first.pop("execution_count", None)
    return nb


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


def _folded(outputs: list) -> list:
    """A cell's progress (its stderr, and the heartbeat lines it displayed) as one
    folded ``<details>`` block where the first of it was: not in nbconvert's red error
    styling, not pushing the table and figures screens down."""
    without_iri_grammar()
    import nbformat

    lines = [_progress_text(output) for output in outputs]
    if not any(text is not None for text in lines):
        return outputs
    text = "".join(t if t.endswith("\n") else t + "\n" for t in lines if t is not None)
    count = len(text.splitlines())
    folded = nbformat.v4.new_output("display_data", data={"text/html": (
        f"<details class='ddlab-progress'><summary>progress ({count} line"
        f"{'s' if count != 1 else ''})</summary><pre style='font-size:85%'>"
        f"{escape(text)}</pre></details>")})
    first = next(i for i, t in enumerate(lines) if t is not None)
    rest = [o for o, t in zip(outputs, lines) if t is None]
    return rest[:first] + [folded] + rest[first:]


_HEARTBEAT = re.compile(r"\[[^\]\n]+\] +\d+\.\d(/\d+)?s  ")  # Heartbeat.line's shape


def _progress_text(output) -> str | None:
    """The text of an output that is progress (stderr, a heartbeat line), else None."""
    if output.get("output_type") == "stream" and output.get("name") == "stderr":
        return output.get("text", "")
    data = output.get("data", {})
    text = data.get("text/plain")
    text = "".join(text) if isinstance(text, list) else text
    if output.get("output_type") == "display_data" and set(data) == {"text/plain"} \
            and text and _HEARTBEAT.match(text):
        return text
    return None


def _mark_table(output) -> bool:
    """Put a pandas table's HTML inside the ``ddlab-table`` block; True if it was one."""
    html = output.get("data", {}).get("text/html")
    html = "".join(html) if isinstance(html, list) else html
    if not html or 'class="dataframe' not in html:
        return False
    output["data"]["text/html"] = f"<div id='{IDS['table']}'>{html}</div>"
    return True


FINDINGS_COLOUR = "#9a6700"  # a run that went through and found crashes or wrong output


def has_findings(verdict: dict) -> bool:
    """Whether a finished sweep's verdict found something wrong in its cells (crashed,
    wrong output, graphs that never ran): its banner is then amber, never green."""
    s = verdict.get("summary") or {}
    return bool(s.get("crashed") or s.get("wrong_output") or s.get("graphs_not_run"))


def banner_html(banner: dict) -> str:
    """The verdict block; ``banner["_findings"]`` turns a green status amber."""
    status = banner.get("status", "?")
    colour = STATUS_COLOURS.get(status, "#57606a")
    if banner.get("_findings") and colour == STATUS_COLOURS["ok"]:
        colour = FINDINGS_COLOUR
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{escape(str(k))}</th>"
                   f"<td>{escape(redact_text(str(v)))}</td></tr>"
                   for k, v in banner.items()
                   if k not in ("status", "headline") and not k.startswith("_") and v not in (None, ""))
    title = banner_title(status, redact_text(banner.get("headline") or ""))
    return (f"<div id='{IDS['verdict']}' style='font-family:sans-serif;"
            f"border-left:8px solid {colour};margin:1em;"
            f"padding:0.5em 1em;background:#f6f8fa'><h2 style='margin:0;color:{colour}'>"
            f"{escape(title)}</h2>"
            f"<table style='font-size:90%'>{rows}</table></div>")


RUN_STATUSES = ("ok", "failed", "interrupted", "running")  # a run's own, not a verdict's


def banner_title(status: str, headline: str) -> str:
    """``STATUS: headline``; for a verdict's state, the headline alone when its first
    part says it already (``CRASHED: x on local: ...``, never ``CRASHED: CRASHED``)."""
    word = status.upper().replace("_", " ")
    if status not in RUN_STATUSES and headline and word in headline.partition(":")[0].upper():
        return headline
    return f"{word}: {headline}"


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
