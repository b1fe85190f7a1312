"""Every decision path of djbench by simulation: false alarms and power, as a table.

    python -m loadtests.harness                  # 1000 runs per cell, seed 1
    python -m loadtests.harness --runs 200 --seed 7
    python -m loadtests.harness --race --runs 500   # the plain run's race only (minutes)

Each path calls djbench's own decision functions with the looks it makes:

- matrix: 4 pairs, a look at spending.look_rounds over the default horizon (the rounds
  decide.PLANNED_CHANGE needs on one of 4 pairs: 52), exact group-sequential levels,
  Benjamini-Hochberg over the pairs, stop when decided; its mean rounds on A/A and on
  the "power" case are printed too (what a run costs: a round of 4 pairs took 41-58 s);
- compare: one pair, one look after 15 rounds (benchcompare of two paired runs);
- budget: four deployments raced from the first round (run/budget.py): the leader by
  median against each other by the answer's test after every round (a screen, on fewer
  rounds than the paired test needs, after rounds 1 and 2: those shown slower stop
  there; a drop counts as a "better" call whatever later looks say), rounds added to
  the leader and the open ones only after the planned 3;
- ties: five deployments, the best by median against each other at the run's one look,
  Benjamini-Hochberg over the ten pairs of the five, on the block design's pooled error
  (verdicts/engine/blocks.py's `leader_decisions`, as the guide, the answer and the race use it).

Series (per-round log-ratios of the two sides of a pair): resampled from the recorded
A/A matrix (tests/fixtures/series/aa-matrix.json), block-bootstrapped from it (blocks
of 3 rounds, circular: keeps short-range correlation), smoothed (resampled plus a
Gaussian kernel: a 15-value pool's ties shrink the t test's sd), and synthetic AR(1)
with correlation 0, 0.3, 0.5, with and without a drift (a ramp of +/-5% whose mean is
0: no change on average, but the rounds trend). A/A: no pair changed; "power": one
pair of four x0.90; "race": one deployment at x0.50 of the others, the share of runs
in which the race dropped it within two rounds, among 4 deployments and among 13 (the
default profile's).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path

from djbench.run import budget
from djbench.verdicts.engine import blocks as design
from djbench.verdicts.engine import decide, spending
from djbench.verdicts.ranking import TIE_ALPHA
from loadtests.verdicts import log_ratios

AA = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "series" / "aa-matrix.json"
Series = Callable[[random.Random, int], list[float]]  # n per-round values, mean 0
# The rounds a default --matrix of 4 pairs plans for (run/matrix_cells.horizon): sized
# by power, not by the clock; the 60-minute cap buys them at up to 69 s a round.
HORIZON = decide.rounds_needed(decide.PLANNED_CHANGE, 4)
COMPARED = 15  # rounds of a compare: two paired runs of the default 15 trials at most
SD = 0.2  # decide.NOISE_SD: the recorded per-round sd


def resampled(pool: list[float]) -> Series:
    centred = [x - statistics.fmean(pool) for x in pool]
    return lambda rng, n: [rng.choice(centred) for _ in range(n)]


def smoothed(pool: list[float]) -> Series:
    width = 0.5 * statistics.stdev(pool) * len(pool) ** -0.2  # Silverman's rule, halved
    base = resampled(pool)
    return lambda rng, n: [x + rng.gauss(0, width) for x in base(rng, n)]


def blocks(pool: list[float], size: int = 3) -> Series:
    centred = [x - statistics.fmean(pool) for x in pool]

    def draw(rng: random.Random, n: int) -> list[float]:
        found: list[float] = []
        while len(found) < n:
            start = rng.randrange(len(centred))
            found += [centred[(start + k) % len(centred)] for k in range(size)]
        return found[:n]

    return draw


def ar1(rho: float, sd: float = SD, drift: float = 0.0) -> Series:
    """Stationary AR(1) with marginal sd `sd`, plus a ramp from -drift to +drift."""

    def draw(rng: random.Random, n: int) -> list[float]:
        x, found = rng.gauss(0, sd), []
        for k in range(n):
            found.append(x + (drift * (2 * k / max(1, n - 1) - 1)))
            x = rho * x + rng.gauss(0, sd * math.sqrt(1 - rho * rho))
        return found

    return draw


def matrix(series: Series, shifts: list[float], rng: random.Random) -> list[str]:
    return matrix_run(series, shifts, rng)[0]


def matrix_run(series: Series, shifts: list[float], rng: random.Random) -> tuple[list[str], int]:
    """The matrix's verdicts and the rounds it ran before every pair was decided."""
    drawn = [[x + s for x in series(rng, HORIZON)] for s in shifts]
    looks, made = spending.look_rounds(HORIZON), []
    verdicts = ["inconclusive"] * len(shifts)
    for done in looks:
        made.append(done)
        level = spending.look_level(decide.ALPHA, made, HORIZON, done == HORIZON)
        estimates = [decide.paired([1.0] * done, [math.exp(x) for x in d[:done]]) for d in drawn]
        verdicts = [d.verdict for d in decide.judge(estimates, +1, level)]
        if all(v in decide.DECIDED for v in verdicts):
            break
    return verdicts, made[-1]


def compare(series: Series, shifts: list[float], rng: random.Random) -> list[str]:
    drawn = [math.exp(x + shifts[0]) for x in series(rng, COMPARED)]
    return [decide.judge([decide.paired([1.0] * COMPARED, drawn)], +1, decide.ALPHA)[0].verdict]


def _deployments(series: Series, count: int, rounds: int, rng: random.Random) -> list[list[float]]:
    """Per deployment, log req/s per round: each side half the pair's variance."""
    return [[x / math.sqrt(2) for x in series(rng, rounds)] for _ in range(count)]


def _ranked(sides: list[list[float]], done: int) -> list[list[float]]:
    return sorted((s[:done] for s in sides), key=lambda s: -statistics.median(s))


def _look(sides: list[list[float]], done: list[int], level: float) -> tuple[int, dict[int, str]]:
    """One look of the race: the leader by median over the rounds each ran, and the
    answer's test of it against every other (blocks.leader_decisions: a deployment
    dropped early is compared on the rounds it shares with the leader, as a screen)."""
    order = sorted(range(len(sides)), key=lambda i: -statistics.median(sides[i][: done[i]]))
    rounds = [{r: math.exp(x) for r, x in enumerate(sides[i][: done[i]])} for i in order]
    decisions = design.leader_decisions(rounds, level)
    return order[0], {i: d.verdict for i, d in zip(order[1:], decisions, strict=True)}


def race(series: Series, shifts: list[float], rng: random.Random) -> tuple[list[str], list[int]]:
    """run/budget.py's race from the first round: every deployment (log req/s shifted by
    `shifts`) runs round 1; a look after each planned round but the last drops those the
    leader is shown better than; after the planned 3, each look adds a round to the
    leader and the open ones only (a pair out of the race keeps the rounds it had).
    The last look's verdicts by deployment (the leader's own: "leader") and the rounds
    each ran."""
    planned, count = 3, len(shifts)
    most = planned + budget.EXTRA_ROUNDS_MAX
    sides = [
        [x + s for x in side]
        for side, s in zip(_deployments(series, count, most, rng), shifts, strict=True)
    ]
    done, alive = [1] * count, set(range(count))
    dropped: set[int] = set()
    made: list[int] = []
    verdicts: dict[int, str] = {}
    for look in range(1, most + 1):
        made.append(look)
        level = budget.look_level(planned, made, look == most)
        leader, verdicts = _look(sides, done, level)
        verdicts[leader] = "leader"
        if look < planned:
            dropped |= {i for i, v in verdicts.items() if v == "better"}
            alive -= dropped
            grow = alive
        else:
            # A comparison the leader won at a look (a screen's drop included) is
            # decided: never reopened (run/budget.py).
            dropped |= {i for i, v in verdicts.items() if v == "better"}
            grow = {
                i
                for i, v in verdicts.items()
                if v not in ("better", "equivalent", "leader") and i not in dropped
            }
            if not grow:
                break
            grow.add(leader)
        for i in grow:
            done[i] += 1
    # A comparison won at any look is a "better" call of the leader whatever later looks say.
    return ["better" if i in dropped else verdicts[i] for i in range(count)], done


def budgeted(series: Series, shifts: list[float], rng: random.Random) -> list[str]:
    """The race's last verdicts on four deployments (`race`)."""
    return [v for v in race(series, shifts, rng)[0] if v != "leader"]


def dropped_early(series: Series, runs: int, seed: int, count: int = 4, slow: float = 0.5) -> float:
    """The race with one deployment of `count` at `slow` x the others: the share of runs
    in which it ran at most two rounds (dropped by the first or second look)."""
    rng = random.Random(seed)
    shifts = [0.0] * (count - 1) + [math.log(slow)]
    return sum(race(series, shifts, rng)[1][-1] <= 2 for _ in range(runs)) / runs


def ties(series: Series, shifts: list[float], rng: random.Random) -> list[str]:
    rounds = 5  # the default profile's trials
    ranked = _ranked(_deployments(series, 5, rounds, rng), rounds)
    by_round = [{r: math.exp(x) for r, x in enumerate(side)} for side in ranked]
    return [d.verdict for d in design.leader_decisions(by_round, TIE_ALPHA)]


PATHS = {"matrix": matrix, "compare": compare, "budget": budgeted, "ties": ties}


def kinds() -> dict[str, Series]:
    pools = log_ratios(AA)
    pooled = [x - statistics.fmean(p) for p in pools for x in p]
    return {
        "recorded": resampled(pooled),
        "block-bootstrap": blocks(pools[1]),
        "smoothed": smoothed(pooled),
        "AR(1) 0": ar1(0.0),
        "AR(1) 0.3": ar1(0.3),
        "AR(1) 0.5": ar1(0.5),
        "AR(1) 0.3 + drift": ar1(0.3, drift=0.05),
        # The noise the gate runs of 2026-12-03 measured (sd 0.04-0.05 per round's
        # log-ratio, 3 s windows, gunicorn-sync and uvicorn): the power that day's matrix had.
        "AR(1) 0, sd 0.05": ar1(0.0, sd=0.05),
        "AR(1) 0.3, sd 0.05": ar1(0.3, sd=0.05),
        # A default run's noise (make bench, 2026-12-06, 13 deployments x 3 rounds): the
        # block design's residual, as a per-round log-ratio sd, 0.069-0.076 on each page.
        "AR(1) 0, sd 0.075": ar1(0.0, sd=0.075),
        "AR(1) 0.3, sd 0.075": ar1(0.3, sd=0.075),
        # Rounds side by side (make bench, 2026-12-07 15:10): the block residual of
        # rounds 2-3 was 0.045 on health-sync and 0.100-0.121 on the movie pages.
        "AR(1) 0, sd 0.12": ar1(0.0, sd=0.12),
        "AR(1) 0.3, sd 0.12": ar1(0.3, sd=0.12),
    }


def false_alarm(path: str, series: Series, runs: int, seed: int) -> float:
    rng = random.Random(seed)
    shifts = [0.0] * 4
    return sum(any(v in ("worse", "better") for v in PATHS[path](series, shifts, rng))
               for _ in range(runs)) / runs  # fmt: skip


def power(series: Series, runs: int, seed: int, change: float = 0.10) -> float:
    """The matrix path: one pair of four slowed by `change`, called worse."""
    rng = random.Random(seed)
    shifts = [math.log(1 - change), 0.0, 0.0, 0.0]
    return sum(matrix(series, shifts, rng)[0] == "worse" for _ in range(runs)) / runs


def mean_rounds(series: Series, runs: int, seed: int, change: float = 0.0) -> float:
    """The matrix path's rounds until every pair is decided (or the horizon), on
    average: A/A (`change` 0) or one pair of four slowed by `change`."""
    rng = random.Random(seed)
    shifts = [math.log(1 - change), 0.0, 0.0, 0.0]
    return statistics.fmean(matrix_run(series, shifts, rng)[1] for _ in range(runs))


def race_table(runs: int, seed: int) -> Iterator[str]:
    """The plain run's paths only (`--race`): the race's false calls on A/A and the
    x0.50 deployment dropped within two rounds, among 4 and among 13."""
    yield (f"the race (run/budget.py): false 'worse/better' on A/A among 4 ({runs} runs); "
           f"x0.50 dropped within two rounds among 4 / 13 ({runs} / {max(1, runs // 5)} runs), "
           f"seed {seed}")  # fmt: skip
    yield f"{'series':<20}{'budget':>10}{'race 4/13':>14}"
    for name, series in kinds().items():
        calls = false_alarm("budget", series, runs, seed)
        four = dropped_early(series, runs, seed)
        thirteen = dropped_early(series, max(1, runs // 5), seed, 13)
        yield f"{name:<20}{calls:>10.1%}{four:>7.0%} /{thirteen:>4.0%}"


def table(runs: int, seed: int) -> Iterator[str]:
    """The table's lines, each as soon as its series is done (a row takes minutes)."""
    found = kinds()
    head = (f"{'series':<20}" + "".join(f"{p:>10}" for p in PATHS) + f"{'power':>10}"
            + f"{'rounds':>14}" + f"{'race 4/13':>14}")  # fmt: skip
    yield (f"false 'worse/better' on A/A ({runs} runs each, seed {seed}); power: "
           f"one pair of four x0.90 found worse by the matrix (horizon {HORIZON} rounds); "
           "rounds: the matrix's mean rounds, A/A / x0.90; race: x0.50 dropped within "
           f"two rounds among 4 / 13 deployments ({runs} / {max(1, runs // 5)} runs)")  # fmt: skip
    yield head
    for name, series in found.items():
        cells = [false_alarm(p, series, runs, seed) for p in PATHS]
        spent = [mean_rounds(series, runs, seed, c) for c in (0.0, 0.10)]
        raced = [
            dropped_early(series, runs, seed),
            dropped_early(series, max(1, runs // 5), seed, 13),
        ]
        yield (
            f"{name:<20}" + "".join(f"{c:>10.1%}" for c in cells)
            + f"{power(series, runs, seed):>10.1%}"
            + f"{spent[0]:>8.1f} /{spent[1]:>4.0f}"
            + f"{raced[0]:>7.0%} /{raced[1]:>4.0%}"
        )  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--race", action="store_true", help="the plain run's race only")
    args = parser.parse_args()
    for line in (race_table if args.race else table)(args.runs, args.seed):
        print(line, flush=True)
