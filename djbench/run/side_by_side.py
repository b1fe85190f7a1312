"""Side-by-side rounds (``--pairing alternate``, the default): a round's deployments
alive at once on the server CPUs, each idle while another is loaded, their windows taking
turns page by page in a fresh random order. Two deployments' windows on a page are then
seconds apart instead of minutes: the host's drift between them is what a paired round
test counts as noise, and the rounds a verdict needs grow with its square.

The matrix does the same with its cells (djbench.run.turns); here it is one process, so
the turns are a loop. What stays as it was: every deployment a fresh lifetime per round
(process-level luck sampled, not trusted: loadtests/lifetime_luck.py), its idle and after
readings of its own process tree, its pages in the round's counterbalanced order.

Not side by side, back to back as before (djbench.run.runner):
- round 1: each deployment's verify gate is a lifetime of its own there, and its idle
  WebSocket hold (--ws-idle) is read alone;
- a deployment on a fixed port (--port), or a running target (--target): nothing to
  start beside another;
- a plan of one deployment.
Servers holding database connections while idle (persistent connections, a pool) hold
them beside each other: then at most GROUP are alive at once, a round of more runs in
groups, each group's windows alternated (`group_size`).

Each lifetime records who was beside it (`beside`) and the CPU its server tree used
while it waited through the others' windows (`beside_cpu_percent`): an idle server that
spins would slow its neighbours' windows and not its own, and that figure says so.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from djbench.launch.live import Deployment
from djbench.launch.process import ServerError
from djbench.plan.scenarios import Scenario
from djbench.results.model import Database
from djbench.run import lifetime
from djbench.run.bench import Bench
from djbench.run.roundplan import Plan, scenario_order

# Deployments alive at once, at most, when the servers hold database connections while
# idle (persistent connections or a pool, on a database server): PostgreSQL's default
# max_connections is 100, and gunicorn-gthread alone may hold 2 x 16. Otherwise (SQLite,
# or connections closed after each request) a round's deployments are all alive at once:
# 13 of the sample's idle servers take about 0.9 GB.
GROUP = 4

Items = list[tuple[Scenario, int]]


def possible(plan: Plan, round_index: int) -> bool:
    """Whether this round of `plan` puts its deployments side by side."""
    return (
        plan.side_by_side
        and round_index > 0
        and len(plan.deployments) > 1
        and all(d.port is None and d.target is None for d in plan.deployments)
    )


def announced(plan: Plan, budget: bool) -> str:
    """The run line's words for how its rounds are paired, when it has several."""
    if (plan.trials < 2 and not budget) or len(plan.deployments) < 2:
        return ""
    if possible(plan, 1):
        return "; rounds after the first side by side, their windows taking turns page by page"
    why = "--pairing sequential" if not plan.side_by_side else "a fixed port or a target"
    return f"; rounds back to back ({why})"


def group_size(database: Database) -> int | None:
    """How many deployments are alive at once: GROUP when the servers hold database
    connections while idle, else all of them (None)."""
    if database.vendor == "sqlite" or not (database.persistent or database.pool):
        return None
    return GROUP


def groups(order: list[Deployment], database: Database) -> list[list[Deployment]]:
    """The round's shuffled order cut into groups (`group_size`), as even as can be (13
    deployments by 4: 4, 3, 3, 3, not 4, 4, 4, 1)."""
    size = group_size(database)
    if size is None or not order:
        return [order]
    count = -(-len(order) // size)
    size, extra = divmod(len(order), count)
    found, at = [], 0
    for i in range(count):
        n = size + (1 if i < extra else 0)
        found.append(order[at : at + n])
        at += n
    return found


def turns(
    seed: int, round_index: int, group: list[tuple[Deployment, Items]]
) -> list[tuple[Deployment, Scenario, int]]:
    """The group's windows in order: its pages in the round's counterbalanced order
    (one for the whole group, so that a page's windows follow each other), and on each
    page the deployments that run it in a fresh random order."""
    every: dict[tuple[str, int], tuple[Scenario, int]] = {}
    for _, items in group:
        every.update({(s.name, c): (s, c) for s, c in items})
    pages = scenario_order(seed, round_index, "side by side", sorted(every))
    rng = random.Random(f"{seed}:{round_index}:side by side")
    found = []
    for key in pages:
        scenario, concurrency = every[key]
        running = [d for d, items in group if key in {(s.name, c) for s, c in items}]
        found += [(d, scenario, concurrency) for d in rng.sample(running, len(running))]
    return found


def run_group(
    bench: Bench,
    group: list[tuple[Deployment, Items]],
    round_index: int,
    failed: Callable[[Deployment, str], None],
) -> None:
    """Start the group's deployments one after another (each read idle before the next
    starts), run their windows in turns, stop them. A deployment that cannot start or
    dies under load is `failed` and stopped; the others go on."""
    lives: dict[str, lifetime.Lifetime] = {}
    try:
        for deployment, _ in group:
            try:
                lives[deployment.label] = lifetime.begin(bench, deployment, round_index)
            except ServerError as exc:
                failed(deployment, str(exc))
        alive = [(d, items) for d, items in group if d.label in lives]
        for label, started in lives.items():
            started.record.beside = sorted(set(lives) - {label})
        for deployment, scenario, concurrency in turns(bench.plan.seed, round_index, alive):
            if deployment.label not in lives:  # died at an earlier turn
                continue
            try:
                lifetime.window(bench, lives[deployment.label], scenario, concurrency)
            except ServerError as exc:
                lives.pop(deployment.label).stack.close()
                failed(deployment, str(exc))
        for label in list(lives):
            lifetime.end(bench, lives.pop(label))
    finally:  # an interrupt, a full disk: nothing left running
        for left in lives.values():
            left.stack.close()
