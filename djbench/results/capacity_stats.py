"""Capacity at a latency target: the highest offered rate a deployment serves within it.

A step is one steady-state open-loop window at an offered rate (latency from each
request's due time, djbench.measure.drivers.loadgen). It *passes* when its p99 is at
most the SLO, its errors are within --max-error-rate and it completed at least 99% of
what was offered; a step whose sends started late while the driver itself was busy
says nothing about the server and stops the search (the driver's limit, never a false
capacity).

The search (`Search`) brackets: geometric steps up (x2) from START_RATE until a step
fails, then bisection between the last pass and the first fail until they are within
RESOLUTION of each other. The answer is then confirmed: CONFIRM_TRIALS fresh windows at
the found rate must all pass (else it steps down, at most MAX_STEP_DOWNS times, each
step twice the one before: by the resolution, then 2x, then 4x, so that a knee noisier
than the resolution still ends confirmed, 72% of the found rate at the lowest) and one
window at the bracket's failing rate is run to show the target breaking there. Written
by hand: no maintained library searches a rate against a latency target (wrk2 and oha
measure one rate; HttpArena and TechEmpower stop at curves).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from djbench.results.model import Capacity, CapacityStep, Trial

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
CONFIRM_TRIALS = 3
MAX_STEP_DOWNS = 3
MIN_CONNECTIONS = 8


def connections_for(rate: float, slo_ms: float) -> int:
    """Enough connections that the load stays open: 2 x rate x SLO (Little's law with
    every request at twice the target), at least MIN_CONNECTIONS."""
    return max(MIN_CONNECTIONS, int(2 * rate * slo_ms / 1000 + 0.999))


@dataclass(frozen=True)
class Outcome:
    """What one step showed, judged: passed, or the reason (a code) it did not."""

    passed: bool
    why: str | None = None  # p99_above_slo, errors, short, late, driver_busy, failed


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
) -> Outcome:
    """`window_s`: a window holds a whole number of due requests, so at a few req/s the
    achieved rate may miss 99% of the offered by less than one request: that is allowed."""
    slack = 1 / window_s if window_s else 0.0
    if late_share > LATE_SHARE and driver_busy:
        return Outcome(False, "driver_busy")
    if error_rate > max_error_rate:
        return Outcome(False, "errors")
    if p99_ms is None or p99_ms > slo_ms:
        return Outcome(False, "p99_above_slo")
    if achieved + slack < COMPLETION_SHARE * offered:
        return Outcome(False, "short")
    if late_share > LATE_SHARE:
        return Outcome(False, "late")
    return Outcome(True)


@dataclass
class Search:
    """The bracketing and bisection, as a state machine: `next_rate()` then `record()`."""

    start: float = START_RATE
    ceiling: float = RATE_CEILING
    resolution: float = RESOLUTION
    passed: float | None = None  # the highest rate that passed
    failed: float | None = None  # the lowest rate above it that failed
    stopped: str | None = None  # ceiling, driver_busy, never_passed (budget: the flow's)
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

    def record(self, rate: float, outcome: Outcome) -> None:
        self.tried.append(rate)
        if outcome.why in ("driver_busy", "failed"):
            self.stopped = "driver_busy" if outcome.why == "driver_busy" else "driver_failed"
        elif outcome.passed:
            self.passed = max(rate, self.passed or 0.0)
        else:
            self.failed = rate if self.failed is None else min(rate, self.failed)


def step_of(
    phase: Literal["search", "confirm", "above"],
    offered: float,
    connections: int,
    trial: Trial,
    slo_ms: float,
    max_error_rate: float,
) -> CapacityStep:
    """One window's figures and its judgement."""
    late = int(trial.extra.get("late_starts") or 0)
    due = trial.requests + trial.error_count
    late_share = late / due if due else 0.0
    busy = any(w.code == "driver_busy" for w in trial.warnings)
    p99 = trial.latency_ms.p99
    outcome = (
        Outcome(False, "failed")
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
    measure: Callable[[float, Literal["search", "confirm", "above"]], CapacityStep],
    slo_ms: float,
    max_error_rate: float,
    deadline: float,
    ceiling: float = RATE_CEILING,
    resolution: float = RESOLUTION,
    confirm: bool = True,
) -> Capacity:
    """Bracket and bisect (Search), then confirm; `measure(rate, phase)` runs one window.
    No window starts after `deadline` (time.monotonic()): then `stopped` is "budget".
    Without `confirm` (a tuning search's screening, `--objective capacity`) the answer is
    the bracket alone: `rps` stays None and `stopped` is "screening"."""
    found = Capacity(slo_p99_ms=slo_ms, max_error_rate=max_error_rate, resolution=resolution)
    state = Search(ceiling=ceiling, resolution=resolution)
    while (rate := state.next_rate()) is not None:
        if time.monotonic() >= deadline:
            found.stopped = "budget"
            return found
        step = measure(rate, "search")
        found.steps.append(step)
        state.record(rate, Outcome(step.passed, step.why))
    found.stopped = state.stopped
    if state.passed is not None and state.failed is not None:
        found.bracket = (round(state.passed, 1), round(state.failed, 1))
    if state.passed is None or state.stopped in ("driver_busy", "driver_failed"):
        return found
    if not confirm:
        found.stopped = found.stopped or "screening"
        return found
    _confirm(found, state.passed, measure, deadline)
    if found.rps is not None and state.failed is not None and time.monotonic() < deadline:
        above = measure(state.failed, "above")
        found.steps.append(above)
        found.above_failed = not above.passed
    return found


def _confirm(
    found: Capacity,
    rate: float,
    measure: Callable[[float, Literal["search", "confirm", "above"]], CapacityStep],
    deadline: float,
) -> None:
    """CONFIRM_TRIALS fresh windows at `rate`, all passing; else a step lower, each step
    twice the one before (5%, 10%, 20% at the default resolution)."""
    for down in range(MAX_STEP_DOWNS + 1):
        steps: list[CapacityStep] = []
        for _ in range(CONFIRM_TRIALS):
            if time.monotonic() >= deadline:
                found.steps += steps
                found.stopped = "budget"
                return
            steps.append(measure(rate, "confirm"))
        found.steps += steps
        found.confirmed, found.confirm_trials = sum(s.passed for s in steps), len(steps)
        if found.confirmed == len(steps):
            found.rps = round(rate, 1)
            return
        driver = next((s.why for s in steps if s.why in ("driver_busy", "failed")), None)
        if driver is not None:
            found.stopped = "driver_busy" if driver == "driver_busy" else "driver_failed"
            return
        rate /= 1 + found.resolution * 2**down
    found.stopped = "unconfirmed"
