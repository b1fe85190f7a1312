"""The decision engine: one rule for every verdict djbench gives on "did it change?".

Used by ``benchcompare`` (two runs), ``--matrix`` (cells in one command) and whatever
else compares two sides. Four verdicts, all from one interval of the ratio NEW / BASE:

- ``worse`` / ``better``: significant (Benjamini-Hochberg-adjusted p below the look's
  alpha) and the estimate beyond the threshold in that direction (asv's rule: both);
- ``equivalent``: the interval lies within +/- the threshold ("no change beyond 5%");
- ``inconclusive``: neither; it says the smallest change this run could have seen.

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

Many pairs: Benjamini-Hochberg per metric (false discovery rate, not Holm's any-false-
alarm rate: with 39 pairs Holm needs a p 39 times smaller for the first flag).

Repeated looks (rounds go on until every pair is decided): four looks over the rounds
the budget allows, alpha spent over them with the power family alpha * t**3 (Kim-DeMets;
close to O'Brien-Fleming), t = rounds done / most rounds; each look tests at the
increment it spends, so the chance of any false verdict over all looks is at most
alpha (a union bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["worse", "better", "equivalent", "inconclusive"]
DECIDED: frozenset[str] = frozenset({"worse", "better", "equivalent"})

THRESHOLD = 0.05  # the smallest change that counts, and the equivalence margin: one value
ALPHA = 0.05  # false discovery rate per metric, over all pairs and all looks
MIN_ROUNDS = 3  # paired: the first look (2 degrees of freedom)
MIN_TRIALS = 2  # unpaired: per side
# The sd of a per-round log-ratio on this machine, for planning only: 0.14-0.28 over the
# four pairs of a 15-round matrix (3 s windows, gunicorn-sync and uvicorn x health-sync
# and movies-sync, 2026-11-30; tests/fixtures/series/worse-matrix.json); 0.12-0.13 on a
# quieter day (2 s windows, gunicorn-sync).
NOISE_SD = 0.2


@dataclass(frozen=True)
class Estimate:
    """The log-ratio NEW / BASE of one metric of one pair, with its spread."""

    method: Literal["paired", "unpaired"]
    mean: float  # mean log-ratio
    se: float  # its standard error
    df: float  # degrees of freedom of its t distribution
    n_base: int
    n_new: int

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

    @property
    def label(self) -> str:
        if self.method == "paired":
            return f"paired t on {self.n_base} per-round log-ratios"
        return f"Welch t on log values, {self.n_base} vs {self.n_new} trials"


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
    return Estimate("paired", mean, sd / math.sqrt(count), count - 1, count, count)


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


SPENDING_RHO = 3.0  # alpha x t**rho: O'Brien-Fleming-like, most of alpha kept for the end


def spent(alpha: float, done: int, most: int) -> float:
    """Alpha spent by the look after `done` of at most `most` rounds: the power family
    alpha x t**rho of Kim and DeMets, rho = 3 (close to O'Brien-Fleming's boundary).
    Early looks spend little, so a run stops early only on a large change, and the
    final look keeps most of alpha (Pocock's even spending left the last look 0.002 of
    0.05 at 14 rounds and lost the power a 15-minute budget buys)."""
    t = min(1.0, done / most) if most > 0 else 1.0
    return alpha * t**SPENDING_RHO


LOOKS = 4  # planned looks over the horizon: few, so that the last keeps most of alpha


def look_rounds(most: int, looks: int = LOOKS) -> list[int]:
    """The rounds after which a run looks: `looks` evenly spaced up to `most`, none
    before MIN_ROUNDS. Few looks: with a union bound each look's share is its own, and
    looking after every one of 15 rounds left the last look 0.009 of 0.05 (4 looks:
    0.024)."""
    found = {max(MIN_ROUNDS, math.ceil(most * k / looks)) for k in range(1, looks + 1)}
    return sorted(r for r in found if r <= most) or [most]


def look_alpha(
    alpha: float, done: int, most: int, previous: int | None, final: bool = False
) -> float:
    """What the look after `done` rounds may spend: the increment since the previous
    look; a final look (the last planned round, or the budget spent) spends the rest."""
    before = spent(alpha, previous, most) if previous is not None else 0.0
    now = alpha if final else spent(alpha, done, most)
    return max(now - before, 0.0)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    ratio: float | None  # NEW / BASE
    ci: tuple[float, float] | None  # at the look's level, multiplicity not included
    p: float | None
    p_adjusted: float | None  # Benjamini-Hochberg over the pairs of this metric
    level: float  # the alpha this look tested at
    method: str
    detectable: float | None  # the smallest change the interval could exclude (fraction)
    note: str = ""


def judge(
    estimates: Sequence[Estimate | None],
    direction: int,
    level: float,
    threshold: float = THRESHOLD,
) -> list[Decision]:
    """One metric over many pairs at one look. `direction` +1: higher is better."""
    tested = [i for i, e in enumerate(estimates) if e is not None]
    adjusted = benjamini_hochberg([estimates[i].p for i in tested])  # type: ignore[union-attr]
    by_index = dict(zip(tested, adjusted, strict=True))
    found = []
    for i, e in enumerate(estimates):
        if e is None:
            found.append(
                Decision("inconclusive", None, None, None, None, level, "", None, "too few")
            )
            continue
        found.append(_one(e, by_index[i], direction, level, threshold))
    return found


def _one(e: Estimate, p_adj: float, direction: int, level: float, threshold: float) -> Decision:
    if level <= 0:  # a look that spends nothing can decide nothing
        return Decision(
            "inconclusive", round(e.ratio, 4), None, round(e.p, 6), round(p_adj, 6), level,
            e.label, None, "no alpha left at this look",
        )  # fmt: skip
    # The (1 - 2 level) interval: the two one-sided tests of equivalence at `level`.
    low, high = e.interval(2 * level)
    change = (e.ratio - 1) * direction  # > 0 is better
    half = (high - low) / 2
    verdict: Verdict = "inconclusive"
    if p_adj < level and abs(e.ratio - 1) > threshold:
        verdict = "better" if change > 0 else "worse"
    elif 1 - threshold <= low and high <= 1 + threshold:
        verdict = "equivalent"
    note = (
        f"changes beyond about ±{half:.0%} would have been seen"
        if verdict == "inconclusive"
        else ""
    )
    return Decision(
        verdict,
        round(e.ratio, 4),
        (round(low, 4), round(high, 4)),
        round(e.p, 6),
        round(p_adj, 6),
        level,
        e.label,
        round(half, 4),
        note,
    )


def rounds_needed(
    change: float, pairs: int, alpha: float = ALPHA, sd: float = NOISE_SD, power: float = 0.8
) -> int:
    """Paired rounds for an 80% chance of flagging a `change` (fraction) on one of
    `pairs` pairs at one final look (Bonferroni's share of alpha: the planning bound)."""
    from scipy import stats as sps

    effect = abs(math.log(1 - change))
    for n in range(MIN_ROUNDS, 500):
        crit = float(sps.t.ppf(1 - alpha / pairs / 2, n - 1))
        if float(sps.nct.sf(crit, n - 1, effect / sd * math.sqrt(n))) >= power:
            return n
    return 500
