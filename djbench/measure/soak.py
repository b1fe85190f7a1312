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
from djbench.results import stats
from djbench.results.model import Growth, LoadPoint, MemoryPoint, Restart, Timeline

GROWTH_METHOD = (
    "least squares over the readings after the first {skip:.0f} s, its interval widened "
    "for their autocorrelation (lag-1 {lag1:.2f}: worth {n_eff:.0f} independent readings), "
    "t on n_eff - 2 degrees of freedom; grows/shrinks only beyond {threshold:g} MiB/h"
)


def growth(points: list[tuple[float, float]], threshold: float = GROWTH_THRESHOLD_MB_H) -> Growth:
    found = stats.trend(points, threshold)
    if found["verdict"] == "too_short":
        return Growth(verdict="too_short", skipped_s=found["skipped_s"])
    return Growth(
        mb_per_hour=found["per_hour"],
        ci95=found["ci95"],
        verdict=found["verdict"],
        effective_n=found["effective_n"],
        lag1=found["lag1"],
        threshold_mb_per_hour=threshold,
        skipped_s=found["skipped_s"],
        method=GROWTH_METHOD.format(
            skip=found["skipped_s"], lag1=found["lag1"], n_eff=found["effective_n"],
            threshold=threshold,
        ),
    )  # fmt: skip


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
