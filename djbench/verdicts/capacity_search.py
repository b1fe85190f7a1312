"""Capacity at a latency target: the highest offered rate a deployment serves within it.

A step is one steady-state open-loop window at an offered rate (latency from each
request's due time, djbench.measure.drivers.loadgen). It *passes* when its p99 is at
most the SLO, its errors are within --max-error-rate and it completed at least 99% of
what was offered; a step whose sends started late while the driver itself was busy
says nothing about the server and stops the search (the driver's limit, never a false
capacity).

The search (`Search`) brackets, fast and coarse: short windows (the run's --duration),
geometric steps up (x2) from START_RATE until a step fails, then bisection between the
last pass and the first fail until they are within RESOLUTION of each other. Then it
measures the capacity in steady state: an up-and-down staircase (Dixon and Mood) of
STEADY_WINDOWS windows of at least STEADY_S seconds after STEADY_WARMUP_S of warm-up,
from the bracket's pass: up STEP after a pass, down after a fail, the step doubled after
two moves the same way (to MAX_STEP) so that a knee far from the bracket is reached, and
on past STEADY_WINDOWS (to twice that) until it has turned once. A steady window whose
latency rises across its one-second slices fails ("rising": the queue is growing, the
window was too short to show it in its p99). `--capacity` repeats the staircase with
every server restarted, servers interleaved (REPEATS, run/modes/capacity.py); the
capacity and its interval come from every steady window of every repeat (capacity_fit:
the rate at which half of them meet the target, with a profile-likelihood 95% interval).
Written by hand: no maintained library searches a rate against a latency target (wrk2
and oha measure one rate; HttpArena and TechEmpower stop at curves).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, cast

from djbench.results.model import Capacity, CapacityStep, LoadPoint, Trial
from djbench.verdicts import capacity_fit

Phase = Literal["search", "steady"]
Measure = Callable[[float, Phase], CapacityStep]
DRIVER_CODES = ("driver_busy", "failed")

START_RATE = 50.0  # req/s: the first step; from there x2 up (or /2 down while it fails)
MIN_RATE = 1.0  # below it, nothing passed: "never_passed"
GROWTH = 2.0  # the bracketing's step
RESOLUTION = 0.05  # bisection stops when (fail - pass) / pass is at most this
# The builtin driver's ceiling here was 33,801 req/s against a static Caddy with
# keep-alive (benchcalibrate); open loop against servers that close every connection
# costs it a connect per request, so the search stops well below: at 10,000 req/s.
RATE_CEILING = 10_000.0
COMPLETION_SHARE = 0.99  # a pass completes at least this share of the offered rate
LATE_SHARE = 0.01  # sends started late above this share: the load was not held open
STEADY_S = 10.0  # a steady window's length (--capacity-window)
STEADY_WARMUP_S = 5.0  # its warm-up, in the same driver process (half a shorter window)
STEADY_WINDOWS = 5  # per repeat: a dozen over two repeats fit a capacity with an interval
REPEATS = 2  # staircases per pair, every server restarted between them
STEP = 0.05  # the staircase's step, about the window-to-window noise here (5-15%)
MAX_STEP = 0.2
RISING_P = 0.01  # Kendall's tau of the slices' p50 against time
RISING_FACTOR = 1.5  # and the last third's median p50 this far above the first third's
MIN_CONNECTIONS = 8


def connections_for(rate: float, slo_ms: float) -> int:
    """Enough connections that the load stays open: 2 x rate x SLO (Little's law with
    every request at twice the target), at least MIN_CONNECTIONS."""
    return max(MIN_CONNECTIONS, int(2 * rate * slo_ms / 1000 + 0.999))


StepFailure = Literal[
    "p99_above_slo",
    "page_p99_above_slo",
    "errors",
    "short",
    "late",
    "rising",
    "driver_busy",
    "driver_failed",
    "failed",
]
SearchStop = Literal[
    "ceiling", "driver_busy", "driver_failed", "never_passed", "budget", "screening"
]


@dataclass(frozen=True)
class StepVerdict:
    """What one step showed, judged: passed, or the reason (a code) it did not."""

    passed: bool
    why: StepFailure | None = None


def judge(
    offered: float,
    achieved: float,
    p99_ms: float | None,
    error_rate: float,
    late_share: float,
    driver_busy: bool,
    slo_ms: float,
    max_error_rate: float,
    window_s: float | None = None,
    rising: bool = False,
    pages_over: bool = False,
) -> StepVerdict:
    """`window_s`: a window holds a whole number of due requests, so at a few req/s the
    achieved rate may miss 99% of the offered by less than one request: that is allowed.
    `rising`: the window's latency climbed across its slices (a queue growing).
    `pages_over`: a mix's page missed its own p99 target (its scenario's thresholds)."""
    slack = 1 / window_s if window_s else 0.0
    if late_share > LATE_SHARE and driver_busy:
        return StepVerdict(False, "driver_busy")
    if error_rate > max_error_rate:
        return StepVerdict(False, "errors")
    if p99_ms is None or p99_ms > slo_ms:
        return StepVerdict(False, "p99_above_slo")
    if pages_over:
        return StepVerdict(False, "page_p99_above_slo")
    if achieved + slack < COMPLETION_SHARE * offered:
        return StepVerdict(False, "short")
    if late_share > LATE_SHARE:
        return StepVerdict(False, "late")
    if rising:
        return StepVerdict(False, "rising")
    return StepVerdict(True)


def rising(slices: list[LoadPoint]) -> bool:
    """The latency climbs across the window: Kendall's tau of the slices' p50 against
    time below RISING_P and the last third's median p50 RISING_FACTOR times the first's."""
    import statistics

    from scipy import stats as sps

    p50 = [s.p50_ms for s in slices if s.p50_ms is not None and s.requests > 0]
    if len(p50) < 6 or len(set(p50)) < 2:
        return False
    third = len(p50) // 3
    grown = statistics.median(p50[-third:]) >= RISING_FACTOR * statistics.median(p50[:third])
    found = sps.kendalltau(range(len(p50)), p50)
    return bool(grown and found.statistic > 0 and found.pvalue < RISING_P)


@dataclass
class Search:
    """The bracketing and bisection, as a state machine: `next_rate()` then `record()`."""

    start: float = START_RATE
    ceiling: float = RATE_CEILING
    resolution: float = RESOLUTION
    passed: float | None = None  # the highest rate that passed
    failed: float | None = None  # the lowest rate above it that failed
    stopped: SearchStop | None = None  # (budget: the flow's)
    tried: list[float] = field(default_factory=list)

    def next_rate(self) -> float | None:
        """The next rate to try, or None when the bracket is narrow enough or stopped."""
        if self.stopped is not None:
            return None
        if self.passed is None:
            rate = self.start if self.failed is None else self.failed / GROWTH
            if rate < MIN_RATE:
                self.stopped = "never_passed"
                return None
            return rate
        if self.failed is None:
            if self.passed * GROWTH > self.ceiling:
                self.stopped = "ceiling"
                return None
            return self.passed * GROWTH
        if (self.failed - self.passed) / self.passed <= self.resolution:
            return None
        return (self.passed + self.failed) / 2

    def record(self, rate: float, outcome: StepVerdict) -> None:
        self.tried.append(rate)
        if outcome.why in DRIVER_CODES:
            self.stopped = "driver_busy" if outcome.why == "driver_busy" else "driver_failed"
        elif outcome.passed:
            self.passed = max(rate, self.passed or 0.0)
        else:
            self.failed = rate if self.failed is None else min(rate, self.failed)


def step_of(
    phase: Phase,
    offered: float,
    connections: int,
    trial: Trial,
    slo_ms: float,
    max_error_rate: float,
    page_slos: dict[str, float] | None = None,
) -> CapacityStep:
    """One window's figures and its judgement; a mix's pages held to their own p99
    targets where the file gives them (`page_slos`), besides the mix's to `slo_ms`."""
    late = trial.driver_figures.late_starts or 0
    due = trial.requests + trial.error_count
    late_share = late / due if due else 0.0
    busy = any(w.code == "driver_busy" for w in trial.warnings)
    p99 = trial.latency_ms.p99
    climbing = trial.timeline is not None and rising(trial.timeline.load)
    targets = page_slos or {}
    pages_over = any(
        p.name in targets and (p.latency_ms.p99 or 0.0) > targets[p.name] for p in trial.pages or []
    )
    outcome = (
        StepVerdict(False, "failed")
        if trial.invalid is not None and trial.invalid.code == "driver_failed"
        else judge(
            offered,
            trial.rps,
            p99,
            trial.error_rate,
            late_share,
            busy,
            slo_ms,
            max_error_rate,
            trial.duration_s,
            climbing,
            pages_over,
        )
    )
    memory = trial.memory_mb
    return CapacityStep(
        phase=phase,
        offered=round(offered, 1),
        achieved=round(trial.rps, 1),
        connections=connections,
        passed=outcome.passed,
        why=outcome.why,
        window_s=round(trial.duration_s, 2),
        p50_ms=trial.latency_ms.p50,
        p90_ms=trial.latency_ms.p90,
        p99_ms=p99,
        p999_ms=trial.latency_ms.p999,
        error_rate=round(trial.error_rate, 5),
        late_share=round(late_share, 4),
        pss_peak_mb=memory.pss_peak if memory else None,
        server_cpu_percent=memory.cpu_percent if memory else None,
        driver_cpu_percent=trial.driver_cpu_percent,
    )


def search(
    measure: Measure,
    slo_ms: float,
    max_error_rate: float,
    deadline: float,
    ceiling: float = RATE_CEILING,
    resolution: float = RESOLUTION,
    confirm: bool = True,
) -> Capacity:
    """Bracket and bisect (Search), then the first steady staircase; `measure(rate,
    phase)` runs one window. No window starts after `deadline` (time.monotonic()): then
    `stopped` is "budget". Without `confirm` (a tuning search's screening, `--objective
    capacity`) the answer is the bracket alone: `rps` stays None, `stopped` "screening"."""
    found = Capacity(slo_p99_ms=slo_ms, max_error_rate=max_error_rate, resolution=resolution)
    state = Search(ceiling=ceiling, resolution=resolution)
    while (rate := state.next_rate()) is not None:
        if time.monotonic() >= deadline:
            found.stopped = "budget"
            return found
        step = measure(rate, "search")
        found.steps.append(step)
        state.record(rate, StepVerdict(step.passed, cast("StepFailure | None", step.why)))
    found.stopped = state.stopped
    if state.passed is not None and state.failed is not None:
        found.bracket = (round(state.passed, 1), round(state.failed, 1))
    if state.passed is None or state.stopped in ("driver_busy", "driver_failed"):
        return found
    if not confirm:
        found.stopped = found.stopped or "screening"
        return found
    staircase(found, measure, deadline)
    return found


def steady_steps(found: Capacity) -> list[CapacityStep]:
    return [s for s in found.steps if s.phase == "steady"]


def _start(found: Capacity) -> float:
    """Where a staircase starts: the fit so far, else one step on from the last steady
    window the way it pointed, else the bracket's pass."""
    steady = steady_steps(found)
    if found.rps is not None:
        return found.rps
    if steady:
        last = steady[-1]
        return last.offered * (1 + STEP) if last.passed else last.offered / (1 + STEP)
    assert found.bracket is not None or found.steps
    passed = [s.offered for s in found.steps if s.passed]
    return max(passed) if passed else found.steps[-1].offered


def staircase(
    found: Capacity, measure: Measure, deadline: float, windows: int = STEADY_WINDOWS
) -> None:
    """One repeat's up-and-down staircase of steady windows, then the fit over every
    steady window so far (every repeat's). It runs `windows` windows, and on (up to twice
    as many) until it has turned at least once: a staircase that only climbed or only
    fell has not found the knee, and its fit would be open at one end."""
    rate, step, last = _start(found), STEP, 0
    repeat, turned = found.repeats, False
    for count in range(2 * windows):  # bounded: twice the windows at most
        if count >= windows and turned:
            break
        if time.monotonic() >= deadline:
            found.stopped = "budget"
            break
        window = measure(rate, "steady").model_copy(update={"repeat": repeat})
        found.steps.append(window)
        if window.why in DRIVER_CODES:
            found.stopped = "driver_busy" if window.why == "driver_busy" else "driver_failed"
            break
        way = 1 if window.passed else -1
        turned = turned or (last != 0 and way != last)
        step = min(MAX_STEP, step * 2) if way == last else STEP
        rate = rate * (1 + step) if way > 0 else rate / (1 + step)
        last = way
    found.repeats = repeat + 1
    estimate(found)


def estimate(found: Capacity) -> None:
    """The capacity and its interval from every steady window (capacity_fit)."""
    steady = steady_steps(found)
    fitted = capacity_fit.fit([(s.offered, s.passed) for s in steady])
    found.rps = None if fitted.capacity is None else round(fitted.capacity, 1)
    found.interval = (
        None if fitted.low is None else round(fitted.low, 1),
        None if fitted.high is None else round(fitted.high, 1),
    )
    found.confirmed, found.confirm_trials = fitted.passed, fitted.windows
    found.steady_s = max((s.window_s or 0.0 for s in steady), default=None)
    if found.stopped in (None, "unbounded", "never_passed_steady"):
        found.stopped = (
            "unbounded" if fitted.passed == fitted.windows
            else "never_passed_steady" if fitted.passed == 0 else None
        )  # fmt: skip


def windows_of(found: Capacity) -> list[capacity_fit.Window]:
    return [(s.offered, s.passed) for s in steady_steps(found)]


def tied(lead: Capacity, other: Capacity) -> bool:
    """Not distinguishable from the leader: by the likelihood-ratio test over both pairs'
    steady windows (capacity_fit.tied); a file from before the staircase, by its search
    bracket reaching the leader's rate."""
    if lead.repeats and other.repeats:
        return bool(capacity_fit.tied(windows_of(lead), windows_of(other)))
    return (other.bracket or (0.0, 0.0))[1] >= (lead.rps or 0.0)
