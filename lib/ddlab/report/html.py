"""HTML reports: answer first, details after.

- :func:`render_html`: an executed notebook to ``report.html`` with inputs
  hidden (nbconvert), under a banner that states the run's status first.
- :func:`write_index`: ``outputs/index.html``, every run with its verdict.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from ddlab.core.paths import outputs_dir
from ddlab.core.redact import redact_text
from ddlab.core.run_folders import write_text

__all__ = ["render_html", "write_index", "banner_html", "STATUS_COLOURS"]

STATUS_COLOURS = {"ok": "#1a7f37", "done": "#1a7f37", "ready": "#1a7f37", "failed": "#cf222e",
                  "crashed": "#cf222e", "interrupted": "#9a6700", "timeout": "#9a6700"}



def render_html(notebook: Path, html: Path, *, banner: dict) -> Path:
    """``notebook`` as HTML with inputs hidden, the run's status banner on top."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    marker = body.find(">", body.find("<body")) + 1  # just inside <body ...>
    write_text(html, body[:marker] + banner_html(banner) + body[marker:])
    return html


def banner_html(banner: dict) -> str:
    status = banner.get("status", "?")
    colour = STATUS_COLOURS.get(status, "#57606a")
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{escape(str(k))}</th>"
                   f"<td>{escape(redact_text(str(v)))}</td></tr>"
                   for k, v in banner.items() if k not in ("status", "headline") and v not in (None, ""))
    headline = banner.get("headline") or ""
    return (f"<div style='font-family:sans-serif;border-left:8px solid {colour};margin:1em;"
            f"padding:0.5em 1em;background:#f6f8fa'><h2 style='margin:0;color:{colour}'>"
            f"{escape(status.upper())}: {escape(redact_text(headline))}</h2>"
            f"<table style='font-size:90%'>{rows}</table></div>")


def write_index(root: Path | None = None) -> Path:
    """``outputs/index.html``: every ``ddlab run`` (newest first) with its verdict."""
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
            "<tr><th>started (UTC)</th><th>notebook</th><th>status</th><th>verdict</th>"
            f"<th>report</th></tr>{rows}</table></body>")
    return write_text(root / "index.html", html)


def _index_row(folder: Path, run: dict) -> str:
    status = run.get("status", "?")
    colour = STATUS_COLOURS.get(status, "#57606a")
    link = f"{folder.name}/report.html"
    return (f"<tr style='border-top:1px solid #ddd'><td>{escape(str(run.get('started_utc', '')))}</td>"
            f"<td>{escape(str(run.get('notebook', '')))}</td>"
            f"<td style='color:{colour};font-weight:bold'>{escape(status)}</td>"
            f"<td>{escape(redact_text(str(run.get('headline') or '')))}</td>"
            f"<td><a href='{escape(link)}'>report</a></td></tr>")
