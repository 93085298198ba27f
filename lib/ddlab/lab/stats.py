"""Confidence intervals for benchmark figures: numbers with their noise.

A cell is measured in *rounds* (the same requests each round), and each round
gives one sample of every figure (tok/s, TTFT p50, ...). From those samples:

- :func:`median_ci`: the median and its 95% bootstrap percentile interval;
- :func:`ratio_ci`: the speedup, median(cell) / median(baseline), and its 95%
  interval from resampling both sample sets independently (the cell's and its
  baseline's noise both widen it);
- :func:`overlaps` and :func:`includes`: ties and "within noise".

The bootstrap uses a fixed seed, so the same samples always give the same
interval (a report re-rendered later says the same thing). With few samples
the percentile interval is close to the samples' range: wide, which is honest.
numpy is imported when an interval is computed, not with the module: the CLI's
deploy, watch and restore import this layer and never need it (0.13 s a start).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CI_LEVEL", "median_ci", "ratio_ci", "relative_half_width", "overlaps", "includes",
           "missing"]

CI_LEVEL = 0.95
_RESAMPLES = 2000
_SEED = 20261201


def _clean(samples) -> np.ndarray:
    import numpy as np

    values = np.asarray([float(s) for s in samples or () if s is not None], dtype=float)
    return values[np.isfinite(values)]


def median_ci(samples) -> tuple[float | None, float | None, float | None]:
    """``(median, low, high)`` of ``samples``; the bounds are None below 2 samples
    (one sample has no spread to speak of), everything None for none."""
    import numpy as np

    values = _clean(samples)
    if values.size == 0:
        return None, None, None
    median = float(np.median(values))
    if values.size < 2:
        return median, None, None
    rng = np.random.default_rng(_SEED)
    picks = rng.integers(0, values.size, size=(_RESAMPLES, values.size))
    medians = np.median(values[picks], axis=1)
    low, high = np.quantile(medians, [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return median, float(low), float(high)


def ratio_ci(numerator, denominator) -> tuple[float | None, float | None, float | None]:
    """``(median(num) / median(den), low, high)``: both sets resampled independently."""
    import numpy as np

    top, bottom = _clean(numerator), _clean(denominator)
    if top.size == 0 or bottom.size == 0 or np.median(bottom) <= 0:
        return None, None, None
    ratio = float(np.median(top) / np.median(bottom))
    if top.size < 2 or bottom.size < 2:
        return ratio, None, None
    rng = np.random.default_rng(_SEED)
    tops = np.median(top[rng.integers(0, top.size, size=(_RESAMPLES, top.size))], axis=1)
    bottoms = np.median(bottom[rng.integers(0, bottom.size, size=(_RESAMPLES, bottom.size))], axis=1)
    ratios = tops / np.where(bottoms > 0, bottoms, np.nan)
    low, high = np.nanquantile(ratios, [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return ratio, float(low), float(high)


def relative_half_width(median, low, high) -> float:
    """The interval's half width as a share of the median (inf when unknown)."""
    if median is None or low is None or high is None or median == 0:
        return math.inf
    return (high - low) / 2 / abs(median)


def overlaps(a: tuple, b: tuple) -> bool:
    """Whether intervals ``(low, high)`` a and b share a point; unknown bounds never do."""
    if any(missing(x) for x in (*a, *b)):
        return False
    return a[0] <= b[1] and b[0] <= a[1]


def includes(interval: tuple, value: float) -> bool:
    """Whether ``(low, high)`` holds ``value``; unknown bounds do not."""
    low, high = interval
    if missing(low) or missing(high):
        return False
    return low <= value <= high


def missing(value) -> bool:
    """No figure: None, or a float NaN (pandas' empty cell)."""
    return value is None or (isinstance(value, float) and math.isnan(value))
