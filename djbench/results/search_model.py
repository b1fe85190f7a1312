"""The results of the searches a pair can hold (part of the results model, re-exported
by :mod:`djbench.results.model`): a capacity search's windows and estimate, a churn
run's events, a sweep's steps."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from djbench.results.modelbase import Model


class CapacityStep(Model):
    """One open-loop window of a capacity search (djbench.verdicts.capacity_search)."""

    phase: Literal["search", "steady", "confirm", "above"] = Field(
        description="search: the bracket's short windows; steady: the staircase's windows "
        "(confirm and above: files before the staircase)"
    )
    repeat: int = Field(default=0, description="the staircase it belongs to (servers restarted)")
    window_s: float | None = Field(default=None, description="the window's measured length")
    offered: float = Field(description="req/s offered (open loop, latency from due time)")
    achieved: float = Field(description="req/s completed of those due in the window")
    connections: int = Field(description="2 x rate x SLO at least: the load stays open")
    passed: bool
    why: str | None = Field(default=None, description="why it did not pass (a code)")
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
    error_rate: float = 0.0
    late_share: float = Field(default=0.0, description="sends started after their due time")
    pss_peak_mb: float | None = Field(default=None, description="MiB, the window's peak")
    server_cpu_percent: float | None = None
    driver_cpu_percent: float | None = None


class Capacity(Model):
    """The highest offered rate served within the latency target, and how it was found."""

    slo_p99_ms: float
    max_error_rate: float
    resolution: float
    rps: float | None = Field(
        default=None,
        description="capacity, req/s: the rate at which half of the steady windows meet the "
        "target (a logistic fit over every steady window; capacity_fit)",
    )
    interval: tuple[float | None, float | None] | None = Field(
        default=None,
        description="its 95% profile-likelihood interval (None at an end the windows do not bound)",
    )
    repeats: int = Field(default=0, description="staircases run, every server restarted between")
    steady_s: float | None = Field(default=None, description="the steady windows' length, s")
    bracket: tuple[float, float] | None = Field(
        default=None, description="the highest rate that passed and the lowest that failed"
    )
    confirmed: int = Field(default=0, description="steady windows that passed")
    confirm_trials: int = 0
    above_failed: bool | None = Field(
        default=None, description="the window a resolution above the capacity failed"
    )
    stopped: str | None = Field(
        default=None,
        description=(
            "ceiling, driver_busy, driver_failed, never_passed, budget, unbounded (every "
            "steady window passed), never_passed_steady, unconfirmed (older files), "
            "screening (a tuning search's unconfirmed bracket)"
        ),
    )
    server_cpus: int = Field(default=1, description="CPUs the server was pinned to")
    per_core: float | None = Field(default=None, description="capacity / server CPUs")
    per_100mib: float | None = Field(default=None, description="capacity per 100 MiB PSS")
    steps: list[CapacityStep] = Field(default_factory=list)

    @property
    def screening(self) -> bool:
        """A tuning candidate's coarse bracket (--tune --objective capacity): no capacity."""
        return self.stopped == "screening"


class ChurnEvent(Model):
    """One disruption during a steady open-loop load (runbench --churn): a graceful
    reload, a worker killed, or a worker recycled; judged on the load's slices."""

    kind: Literal["reload", "kill-worker", "recycle"]
    t: float = Field(description="seconds from the window's opening")
    signal: str | None = Field(default=None, description="what was sent (None: recycling)")
    target_pid: int | None = None
    failed: int = Field(default=0, description="requests failed or reset after it")
    steady_p99_ms: float | None = Field(
        default=None, description="the median of the slices' p99 before it"
    )
    worst_p99_ms: float | None = Field(
        default=None, description="the worst slice p99 within WATCH_S after it"
    )
    worst_max_ms: float | None = None
    recovered_after_s: float | None = Field(
        default=None,
        description="until latency was back within the steady band for good (None: never)",
    )
    kept_serving: bool = Field(
        default=True, description="every slice after it completed at least one request"
    )
    restarts: int = Field(default=0, description="processes of the tree born after it")


class Churn(Model):
    """--churn: the load, the events and how the server went through them."""

    rate: float
    workers: int
    window_s: float
    slice_s: float
    events: list[ChurnEvent] = Field(default_factory=list)
    unsent: int = Field(default=0, description="due in the window and never sent")
    silent_slices: int = Field(
        default=0, description="slices, over every window, in which no request completed"
    )


class SweepStep(Model):
    """One closed-loop window of a concurrency sweep (djbench.verdicts.knee)."""

    concurrency: int
    rps: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    mean_ms: float | None = None
    in_flight: float | None = Field(default=None, description="measured by the driver")
    littles_in_flight: float | None = Field(
        default=None, description="req/s x mean latency: Little's law's in-flight"
    )
    error_rate: float = 0.0
    valid: bool = True
    pss_peak_mb: float | None = None
    server_cpu_percent: float | None = None


class Sweep(Model):
    """Throughput against concurrency, doubling until it stops rising, and its knee."""

    rise: float = Field(description="a doubling raising req/s by less than this: no rise")
    knee: int | None = Field(
        default=None, description="the smallest concurrency within 95% of the best req/s"
    )
    max_rps: float | None = None
    stopped: str | None = Field(default=None, description="flat, invalid, max or budget")
    steps: list[SweepStep] = Field(default_factory=list)
