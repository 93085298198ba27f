"""Verdicts and reports: answer first, details after.

- :class:`SweepVerdict`: a sweep's answer in one line (cells measured and
  crashed, the crash kinds, the best cell and its speedup) and what to try
  next; it displays itself in notebooks (the sweep notebook's first output).
- :func:`render_html`: an executed notebook to ``report.html`` with inputs
  hidden (nbconvert), under a banner that states the run's status first.
- :func:`write_index`: ``outputs/index.html``, every run with its verdict.
- :func:`record_verdict`: what a notebook's library calls leave in the run
  folder (``$DDLAB_RUN_DIR/verdict.json``) for the index.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import pandas as pd

from ddlab.paths import outputs_dir
from ddlab.redact import redact_text
from ddlab.runs import write_json, write_text

__all__ = ["SweepVerdict", "sweep_verdict", "render_html", "write_index", "record_verdict",
           "run_dir_from_env"]

STATUS_COLOURS = {"ok": "#1a7f37", "done": "#1a7f37", "ready": "#1a7f37", "failed": "#cf222e",
                  "crashed": "#cf222e", "interrupted": "#9a6700", "timeout": "#9a6700"}


def run_dir_from_env() -> Path | None:
    """The ``ddlab run`` folder this kernel works for, if any."""
    path = os.environ.get("DDLAB_RUN_DIR")
    return Path(path) if path else None


def record_verdict(verdict: dict) -> None:
    """Leave the verdict in the ``ddlab run`` folder (nothing outside a run)."""
    run_dir = run_dir_from_env()
    if run_dir and run_dir.is_dir():
        write_json(run_dir / "verdict.json", verdict)


@dataclass
class SweepVerdict:
    """A sweep's answer first: counts, crash kinds, best cell, next step."""

    sweep_id: str
    status: str
    summary: dict
    resume: str = ""
    crashes: list[dict] = field(default_factory=list)
    error: str = ""     # what stopped a failed sweep (the exception, one line)

    @property
    def headline(self) -> str:
        s = self.summary
        if self.status == "dry-run":
            to_run = s.get("cells", 0) - s.get("measured", 0) - s.get("crashed", 0)
            return f"DRY RUN: {s.get('cells', 0)} cells planned, {to_run} to run; nothing touched the host"
        head = (f"SWEEP {self.status.upper()}: {s.get('cells', 0)} cells, {s.get('measured', 0)} "
                f"measured, {s.get('crashed', 0)} crashed")
        if s.get("crash_kinds"):
            head += f" ({', '.join(s['crash_kinds'])})"
        best = s.get("best")
        if best:
            speed = f", {best['speedup']:.2f}x over no speculation" if _num(best.get("speedup")) else ""
            accept = f", accept length {best['accept_length']:.2f}" if _num(best.get("accept_length")) else ""
            head += (f". Best: {best['name']}{_point(best)} at {best['output_tok_s']:.1f} tok/s"
                     f"{speed}{accept}")
        if self.error:
            head += f"; stopped by {self.error}"
        return head

    @property
    def next_step(self) -> str:
        if self.status == "dry-run":
            return "run it: the same parameters without dry_run"
        if self.status != "done":
            return f"resume it: {self.resume}" if self.resume else "run it again"
        if self.crashes:
            first = self.crashes[0]
            return f"{first['name']} crashed ({first['kind']}): {first.get('suggestion') or 'see its journal.log'}"
        return "narrow the grid around the best cell, or raise requests for tighter figures"

    def to_dict(self) -> dict:
        return {"state": self.status, "headline": self.headline, "next_step": self.next_step,
                "sweep_id": self.sweep_id, "summary": self.summary, "crashes": self.crashes}

    def render(self) -> str:
        rows = [self.headline, f"next step: {self.next_step}"]
        rows += [f"  crashed: {c['name']}: {c['kind']} in {c.get('phase')}: {c.get('cause')}"
                 for c in self.crashes]
        return "\n".join(rows)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.render())

    def _repr_html_(self) -> str:
        colour = "#cf222e" if self.crashes or self.status != "done" else "#1a7f37"
        crashes = "".join(f"<li><b>{escape(c['name'])}</b>: {escape(str(c['kind']))} in "
                          f"{escape(str(c.get('phase')))}: {escape(str(c.get('cause')))}</li>"
                          for c in self.crashes)
        return (f"<div style='border-left:6px solid {colour};padding:4px 10px'>"
                f"<b style='color:{colour}'>{escape(self.headline)}</b><br>"
                f"<b>next step:</b> {escape(self.next_step)}<ul>{crashes}</ul></div>")


def _point(best: dict) -> str:
    """`` (budget 16, cap 4, graphs off)``: a variant's name omits what equals its base."""
    words = [f"{label} {best[key]:g}" for key, label in (("budget", "budget"), ("topk_cap", "cap"))
             if _num(best.get(key))]
    if best.get("cuda_graph") is not None:
        words.append(f"graphs {'on' if best['cuda_graph'] else 'off'}")
    return f" ({', '.join(words)})" if words else ""


def _num(value) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)


def sweep_verdict(frame: pd.DataFrame, *, sweep_id: str, status: str, resume: str = "",
                  error: str = "") -> SweepVerdict:
    from ddlab.results import summarize

    crashed = frame[frame["status"].isin(["crashed", "timeout"])] if not frame.empty else frame
    crashes = [{k: (None if pd.isna(row[k]) else row[k]) for k in
                ("name", "kind", "phase", "cause", "suggestion", "run_dir")}
               for _, row in crashed.iterrows()]
    return SweepVerdict(sweep_id=sweep_id, status=status, summary=summarize(frame),
                        resume=resume, crashes=crashes, error=" ".join(error.split()))


def render_html(notebook: Path, html: Path, *, banner: dict) -> Path:
    """``notebook`` as HTML with inputs hidden, the run's status banner on top."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    marker = body.find(">", body.find("<body")) + 1  # just inside <body ...>
    write_text(html, body[:marker] + _banner_html(banner) + body[marker:])
    return html


def _banner_html(banner: dict) -> str:
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
