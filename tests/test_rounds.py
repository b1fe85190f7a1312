"""Round diagnostics: the AR(1) widening against a known variance, the trend flag."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from djbench.reports.words import say
from djbench.verdicts.engine import autocorrelation as rounds
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
    assert found.drifting and "rising" in " ".join(say(n) for n in found.notices())
    assert rounds.lag1(flat[:4]) is None and math.isfinite(rounds.lag1(flat) or 0)


def test_a_short_series_is_bounded_by_the_correlation_the_design_withstands() -> None:
    # At 5 rounds a lag-1 estimate of a series correlated at 0.3 averages about 0, so
    # short series are bounded by RHO_SHORT; long ones by their estimate + 0.84 se.
    rng = random.Random(3)
    short = [rounds.diagnose([rng.gauss(0, 1) for _ in range(5)]) for _ in range(4)]
    assert (rounds.pooled_bound(short) or 0) >= rounds.RHO_SHORT
    long = [rounds.diagnose([rng.gauss(0, 1) for _ in range(15)]) for _ in range(4)]
    mean = sum(d.lag1_pool or 0 for d in long) / 4
    assert rounds.pooled_bound(long) == pytest.approx(mean + rounds.RHO_Z / math.sqrt(60))


def test_the_block_design_pools_the_residual_variance_and_falls_back_when_unequal() -> None:
    from djbench.verdicts.engine import blocks

    # Three deployments x four rounds: a round effect (+0.1 in round 2) cancels exactly.
    logs = [[0.0, 0.1, 0.0, 0.02], [0.5, 0.6, 0.52, 0.5], [1.0, 1.1, 1.0, 1.0]]
    layout = blocks.two_way(logs)
    assert layout is not None and layout.df == 6 and layout.rounds == 4
    without = [[x - (0.1 if j == 1 else 0.0) for j, x in enumerate(row)] for row in logs]
    plain = blocks.two_way(without)
    assert plain is not None and layout.residual_var == pytest.approx(plain.residual_var)
    # The ANOVA identity: residual SS = total SS - deployments' SS - rounds' SS.
    cells = [x for row in logs for x in row]
    grand = statistics.fmean(cells)
    total = sum((x - grand) ** 2 for x in cells)
    by_row = 4 * sum((statistics.fmean(r) - grand) ** 2 for r in logs)
    by_round = 3 * sum((statistics.fmean(c) - grand) ** 2 for c in zip(*logs, strict=True))
    assert layout.residual_var == pytest.approx((total - by_row - by_round) / 6)
    leader = {r: math.exp(2 + x) for r, x in enumerate([0.0, 0.1, 0.0, 0.02])}
    others = [{r: math.exp(1 + x) for r, x in enumerate(row)} for row in logs[1:]]
    found = blocks.against_leader(leader, others)
    assert all(e is not None and e.method == "blocked" and e.df >= 2 for e in found)
    # One deployment far noisier than the rest (Bartlett rejects): the paired estimates.
    rng = random.Random(1)
    quiet = [{r: math.exp(rng.gauss(0, 0.01)) for r in range(8)} for _ in range(4)]
    loud = {r: math.exp(rng.gauss(0, 0.5)) for r in range(8)}
    mixed = blocks.against_leader(quiet[0], [*quiet[1:], loud])
    assert all(e is not None and e.method == "paired" for e in mixed)


def test_the_leader_is_judged_by_the_false_discovery_rate_over_every_pair_of_its_ranking() -> None:
    """Bonferroni over the 15 pairs of six deployments asks p < 0.0033 of the leader's
    x1.10 over the next; four far below make 12 of 15 pairs discoveries, so BH tests at
    12 x 0.05 / 15 and that p of 0.009 is a verdict (26 of 36 comparisons of a default
    run stayed open under Bonferroni, x2.4 at p 0.006 among them)."""
    from djbench.verdicts.engine import blocks

    noise = [
        [0.03, -0.02, 0.01, -0.03],
        [-0.01, 0.04, -0.02, 0.0],
        [0.02, 0.0, -0.03, 0.01],
        [0.0, -0.02, 0.03, -0.01],
        [-0.02, 0.01, 0.0, 0.02],
        [0.01, -0.01, 0.02, -0.03],
    ]
    shifts = [0.0, -0.10, -2.0, -2.05, -2.1, -2.15]
    series = [
        {r: math.exp(7 + s + n[r]) for r in range(4)} for s, n in zip(shifts, noise, strict=True)
    ]
    found = blocks.leader_decisions(series, 0.05)
    assert [d.verdict for d in found] == ["better"] * 5
    assert found[0].p is not None and 0.05 / 15 < found[0].p < 0.04
    assert all(d.level == pytest.approx(12 * 0.05 / 15) for d in found)
    # Alike deployments: nothing is discovered, and the leader is held to the share.
    alike = [{r: math.exp(7 + n[r]) for r in range(4)} for n in noise]
    held = blocks.leader_decisions(alike, 0.05)
    assert all(d.verdict != "better" for d in held)
