"""The decision engine: one rule for every verdict djbench gives on "did it change?".

Used by ``benchcompare`` (two runs), ``--matrix`` (cells in one command) and whatever
else compares two sides. Four verdicts, all from one interval of the ratio NEW / BASE:

- ``worse`` / ``better``: significant (Benjamini-Hochberg-adjusted p below the look's
  alpha) and the estimate beyond the threshold in that direction (asv's rule: both);
- ``equivalent``: the interval lies within +/- the threshold ("no change beyond 5%");
- ``inconclusive``: neither; it says the change this run would have found with 80%
  power (not the interval's half-width, at which the power is about one half).

Paired rounds are checked for what the t test assumes (rounds.py): an upper bound of
their lag-1 autocorrelation, pooled over the pairs judged together, widens the standard
error (AR(1) variance of a mean), and a trend across rounds marks the verdict drifting.

Two designs, two tests, both on log values (throughput and latency are ratios: a
log turns "x0.85" into a shift, and their log is close to normal here):

- **paired rounds** (both sides measured back to back in every round, as ``--matrix``
  does): Student's t on the per-round log-ratios. What the two sides of a round share
  (other work on the machine, a slow minute) cancels. Chosen over the sign-flip
  permutation test, whose smallest p is 2 / 2**n (0.031 at 6 rounds: it cannot reach
  alpha 0.01 in the rounds a 15-minute budget buys), and checked by simulation on
  series recorded on this machine (tests/test_decide.py).
- **unpaired** (two separate runs, ``benchcompare A B``): Welch's t on log trial values
  (no equal-variance assumption, unlike the pooled Student t of djangobench and pyperf).

Many pairs: one family (judge_family) over every pair x metric (x cell, in a matrix) that
feeds the exit code, Benjamini-Hochberg over all of them: the false discovery rate, the
expected share of false "worse"/"better" among those given, is at most alpha (not
Holm's any-false-alarm rate: with 39 pairs Holm needs a p 39 times smaller for the
first flag). BH holds under the positive dependence of one machine's pairs (PRDS);
a pair's req/s and p99 move together, which it tolerates in practice (the harness,
loadtests/harness.py, measures it).

When a run looks and at what level: spending.py.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from djbench.results.modelbase import Notice
from djbench.verdicts.engine import autocorrelation as rounds
from djbench.verdicts.engine.autocorrelation import Diagnosis, diagnose, widening

Change = Literal["worse", "better", "equivalent", "inconclusive"]
TOO_FEW = Notice(code="too_few")  # no estimate: too few rounds (or trials) to test
DECIDED: frozenset[str] = frozenset({"worse", "better", "equivalent"})

THRESHOLD = 0.05  # the smallest change that counts, and the equivalence margin: one value
ALPHA = 0.05  # false discovery rate over the family (pairs x metrics x cells), all looks
MIN_ROUNDS = 3  # paired: the first look (2 degrees of freedom)
MIN_TRIALS = 2  # unpaired: per side
# The sd of a per-round log-ratio on this machine, for planning only: 0.14-0.28 over the
# four pairs of a 15-round matrix (3 s windows, gunicorn-sync and uvicorn x health-sync
# and movies-sync, 2026-11-30; tests/fixtures/series/worse-matrix.json); 0.12-0.13 on a
# quieter day (2 s windows, gunicorn-sync).
NOISE_SD = 0.2
# The sd of a per-round log-ratio a screen assumes when its own rounds cannot say it (one
# round, or too few deployments to pool): above the largest recorded here (0.28, the
# matrix above), so a screen's first look drops only what no noise seen here explains.
SCREEN_SD = 0.3
# The least per-round log-ratio sd a screen's pooled estimate may claim: the quietest
# recorded (identical gunicorn-sync servers, 2 s windows seconds apart: 0.04-0.063).
SCREEN_FLOOR_SD = 0.04
# The change a --matrix without --budget or --trials sizes its horizon to flag with 80%
# power on one pair at NOISE_SD (run/matrix_cells.horizon); the threshold (5%) would need
# about 200 rounds of 4 pairs at that noise, 10% about 50.
PLANNED_CHANGE = 0.10
# What the engine's looks cost over the planning bound (one look at Bonferroni's share of
# alpha): four looks with their exact boundaries, Benjamini-Hochberg and the error
# widened by the rounds' autocorrelation bound. loadtests/harness.py, one pair of four
# x0.90, 1000 simulated matrices: at 44 rounds (that bound's figure at sd 0.2) 76% power
# on the recorded series and 68% on independent rounds at sd 0.2; at 50 rounds 83% and
# 77%. Planning takes the noise's variance as this much larger, so the rounds it plans
# buy the power it names: 52 rounds for 10% on one of 4 pairs.
LOOK_COST = 1.2


@dataclass(frozen=True)
class Estimate:
    """The log-ratio NEW / BASE of one metric of one pair, with its spread."""

    method: Literal["paired", "unpaired", "blocked", "screened"]
    mean: float  # mean log-ratio
    se: float  # its standard error
    df: float  # degrees of freedom of its t distribution
    n_base: int
    n_new: int
    rounds: Diagnosis | None = None  # paired: the rounds' autocorrelation and trend
    pooled: bool = False  # its error already widened with the others judged beside it

    @property
    def ratio(self) -> float:
        return math.exp(self.mean)

    @property
    def p(self) -> float:
        """Two-sided p of "no change"."""
        from scipy import stats as sps

        if self.se == 0:
            return 1.0 if self.mean == 0 else 0.0
        return float(2 * sps.t.sf(abs(self.mean) / self.se, self.df))

    def interval(self, alpha: float) -> tuple[float, float]:
        """The (1 - alpha) interval of the ratio."""
        from scipy import stats as sps

        half = float(sps.t.ppf(1 - alpha / 2, self.df)) * self.se
        return math.exp(self.mean - half), math.exp(self.mean + half)


def paired(base: Sequence[float], new: Sequence[float]) -> Estimate | None:
    """From the two sides of each round (same length, same order); None below
    MIN_ROUNDS usable rounds or with a non-positive value."""
    rounds = [(b, n) for b, n in zip(base, new, strict=True) if b > 0 and n > 0]
    if len(rounds) < MIN_ROUNDS:
        return None
    logs = [math.log(n / b) for b, n in rounds]
    count = len(logs)
    mean = sum(logs) / count
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (count - 1))
    found = diagnose(logs)  # positive autocorrelation widens the error (rounds.py)
    se = sd / math.sqrt(count) * found.widening
    return Estimate("paired", mean, se, count - 1, count, count, found)


def unpaired(base: Sequence[float], new: Sequence[float]) -> Estimate | None:
    """Welch's t on log values; None below MIN_TRIALS per side."""
    b = [math.log(x) for x in base if x > 0]
    n = [math.log(x) for x in new if x > 0]
    if min(len(b), len(n)) < MIN_TRIALS:
        return None
    mb, mn = sum(b) / len(b), sum(n) / len(n)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    vn = sum((x - mn) ** 2 for x in n) / (len(n) - 1) / len(n)
    se = math.sqrt(vb + vn)
    if se == 0:
        return Estimate("unpaired", mn - mb, 0.0, len(b) + len(n) - 2, len(b), len(n))
    df = (vb + vn) ** 2 / (
        (vb**2 / (len(b) - 1) if vb else 0.0) + (vn**2 / (len(n) - 1) if vn else 0.0)
    )
    return Estimate("unpaired", mn - mb, se, df, len(b), len(n))


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """BH-adjusted p-values (step-up; an adjusted p below q is a discovery at FDR q)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i], reverse=True)
    adjusted = [1.0] * m
    running = 1.0
    for rank_from_top, i in enumerate(order):
        rank = m - rank_from_top
        running = min(running, pvalues[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


@dataclass(frozen=True)
class Decision:
    verdict: Change
    ratio: float | None  # NEW / BASE
    ci: tuple[float, float] | None  # at the look's level, multiplicity not included
    p: float | None
    p_adjusted: float | None  # Benjamini-Hochberg over the pairs of this metric
    level: float  # the alpha this look tested at
    estimate: Estimate | None  # what was tested (its method, rounds and error); None: too few
    detectable: float | None  # the change found with 80% power at this look (fraction)
    # Codes, never sentences: too_few, no_alpha_left, detectable (an inconclusive's
    # power), correlated_rounds, drifting (djbench.reports.words says them).
    notes: tuple[Notice, ...] = ()
    drifting: bool = False  # the rounds trend (rounds.py): the mean depends on the run's length

    @property
    def method(self) -> str:
        """paired, unpaired or blocked ('' when nothing could be tested)."""
        return self.estimate.method if self.estimate is not None else ""

    def noted(self, code: str) -> bool:
        return any(n.code == code for n in self.notes)


def judge(
    estimates: Sequence[Estimate | None],
    direction: int,
    level: float,
    threshold: float | Sequence[float] = THRESHOLD,
) -> list[Decision]:
    """One metric over many pairs at one look. `direction` +1: higher is better;
    `threshold` one for all, or one per estimate (a scenario's own max_slowdown)."""
    return judge_family([Question(estimates, direction, threshold)], level)[0]


@dataclass(frozen=True)
class Question:
    """One metric over many pairs: its estimates, which way is better, its margins."""

    estimates: Sequence[Estimate | None]
    direction: int
    threshold: float | Sequence[float] = THRESHOLD


def judge_family(questions: Sequence[Question], level: float) -> list[list[Decision]]:
    """Every estimate of every question as one family at one look: each metric's errors
    widened by its own pooled autocorrelation, then Benjamini-Hochberg over all their p
    values together, so the false discovery rate is `level` over every pair, metric
    (and cell, when the caller passes them all) at once."""
    widened = [pooled_widening(q.estimates) for q in questions]
    tested = [(g, i) for g, es in enumerate(widened) for i, e in enumerate(es) if e is not None]
    adjusted = benjamini_hochberg([widened[g][i].p for g, i in tested])  # type: ignore[union-attr]
    by_index = dict(zip(tested, adjusted, strict=True))
    found: list[list[Decision]] = []
    for g, (question, estimates) in enumerate(zip(questions, widened, strict=True)):
        margins = (
            [question.threshold] * len(estimates)
            if isinstance(question.threshold, float | int)
            else list(question.threshold)
        )
        decisions = []
        for i, (e, margin) in enumerate(zip(estimates, margins, strict=True)):
            if e is None:
                decisions.append(
                    Decision("inconclusive", None, None, None, None, level, None, None, (TOO_FEW,))
                )
                continue
            decisions.append(_one(e, by_index[(g, i)], question.direction, level, margin))
        found.append(decisions)
    return found


def pooled_widening(estimates: Sequence[Estimate | None]) -> list[Estimate | None]:
    """Paired estimates judged together share their rounds' machine, so one lag-1
    autocorrelation is estimated from all of them (rounds.pooled_bound: their bias-
    corrected estimates averaged by rounds, plus 0.84 standard errors: one pair's 15
    rounds know it to +/-0.26, four pairs' to +/-0.13; a lone pair's bound is its own).
    Each error is then widened by that bound (never narrowed), once (`pooled`), and its
    t test given the degrees of freedom of the effective number of rounds,
    n / widening**2 - 1."""
    fresh = [e for e in estimates if e is not None and e.rounds is not None and not e.pooled]
    rho = rounds.pooled_bound([e.rounds for e in fresh if e.rounds is not None])
    if rho is None:
        return list(estimates)
    found: list[Estimate | None] = []
    for e in estimates:
        if e is None or e.rounds is None or e.pooled:
            found.append(e)
            continue
        factor = max(e.rounds.widening, widening(rho, e.n_base))
        diagnosis = dataclasses.replace(e.rounds, lag1=round(rho, 4), widening=round(factor, 4))
        df = max(2.0, e.n_base / factor**2 - 1)  # the effective rounds: fewer when alike
        se = e.se / e.rounds.widening * factor
        found.append(dataclasses.replace(e, se=se, df=df, rounds=diagnosis, pooled=True))
    return found


def _one(e: Estimate, p_adj: float, direction: int, level: float, threshold: float) -> Decision:
    if level <= 0:  # a look that spends nothing can decide nothing
        return Decision(
            "inconclusive", round(e.ratio, 4), None, round(e.p, 6), round(p_adj, 6), level,
            e, None, (Notice(code="no_alpha_left"),),
        )  # fmt: skip
    # The (1 - 2 level) interval: the two one-sided tests of equivalence at `level`.
    low, high = e.interval(2 * level)
    change = (e.ratio - 1) * direction  # > 0 is better
    verdict: Change = "inconclusive"
    if p_adj < level and abs(e.ratio - 1) > threshold:
        verdict = "better" if change > 0 else "worse"
    elif 1 - threshold <= low and high <= 1 + threshold:
        verdict = "equivalent"
    seen = powered(e, level)
    notes = e.rounds.notices() if e.rounds is not None else []
    if verdict == "inconclusive":
        notes.insert(0, Notice(code="detectable", params={"change": round(seen, 4)}))
    return Decision(
        verdict,
        round(e.ratio, 4),
        (round(low, 4), round(high, 4)),
        round(e.p, 6),
        round(p_adj, 6),
        level,
        e,
        round(seen, 4),
        tuple(notes),
        drifting=e.rounds is not None and e.rounds.drifting,
    )


def powered(e: Estimate, level: float, power: float = 0.8) -> float:
    """The change (fraction) this estimate's error finds with `power` in a two-sided
    test at `level`: (t_{1 - level/2} + t_power) x se on the log scale (the normal
    approximation to the noncentral t). Not the interval's half-width, at which the
    power is about one half."""
    from scipy import stats as sps

    df = max(e.df, 1.0)
    shift = (float(sps.t.ppf(1 - level / 2, df)) + float(sps.t.ppf(power, df))) * e.se
    return math.exp(shift) - 1


def rounds_needed(
    change: float, pairs: int, alpha: float = ALPHA, sd: float = NOISE_SD, power: float = 0.8
) -> int:
    """Paired rounds for an 80% chance of flagging a `change` (fraction) on one of
    `pairs` pairs: one look at Bonferroni's share of alpha, the noise's variance taken
    LOOK_COST times larger for what the engine's looks cost (the planning bound)."""
    from scipy import stats as sps

    effect = abs(math.log(1 - change)) / math.sqrt(LOOK_COST)
    for n in range(MIN_ROUNDS, 500):
        crit = float(sps.t.ppf(1 - alpha / pairs / 2, n - 1))
        if float(sps.nct.sf(crit, n - 1, effect / sd * math.sqrt(n))) >= power:
            return n
    return 500


def detectable(
    rounds: int, pairs: int, alpha: float = ALPHA, sd: float = NOISE_SD, power: float = 0.8
) -> float | None:
    """The slowdown (fraction) `rounds` paired rounds flag with `power` on one of
    `pairs` pairs at noise `sd`: rounds_needed the other way round (None below
    MIN_ROUNDS, or when even a halving would not be seen)."""
    from scipy import optimize
    from scipy import stats as sps

    if rounds < MIN_ROUNDS or sd <= 0:
        return None
    sd *= math.sqrt(LOOK_COST)
    crit = float(sps.t.ppf(1 - alpha / max(1, pairs) / 2, rounds - 1))

    def short(effect: float) -> float:
        return float(sps.nct.sf(crit, rounds - 1, effect / sd * math.sqrt(rounds))) - power

    most = abs(math.log(0.5))
    if short(most) < 0:
        return None
    return 1 - math.exp(-float(optimize.brentq(short, 1e-9, most)))
