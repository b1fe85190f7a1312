"""The decision engine: its units, and its error rates by simulation on per-round
series recorded on this machine (loadtests/verdicts.py; the fixtures name their run)."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest

from djbench.results import decide
from loadtests import verdicts

SERIES = Path(__file__).parent / "fixtures" / "series"
AA = SERIES / "aa-matrix.json"  # two cells with the same code: nothing changed


def test_alpha_spent_over_the_looks_adds_up_to_alpha_at_most() -> None:
    most, previous, total = 15, None, 0.0
    for done in range(decide.MIN_ROUNDS, most + 1):
        total += decide.look_alpha(0.05, done, most, previous, final=done == most)
        previous = done
    assert total == pytest.approx(0.05)
    # Stopped early by the budget: the last look spends what is left, never more.
    early = decide.look_alpha(0.05, 3, 15, None) + decide.look_alpha(0.05, 6, 15, 3, final=True)
    assert early == pytest.approx(0.05)


def test_paired_and_unpaired_estimates() -> None:
    base = [1000.0, 1100.0, 900.0, 1050.0]
    new = [850.0, 935.0, 765.0, 892.5]  # every round x0.85: no spread at all
    e = decide.paired(base, new)
    assert e is not None and e.ratio == pytest.approx(0.85) and e.p < 1e-6
    assert decide.paired(base[:2], new[:2]) is None  # below MIN_ROUNDS
    w = decide.unpaired(base, new)
    assert w is not None and w.ratio == pytest.approx(0.85, rel=1e-3) and w.df > 3
    # The paired test sees what the unpaired one cannot: round-to-round drift cancels.
    assert e.p < w.p


def test_the_four_verdicts_come_from_one_interval() -> None:
    def verdict(ratios: list[float]) -> str:
        e = decide.paired([1.0] * len(ratios), ratios)
        return decide.judge([e], +1, 0.05)[0].verdict

    assert verdict([0.80, 0.82, 0.79, 0.81, 0.80]) == "worse"
    assert verdict([1.20, 1.22, 1.19, 1.21, 1.20]) == "better"
    assert verdict([1.00, 1.01, 0.99, 1.00, 1.005]) == "equivalent"
    assert verdict([0.97, 0.98, 0.97, 0.98, 0.975]) == "equivalent"  # real, but within 5%
    assert verdict([0.7, 1.3, 0.9, 1.2, 0.8]) == "inconclusive"
    # Lower is better for latency: a rise is worse.
    e = decide.paired([1.0] * 5, [1.20, 1.22, 1.19, 1.21, 1.20])
    assert decide.judge([e], -1, 0.05)[0].verdict == "worse"


def test_planning_counts_the_pairs() -> None:
    one, many = decide.rounds_needed(0.10, 1), decide.rounds_needed(0.10, 39)
    assert decide.MIN_ROUNDS <= one < many
    assert decide.rounds_needed(0.15, 4) < decide.rounds_needed(0.05, 4)


def aa_pools() -> list[list[float]]:
    pools = verdicts.log_ratios(AA)
    assert len(pools) >= 4 and all(len(p) >= 8 for p in pools)
    return pools


def test_false_alarms_on_recorded_aa_series_stay_under_alpha() -> None:
    pools = aa_pools()
    null = [0.0] * len(pools)
    spent = verdicts.rates(pools, null, most=15, runs=400, seed=3)
    assert spent["false_alarm"] <= decide.ALPHA
    # Looking after every round at the full alpha is what the spending prevents.
    naive = verdicts.rates(pools, null, most=15, runs=400, seed=3, spend=False)
    assert naive["false_alarm"] >= spent["false_alarm"]


def test_a_15_percent_regression_on_recorded_noise_is_found_more_often_than_not() -> None:
    # This machine's recorded noise (per-round sd 0.15-0.25) in the 15 rounds a
    # 15-minute budget buys: both changed pairs flagged in about 2 runs of 3 (the
    # README gives the figure); the unchanged pairs stay clean.
    pools = aa_pools()
    shifts = [math.log(0.85) if i % 2 == 0 else 0.0 for i in range(len(pools))]
    r = verdicts.rates(pools, shifts, most=15, runs=300, seed=5)
    assert r["power"] >= 0.5, r
    assert r["false_alarm"] <= decide.ALPHA, r
    # A larger change is found nearly always.
    larger = [math.log(0.75) if s else 0.0 for s in shifts]
    assert verdicts.rates(pools, larger, most=15, runs=200, seed=6)["power"] >= 0.9


def test_unpaired_false_alarms_on_recorded_trials_stay_under_alpha() -> None:
    # Two separate runs drawn from the same recorded trials: Welch's t on logs.
    pools = aa_pools()
    rng = random.Random(11)
    false, runs = 0, 600
    for _ in range(runs):
        estimates = []
        for pool in pools:
            centred = [x - statistics.fmean(pool) for x in pool]
            base = [math.exp(rng.choice(centred)) for _ in range(6)]
            new = [math.exp(rng.choice(centred)) for _ in range(6)]
            estimates.append(decide.unpaired(base, new))
        decisions = decide.judge(estimates, +1, decide.ALPHA)
        false += any(d.verdict in ("worse", "better") for d in decisions)
    # At most alpha within the simulation's own error (3 standard errors of a rate of
    # alpha over `runs` draws: resampling 15 recorded values makes ties that a real
    # run would not have, which flatters the variance a little).
    assert false / runs <= decide.ALPHA + 3 * math.sqrt(decide.ALPHA * (1 - decide.ALPHA) / runs)
