"""A sweep's ``report.html`` rendered by ddlab from the :class:`SweepReport` itself.

A sweep run outside ``ddlab run`` (plain papermill, JupyterLab) keeps its own run
folder (:mod:`ddlab.report.kernel_runs`), but the notebook that runs it is not
finished, nor saved, while the kernel is still in the sweep's cell, so there is
no executed notebook to read. This is the same ddlab page as a ``ddlab run``
report (:mod:`ddlab.report.page`: the same title, banner, element ids and
order): the verdict with its details, crashes and next step, the provenance,
the cells table under "Cells", the figures (PNG embedded: the page works offline
and alone) under the heading that says what they show.
"""

from __future__ import annotations

from pathlib import Path

from ddlab.core.log import get_logger
from ddlab.report.page import Block, Page, page_title, render_page
from ddlab.report.verdicts import SweepReport

__all__ = ["render_sweep_page", "sweep_blocks"]

log = get_logger(__name__)

_CELLS = ("One row per cell, in plan order; crashed cells keep their kind, phase and cause "
          "(the full journal is in each cell's run folder).")
_FIGURES = ("Medians with 95% error bars; crashed cells are red x's with their crash kind on "
            "a strip under each plot (a crash has no value).")


def render_sweep_page(report: SweepReport, path: Path, *, banner: dict,
                      provenance: dict | None = None, run_dir: Path | None = None) -> Path:
    """Write ``path``: ``banner`` (status, headline, next step, facts; the verdict's own
    details and crashes are added) first, then the provenance, the table, the figures."""
    verdict = report.verdict.to_dict()
    banner = {**banner, "_verdict": {**verdict, **(banner.get("_verdict") or {})}}
    page = Page(title=page_title("sweep", verdict), banner=banner, provenance=provenance or {},
                blocks=sweep_blocks(report), run_dir=run_dir or Path(path).parent)
    return render_page(page, path)


def sweep_blocks(report: SweepReport) -> list[Block]:
    """The cells table and the figures of ``report``, each under its heading."""
    table = report.table()
    cells = ([Block("table", table.to_html(index=False, border=0))] if not table.empty
             else [Block("markdown", "no cells (the sweep stopped before planning any)")])
    return [Block("heading", "Cells"), Block("markdown", _CELLS), *cells,
            Block("heading", "Acceptance length, throughput, speedup"),
            Block("markdown", _FIGURES), *_figures(report), *_workload(report)]


_WORKLOAD = ("Each config's server measured at every concurrency level on one start. Pareto: "
             "per-user tok/s against total tok/s, the no-speculation baseline dashed; then the "
             "speedup at each level with its 95% interval (below 1x, speculation loses).")


def _workload(report: SweepReport) -> list[Block]:
    """A workload sweep's Pareto and speedup by concurrency (none for one level)."""
    levels = getattr(report, "levels", None)
    if levels is None or levels.empty or not levels["output_tok_s"].notna().any():
        return []
    from ddlab.report.workload_plots import workload_figures

    try:
        figures = workload_figures(levels)
    except Exception as err:  # noqa: BLE001 - the verdict and table still make a report
        log.warning(f"sweep report: the workload figures could not be drawn: {err}")
        return [Block("figures-note", f"workload figures unavailable: {err}")]
    return [Block("heading", "Under load: Pareto and speedup by concurrency"),
            Block("markdown", _WORKLOAD), *(Block("figure", _png(f)) for f in figures)]


def _figures(report: SweepReport) -> list[Block]:
    """The sweep's figures (:func:`ddlab.report.plots.overview`) as PNG."""
    frame = report.frame
    if frame.empty or "output_tok_s" not in frame or not frame["output_tok_s"].notna().any():
        return [Block("figures-note", "no figures: no cell was measured")]
    from ddlab.report import plots

    try:
        figures = plots.overview(frame)
    except Exception as err:  # noqa: BLE001 - the verdict and table still make a report
        log.warning(f"sweep report: the figures could not be drawn: {type(err).__name__}: {err}")
        return [Block("figures-note", f"figures unavailable: {err}")]
    return [Block("figure", _png(figure)) for figure in figures]


def _png(figure) -> str:
    import base64
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()
