"""Confidence intervals: the numbers a headline and an error bar rest on."""

from __future__ import annotations

import numpy as np
import pytest

from ddlab.lab.stats import includes, median_ci, overlaps, ratio_ci, relative_half_width


def test_the_median_interval_holds_the_median_and_narrows_with_more_samples():
    rng = np.random.default_rng(7)
    few = list(rng.normal(100, 10, 5))
    many = list(rng.normal(100, 10, 60))
    for samples in (few, many):
        median, low, high = median_ci(samples)
        assert median == pytest.approx(float(np.median(samples)))
        assert min(samples) <= low <= median <= high <= max(samples)
    assert relative_half_width(*median_ci(many)) < relative_half_width(*median_ci(few)) / 1.5


def test_the_interval_is_reproducible_and_unknown_below_two_samples():
    samples = [10.0, 12.0, 11.0, 13.0, 9.5]
    assert median_ci(samples) == median_ci(list(samples)), "a fixed seed: a report says the same"
    assert median_ci([5.0]) == (5.0, None, None)
    assert median_ci([]) == (None, None, None)
    assert median_ci([None, float("nan"), 3.0, 4.0])[0] == pytest.approx(3.5)


def test_a_ratio_interval_widens_with_either_sides_noise():
    rng = np.random.default_rng(3)
    quiet_base = list(rng.normal(100, 1, 12))
    noisy_base = list(rng.normal(100, 15, 12))
    cell = list(rng.normal(200, 2, 12))
    ratio, low, high = ratio_ci(cell, quiet_base)
    assert ratio == pytest.approx(np.median(cell) / np.median(quiet_base))
    assert low < ratio < high
    _, nlow, nhigh = ratio_ci(cell, noisy_base)
    assert nhigh - nlow > 3 * (high - low), "the baseline's noise is the speedup's noise too"
    assert ratio_ci(cell, [0.0, 0.0]) == (None, None, None)
    assert ratio_ci(cell, [100.0])[1:] == (None, None)


def test_overlap_and_noise_judgements_never_guess_from_missing_bounds():
    assert overlaps((1.0, 2.0), (1.9, 3.0)) and not overlaps((1.0, 2.0), (2.1, 3.0))
    assert not overlaps((None, 2.0), (1.0, 3.0)) and not overlaps((1.0, float("nan")), (1.0, 2.0))
    assert includes((0.9, 1.2), 1.0) and not includes((1.1, 1.2), 1.0)
    assert not includes((None, 1.2), 1.0)
