"""``runbench --capacity``: for every pair, the offered rate at which its steady-state p99
reaches the target, with an interval (djbench.verdicts.capacity_search, capacity_fit).

Every window is an open-loop window of the builtin driver (the only open-loop driver
here) through `run_trial`, so it is sampled, pinned and judged like any trial; its
connections are 2 x rate x SLO at least, so the load stays open. The first pass over the
deployments brackets each pair and runs a staircase of steady windows; each further pass
(capacity_stats.REPEATS in all) restarts every server and runs one more staircase, so
servers interleave. The steady windows that met the target become the pair's trials.
The whole command has a wall-time budget: no window starts past it.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from djbench.launch.live import LiveServer
from djbench.measure.drivers import Driver, having
from djbench.plan.jobplans import CapacityPlan
from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions
from djbench.plan.scenarios import Scenario
from djbench.results.model import Capacity, CapacityStep, PairResult, Trial
from djbench.run.bench import Bench, Progress
from djbench.run.modes.job import Context
from djbench.run.perpair import one_window, run_each_pair
from djbench.run.roundplan import Plan
from djbench.run.selection import Selection
from djbench.run.session import PerPairMode
from djbench.verdicts import capacity_search as capacity_stats
from djbench.verdicts.runs import summarise

# --tune --objective capacity screens every candidate with a bracket this coarse
# ((fail - pass) / pass <= 25%: about two windows fewer than the 5% of a full search) and
# searches only the finalists to the full resolution, with confirmation.
SCREEN_RESOLUTION = 0.25


@dataclasses.dataclass(frozen=True)
class How:
    slo_ms: float
    screening: bool = False
    steady_s: float = capacity_stats.STEADY_S
    repeats: int = capacity_stats.REPEATS


def run(bench: Bench, how: How) -> None:
    """`how.repeats` passes over every deployment (none started past the deadline), every
    server restarted for each, so the staircases of different servers interleave: the
    first pass brackets and runs a staircase, the others a staircase each from the fit
    so far. `how.screening` (``--tune --objective capacity``): a coarse bracket only."""
    recorder, progress = bench.recorder, bench.progress
    recorder.document.plan.capacity_slo_ms = how.slo_ms
    passes = 1 if how.screening else how.repeats
    for repeat in range(passes):
        if repeat and time.monotonic() >= bench.until:
            progress.say(f"the budget is spent: {passes - repeat} repeat(s) not run")
            break

        def search(live: LiveServer, scenario: Scenario, entry: PairResult) -> None:
            found, passed = _search(bench, live, scenario, how, entry.capacity)
            found.server_cpus = max(1, len(live.deployment.cpus))
            entry.trials += passed  # the steady windows that met the target, every repeat's
            for index, trial in enumerate(entry.trials):
                trial.round = index
            entry.capacity = _per_resources(found, entry.trials)
            summarise(entry, [])
            progress.say(f"{live.deployment.label} {scenario.name}: {_said(found, progress)}")

        run_each_pair(bench, search)


def _search(
    bench: Bench, live: LiveServer, scenario: Scenario, how: How, so_far: Capacity | None
) -> tuple[Capacity, list[Trial]]:
    """The first repeat's search for one pair, or a later repeat's staircase; with the
    steady windows that passed, as trials (the pair's figures are then those near its
    capacity)."""
    plan, progress, slo_ms = bench.plan, bench.progress, how.slo_ms
    label = f"{live.deployment.label} {scenario.name}"
    warmup = min(capacity_stats.STEADY_WARMUP_S, how.steady_s / 2)

    def measure(rate: float, phase: capacity_stats.Phase) -> CapacityStep:
        connections = capacity_stats.connections_for(rate, slo_ms)
        settings = dataclasses.replace(plan.settings, rate=rate)
        if phase == "steady":
            settings = dataclasses.replace(
                settings, duration=how.steady_s, warmup=warmup, series=1.0
            )
        progress.advance(0, f"{label}: {phase} {rate:,.0f} req/s ({connections} connections)")
        trial = one_window(plan, live, scenario, connections, settings, bench.run_dir)
        step = capacity_stats.step_of(
            phase, rate, connections, trial, slo_ms, max_error_rate, page_slos
        )
        if phase == "steady" and step.passed:
            passed.append(trial)
        return step

    passed: list[Trial] = []
    max_error_rate = plan.settings.max_error_rate
    # A mix's pages whose own scenario declares a p99 threshold are held to it too.
    page_slos = {
        p.name: p.scenario.thresholds.p99_ms for p in scenario.mix if p.scenario.thresholds.p99_ms
    }
    if so_far is not None and so_far.steps and not so_far.screening:
        if so_far.stopped not in ("driver_busy", "driver_failed", "never_passed", "budget"):
            capacity_stats.staircase(so_far, measure, bench.until)
        return so_far, passed
    found = capacity_stats.search(
        measure,
        slo_ms,
        max_error_rate,
        bench.until,
        resolution=SCREEN_RESOLUTION if how.screening else capacity_stats.RESOLUTION,
        confirm=not how.screening,
    )
    return found, passed


def _per_resources(found: Capacity, trials: list[Trial]) -> Capacity:
    if found.rps is None:
        return found
    found.per_core = round(found.rps / found.server_cpus, 1)
    peaks = [t.memory_mb.pss_peak for t in trials if t.memory_mb is not None]
    if peaks:
        found.per_100mib = round(found.rps / statistics.median(peaks) * 100, 1)
    return found


def _said(found: Capacity, progress: Progress) -> str:
    passed = [s.offered for s in found.steps if s.passed]
    if found.screening and passed:
        return f"screened: {max(passed):,.0f} req/s passed (bracket to 25%, unconfirmed)"
    return f"repeat {found.repeats}: {progress.capacity(found)}"


def plan_of(opts: RunOptions) -> CapacityPlan:
    assert isinstance(opts.job, CapacityPlan), opts.job
    return opts.job


class CapacityMode(PerPairMode):
    """--capacity: every pair's highest offered rate within --slo-p99."""

    name = "capacity"

    def says_budget(self, opts: RunOptions) -> bool:
        return False

    def check(self, opts: RunOptions, selection: Selection, driver: Driver) -> None:
        if not driver.open_loop:
            raise OptionError(
                f"--capacity needs an open-loop driver: the {having('open_loop')} one (leave "
                "out --driver)"
            )

    def ticks(self, opts: RunOptions, plan: Plan, selection: Selection) -> int:
        return capacity_stats.REPEATS * len(plan.deployments) * len(plan.scenarios)

    def each_pair(self, opts: RunOptions, plan: Plan) -> str:
        return f"a search and {capacity_stats.REPEATS} steady staircases per pair"

    def budget_line(self, opts: RunOptions) -> str:
        slo = plan_of(opts).slo_p99
        return f"; capacity at p99 <= {slo:g} ms, budget {(opts.budget or 0) / 60:g} min"

    def run(self, ctx: Context) -> None:
        job = plan_of(ctx.opts)
        run(ctx.bench, How(job.slo_p99, steady_s=job.steady_s))
