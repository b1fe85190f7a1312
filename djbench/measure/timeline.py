"""A soak's time line: the driver's slices, the watcher's readings and births, joined.

Both clocks are CLOCK_MONOTONIC (the driver's perf_counter and this process's
monotonic are the same clock on Linux), so a worker's birth and the load slice it fell
in line up without any exchange of timestamps.
"""

from __future__ import annotations

import statistics
from typing import Any

from djbench.measure.sampler import MB, TimelineSampler
from djbench.plan.runplan import GROWTH_THRESHOLD_MB_H
from djbench.results.model import LoadPoint, MemoryPoint, Restart, Timeline
from djbench.verdicts.growth import growth


def load_points(series: list[dict[str, Any]]) -> list[LoadPoint]:
    return [
        LoadPoint(
            t=s["t"],
            seconds=s["s"],
            requests=s["requests"],
            errors=s.get("errors", 0) + s.get("unexpected", 0),
            p50_ms=s.get("p50"),
            p99_ms=s.get("p99"),
            max_ms=s.get("max"),
        )
        for s in series
    ]


def around(load: list[LoadPoint], t: float, interval: float) -> list[LoadPoint]:
    """The slices within one slice's length of time t (the restart's own slice included)."""
    return [p for p in load if p.t + p.seconds >= t - interval and p.t <= t + interval]


def timeline(
    watcher: TimelineSampler,
    series: list[dict[str, Any]],
    opened_at: float,
    interval: float,
    threshold: float = GROWTH_THRESHOLD_MB_H,
) -> Timeline:
    load = load_points(series)
    memory = [
        MemoryPoint(
            t=round(s.at - opened_at, 3),
            pss=round((s.pss or 0) / MB, 2),
            uss_worker_max=round((s.uss_worker_max or 0) / MB, 2),
            processes=s.processes,
            threads=s.threads,
            fds=s.fds,
        )
        for s in watcher.samples
        if s.pss is not None and s.processes
    ]
    restarts = []
    for birth in watcher.births:
        t = round(birth.at - opened_at, 3)
        near = around(load, t, interval)
        p99s = [p.p99_ms for p in near if p.p99_ms is not None]
        restarts.append(
            Restart(
                t=t,
                pid=birth.pid,
                replaced=list(birth.gone),
                errors_around=sum(p.errors for p in near),
                p99_around_ms=max(p99s) if p99s else None,
            )
        )
    p99 = [p.p99_ms for p in load if p.p99_ms is not None]
    return Timeline(
        interval_s=interval,
        poll_s=watcher.poll,
        load=load,
        memory=memory,
        workers_at_start=list(watcher.first),
        restarts=restarts,
        pss_growth=growth([(m.t, m.pss) for m in memory], threshold),
        uss_worker_growth=growth([(m.t, m.uss_worker_max) for m in memory], threshold),
        p99_median_ms=round(statistics.median(p99), 3) if p99 else None,
    )
