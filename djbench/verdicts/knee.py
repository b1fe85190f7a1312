"""A closed-loop concurrency sweep: where throughput stops rising (the knee).

Concurrency doubles from 1; each step is one steady-state window. The sweep stops when
two steps in a row raised throughput by less than RISE (the trial-to-trial noise here
is 8-15%, so a smaller rise is not evidence of one), at MAX_CONCURRENCY, or when a step
is invalid (errors above the limit), or the budget is spent. The knee is the smallest
concurrency whose throughput is within KNEE_SHARE of the best step's. Little's law is
checked per step: the in-flight requests the driver measured against throughput x mean
latency.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from djbench.results.model import Sweep, SweepStep, Trial

START = 1
MAX_CONCURRENCY = 512
RISE = 0.10  # a doubling that raises req/s by less than this is "no rise"
FLAT_STEPS = 2  # stop after this many doublings in a row without a rise
KNEE_SHARE = 0.95


def step_of(concurrency: int, trial: Trial) -> SweepStep:
    mean_ms = trial.latency_ms.mean
    littles = trial.rps * mean_ms / 1000 if mean_ms is not None else None
    return SweepStep(
        concurrency=concurrency,
        rps=round(trial.rps, 1),
        p50_ms=trial.latency_ms.p50,
        p99_ms=trial.latency_ms.p99,
        mean_ms=mean_ms,
        in_flight=trial.in_flight_mean,
        littles_in_flight=None if littles is None else round(littles, 2),
        error_rate=round(trial.error_rate, 5),
        valid=trial.valid,
        pss_peak_mb=trial.memory_mb.pss_peak if trial.memory_mb else None,
        server_cpu_percent=trial.memory_mb.cpu_percent if trial.memory_mb else None,
    )


def sweep(
    measure: Callable[[int], SweepStep],
    most: int = MAX_CONCURRENCY,
    deadline: float = math.inf,
) -> Sweep:
    """Doubling from START until throughput stops rising, a step is invalid, `most` or
    `deadline` (time.monotonic(): no step starts past it)."""
    found = Sweep(rise=RISE)
    concurrency, flat = START, 0
    while concurrency <= most:
        if time.monotonic() >= deadline:
            found.stopped = "budget"
            break
        step = measure(concurrency)
        found.steps.append(step)
        if not step.valid:
            found.stopped = "invalid"
            break
        previous = found.steps[-2] if len(found.steps) > 1 else None
        flat = flat + 1 if previous and step.rps < previous.rps * (1 + RISE) else 0
        if flat >= FLAT_STEPS:
            found.stopped = "flat"
            break
        concurrency *= 2
    else:
        found.stopped = "max"
    valid = [s for s in found.steps if s.valid]
    if valid:
        best = max(s.rps for s in valid)
        found.max_rps = best
        found.knee = min(s.concurrency for s in valid if s.rps >= KNEE_SHARE * best)
    return found
