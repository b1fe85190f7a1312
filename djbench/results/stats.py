"""Statistics for trials: one sample is one whole trial."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


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


def trend(
    points: Sequence[tuple[float, float]], blocks: int = 6, skip: float = 0.2
) -> dict[str, Any]:
    """The slope of a series (units per hour) with a 95% interval, robust to the
    serial correlation of memory readings.

    Consecutive readings of a process's memory are not independent (a page cache, a
    recycled worker's sawtooth), so a least-squares fit over every reading would give
    an interval far too narrow. The series after its opening `skip` share (warming
    caches are not growth) is cut into `blocks` consecutive blocks; the fit is over the
    block means against the block mid-times, with a t interval on blocks - 2 degrees of
    freedom. Fewer than 3 blocks of 3 readings: "too_short".
    """
    from scipy import stats as sps

    if not points:
        return {"verdict": "too_short", "blocks": 0, "skipped_s": 0.0}
    start, end = points[0][0], points[-1][0]
    cut = start + (end - start) * skip
    kept = [(t, v) for t, v in points if t >= cut]
    count = min(blocks, len(kept) // 3)
    base = {"blocks": count, "skipped_s": round(cut - start, 1)}
    if count < 3:
        return {**base, "verdict": "too_short"}
    size = len(kept) / count
    means = []
    for b in range(count):
        chunk = kept[round(b * size) : round((b + 1) * size)]
        means.append((sum(t for t, _ in chunk) / len(chunk), sum(v for _, v in chunk) / len(chunk)))
    fit = sps.linregress([t for t, _ in means], [v for _, v in means])
    per_hour = fit.slope * 3600
    half = float(sps.t.ppf(0.975, count - 2)) * fit.stderr * 3600
    low, high = per_hour - half, per_hour + half
    verdict = "grows" if low > 0 else "shrinks" if high < 0 else "flat"
    return {
        **base,
        "per_hour": round(per_hour, 3),
        "ci95": (round(low, 3), round(high, 3)),
        "verdict": verdict,
    }
