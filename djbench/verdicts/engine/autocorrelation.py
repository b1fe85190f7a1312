"""Round diagnostics: is a paired series of per-round log-ratios what the t test assumes?

The paired test takes rounds as independent. They need not be: a cache that warms, a
database that grows, a neighbour's job that comes and goes all make successive rounds
alike (positive autocorrelation), and then the plain standard error is too small (at a
lag-1 correlation of 0.3 the engine's false verdicts on A/A series went from 2% to 14%).
Two checks on every paired series:

- **lag-1 autocorrelation**, corrected for its small-sample bias (E[r] - rho is about
  -(1 + 3 rho) / n: Kendall 1954, Marriott and Pope 1954), pooled over the pairs judged
  together and bounded from above (`pooled_bound`: plus RHO_Z standard errors); when the
  bound is positive, the standard error is widened by the AR(1) variance of a mean, with
  the sample variance's own shortfall under correlation undone (see `widening`). Never
  narrowed: a negative bound leaves the plain error, which is then conservative.
- **a trend** across rounds: Kendall's tau of the log-ratios against the round index
  (the Mann-Kendall test, scipy's kendalltau); below DRIFT_ALPHA the verdict is marked
  as drifting, since a mean of a moving series depends on how long the run was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from djbench.results.modelbase import Notice

DRIFT_ALPHA = 0.01  # a diagnostic beside a verdict, not a verdict: flagged, not spent
RHO_MAX = 0.9  # beyond this the series is a drift, not noise; the trend test says so
# Below 10 rounds a lag-1 estimate's own sd is above 0.3 (about 1 / sqrt(n)): widening by
# it is noise, and it cost a 7-round A/A + slowdown matrix its x0.66 verdict (one pair's
# lag 0.77 from 7 rounds, 2026-12-02). The trend test needs fewer.
MIN_FOR_LAG = 10
MIN_FOR_TREND = 5
# Pairs judged together pool their lag-1 estimates (decide.pooled_widening) from this many
# rounds each, once they hold POOL_ROUNDS rounds between them; the error is then widened
# by an upper bound of the correlation, not its estimate: the pooled estimate plus RHO_Z
# of its standard error (about 1 / sqrt(rounds pooled)). Widening by the estimate alone
# left A/A false verdicts at 6-8% at a true correlation of 0.3 (loadtests/harness.py):
# an underestimate narrows the interval more than an overestimate widens it.
MIN_FOR_POOL = 4
POOL_ROUNDS = 10  # as MIN_FOR_LAG: a lone pair of 10 rounds bounds its own
RHO_Z = 0.84  # the one-sided 80% bound
# Below MIN_FOR_LAG rounds a lag-1 estimate is biased low beyond what the correction
# undoes (at 5 rounds and a true 0.3 it averages about 0): the bound is then at least
# the correlation the design is asked to withstand. Measured: the ties' false "not tied"
# on A/A series correlated at 0.3 went from 7.3% to the table's (loadtests/harness.py).
RHO_SHORT = 0.3


@dataclass(frozen=True)
class Diagnosis:
    lag1: float | None  # bias-corrected lag-1 autocorrelation (None below MIN_FOR_LAG)
    widening: float  # factor on the standard error (1.0: none)
    trend_p: float | None  # Mann-Kendall two-sided p
    trend: float | None  # Kendall's tau: > 0 the ratio rises over the rounds
    lag1_pool: float | None = None  # the same from MIN_FOR_POOL rounds, for pooling only
    rounds: int = 0

    @property
    def drifting(self) -> bool:
        return self.trend_p is not None and self.trend_p < DRIFT_ALPHA

    def notices(self) -> list[Notice]:
        """What a reader needs next to the verdict (codes); none when the rounds look
        independent."""
        found = []
        if self.widening > 1.0 and self.lag1 is not None:
            found.append(
                Notice(
                    code="correlated_rounds",
                    params={"lag1": self.lag1, "widening": self.widening},
                )
            )
        if self.drifting:
            found.append(
                Notice(
                    code="drifting",
                    params={"rising": (self.trend or 0) > 0, "p": self.trend_p},
                )
            )
        return found


def lag1(xs: Sequence[float], least: int = MIN_FOR_LAG) -> float | None:
    """The lag-1 autocorrelation, bias-corrected; None below `least` values."""
    n = len(xs)
    if n < least:
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
    pool = lag1(logs, MIN_FOR_POOL)
    return Diagnosis(
        None if r is None else round(r, 4), round(factor, 4), None if p is None else round(p, 6),
        None if tau is None else round(tau, 4), None if pool is None else round(pool, 4),
        len(logs),
    )  # fmt: skip


def pooled_bound(found: Sequence[Diagnosis]) -> float | None:
    """The correlation pairs judged together may share: their lag-1 estimates averaged,
    weighted by rounds, plus RHO_Z standard errors, and at least RHO_SHORT when a series
    is shorter than MIN_FOR_LAG; None below POOL_ROUNDS rounds of long series."""
    usable = [(d.lag1_pool, d.rounds) for d in found if d.lag1_pool is not None]
    total = sum(n for _, n in usable)
    short = any(d.rounds < MIN_FOR_LAG for d in found)
    if total < POOL_ROUNDS:
        return RHO_SHORT if short and found else None
    mean = sum(r * n for r, n in usable) / total
    bound = mean + RHO_Z / math.sqrt(total)
    return min(RHO_MAX, max(bound, RHO_SHORT) if short else bound)
