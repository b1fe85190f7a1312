"""Statistics for trials: one sample is one whole trial."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from djbench.plan.runplan import GROWTH_THRESHOLD_MB_H


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (the same rule as numpy's default)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    pos = (len(ordered) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (pos - low))


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation (stdev / mean), None with fewer than two values."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median from order statistics.

    The interval [x(k), x(n-k+1)] covers the median with probability
    1 - 2 * P(Binomial(n, 1/2) < k). Returns None when n is too small to reach the
    confidence at all (n < 6 for 95%).
    """
    n = len(values)
    ordered = sorted(values)
    best: tuple[float, float] | None = None
    for k in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(k)) / 2**n
        if 1 - 2 * tail >= confidence:
            best = (float(ordered[k - 1]), float(ordered[n - k]))
        else:
            break
    return best


def describe(values: Sequence[float]) -> dict[str, Any]:
    """Median and spread of one figure across trials."""
    if not values:
        return {"n": 0}
    ci = median_ci(values)
    spread = cv(values)
    return {
        "n": len(values),
        "median": round(median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "iqr": round(quantile(values, 0.75) - quantile(values, 0.25), 3),
        "cv": None if spread is None else round(spread, 4),
        "ci95": None if ci is None else [round(ci[0], 3), round(ci[1], 3)],
    }


def ratio_ci(base: Sequence[float], new: Sequence[float]) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of median(new) / median(base) (scipy), None
    with fewer than two values on a side."""
    if len(base) < 2 or len(new) < 2:
        return None
    import numpy as np
    from scipy import stats as sstats

    def ratio(b: np.ndarray, n: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(n, axis=axis) / np.median(b, axis=axis)

    result = sstats.bootstrap(
        (np.array(base), np.array(new)),
        ratio,
        n_resamples=2000,
        method="percentile",
        confidence_level=0.95,
        random_state=0,
        vectorized=True,
    )
    low, high = result.confidence_interval
    return (round(float(low), 4), round(float(high), 4))


TREND_MIN_POINTS = 12  # readings after the skipped opening; fewer: "too_short"


def trend(
    points: Sequence[tuple[float, float]],
    threshold: float = GROWTH_THRESHOLD_MB_H,
    skip: float = 0.2,
) -> dict[str, Any]:
    """The slope of a series (units per hour) with a 95% interval that accounts for the
    serial correlation of memory readings, and a verdict with a size threshold.

    Consecutive readings of a process's memory are not independent (a page cache, an
    allocator's arenas, a recycled worker's sawtooth), so an ordinary least-squares
    interval would be far too narrow. The fit is least squares over every reading after
    the opening `skip` share (warming caches are not growth); its standard error is
    widened for the lag-1 autocorrelation r of the residuals (the effective sample size
    n (1 - r) / (1 + r), as for an AR(1) error around a trend), with a t interval on
    n_eff - 2 degrees of freedom. "grows" needs both: the interval above 0 and the slope
    above `threshold` per hour ("shrinks" likewise below); anything else is "flat".
    Chosen by simulation on AR(0.99) series with the noise of recorded soaks
    (loadtests/soak_trend.py; the figures are in the README).
    """
    import numpy as np
    from scipy import stats as sps

    if not points:
        return {"verdict": "too_short", "skipped_s": 0.0}
    start, end = points[0][0], points[-1][0]
    cut = start + (end - start) * skip
    kept = [(t, v) for t, v in points if t >= cut]
    base: dict[str, Any] = {"skipped_s": round(cut - start, 1)}
    if len(kept) < TREND_MIN_POINTS or kept[-1][0] <= kept[0][0]:
        return {**base, "verdict": "too_short"}
    times = np.array([t for t, _ in kept], dtype=float)
    values = np.array([v for _, v in kept], dtype=float)
    fit = sps.linregress(times, values)
    residuals = values - (fit.intercept + fit.slope * times)
    r = _lag1(residuals)
    n = len(kept)
    n_eff = max(3.0, n * (1 - r) / (1 + r))
    se = fit.stderr * math.sqrt((n - 2) / (n_eff - 2)) if n_eff < n else fit.stderr
    per_hour = fit.slope * 3600
    half = float(sps.t.ppf(0.975, n_eff - 2)) * se * 3600
    low, high = per_hour - half, per_hour + half
    verdict = "flat"
    if low > 0 and per_hour > threshold:
        verdict = "grows"
    elif high < 0 and per_hour < -threshold:
        verdict = "shrinks"
    return {
        **base,
        "effective_n": round(n_eff, 1),  # the readings' worth in independent ones
        "per_hour": round(float(per_hour), 3),
        "ci95": (round(float(low), 3), round(float(high), 3)),
        "verdict": verdict,
        "threshold": threshold,
        "lag1": round(r, 3),
    }


def _lag1(residuals: Any) -> float:
    """Lag-1 autocorrelation of a trend's residuals, corrected for its downward bias
    (about (2 + 4r) / n once a line is fitted: without it, AR(0.99) null series read
    "grows" 6-9% of the time in simulation, 3-5.5% with it), clipped to [0, 0.995]
    (negative: no widening)."""
    centred = residuals - residuals.mean()
    denominator = float((centred * centred).sum())
    if denominator <= 0:
        return 0.0
    r = max(0.0, float((centred[1:] * centred[:-1]).sum()) / denominator)
    return min(0.995, r + (2 + 4 * r) / len(residuals))
