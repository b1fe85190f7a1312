"""Load drivers: each builds a command line and parses its output into one result shape.

Registry in the style of uvicorn's LOOP_FACTORIES: the CLI's choices come from the keys.
"""

from __future__ import annotations

from djbench.measure.drivers.base import Driver, DriverError, LoadResult, LoadSpec
from djbench.measure.drivers.builtin import BuiltinDriver
from djbench.measure.drivers.wrk import WrkDriver

DRIVERS: dict[str, Driver] = {"wrk": WrkDriver(), "builtin": BuiltinDriver()}


def pick(name: str, needs_rate: bool = False) -> Driver:
    """The driver for --driver NAME; 'auto' is wrk when present (and no --rate), else builtin."""
    if name == "auto":
        if DRIVERS["wrk"].available() and not needs_rate:
            return DRIVERS["wrk"]
        return DRIVERS["builtin"]
    driver = DRIVERS[name]
    if not driver.available():
        raise DriverError(f"the {name} driver is not available here: {driver.install_hint}")
    if needs_rate and not driver.open_loop:
        raise DriverError(f"--rate needs an open-loop driver; {name} is closed-loop (use builtin)")
    return driver


__all__ = ["DRIVERS", "Driver", "DriverError", "LoadResult", "LoadSpec", "pick"]
