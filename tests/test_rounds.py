"""Round diagnostics: the AR(1) widening against a known variance, the trend flag."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from djbench.results import rounds
from loadtests.harness import ar1


def test_the_widening_gives_the_variance_of_an_ar1_mean() -> None:
    # AR(1), rho 0.5, 15 rounds: the plain s**2 / n widened by the known rho matches the
    # variance of the mean over many series (fixed seed).
    rng, draw, n = random.Random(4), ar1(0.5, sd=1.0), 15
    series = [draw(rng, n) for _ in range(4000)]
    true = statistics.pvariance([statistics.fmean(s) for s in series])
    plain = statistics.fmean(statistics.variance(s) / n for s in series)
    assert plain < 0.5 * true  # the plain error is far too small
    assert plain * rounds.widening(0.5, n) ** 2 == pytest.approx(true, rel=0.08)
    assert rounds.widening(0.0, n) == 1.0 and rounds.widening(-0.3, n) == 1.0


def test_a_trend_across_rounds_is_flagged_as_drifting() -> None:
    rng = random.Random(2)
    flat = [rng.gauss(0, 0.05) for _ in range(15)]
    ramp = [x + 0.02 * k for k, x in enumerate(flat)]
    assert not rounds.diagnose(flat).drifting
    found = rounds.diagnose(ramp)
    assert found.drifting and "rising" in found.words()
    assert rounds.lag1(flat[:4]) is None and math.isfinite(rounds.lag1(flat) or 0)
