"""What a load driver reported beyond the figures every driver gives (requests,
errors, latency): each field is one driver's, typed, and None where that driver says
nothing. The driver that writes a field says what it means (djbench.measure.drivers)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from djbench.results.modelbase import Model


class DriverFigures(Model):
    # --- builtin (djbench.measure.drivers.loadgen)
    mode: str | None = Field(
        default=None,
        description="builtin: closed or open (loop); WebSocket driver: ws-echo, ws-broadcast",
    )
    rate: float | None = Field(default=None, description="open loop: the offered req/s")
    seed: int | None = Field(default=None, description="a mix: the page draws' seed")
    timeout_s: float | None = Field(default=None, description="the request timeout")
    late_starts: int | None = Field(
        default=None, description="open loop: requests sent after their due time"
    )
    after_window: int | None = Field(
        default=None, description="requests that finished in the grace after the window"
    )
    hung: int | None = Field(default=None, description="requests still open at the end")
    resent: int | None = Field(
        default=None, description="requests sent again on a new connection after a close"
    )
    # --- Locust (djbench.measure.drivers.locust)
    users_at_open: int | None = None
    users_expected: int | None = None
    worker_cpu_percent: list[float] | None = None
    workers_reported: int | None = None
    workers_expected: int | None = None
    locust_total_requests: int | None = None
    locust_total_failures: int | None = None
    worker_probe: dict[str, Any] | None = None
    windows_wall: list[list[float]] | None = None
    # --- h2load (djbench.measure.drivers.h2load)
    protocol: str | None = Field(default=None, description="h2load: the protocol ALPN chose")
    h2load_total: int | None = None
    h2load_succeeded: int | None = None
    h2load_failed: int | None = None
    cut_at_end: int | None = Field(
        default=None, description="h2load: streams its timed run's end cut"
    )
    # --- wrk (djbench.measure.drivers.wrk)
    bytes: int | None = None
    latency_stdev_ms: float | None = None
    # --- the WebSocket driver (djbench.measure.drivers.wsload)
    members: int | None = None
    messages_in: int | None = None
    messages_in_per_s: float | None = None
    deliveries_per_s: float | None = None
    expected_deliveries: int | None = None

    @classmethod
    def of(cls, data: dict[str, Any]) -> DriverFigures:
        """The fields a driver's output holds (its other keys are its own figures)."""
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})
