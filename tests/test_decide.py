"""The decision engine: its units, and its error rates by simulation on per-round
series recorded on this machine (loadtests/verdicts.py; the fixtures name their run)."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest

from djbench.verdicts.engine import decide, sequential, spending
from loadtests import verdicts

SERIES = Path(__file__).parent / "fixtures" / "series"
AA = SERIES / "aa-matrix.json"  # two cells with the same code: nothing changed


def test_boundaries_match_the_published_tables() -> None:
    """Jennison and Turnbull (2000), Tables 2.1 and 2.3, K = 4 equal looks, two-sided
    0.05: Pocock's constant 2.361, O'Brien-Fleming's 2.024; and the Lan-DeMets
    O'Brien-Fleming-type spending boundaries for one-sided 0.025 (ldbounds, gsDesign's
    sfLDOF): 4.3326, 2.9631, 2.3590, 2.0141."""
    from scipy import optimize
    from scipy.stats import norm

    t = [0.25, 0.5, 0.75, 1.0]

    def total(bounds: list[float]) -> float:
        return sum(sequential.crossing_probabilities(t, bounds))

    pocock = optimize.brentq(lambda c: total([c] * 4) - 0.05, 1.5, 4)
    obf = optimize.brentq(lambda c: total([c * math.sqrt(4 / k) for k in range(1, 5)]) - 0.05, 1, 4)
    assert pocock == pytest.approx(2.361, abs=6e-4)
    assert obf == pytest.approx(2.024, abs=6e-4)
    spending = [2 * (2 - 2 * norm.cdf(norm.isf(0.0125) / math.sqrt(x))) for x in t]
    found = sequential.boundaries(t, spending)
    assert found == pytest.approx([4.3326, 2.9631, 2.3590, 2.0141], abs=2e-4)


def test_the_looks_spend_exactly_alpha_and_the_last_keeps_more_than_a_union_bound() -> None:
    most, looks = 15, spending.look_rounds(15)
    levels = [spending.look_level(0.05, looks[: k + 1], most, k == len(looks) - 1)
              for k in range(len(looks))]  # fmt: skip
    fractions = [r / most for r in looks]
    bounds = [float(norm_isf(level / 2)) for level in levels]
    assert sum(sequential.crossing_probabilities(fractions, bounds)) == pytest.approx(
        0.05, abs=1e-4
    )
    assert levels[-1] == pytest.approx(0.041, abs=1e-3)  # the union bound's: 0.024
    # Stopped early by the budget: the last look spends what is left, and no more.
    early = [spending.look_level(0.05, [3], most), spending.look_level(0.05, [3, 6], most, True)]
    bounds = [float(norm_isf(level / 2)) for level in early]
    assert sum(sequential.crossing_probabilities([3 / 15, 6 / 15], bounds)) == pytest.approx(
        0.05, abs=1e-4
    )


def norm_isf(p: float) -> float:
    from scipy.stats import norm

    return float(norm.isf(p))


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


def smoothed_pools() -> list[list[float]]:
    rng = random.Random(9)
    return [
        [x + rng.gauss(0, 0.5 * statistics.stdev(p) * len(p) ** -0.2) for _ in range(40) for x in p]
        for p in aa_pools()
    ]


def test_false_alarms_on_recorded_aa_series_stay_under_alpha(one_pass: None) -> None:
    # Smoothed (a Gaussian kernel on each value): resampling 15 values with replacement
    # makes ties that shrink the t test's sd, 6.1% false alarms at one fixed look of 15
    # rounds and 5.6-5.9% with the exact sequential looks (2000 runs): the looks add
    # nothing; smoothed, 4.95% (loadtests/harness.py prints both).
    pools = smoothed_pools()
    null = [0.0] * len(pools)
    spent = verdicts.rates(pools, null, most=15, runs=400, seed=3)
    assert spent["false_alarm"] <= decide.ALPHA
    # Looking after every round at the full alpha is what the spending prevents.
    naive = verdicts.rates(pools, null, most=15, runs=400, seed=3, spend=False)
    assert naive["false_alarm"] >= spent["false_alarm"]


def test_a_15_percent_regression_on_the_noisy_recording_is_often_found(one_pass: None) -> None:
    # The noisiest recording here (2026-11-30, per-round sd 0.15-0.25) in the 15 rounds
    # a 15-minute budget buys: each changed pair flagged in 39% of runs since the error
    # is widened by an upper bound of the rounds' correlation (rounds.pooled_bound; it
    # was 2 runs in 3 with the estimate alone, which let A/A series correlated at 0.3
    # through 6-8% of the time); a quieter day's noise (sd 0.04-0.05) finds it nearly
    # always (loadtests/harness.py). The unchanged pairs stay clean.
    pools = smoothed_pools()  # see the test above
    shifts = [math.log(0.85) if i % 2 == 0 else 0.0 for i in range(len(pools))]
    r = verdicts.rates(pools, shifts, most=15, runs=300, seed=5)
    assert r["power"] >= 0.33 and r["any_found"] >= 0.6, r
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


def test_the_detectable_change_is_the_planning_bound_the_other_way_round() -> None:
    for change, pairs in ((0.10, 1), (0.15, 4), (0.25, 2)):
        needed = decide.rounds_needed(change, pairs, 0.05, 0.2)
        seen = decide.detectable(needed, pairs, 0.05, 0.2)
        assert seen is not None and seen <= change  # those rounds see that change
        before = decide.detectable(needed - 1, pairs, 0.05, 0.2)
        assert before is None or before > change  # one round fewer does not
    assert decide.detectable(decide.MIN_ROUNDS - 1, 1) is None
    assert decide.detectable(3, 40, 0.05, 0.5) is None  # not even a halving


def test_judge_takes_a_threshold_per_pair() -> None:
    e = decide.paired([1.0] * 5, [0.97, 0.971, 0.969, 0.97, 0.97])
    wide, tight = decide.judge([e, e], +1, 0.05, [0.05, 0.02])
    assert (wide.verdict, tight.verdict) == ("equivalent", "worse")


def test_every_decision_path_keeps_its_false_alarms_on_independent_and_correlated_rounds(
    one_pass: None,
) -> None:
    # loadtests/harness.py with a fixed seed and small counts: the budget's looks and the
    # ties' family were the paths that called identical deployments apart (18-21% and 25%),
    # and at a lag-1 correlation of 0.3 the paths without the autocorrelation bound 6-12%.
    from loadtests import harness

    series = harness.kinds()
    for path in harness.PATHS:
        for kind in ("recorded", "AR(1) 0", "AR(1) 0.3"):
            rate = harness.false_alarm(path, series[kind], 150, 1)
            assert rate <= decide.ALPHA, (path, kind, rate)
