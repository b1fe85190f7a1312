"""The decision engine by simulation on series recorded on this machine.

    python loadtests/verdicts.py tests/fixtures/series/aa-matrix.json   # the rates
    python loadtests/verdicts.py --record MATRIX.json OUT.json           # a new fixture

Each recorded series is the per-round req/s of both sides of one pair from a
``--matrix`` run whose two cells ran the same code (an A/A run). Resampling its
per-round log-ratios (centred, so the null is exactly true) gives matrices that never
changed; adding a known shift gives ones that did. Both go through the procedure
``--matrix`` uses (looks from decide.MIN_ROUNDS on, alpha spent over the looks,
Benjamini-Hochberg over the pairs, the 5% threshold), and the printed rates are the
false-alarm rate and the power, with the rounds a verdict needed.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from djbench.verdicts.engine import decide, spending


def record(matrix_file: Path) -> dict[str, object]:
    """Per pair of a matrix (base cell against the other), req/s per round, both sides."""
    from djbench.results import store
    from djbench.verdicts.runs import load_cell

    document = store.load_matrix(matrix_file)
    base, new = (
        load_cell([Path(f) for f in c.run_files], c.label)
        for c in sorted(document.cells, key=lambda c: c.label != document.base)
    )
    others = {p.key: p for p in new.pairs}
    pairs = []
    for b in base.pairs:
        n = others.get(b.key)
        if n is None:
            continue
        bs, ns = b.by_round("rps"), n.by_round("rps")
        rounds = sorted(set(bs) & set(ns))
        pairs.append(
            {
                "label": f"{b.label} {b.scenario} c{b.concurrency}",
                "base": [round(bs[r], 2) for r in rounds],
                "new": [round(ns[r], 2) for r in rounds],
            }
        )
    return {"source": document.matrix_id, "cells": [c.label for c in document.cells],
            "pairs": pairs}  # fmt: skip


def log_ratios(path: Path) -> list[list[float]]:
    """Per pair, the recorded per-round log-ratios NEW / BASE."""
    data = json.loads(path.read_text())
    return [
        [math.log(n / b) for b, n in zip(p["base"], p["new"], strict=True) if b > 0 and n > 0]
        for p in data["pairs"]
    ]


@dataclass
class Outcome:
    verdicts: list[str]  # per pair, at the end
    rounds: int  # rounds run before stopping


def one_matrix(
    pools: list[list[float]],
    shifts: list[float],
    most: int,
    rng: random.Random,
    alpha: float = decide.ALPHA,
    threshold: float = decide.THRESHOLD,
    spend: bool = True,
) -> Outcome:
    """A simulated --matrix: one round at a time, a look at spending.look_rounds, stop
    when every pair is decided or at `most` rounds. `spend` False: a look after every
    round from MIN_ROUNDS on, each at the full alpha (the naive procedure, for
    contrast)."""
    centred = [
        [x - mean for x in pool]
        for pool, mean in zip(pools, map(statistics.fmean, pools), strict=True)
    ]
    series: list[list[float]] = [[] for _ in pools]
    made: list[int] = []
    verdicts = ["inconclusive"] * len(pools)
    looks = spending.look_rounds(most) if spend else list(range(decide.MIN_ROUNDS, most + 1))
    for done in range(1, most + 1):
        for i, pool in enumerate(centred):
            series[i].append(rng.choice(pool) + shifts[i])
        if done not in looks:
            continue
        final = done == most
        made.append(done)
        level = spending.look_level(alpha, made, most, final) if spend else alpha
        estimates = [decide.paired([1.0] * len(s), [math.exp(x) for x in s]) for s in series]
        decisions = decide.judge(estimates, +1, level, threshold)
        verdicts = [d.verdict for d in decisions]
        if all(v in decide.DECIDED for v in verdicts) or final:
            return Outcome(verdicts, done)
    return Outcome(verdicts, most)


def rates(
    pools: list[list[float]], shifts: list[float], most: int, runs: int, seed: int = 1,
    spend: bool = True,
) -> dict[str, float]:  # fmt: skip
    rng = random.Random(seed)
    outcomes = [one_matrix(pools, shifts, most, rng, spend=spend) for _ in range(runs)]
    changed = [i for i, s in enumerate(shifts) if s]
    same = [i for i, s in enumerate(shifts) if not s]
    false = sum(any(o.verdicts[i] in ("worse", "better") for i in same) for o in outcomes)
    found = sum(all(o.verdicts[i] == "worse" for i in changed) for o in outcomes) if changed else 0
    some = sum(any(o.verdicts[i] == "worse" for i in changed) for o in outcomes) if changed else 0
    return {
        "false_alarm": false / runs,  # any unchanged pair called worse or better
        "power": found / runs if changed else float("nan"),  # every changed pair called worse
        "any_found": some / runs if changed else float("nan"),  # at least one: exit code 1
        "equivalent": (
            sum(all(o.verdicts[i] == "equivalent" for i in same) for o in outcomes) / runs
            if same
            else float("nan")
        ),
        "median_rounds": statistics.median(o.rounds for o in outcomes),
    }


def main(path: Path, most: int = 14, runs: int = 2000) -> None:
    pools = log_ratios(path)
    sds = [statistics.stdev(p) for p in pools]
    shown = ", ".join(f"{s:.3f}" for s in sds)
    print(f"{path}: {len(pools)} pairs, per-round log-ratio sd {shown}")
    null = [0.0] * len(pools)
    half = [math.log(0.85) if i < len(pools) // 2 else 0.0 for i in range(len(pools))]
    for name, shifts, spend in (
        ("A/A, alpha spent over the looks", null, True),
        ("A/A, every look at full alpha (naive)", null, False),
        ("half the pairs x0.85", half, True),
        ("half the pairs x0.90", [math.log(0.90) if s else 0.0 for s in half], True),
        ("half the pairs x0.75", [math.log(0.75) if s else 0.0 for s in half], True),
        ("every pair x0.85", [math.log(0.85)] * len(pools), True),
    ):
        r = rates(pools, shifts, most, runs, spend=spend)
        print(
            f"  {name}: false alarms {r['false_alarm']:.1%}, every changed pair worse "
            f"{r['power']:.1%}, at least one (exit 1) {r['any_found']:.1%}, "
            f"all unchanged equivalent {r['equivalent']:.1%}, median rounds "
            f"{r['median_rounds']:.0f} of at most {most}"
        )


if __name__ == "__main__":
    if sys.argv[1] == "--record":
        Path(sys.argv[3]).write_text(json.dumps(record(Path(sys.argv[2])), indent=1) + "\n")
    else:
        main(Path(sys.argv[1]), *(int(a) for a in sys.argv[2:]))
