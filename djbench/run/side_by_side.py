"""Side-by-side rounds (``--pairing alternate``, the default): a round's deployments
alive at once on the server CPUs, each idle while another is loaded, their windows taking
turns page by page in a fresh random order. Two deployments' windows on a page are then
seconds apart instead of minutes: the host's drift between them is what a paired round
test counts as noise, and the rounds a verdict needs grow with its square.

The matrix does the same with its cells (djbench.run.turns); here it is one process, so
the turns are a loop. What stays as it was: every deployment a fresh lifetime per round
(process-level luck sampled, not trusted: loadtests/lifetime_luck.py), its idle and after
readings of its own process tree, its pages in the round's counterbalanced order.

Round 1 too, when nothing it would learn is needed to group its deployments
(`first_round`): every deployment's verify gate runs first, each in a lifetime of its
own (runner._gated_first), then the group. Its noise counts twice: the look after round
2 judges rounds 1-2 on their pooled error, and a default run's movies-sync read a
block-design residual of 0.168 per round's log-ratio over rounds 1-3 (round 1 back to
back) against 0.061 over rounds 2-3 (2026-12-07 20:34, a noisy half hour; a day before,
rounds 1-2 against rounds 2-3: 0.134 against 0.100), and one deployment of 13 left the
race after round 2.

Not side by side, back to back as before (djbench.run.runner):
- round 1, when it must learn what the grouping needs: on a database whose connection
  limit the servers share (PostgreSQL, MySQL), which deployment holds connections after
  its load (below) is read off its own round-1 windows; and a deployment's idle
  WebSocket hold (--ws-idle) is read alone in its round-1 lifetime;
- a deployment on a fixed port (--port), or a running target (--target): nothing to
  start beside another;
- a plan of one deployment;
- a deployment whose windows so far left database connections open after the load
  (persistent connections, a pool, a leak: `holds_connections`): it would hold them
  through its neighbours' windows, and a database's connection limit is shared (a
  Uvicorn leaking one per request thread starved gunicorn-gthread beside it, on a role
  limited to 12 connections: tests/test_resources.py). It runs alone, in the round's
  order; the others share one group.

Each lifetime records who was beside it (`beside`) and the CPU its server tree used
while it waited through the others' windows (`beside_cpu_percent`): an idle server that
spins would slow its neighbours' windows and not its own, and that figure says so.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Iterable

from djbench.launch.live import Deployment
from djbench.launch.process import ServerError
from djbench.plan import dbsettings
from djbench.plan.scenarios import Scenario
from djbench.results.model import PairResult
from djbench.run import lifetime
from djbench.run.bench import Bench
from djbench.run.roundplan import Plan, scenario_order

Items = list[tuple[Scenario, int]]


def first_round(scenarios: Iterable[Scenario], ws_idle: int) -> int:
    """The first round that may go side by side: 0 (round 1) unless round 1 must learn
    what grouping needs (the module's docstring), else 1."""
    reads_ws_idle = ws_idle > 0 and any(s.kind == "websocket" for s in scenarios)
    return 1 if reads_ws_idle or dbsettings.connection_limit_shared() else 0


def possible(plan: Plan, round_index: int) -> bool:
    """Whether this round of `plan` puts its deployments side by side."""
    return (
        plan.side_by_side
        and round_index >= plan.side_by_side_from
        and len(plan.deployments) > 1
        and all(d.port is None and d.target is None for d in plan.deployments)
    )


def announced(plan: Plan, budget: bool) -> str:
    """The run line's words for how its rounds are paired, when it has several."""
    if (plan.trials < 2 and not budget) or len(plan.deployments) < 2:
        return ""
    if possible(plan, 0):
        return "; every round side by side, their windows taking turns page by page"
    if possible(plan, 1):
        return "; rounds after the first side by side, their windows taking turns page by page"
    why = "--pairing sequential" if not plan.side_by_side else "a fixed port or a target"
    return f"; rounds back to back ({why})"


def holds_connections(entries: Iterable[PairResult]) -> bool:
    """Whether a deployment's windows so far (`entries`: its pairs) left database
    connections open after the load (Trial.resources.db.after)."""
    return any(
        t.resources is not None and t.resources.db is not None and (t.resources.db.after or 0) > 0
        for e in entries
        for t in e.trials
    )


def units(order: list[Deployment], alone: Collection[str]) -> list[list[Deployment]]:
    """The round's shuffled order as what runs at once: every deployment not `alone` in
    one group, where the first of them stands in the order; those `alone` each by
    itself."""
    group = [d for d in order if d.label not in alone]
    found: list[list[Deployment]] = []
    for deployment in order:
        if deployment.label in alone:
            found.append([deployment])
        elif deployment is group[0]:
            found.append(group)
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
    stop_at: float | None = None,
) -> None:
    """Start the group's deployments one after another (each read idle before the next
    starts), run their windows in turns, stop them. A deployment that cannot start or
    dies under load is `failed` and stopped; the others go on. No window starts that
    would not end by `stop_at` (time.monotonic(); a budget spent inside round 1: the
    deployments it left short are recorded by djbench.run.budget)."""
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
        settings = bench.plan.settings
        last_start = (stop_at or float("inf")) - settings.warmup - settings.duration
        for deployment, scenario, concurrency in turns(bench.plan.seed, round_index, alive):
            if time.monotonic() >= last_start:
                break
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
