"""The race from the first round (run/budget.py's planned rounds, verdicts/open_questions.py
and the engine's screens, verdicts/engine/blocks.py): who a look stops measuring, by
simulation with fixed seeds and on recorded-shape results."""

from __future__ import annotations

import math
import random

from djbench.verdicts.engine import blocks, decide
from djbench.verdicts.open_questions import beaten, look_level, open_questions, out_of_contention
from djbench.verdicts.ranking import rank
from djbench.verdicts.runs import Pair
from loadtests import harness
from tests.resultfiles import entry


def _round_one(rps: list[float]) -> list[dict[int, float]]:
    return [{0: x} for x in rps]


def test_a_deployment_far_behind_is_dropped_by_the_first_look_and_a_close_one_is_not() -> None:
    # After one round nothing in the data says the noise: the screen assumes a per-round
    # sd above any recorded here (decide.SCREEN_SD) and the race's first look its level.
    level = look_level(3, [1], False)
    leader, far, close = 4300.0, 340.0, 2600.0  # 0.08x and 0.60x (a default run's spread)
    decisions = blocks.leader_decisions(_round_one([leader, 4100.0, close, far]), level)
    verdicts = [d.verdict for d in decisions]
    assert verdicts == ["inconclusive", "inconclusive", "better"]
    assert all(d.method == "screened" for d in decisions)
    assert decisions[2].estimate is not None and math.isinf(decisions[2].estimate.df)


def test_a_screen_on_two_rounds_pools_the_deployments_and_never_claims_less_than_the_floor() -> (
    None
):
    rng = random.Random(3)
    series = [{r: 1000.0 * math.exp(rng.gauss(0, 0.05)) for r in range(2)} for _ in range(6)]
    series.append({0: 500.0, 1: 510.0})  # half the others
    [estimate] = blocks.between(series, [(0, 6)])
    assert estimate is not None and estimate.method == "screened"
    assert estimate.df == (7 - 1) * (2 - 1)  # the additive model over the two rounds
    identical = [{0: 1000.0, 1: 1000.0} for _ in range(4)]
    [flat] = blocks.between(identical, [(0, 1)])
    assert flat is not None and math.isclose(flat.se, decide.SCREEN_FLOOR_SD / math.sqrt(2))


def test_a_dropped_deployment_is_a_screen_beside_the_block_design_of_the_rounds_after() -> None:
    # The leader and two others ran four rounds; a fourth was dropped after round 1: the
    # design is estimated from the rows that ran the rounds, the dropped one screened.
    rng = random.Random(5)
    full = [{r: base * math.exp(rng.gauss(0, 0.04)) for r in range(4)} for base in (1000, 980, 960)]
    dropped = {0: 200.0}
    found = blocks.between([*full, dropped], [(0, 1), (0, 3)])
    assert [e.method if e else None for e in found] == ["blocked", "screened"]
    assert found[1] is not None and found[1].df == (3 - 1) * (4 - 1)


def test_a_look_drops_who_is_out_everywhere_and_keeps_who_is_open_anywhere() -> None:
    results = [
        entry("uwsgi", "health-sync", [4300.0]),
        entry("uwsgi", "movies-sync", [520.0]),
        entry("uvicorn-h11", "health-sync", [340.0]),  # out on both pages
        entry("uvicorn-h11", "movies-sync", [40.0]),
        entry("daphne", "health-sync", [330.0]),  # out on one, open on the other
        entry("daphne", "movies-sync", [500.0]),
        entry("hypercorn", "health-sync", [], status="failed"),
        entry("hypercorn", "movies-sync", [], status="failed"),
    ]
    labels = ["uwsgi", "uvicorn-h11", "daphne", "hypercorn"]
    found = {
        d.label: d for d in out_of_contention(results, "run", look_level(3, [1], False), labels)
    }
    assert set(found) == {"uvicorn-h11", "hypercorn"}
    assert [round(r, 3) for r in found["uvicorn-h11"].ratios] == [0.077, 0.079]
    assert found["hypercorn"].failed and not found["uvicorn-h11"].failed


def test_the_race_drops_half_the_leader_within_two_rounds_at_a_default_runs_noise() -> None:
    # loadtests/harness.py's race, 13 deployments (the default profile's), one at x0.5,
    # at the noise a default run's block design measured (per-round sd 0.069-0.076).
    series = harness.kinds()["AR(1) 0.3, sd 0.075"]
    assert harness.dropped_early(series, 40, 1, count=13) >= 0.95


def test_a_deployment_the_race_dropped_is_never_reopened_nor_tied_with_the_leader() -> None:
    # Dropped after round 2 at the screen's level (0.0062); the look after round 3 tests
    # at 0.00069, at which its two rounds may no longer separate it: decided, not reopened.
    results = [
        entry("uwsgi", "health-sync", [4300.0, 4350.0, 4280.0]),
        entry("granian-wsgi", "health-sync", [4200.0, 4250.0, 4310.0]),
        entry("gunicorn-sync", "health-sync", [4100.0, 4150.0, 4120.0]),
        entry("daphne", "health-sync", [2900.0, 3300.0]),
    ]
    level = look_level(3, [1, 2, 3], False)
    still = {q.other for q in open_questions(results, "run", level)}
    assert "daphne" in still  # the later look alone would reopen it
    assert "daphne" not in {
        q.other for q in open_questions(results, "run", level, frozenset({"daphne"}))
    }
    pairs = [Pair("run", e) for e in results]
    assert "daphne" in {p.label for p in rank(pairs, level).winners}
    assert "daphne" not in {p.label for p in rank(pairs, level, frozenset({"daphne"})).winners}


def test_a_comparison_the_leader_won_at_a_look_stays_won() -> None:
    # The race after the planned rounds: won at a look with a higher level, open at the
    # next (a lower level) by the test alone; the race keeps it closed.
    from djbench.results.model import RunDocument
    from djbench.run.budget import _still_open
    from tests.resultfiles import document

    results = [
        entry("uwsgi", "health-sync", [4300.0, 4350.0, 4280.0]),
        entry("granian-wsgi", "health-sync", [4200.0, 4250.0, 4310.0]),
        entry("gunicorn-sync", "health-sync", [3500.0, 3700.0, 3300.0]),
    ]
    doc: RunDocument = document("run", results)
    closed: set[tuple[str, str, int | None]] = set()
    high, low = 0.2, 1e-6
    won = {q.other for q in beaten(results, "run", high)}
    assert "gunicorn-sync" in won and "gunicorn-sync" not in {
        q.other for q in _still_open(doc, high, frozenset(), closed)
    }
    assert "gunicorn-sync" in {q.other for q in open_questions(results, "run", low)}
    assert "gunicorn-sync" not in {q.other for q in _still_open(doc, low, frozenset(), closed)}


def test_rounds_that_share_a_lifetime_are_one_unit_of_a_test() -> None:
    """Issue 56, item 2: where a server lifetime has luck of its own (loadtests/
    lifetime_luck.py found it, F p 0.001-0.005), rounds served by one lifetime are not
    independent. An A/A pair over 5 lifetimes of 3 rounds each, lifetime luck as large
    as a window's spread: tested on the 15 rounds (the autocorrelation bound included)
    it is called apart about twice as often as alpha; on the 5 lifetimes' means (the
    lifetime as the block) at alpha. Why a round is one lifetime in djbench."""
    import numpy as np

    rng = np.random.default_rng(1)
    runs, lifetimes, per, luck_sd, window_sd = 2000, 5, 3, 0.03, 0.03
    by_round = by_lifetime = 0
    for _ in range(runs):
        luck = rng.normal(0, luck_sd * math.sqrt(2), lifetimes)  # not shared by the sides
        logs = np.repeat(luck, per) + rng.normal(0, window_sd * math.sqrt(2), lifetimes * per)
        rounds = decide.paired([1.0] * len(logs), [math.exp(x) for x in logs])
        means = logs.reshape(lifetimes, per).mean(axis=1)
        blocks = decide.paired([1.0] * lifetimes, [math.exp(x) for x in means])
        assert rounds is not None and blocks is not None
        by_round += rounds.p < decide.ALPHA
        by_lifetime += blocks.p < decide.ALPHA
    assert by_round / runs >= 0.08  # measured 9.2% at this seed
    assert by_lifetime / runs <= 0.06  # measured 5.0%
