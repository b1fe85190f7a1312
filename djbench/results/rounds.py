"""Round diagnostics: is a paired series of per-round log-ratios what the t test assumes?

The paired test takes rounds as independent. They need not be: a cache that warms, a
database that grows, a neighbour's job that comes and goes all make successive rounds
alike (positive autocorrelation), and then the plain standard error is too small (at a
lag-1 correlation of 0.3 the engine's false verdicts on A/A series went from 2% to 14%).
Two checks on every paired series:

- **lag-1 autocorrelation**, corrected for its small-sample bias (E[r] - rho is about
  -(1 + 3 rho) / n: Kendall 1954, Marriott and Pope 1954); when positive, the standard
  error is widened by the AR(1) variance of a mean, with the sample variance's own
  shortfall under correlation undone (see `widening`). Never narrowed: a negative
  estimate leaves the plain error, which is then conservative.
- **a trend** across rounds: Kendall's tau of the log-ratios against the round index
  (the Mann-Kendall test, scipy's kendalltau); below DRIFT_ALPHA the verdict is marked
  as drifting, since a mean of a moving series depends on how long the run was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DRIFT_ALPHA = 0.01  # a diagnostic beside a verdict, not a verdict: flagged, not spent
RHO_MAX = 0.9  # beyond this the series is a drift, not noise; the trend test says so
# Below 10 rounds a lag-1 estimate's own sd is above 0.3 (about 1 / sqrt(n)): widening by
# it is noise, and it cost a 7-round A/A + slowdown matrix its x0.66 verdict (one pair's
# lag 0.77 from 7 rounds, 2026-12-02). The trend test needs fewer.
MIN_FOR_LAG = 10
MIN_FOR_TREND = 5


@dataclass(frozen=True)
class Diagnosis:
    lag1: float | None  # bias-corrected lag-1 autocorrelation (None below MIN_FOR_LAG)
    widening: float  # factor on the standard error (1.0: none)
    trend_p: float | None  # Mann-Kendall two-sided p
    trend: float | None  # Kendall's tau: > 0 the ratio rises over the rounds

    @property
    def drifting(self) -> bool:
        return self.trend_p is not None and self.trend_p < DRIFT_ALPHA

    def words(self) -> str:
        """What a reader needs next to the verdict; empty when the rounds look independent."""
        parts = []
        if self.widening > 1.0 and self.lag1 is not None:
            parts.append(
                f"rounds correlated (lag-1 {self.lag1:+.2f}): interval widened x{self.widening:.2f}"
            )
        if self.drifting:
            way = "rising" if (self.trend or 0) > 0 else "falling"
            parts.append(
                f"drifting: the ratio is {way} over the rounds (Mann-Kendall p={self.trend_p:.2g})"
            )
        return "; ".join(parts)


def lag1(xs: Sequence[float]) -> float | None:
    """The lag-1 autocorrelation, bias-corrected; None below MIN_FOR_LAG values."""
    n = len(xs)
    if n < MIN_FOR_LAG:
        return None
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs)
    if var == 0:
        return 0.0
    r = sum((xs[i] - mean) * (xs[i + 1] - mean) for i in range(n - 1)) / var
    return max(-1.0, min(RHO_MAX, r + (1 + 3 * r) / n))


def widening(rho: float, n: int) -> float:
    """The factor on the plain standard error s / sqrt(n) of n AR(1) values with
    correlation rho: the variance of their mean is sigma**2 f / n with
    f = 1 + 2 sum_k (1 - k/n) rho**k, and the sample variance's expectation is
    sigma**2 (n - f) / (n - 1), so the widened variance is s**2 / n x f (n-1) / (n-f)."""
    if rho <= 0 or n < 2:
        return 1.0
    rho = min(rho, RHO_MAX)
    f = 1 + 2 * sum((1 - k / n) * rho**k for k in range(1, n))
    if f >= n:
        return math.inf
    return math.sqrt(f * (n - 1) / (n - f))


def diagnose(logs: Sequence[float]) -> Diagnosis:
    r = lag1(logs)
    factor = widening(r, len(logs)) if r is not None else 1.0
    tau, p = None, None
    if len(logs) >= MIN_FOR_TREND and len(set(logs)) > 1:
        from scipy import stats as sps

        found = sps.kendalltau(range(len(logs)), logs)
        tau, p = float(found.statistic), float(found.pvalue)
    return Diagnosis(
        None if r is None else round(r, 4), round(factor, 4), None if p is None else round(p, 6),
        None if tau is None else round(tau, 4),
    )  # fmt: skip
