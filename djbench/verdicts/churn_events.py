"""How a server goes through a disruption under a steady load (runbench --churn).

The load is open loop at a fixed rate (latency from each request's due time, so a
stall shows as latency, not as fewer requests), cut into slices (the builtin driver's
series). For an event at time t:

- *steady p99*: the median of the slices' p99 before t (the first slice left out:
  the window opens straight after the warm-up);
- *failed*: errors and unexpected statuses in the slices from t to the window's end;
- *worst p99 / max*: the worst slice within WATCH_S after t;
- *recovered after*: from t to the start of the first run of RECOVER_SLICES slices
  that are back in the steady band (p99 at most BAND_FACTOR x the steady p99, or
  steady + BAND_FLOOR_MS, whichever is larger, and no errors), after which no slice
  leaves it again; None when it never settles before the window's end;
- *kept serving*: every slice from t on completed at least one request.

Pure functions on recorded slices: tested by simulation and on recorded series.
"""

from __future__ import annotations

import statistics
from typing import Literal

from djbench.results.model import ChurnEvent, LoadPoint

WATCH_S = 3.0
BAND_FACTOR = 2.0
BAND_FLOOR_MS = 5.0
RECOVER_SLICES = 2


def band(steady_p99: float | None) -> float | None:
    if steady_p99 is None:
        return None
    return max(BAND_FACTOR * steady_p99, steady_p99 + BAND_FLOOR_MS)


def _in_band(point: LoadPoint, limit: float | None) -> bool:
    if point.errors or point.requests == 0:
        return False
    return limit is None or (point.p99_ms is not None and point.p99_ms <= limit)


def recovered_after(after: list[LoadPoint], t: float, limit: float | None) -> float | None:
    """Seconds from t to the start of the slice from which every slice stays in band
    (at least RECOVER_SLICES of them); None if the window ends first."""
    settled: int | None = None
    for index in range(len(after) - 1, -1, -1):
        if not _in_band(after[index], limit):
            break
        settled = index
    if settled is None or len(after) - settled < RECOVER_SLICES:
        return None
    return round(max(0.0, after[settled].t - t), 3)


def analyse(
    kind: Literal["reload", "kill-worker", "recycle"],
    load: list[LoadPoint],
    t: float,
    births_after: int,
    signal: str | None = None,
    target_pid: int | None = None,
) -> ChurnEvent:
    before = [p for p in load[1:] if p.t + p.seconds <= t and p.p99_ms is not None]
    after = [p for p in load if p.t + p.seconds > t]
    near = [p for p in after if p.t <= t + WATCH_S]
    steady = statistics.median(p.p99_ms for p in before if p.p99_ms is not None) if before else None
    p99s = [p.p99_ms for p in near if p.p99_ms is not None]
    highs = [p.max_ms for p in near if p.max_ms is not None]
    return ChurnEvent(
        kind=kind,
        t=round(t, 3),
        signal=signal,
        target_pid=target_pid,
        failed=sum(p.errors for p in after),
        steady_p99_ms=round(steady, 3) if steady is not None else None,
        worst_p99_ms=max(p99s) if p99s else None,
        worst_max_ms=max(highs) if highs else None,
        recovered_after_s=recovered_after(after, t, band(steady)),
        kept_serving=all(p.requests > 0 for p in after),
        restarts=births_after,
    )
