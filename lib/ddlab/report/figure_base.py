"""What every ddlab figure shares: a Figure that shows itself without pyplot, the
check that a frame has the columns a figure draws (an unknown column's error lists the
available ones), and the sweep's axes in its family's words (:class:`PlotAxis`).
:mod:`ddlab.report.plots`, :mod:`ddlab.report.workload_plots` and :mod:`ddlab.report.compare`
draw on it; it imports none of them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from ddlab.core.errors import ConfigError
from ddlab.sweeps.results import METRICS

__all__ = ["SweepFigure", "PlotAxis", "axis_of", "DDTREE_AXIS", "VLLM_AXIS"]


class SweepFigure(Figure):
    """A Figure that shows itself in a notebook (as PNG) without pyplot."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()


def _need(frame: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ConfigError(f"column(s) {', '.join(map(repr, missing))}: not in the frame",
                          fix=f"available columns: {', '.join(map(str, frame.columns))}",
                          value=missing)


@dataclass(frozen=True)
class PlotAxis:
    """What a sweep's figures put on x and draw a line per, in its family's words."""

    x: str = "budget"
    group: str = "topk_cap"
    x_label: str = "DDTree budget (nodes)"
    group_label: str = "top-k cap"
    group_short: str = "k"
    accept_label: str = METRICS["accept_length"]


DDTREE_AXIS = PlotAxis()
VLLM_AXIS = PlotAxis("num_speculative_tokens", "method",
                     "num_speculative_tokens (tokens drafted per step)", "method", "method",
                     "mean acceptance length (1 + accepted / drafts)")


def axis_of(frame: pd.DataFrame) -> PlotAxis:
    """The family's axis: vLLM's when the cells carry ``num_speculative_tokens`` and no
    budget (:mod:`ddlab.sweeps.results`), DDTree's otherwise."""
    if VLLM_AXIS.x in frame and frame[VLLM_AXIS.x].notna().any() \
            and not frame["budget"].notna().any():
        return VLLM_AXIS
    return DDTREE_AXIS
