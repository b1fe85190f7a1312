"""``runbench --sweep``: for every pair, closed-loop throughput against concurrency,
doubling from 1 until it stops rising (djbench.verdicts.knee), in one server lifetime.

Each step is an ordinary closed-loop trial (`run_trial`) at that concurrency, sampled
and pinned like any other; the steps and the knee go into the pair's `sweep`, and the
knee's trial becomes the pair's trial (its usual figures are then those at the knee).
"""

from __future__ import annotations

from djbench.launch.live import LiveServer
from djbench.plan.runplan import RunOptions
from djbench.plan.scenarios import Scenario
from djbench.results.model import PairResult, SweepStep, Trial
from djbench.run.bench import Bench
from djbench.run.modes.job import Context
from djbench.run.perpair import one_window, run_each_pair
from djbench.run.roundplan import Plan
from djbench.run.session import PerPairMode
from djbench.verdicts import knee as sweep_stats
from djbench.verdicts.runs import summarise


def run(bench: Bench) -> None:
    plan, progress = bench.plan, bench.progress

    def search(live: LiveServer, scenario: Scenario, entry: PairResult) -> None:
        trials: dict[int, Trial] = {}
        label = f"{live.deployment.label} {scenario.name}"

        def measure(concurrency: int) -> SweepStep:
            progress.advance(0, f"{label}: sweep c={concurrency}")
            trial = one_window(plan, live, scenario, concurrency, plan.settings, bench.run_dir)
            trials[concurrency] = trial
            return sweep_stats.step_of(concurrency, trial)

        found = sweep_stats.sweep(measure, deadline=bench.until)
        entry.sweep = found
        entry.trials = [trials[found.knee]] if found.knee in trials else []
        summarise(entry, [])
        progress.say(
            f"{label}: knee at c={found.knee}, {found.max_rps or 0:,.0f} req/s at best"
            if found.knee
            else f"{label}: no valid step"
        )

    run_each_pair(bench, search)


class SweepMode(PerPairMode):
    """--sweep: every pair's closed-loop req/s against concurrency, to the knee."""

    name = "sweep"

    def says_budget(self, opts: RunOptions) -> bool:
        return False

    def each_pair(self, opts: RunOptions, plan: Plan) -> str:
        return "a search per pair"

    def budget_line(self, opts: RunOptions) -> str:
        minutes = (opts.budget or 0) / 60
        return f"; concurrency doubling from 1 until req/s stops rising, budget {minutes:g} min"

    def run(self, ctx: Context) -> None:
        run(ctx.bench)
