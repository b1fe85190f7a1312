"""The pilot: each scenario's service time on one live server, one request at a time.

Before the first timed window of a default or quick run, djbench.run.pilot_fit starts one
deployment and sends each chosen HTTP scenario WARM requests, then up to REQUESTS
timed ones (all within SECONDS per scenario), one after another on fresh connections:
no queue, so each request's time is the page's own cost on this server (plus a
loopback connection, about 0.1 ms here). djbench.plan.fitting turns those times into
the run's connections, window and timeout.
"""

from __future__ import annotations

import statistics
import time

from djbench.launch.live import Target
from djbench.measure.verify import send
from djbench.plan.fitting import ServiceTime
from djbench.plan.scenarios import Scenario

WARM = 2
REQUESTS = 8
SECONDS = 5.0


def service_times(target: Target, scenarios: list[Scenario]) -> list[ServiceTime]:
    """The HTTP scenarios' service times (a scenario that fails here is left out: the
    verify gate says why, per server). A mix's is its pages' weighted mean, its slowest
    their slowest."""
    found = []
    for scenario in scenarios:
        if scenario.kind != "http":
            continue
        timed = _mix(target, scenario) if scenario.mix else _timed(target, scenario)
        if timed is not None:
            found.append(timed)
    return found


def _timed(target: Target, scenario: Scenario) -> ServiceTime | None:
    paths = scenario.request.path_list()
    times: list[float] = []
    deadline = time.monotonic() + SECONDS
    for i in range(WARM + REQUESTS):
        path = paths[i % len(paths)]
        started = time.perf_counter()
        answer = send(target, scenario.request, count_queries=False, path=path)
        took = time.perf_counter() - started
        if answer.error or answer.status != scenario.expect.status:
            break
        if i >= WARM:
            times.append(took * 1000)
        if time.monotonic() > deadline:
            break
    if not times:
        return None
    return ServiceTime(
        scenario=scenario.name,
        requests=len(times),
        median_ms=round(statistics.median(times), 2),
        slowest_ms=round(max(times), 2),
    )


def _mix(target: Target, scenario: Scenario) -> ServiceTime | None:
    pages = [(p.share(scenario.mix), _timed(target, p.scenario)) for p in scenario.mix]
    if any(timed is None for _, timed in pages):
        return None
    timed = [(share, t) for share, t in pages if t is not None]
    return ServiceTime(
        scenario=scenario.name,
        requests=sum(t.requests for _, t in timed),
        median_ms=round(sum(share * t.median_ms for share, t in timed), 2),
        slowest_ms=max(t.slowest_ms for _, t in timed),
    )
