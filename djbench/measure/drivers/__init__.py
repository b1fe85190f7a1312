"""Load drivers: each builds a command line and parses its output into one result shape.

Registry in the style of uvicorn's LOOP_FACTORIES: the CLI's choices come from the keys.
"""

from __future__ import annotations

from djbench.measure.drivers.base import Driver, DriverError, LoadResult, LoadSpec
from djbench.measure.drivers.builtin import BuiltinDriver
from djbench.measure.drivers.h2load import H2loadDriver
from djbench.measure.drivers.locust import LocustDriver
from djbench.measure.drivers.wrk import WrkDriver

DRIVERS: dict[str, Driver] = {
    "wrk": WrkDriver(),
    "builtin": BuiltinDriver(),
    "locust": LocustDriver(),
    "h2load": H2loadDriver(),
}
DEFAULT = DRIVERS["builtin"]  # what --driver auto means over HTTP/1.1 (see pick)
HTTP2 = DRIVERS["h2load"]  # ... and when HTTP/2 is asked: the one that speaks it
# The independent reference benchcalibrate holds the others against: a C generator
# whose numbers people know, run as a plain subprocess (djbench.measure.calibrate).
REFERENCE = DRIVERS["wrk"]


def pick(name: str, needs_rate: bool = False, http2: bool = False) -> Driver:
    """The driver for --driver NAME; 'auto' is the builtin driver.

    The builtin driver is the default because its windows are steady-state (warm-up and
    window in one process, the load running across both edges), it measures requests
    in flight instead of inferring them, and it counts every status against the
    expected one. wrk (`--driver wrk`) starts its connections at its window's start and
    leaves up to one request per connection unanswered at its end: with 32 connections
    at a few hundred req/s that is 5-15% of a 1-3 s window (measured; the trial reports
    the bound). Both reach far beyond Django here (benchcalibrate: ~58-62k req/s).
    """
    if name == "auto" and not http2:
        return DEFAULT
    driver = HTTP2 if name == "auto" else DRIVERS[name]
    if needs_rate and not driver.open_loop:
        raise DriverError(f"--rate needs an open-loop driver; {name} is closed-loop (use builtin)")
    return driver


def unavailable(driver: Driver) -> str | None:
    """Why the driver cannot run here (not installed), asked after every refusal of what
    it cannot do: a pairing the job refuses is said first, wherever it runs."""
    if driver.available():
        return None
    return f"the {driver.name} driver is not available here: {driver.install_hint}"


def having(capability: str) -> str:
    """The drivers that have a capability, named for a refusal: "builtin", "wrk or h2load"."""
    return " or ".join(n for n, d in DRIVERS.items() if getattr(d, capability))


__all__ = [
    "DEFAULT",
    "DRIVERS",
    "HTTP2",
    "REFERENCE",
    "Driver",
    "DriverError",
    "LoadResult",
    "LoadSpec",
    "having",
    "pick",
    "unavailable",
]
