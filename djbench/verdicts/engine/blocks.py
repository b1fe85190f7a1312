"""The leader against every other deployment as one randomized complete block design.

A plain run measures every deployment once per round, in a fresh shuffled order each
round: rounds are blocks, deployments treatments. The paired test judges the leader
against one other pair at a time on their own per-round log-ratios: with the 3 rounds a
default run buys that is a t test with 2 degrees of freedom, whose critical value at the
family's level (0.05 shared by 13 deployments: 0.00064 a test) is about 39, so nothing
is ever separated: a default run ended with 33 open comparisons among 13 deployments,
ratios of x8 included.

The block design estimates one residual variance from every deployment's log req/s after
taking out each deployment's mean and each round's (the additive two-way model, Fisher's
RCBD): (k - 1)(n - 1) degrees of freedom, 24 for 13 deployments over 3 rounds, about 7
after the short series' correlation bound (critical value about 6, against 39). It
assumes the deployments' residual spread is alike on the log scale (their trials' CVs
are 3-15% here); Bartlett's test on the residuals checks it, and when it rejects (p <
HETERO_P) each comparison keeps its own paired estimate. The variance comes from the
rounds every deployment ran; each comparison's mean from every round its two sides share
(a race adds rounds to the leader and the open pairs only). The paired estimates'
autocorrelation bound (decide.pooled_widening) still widens each error.

A comparison whose two sides share fewer than MIN_ROUNDS rounds (the race's first looks,
after one or two rounds; a deployment the race dropped early, against the leader of the
rounds after) is a **screen**: the mean of its shared log-ratios, on the error of the
block design where the rounds hold one, else of the additive model over the short
rounds (k >= 3 deployments, two rounds: k - 1 degrees of freedom), else of
decide.SCREEN_SD, a per-round sd above any recorded here, as a z test; never below
decide.SCREEN_FLOOR_SD. It is judged like any estimate, in the same family at the same
look, so early looks (the spending function gives them little alpha) drop only a
deployment far behind (F-Race's and successive elimination's first rounds).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from djbench.verdicts.engine import decide

HETERO_P = 0.01
MIN_DEPLOYMENTS = 3  # with two, the design is the paired test


@dataclasses.dataclass(frozen=True)
class Layout:
    residual_var: float
    df: int
    rounds: int
    hetero_p: float | None
    rows: int = 0  # the deployments it was estimated from


def two_way(logs: Sequence[Sequence[float]], least: int = decide.MIN_ROUNDS) -> Layout | None:
    """The additive model's residual variance over deployments (rows) x rounds (columns),
    `least` rounds at least."""
    k, n = len(logs), len(logs[0]) if logs else 0
    if k < MIN_DEPLOYMENTS or n < max(2, least):
        return None
    grand = sum(map(sum, logs)) / (k * n)
    rows = [sum(r) / n for r in logs]
    cols = [sum(logs[i][j] for i in range(k)) / k for j in range(n)]
    residuals = [[logs[i][j] - rows[i] - cols[j] + grand for j in range(n)] for i in range(k)]
    df = (k - 1) * (n - 1)
    var = sum(x * x for r in residuals for x in r) / df
    hetero = None
    if all(len(set(r)) > 1 for r in residuals):
        from scipy import stats as sps

        hetero = float(sps.bartlett(*residuals).pvalue)
    return Layout(var, df, n, hetero, k)


def against_leader(
    leader: dict[int, float], others: Sequence[dict[int, float]]
) -> list[decide.Estimate | None]:
    """Log-ratio leader / other for each of `others` (per-round req/s by round index)."""
    return between([leader, *others], [(0, j) for j in range(1, len(others) + 1)])


def between(
    series: Sequence[dict[int, float]], pairs: Sequence[tuple[int, int]]
) -> list[decide.Estimate | None]:
    """Log-ratio series[i] / series[j] for each (i, j) of `pairs`: the block design's
    estimate (its variance from every one of `series` that ran its rounds) where it
    holds, else the pair's own paired estimate; every error widened by the pairs' shared
    autocorrelation bound. Two sides sharing fewer than MIN_ROUNDS rounds: a screen."""
    paired = []
    for i, j in pairs:
        shared = _shared(series, i, j)
        paired.append(decide.paired([series[j][r] for r in shared], [series[i][r] for r in shared]))
    widened = decide.pooled_widening(paired)
    layout = _design(series, decide.MIN_ROUNDS)
    found: list[decide.Estimate | None] = []
    for (i, j), e in zip(pairs, widened, strict=True):
        shared = _shared(series, i, j)
        if e is None:
            found.append(screened(series, i, j, layout or _design(series, 2)))
            continue
        if layout is None:
            found.append(e)
            continue
        mean = sum(math.log(series[i][r] / series[j][r]) for r in shared) / len(shared)
        factor = e.rounds.widening if e.rounds is not None else 1.0
        se = math.sqrt(2 * layout.residual_var / len(shared)) * factor
        # Correlated rounds carry fewer independent ones: each deployment's residuals are
        # worth about rounds / widening**2 - 1 degrees of freedom (the effective rounds)
        df = max(2.0, (layout.rows - 1) * (layout.rounds / factor**2 - 1))
        found.append(dataclasses.replace(e, mean=mean, se=se, df=df, method="blocked"))
    return found


def _shared(series: Sequence[dict[int, float]], i: int, j: int) -> list[int]:
    """The rounds both sides ran (a race adds rounds to some only), with a positive figure."""
    return sorted(r for r in set(series[i]) & set(series[j]) if series[i][r] > 0 < series[j][r])


def _design(series: Sequence[dict[int, float]], least: int) -> Layout | None:
    """The additive model over the deployments that ran at least `least` rounds, on the
    rounds all of them ran (a deployment the race dropped early is not a row of the
    later rounds' design); None where it does not hold (too few rows or rounds, a value
    not positive, or residual spreads Bartlett's test finds unlike)."""
    rows = [s for s in series if len(s) >= least]
    if not rows:
        return None
    common = sorted(set.intersection(*(set(s) for s in rows)))
    if any(s[r] <= 0 for s in rows for r in common):
        return None
    layout = two_way([[math.log(s[r]) for r in common] for s in rows], least)
    if layout is None or (layout.hetero_p is not None and layout.hetero_p < HETERO_P):
        return None
    return layout


def screened(
    series: Sequence[dict[int, float]], i: int, j: int, layout: Layout | None
) -> decide.Estimate | None:
    """The screen of series[i] / series[j] on the 1 to MIN_ROUNDS - 1 rounds they share:
    on `layout`'s error (the block design, or the additive model over short rounds), else
    on decide.SCREEN_SD as a z test; None when they share no round."""
    shared = _shared(series, i, j)
    if not shared:
        return None
    mean = sum(math.log(series[i][r] / series[j][r]) for r in shared) / len(shared)
    if layout is None:
        var, df = decide.SCREEN_SD**2, math.inf
    else:
        var, df = 2 * layout.residual_var, float(layout.df)
    se = math.sqrt(max(var, decide.SCREEN_FLOOR_SD**2) / len(shared))
    return decide.Estimate("screened", mean, se, df, len(shared), len(shared))


def leader_decisions(series: Sequence[dict[int, float]], level: float) -> list[decide.Decision]:
    """The engine's verdict on series[0] (the leader, picked by the same data) against
    each other series, req/s paired by round: "better" under Benjamini-Hochberg over
    every pair of the ranking, k(k - 1)/2 of them (whichever leads, its comparisons are
    among them), so the false discovery rate of "better" calls is `level` (with identical
    deployments: the chance of any call); "equivalent" at the Bonferroni share level /
    (k(k - 1)/2), as before. Bonferroni on "better" too kept 26 of 36 comparisons of a
    default run open, ratios of x2.4 at p 0.006 included (0.00064 was asked);
    Williams, Jones & Tukey (1999) advise BH for all pairwise comparisons.
    The leader's verdicts are tested at R x level / m (R: BH's discoveries among the m
    pairs), the level their Decision records (Benjamini-Yekutieli's FCR-adjusted
    interval: the interval shown is the one the test used)."""
    k = len(series)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]  # the leader's come first
    found = between(series, pairs)
    tested = [e.p for e in found if e is not None]
    share = level / max(1, len(tested))
    discoveries = sum(p < level for p in decide.benjamini_hochberg(tested))
    at = share * max(1, discoveries)
    decisions = []
    for e in found[: k - 1]:
        [d] = decide.judge([e], +1, at)
        if d.verdict != "better":
            [d] = decide.judge([e], +1, share)
        decisions.append(d)
    return decisions
