"""``runbench --budget``: a plain run's wall time, spent where it decides something.

The planned rounds run first (no deployment starts past the budget). With time left,
each further round goes only to the deployments whose rank is still open: for every
scenario and concurrency, the ok pairs are ranked by median req/s, and two neighbours
are open while the decision engine (paired by round: they share every round) calls
neither better nor equivalent. A round adds one trial to each open deployment; the run
stops when nothing is open, the budget is spent, or EXTRA_ROUNDS_MAX rounds were added.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from pathlib import Path

from djbench.plan.project import Project
from djbench.reports.compare import estimate
from djbench.results import decide
from djbench.results.analysis import Pair
from djbench.results.model import PairResult
from djbench.run.runner import Plan, Progress, Recorder, run_benchmark

EXTRA_ROUNDS_MAX = 12  # rounds added at most, whatever the budget (every loop is bounded)


def open_labels(results: list[PairResult], run_id: str) -> dict[str, list[str]]:
    """Deployment label -> the open questions it is part of ("a ~ b on scenario c32")."""
    groups: dict[tuple[str, int | None], list[Pair]] = {}
    for entry in results:
        pair = Pair(run_id, entry)
        if pair.ok and entry.kind == "http":
            groups.setdefault((entry.scenario, entry.concurrency), []).append(pair)
    found: dict[str, list[str]] = {}
    for (scenario, concurrency), pairs in groups.items():
        ranked = sorted(pairs, key=lambda p: -(p.median("rps") or 0))
        for upper, lower in itertools.pairwise(ranked):
            e = estimate("rps", lower, upper, paired=True)
            verdict = decide.judge([e], +1, decide.ALPHA)[0].verdict if e else "inconclusive"
            if verdict in ("better", "equivalent"):
                continue
            question = f"{upper.label} ~ {lower.label} on {scenario} c{concurrency}"
            for label in (upper.label, lower.label):
                found.setdefault(label, []).append(question)
    return found


def short_of_plan(plan: Plan, recorder: Recorder) -> list[str]:
    """Deployments with a measured pair (ok or invalid) short of the planned trials, or
    never started: what a budget spent before the plan was done cut."""
    short = []
    for deployment in plan.deployments:
        entries = [e for e in recorder.entries.values() if e.label == deployment.label]
        measured = [e for e in entries if e.status in ("ok", "invalid")]
        if not entries or any(len(e.trials) < plan.trials for e in measured):
            short.append(deployment.label)
    return short


def spend(
    project: Project,
    plan: Plan,
    recorder: Recorder,
    run_dir: Path,
    progress: Progress,
    deadline: float,
) -> tuple[int, list[str]]:
    """The planned rounds, then rounds for open questions until `deadline`
    (time.monotonic()); (rounds added, questions still open)."""
    run_benchmark(project, plan, recorder, run_dir, progress, stop_at=deadline)
    recorder.document.plan.budget_cut = short_of_plan(plan, recorder)
    if recorder.document.plan.budget_cut:
        progress.say(
            f"the budget was spent before the planned {plan.trials} round(s) were done: "
            f"{len(recorder.document.plan.budget_cut)} deployment(s) have fewer trials"
        )
    added = 0
    still: list[str] = []
    while added < EXTRA_ROUNDS_MAX:
        document = recorder.document
        labels = open_labels(document.results, document.run_id)
        still = sorted({q for qs in labels.values() for q in qs})
        chosen = [d for d in plan.deployments if d.label in labels]
        if not chosen or time.monotonic() >= deadline:
            break
        round_index = plan.first_round + plan.trials + added
        progress.say(
            f"budget: round {round_index + 1} for {len(still)} open comparison(s) "
            f"({len(chosen)} deployment(s)), {deadline - time.monotonic():.0f} s left"
        )
        extra = dataclasses.replace(
            plan, deployments=chosen, trials=1, first_round=round_index, seed=plan.seed + added
        )
        progress.grow(extra.total_trials())
        run_benchmark(project, extra, recorder, run_dir, progress, stop_at=deadline)
        recorder.save()
        added += 1
    return added, still
