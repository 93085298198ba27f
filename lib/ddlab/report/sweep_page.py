"""A sweep's ``report.html`` rendered by ddlab from the :class:`SweepReport` itself.

A sweep run outside ``ddlab run`` (plain papermill, JupyterLab) keeps its own run
folder (:mod:`ddlab.report.kernel_runs`), but the notebook that runs it is not
finished, nor saved, while the kernel is still in the sweep's cell, so there is
no executed notebook to convert. This page says the same things in the same
order as a ``ddlab run`` report, with the same element ids
(:data:`ddlab.report.html.IDS`): the verdict with the next step, the
provenance, the cells table, the figures (PNG embedded: the page works offline
and alone), then the crashes with their diagnosis.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from ddlab.core.log import get_logger
from ddlab.core.redact import redact_text
from ddlab.core.run_folders import write_text
from ddlab.report.html import IDS, banner_html, figures_html, provenance_html
from ddlab.report.verdicts import SweepReport

__all__ = ["render_sweep_page"]

log = get_logger(__name__)

_STYLE = ("body{font-family:sans-serif;margin:0 0 2em 0} h2{margin:1em 1em 0.3em 1em}"
          " .ddlab-section{margin:0 1em} table.dataframe{border-collapse:collapse;font-size:85%}"
          " table.dataframe td,table.dataframe th{border:1px solid #ddd;padding:2px 6px;"
          "white-space:nowrap}")


def render_sweep_page(report: SweepReport, path: Path, *, banner: dict,
                      provenance: dict | None = None) -> Path:
    """Write ``path``: ``banner`` (status, headline, next step...) first, then the
    provenance, the table, the figures and the crashes of ``report``."""
    title = escape(redact_text(f"ddlab sweep {report.sweep_id}"))
    body = (banner_html(banner) + provenance_html(provenance or {})
            + "<h2>Cells</h2>" + _table(report)
            + "<h2>Figures</h2><div class='ddlab-section'>" + _figures(report) + "</div>"
            + _crashes(report))
    return write_text(path, f"<!doctype html><html><head><meta charset='utf-8'><title>{title}"
                            f"</title><style>{_STYLE}</style></head><body>{body}</body></html>")


def _table(report: SweepReport) -> str:
    table = report.table()
    table = table.astype(object).where(table.notna(), "")  # an empty cell, not None or NaN
    inner = (table.to_html(index=False, border=0) if not table.empty
             else "<p>no cells (the sweep stopped before planning any)</p>")
    return f"<div id='{IDS['table']}' class='ddlab-section' style='overflow-x:auto'>{inner}</div>"


def _figures(report: SweepReport) -> str:
    """The sweep's figures (:func:`ddlab.report.plots.overview`) as PNG."""
    frame = report.frame
    if frame.empty or "output_tok_s" not in frame or not frame["output_tok_s"].notna().any():
        return f"<div id='{IDS['figures']}'><p>no figures: no cell was measured</p></div>"
    from ddlab.report import plots

    try:
        figures = plots.overview(frame)
    except Exception as err:  # noqa: BLE001 - the verdict and table still make a report
        log.warning(f"sweep report: the figures could not be drawn: {type(err).__name__}: {err}")
        return f"<div id='{IDS['figures']}'><p>figures unavailable: {escape(str(err))}</p></div>"
    return figures_html([_png(figure) for figure in figures])


def _png(figure) -> bytes:
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def _crashes(report: SweepReport) -> str:
    crashes = report.verdict.crashes
    if not crashes:
        return ""
    items = "".join(f"<li><b>{escape(str(c['name']))}</b>: {escape(str(c.get('kind')))} in "
                    f"{escape(str(c.get('phase')))}: {escape(redact_text(str(c.get('cause'))))}"
                    f"{_suggestion(c)}</li>" for c in crashes)
    return f"<h2>Crashes</h2><ul class='ddlab-section'>{items}</ul>"


def _suggestion(crash: dict) -> str:
    text = crash.get("suggestion")
    return f"<br><i>next: {escape(redact_text(str(text)))}</i>" if text else ""
