"""``runbench --sweep``: for every pair, closed-loop throughput against concurrency,
doubling from 1 until it stops rising (djbench.results.sweep_stats), in one server lifetime.

Each step is an ordinary closed-loop trial (`run_trial`) at that concurrency, sampled
and pinned like any other; the steps and the knee go into the pair's `sweep`, and the
knee's trial becomes the pair's trial (its usual figures are then those at the knee).
"""

from __future__ import annotations

from pathlib import Path

from djbench.launch.live import LiveServer
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.results import sweep_stats
from djbench.results.analysis import summarise
from djbench.results.model import PairResult, SweepStep, Trial
from djbench.run.perpair import one_window, run_each_pair
from djbench.run.runner import Plan, Progress, Recorder


def run(
    project: Project,
    plan: Plan,
    recorder: Recorder,
    run_dir: Path,
    progress: Progress,
    deadline: float,
) -> None:
    def search(live: LiveServer, scenario: Scenario, entry: PairResult) -> None:
        trials: dict[int, Trial] = {}
        label = f"{live.deployment.label} {scenario.name}"

        def measure(concurrency: int) -> SweepStep:
            progress.advance(0, f"{label}: sweep c={concurrency}")
            trial = one_window(plan, live, scenario, concurrency, plan.settings, run_dir)
            trials[concurrency] = trial
            return sweep_stats.step_of(concurrency, trial)

        found = sweep_stats.sweep(measure, deadline=deadline)
        entry.sweep = found
        entry.trials = [trials[found.knee]] if found.knee in trials else []
        summarise(entry, [])
        progress.say(
            f"{label}: knee at c={found.knee}, {found.max_rps or 0:,.0f} req/s at best"
            if found.knee
            else f"{label}: no valid step"
        )

    run_each_pair(project, plan, recorder, run_dir, progress, deadline, search)
