"""Exact group-sequential boundaries: what each look may test at, so that the chance of
any false verdict over every look is the alpha spent, not less.

A run looks at its verdicts after some rounds and stops once they are decided. Testing
each look at the increment of alpha it spends (a union bound) is safe but wasteful: the
looks are correlated, so the union bound over-counts (the last of four looks over 15
rounds tested at 0.024 where 0.041 keeps the same overall rate). This module computes the
boundaries exactly for the looks actually made, by recursive numerical integration of
the test statistic's density over the continuation region (Armitage, McPherson and Rowe
1969; Jennison and Turnbull, *Group Sequential Methods*, 2000, ch. 19), for a spending
function evaluated at the looks' information fractions (Lan and DeMets 1983: the looks
need not be planned in advance, only the horizon).

The statistic is taken as a standardised sum with independent increments (z); each
look's boundary is then used as a nominal two-sided significance level for the t test at
that look (Jennison and Turnbull, section 11.3: "nominal significance levels", which
keeps the error rate close to alpha for t statistics with a few degrees of freedom).

Hand-written: no well-kept Python library computes these (gsDesign, rpact and ldbounds
are R packages); tests check it against Jennison and Turnbull's tables and ldbounds'
published O'Brien-Fleming-type boundaries.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

GRID = 801  # points per look over the continuation region (Simpson's rule)


def _normal_pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _sf(x: np.ndarray) -> np.ndarray:
    """Normal upper tail, vectorised."""
    from scipy.special import ndtr

    return np.asarray(ndtr(-x))


def _simpson_weights(points: int, width: float) -> np.ndarray:
    weights = np.ones(points)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return weights * width / (3 * (points - 1))


class _Density:
    """The sub-density of Z at the last look over (-bound, bound): the paths still going."""

    def __init__(self, bound: float, values: np.ndarray | None = None) -> None:
        self.bound = bound
        self.z = np.linspace(-bound, bound, GRID)
        self.values = _normal_pdf(self.z) if values is None else values
        self.weights = _simpson_weights(GRID, 2 * bound)

    def crossing(self, t_before: float, t_now: float, bound: float) -> float:
        """P(still going at the last look and |Z_now| >= bound at this one)."""
        mean, sd = self._step(t_before, t_now)
        tails = _sf((bound - mean) / sd) + _sf((bound + mean) / sd)
        return float(np.sum(self.weights * self.values * tails))

    def advance(self, t_before: float, t_now: float, bound: float) -> _Density:
        """The sub-density at this look of the paths that cross no boundary."""
        mean, sd = self._step(t_before, t_now)
        z = np.linspace(-bound, bound, GRID)
        kernel = _normal_pdf((z[:, None] - mean[None, :]) / sd) / sd
        return _Density(bound, kernel @ (self.weights * self.values))

    def _step(self, t_before: float, t_now: float) -> tuple[np.ndarray, float]:
        """Z_now given Z_before = z: N(z sqrt(t_b / t_n), (t_n - t_b) / t_n)."""
        return self.z * math.sqrt(t_before / t_now), math.sqrt((t_now - t_before) / t_now)


def crossing_probabilities(fractions: Sequence[float], bounds: Sequence[float]) -> list[float]:
    """Under no change, the chance of first crossing |Z| >= bound at each look."""
    _check(fractions)
    first = 2 * float(_sf(np.array(bounds[0])))
    found, density = [first], _Density(bounds[0])
    for k in range(1, len(fractions)):
        t_before, t_now = fractions[k - 1], fractions[k]
        found.append(density.crossing(t_before, t_now, bounds[k]))
        density = density.advance(t_before, t_now, bounds[k])
    return found


def boundaries(fractions: Sequence[float], cumulative: Sequence[float]) -> list[float]:
    """The two-sided z boundary of each look that spends exactly `cumulative[k]` of
    alpha by look k (the spending function at the looks' information fractions)."""
    from scipy import optimize
    from scipy.stats import norm

    _check(fractions)
    bounds = [float(norm.isf(cumulative[0] / 2))]
    density = _Density(bounds[0])
    for k in range(1, len(fractions)):
        t_before, t_now = fractions[k - 1], fractions[k]
        spend = cumulative[k] - cumulative[k - 1]
        if spend <= 1e-12:  # a look that spends nothing can reject nothing
            bounds.append(math.inf)
            continue

        bounds.append(_solve(density, t_before, t_now, spend, optimize.brentq))
        density = density.advance(t_before, t_now, bounds[k])
    return bounds


def _solve(density: _Density, t_before: float, t_now: float, spend: float, root: Any) -> float:
    """The boundary at which this look's crossing probability is `spend`."""
    return float(root(lambda c: density.crossing(t_before, t_now, c) - spend, 0.1, 40.0, xtol=1e-7))


def nominal_levels(fractions: Sequence[float], cumulative: Sequence[float]) -> list[float]:
    """Each look's nominal two-sided level (the p below which it rejects) from the exact
    boundaries that spend `cumulative[k]` of alpha by look k (made non-decreasing)."""
    running = [max(cumulative[: k + 1]) for k in range(len(cumulative))]
    return [2 * float(_sf(np.array(c))) if math.isfinite(c) else 0.0
            for c in boundaries(fractions, running)]  # fmt: skip


def _check(fractions: Sequence[float]) -> None:
    if not fractions or fractions[0] <= 0 or any(b <= a for a, b in itertools.pairwise(fractions)):
        raise ValueError(f"information fractions must increase from above 0: {fractions}")
