"""What a run of rounds measures: deployments x scenarios x concurrency levels x
trials, how to load them, and (a race round) which items each deployment still runs."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TypeVar

from djbench.launch.live import Deployment
from djbench.measure.drivers import Driver
from djbench.measure.trial import LoadSettings
from djbench.plan.scenarios import Scenario


@dataclass(frozen=True)
class Plan:
    """Servers x scenarios x concurrency levels x trials (+ proxies), and how to load them."""

    deployments: list[Deployment]
    scenarios: list[Scenario]
    concurrency: list[int]
    trials: int
    settings: LoadSettings
    driver: Driver
    health_path: str
    ws_idle: int = 0
    seed: int = 0
    first_round: int = 0  # --tune: each halving round is a plan of its own
    # A race round (run/budget.py): each deployment only its (scenario, concurrency)
    # items still open, not every item of the plan.
    only: dict[str, frozenset[tuple[str, int]]] | None = None
    # --pairing alternate: rounds from `side_by_side_from` on keep their deployments
    # alive side by side and alternate their windows (djbench.run.side_by_side: 0 when
    # the first round may, side_by_side.first_round); False: back to back.
    side_by_side: bool = False
    side_by_side_from: int = 1

    def items(self, allowed: set[str], label: str | None = None) -> list[tuple[Scenario, int]]:
        found = [(s, c) for s in self.scenarios if s.name in allowed for c in self.concurrency]
        if self.only is None or label is None:
            return found
        wanted = self.only.get(label, frozenset())
        return [(s, c) for s, c in found if (s.name, c) in wanted]

    def rounds(self) -> list[list[Deployment]]:
        """One shuffled order of deployments per trial round: drift spreads over all (a
        plan of later rounds, as a race's round, draws its own orders)."""
        rng = random.Random(f"{self.seed}:{self.first_round}" if self.first_round else self.seed)
        return [rng.sample(self.deployments, len(self.deployments)) for _ in range(self.trials)]

    def total_trials(self) -> int:
        if self.only is not None:
            return self.trials * sum(len(self.only.get(d.label, ())) for d in self.deployments)
        return len(self.deployments) * len(self.scenarios) * len(self.concurrency) * self.trials


T = TypeVar("T")


def scenario_order(seed: int, round_index: int, label: str, items: list[T]) -> list[T]:
    """A deployment's scenarios in this round's order: one seeded shuffle per deployment,
    rotated by one place each round, so that over k rounds each of k scenarios runs at
    each position once (counterbalanced; an independent shuffle per round left
    gunicorn-sync's two scenarios in the same order six rounds running). The same on
    --resume."""
    ordered = list(items)
    random.Random(f"{seed}:{label}").shuffle(ordered)
    turn = round_index % len(ordered) if ordered else 0
    return ordered[turn:] + ordered[:turn]
