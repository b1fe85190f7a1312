"""When a run looks at its verdicts, and the level each look tests at.

Repeated looks (rounds go on until every pair is decided): four looks over the rounds
the budget allows, alpha spent over them with the power family alpha * t**3 (Kim-DeMets;
close to O'Brien-Fleming), t = rounds done / most rounds; each look tests at the nominal
level of the exact group-sequential boundary for what it spends (sequential.py), so the
chance of any false verdict over all looks is alpha (the horizon is fixed after the
pilot round, before any verdict).

A race (djbench.run.budget's planned rounds) also looks before MIN_ROUNDS: its screens
spend a share of alpha of their own (race_spent).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from djbench.verdicts.engine import sequential
from djbench.verdicts.engine.decide import MIN_ROUNDS

SPENDING_RHO = 3.0  # alpha x t**rho: O'Brien-Fleming-like, most of alpha kept for the end


def spent(alpha: float, done: int, most: int) -> float:
    """Alpha spent by the look after `done` of at most `most` rounds: the power family
    alpha x t**rho of Kim and DeMets, rho = 3 (close to O'Brien-Fleming's boundary).
    Early looks spend little, so a run stops early only on a large change, and the
    final look keeps most of alpha (Pocock's even spending left the last look 0.002 of
    0.05 at 14 rounds and lost the power a 15-minute budget buys)."""
    t = min(1.0, done / most) if most > 0 else 1.0
    return alpha * t**SPENDING_RHO


# A race's screens (looks before MIN_ROUNDS: djbench.run.budget's planned rounds) spend
# this share of alpha between them, evenly; the power family spends the rest. With the
# power family alone a look after round 1 had 1.5e-5 and after round 2 1.2e-4: a
# deployment at half the leader's req/s was never dropped by then (loadtests/harness.py).
SCREEN_SHARE = 0.2


def race_spent(alpha: float, done: int, most: int) -> float:
    """A race's spending: SCREEN_SHARE x alpha over the looks before MIN_ROUNDS (half
    after one round, all after two), plus (1 - SCREEN_SHARE) x `spent`: non-decreasing,
    alpha at `most` (the looks from MIN_ROUNDS on lose a fifth of their level)."""
    early = SCREEN_SHARE * alpha * min(1.0, done / (MIN_ROUNDS - 1))
    return early + (1 - SCREEN_SHARE) * spent(alpha, done, most)


LOOKS = 4  # planned looks over the horizon: few, so that the last keeps most of alpha


def look_rounds(most: int, looks: int = LOOKS) -> list[int]:
    """The rounds after which a run looks: `looks` evenly spaced up to `most`, none
    before MIN_ROUNDS. Few looks: each look costs the last some of its level (exact
    boundaries, alpha 0.05, 15 rounds: 0.041 after 4 looks, less after a look at every
    round)."""
    found = {max(MIN_ROUNDS, math.ceil(most * k / looks)) for k in range(1, looks + 1)}
    return sorted(r for r in found if r <= most) or [most]


def look_level(alpha: float, looks: Sequence[int], most: int, final: bool = False) -> float:
    """The nominal level of the last of `looks` (the rounds done at each look so far),
    from the exact group-sequential boundaries of the spending function at the looks
    made (djbench.verdicts.engine.sequential): together the looks' chance of any false verdict
    is the alpha spent by the last, not less (the union bound tested the last of four
    looks over 15 rounds at 0.024; exact: 0.041). A final look (the last planned round,
    or the budget spent early) spends the rest of alpha."""
    return _look_level(alpha, tuple(looks), most, final)


@functools.lru_cache(maxsize=256)
def _look_level(alpha: float, looks: tuple[int, ...], most: int, final: bool) -> float:
    """look_level, cached: a simulation asks for the same looks thousands of times."""
    if most <= 0 or not looks:
        return alpha
    if len(set(looks)) < len(looks) or list(looks) != sorted(looks):
        raise ValueError(f"looks must be distinct rounds in order: {looks}")
    fractions = [done / max(most, looks[-1]) for done in looks]
    # A design with screens (a look before MIN_ROUNDS: the race's) spends by race_spent.
    spend = race_spent if looks[0] < MIN_ROUNDS else spent
    cumulative = [spend(alpha, done, most) for done in looks]
    if final:
        cumulative[-1] = alpha
    return sequential.nominal_levels(fractions, cumulative)[-1]
