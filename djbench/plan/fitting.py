"""The default and quick profiles fitted to a project's pages, from a pilot's service times.

The profiles' numbers (32 connections, 2 s windows, a timeout of the window's length)
suit pages that answer in a few milliseconds. A team's pages take 20-90 ms; 32
connections on a layout that serves one request at a time then queue for 0.6-2.9 s
each, every request passes a 1 s timeout, and nothing is measured. So before timing,
djbench.measure.pilot times each chosen scenario on one live server, one request at a
time (its service time), and the run is fitted to the slowest:

- **connections**: no more than the layout can serve within the latency target (closed
  loop: a request waits about connections x service time / parallel, Little's law),
  at least twice the parallel requests (the server never idles between answers), at
  most the profile's own;
- **window**: long enough for MIN_REQUESTS answers at the layout's pace, at least the
  profile's, at most MAX_WINDOW (and said when that cap leaves fewer);
- **per-request timeout**: TIMEOUT_FACTOR times the wait the pilot's slowest request
  predicts, at least the usual (djbench.measure.drivers.base.request_timeout).

"Parallel" is the server CPUs the run pins the servers to: a page that is Python work
runs no faster than its cores allow, whatever the thread count (a thread pool helps
only while pages wait on I/O, which then shows as a lower service time per core).
The target is --slo-p99 when given, else TARGET_MS.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

TARGET_MS = 500.0  # the queueing a page may see under the default load
MIN_REQUESTS = {"default": 200, "quick": 40}  # answers a window should hold
MAX_WINDOW = {"default": 10.0, "quick": 3.0}  # seconds: every load loop is bounded
TIMEOUT_FACTOR = 10.0
MAX_TIMEOUT = 30.0


def request_timeout(window_s: float) -> float:
    """The usual per-request timeout: the window's length, from 1 s to 10 s. Below the
    window plus the drivers' 2 s grace, so a request sent as the window opens fails (or
    is hung) within the window's accounting instead of after it; recorded with every
    trial."""
    return min(10.0, max(1.0, window_s))


class ServiceTime(BaseModel):
    """One scenario's pilot: requests one at a time on one server."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    requests: int
    median_ms: float
    slowest_ms: float


class Fit(BaseModel):
    """What the run was fitted to, and the values it chose (recorded in the plan)."""

    model_config = ConfigDict(extra="forbid")

    pilot_server: str
    service: list[ServiceTime]
    parallel: int
    target_ms: float
    concurrency: int
    duration: float
    request_timeout: float
    profile_concurrency: int
    profile_duration: float
    why: str  # one sentence: what decided the connections and the window
    # The pilot server's start and stop, with the idle readings a lifetime takes: what a
    # lifetime costs beyond its windows (djbench.run.pilot_fit.reshaped).
    lifetime_s: float | None = None


def fit(
    service: list[ServiceTime],
    parallel: int,
    profile: str,
    concurrency: int,
    duration: float,
    target_ms: float | None = None,
    server: str = "",
) -> Fit:
    """The profile's concurrency, window and timeout for pages this slow."""
    target = target_ms or TARGET_MS
    slowest = max(service, key=lambda s: s.median_ms)
    per_request = slowest.median_ms / 1000
    within = math.floor(target / slowest.median_ms * parallel) if slowest.median_ms else concurrency
    chosen = max(2 * parallel, min(concurrency, within))
    needed = MIN_REQUESTS.get(profile, 200) * per_request / parallel
    window = min(MAX_WINDOW.get(profile, 10.0), max(duration, round(needed, 1)))
    wait = chosen * max(s.slowest_ms for s in service) / 1000 / parallel
    timeout = min(MAX_TIMEOUT, max(request_timeout(window), round(TIMEOUT_FACTOR * wait, 1)))
    why = (
        f"{slowest.scenario} takes {slowest.median_ms:.0f} ms a request; at {chosen} "
        f"connections on {parallel} CPU(s) a request waits about "
        f"{chosen * slowest.median_ms / parallel:.0f} ms (target {target:.0f} ms)"
    )
    if needed > window:
        why += f"; a {window:g} s window holds about {window * parallel / per_request:.0f} answers"
    return Fit(
        pilot_server=server,
        service=service,
        parallel=parallel,
        target_ms=target,
        concurrency=chosen,
        duration=window,
        request_timeout=timeout,
        profile_concurrency=concurrency,
        profile_duration=duration,
        why=why,
    )
