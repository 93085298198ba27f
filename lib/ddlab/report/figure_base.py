"""What every ddlab figure shares: a Figure that shows itself without pyplot, and the
check that a frame has the columns a figure draws (an unknown column's error lists the
available ones). :mod:`ddlab.report.plots`, :mod:`ddlab.report.workload_plots` and
:mod:`ddlab.report.compare` draw on it; it imports none of them.
"""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.figure import Figure

from ddlab.core.errors import ConfigError

__all__ = ["SweepFigure"]


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
