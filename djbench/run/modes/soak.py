"""--soak DURATION: one long window per pair, memory, latency and worker restarts as a
time series (djbench.measure.timeline), memory growth per hour with its interval."""

from __future__ import annotations

from djbench.measure.drivers import Driver, having
from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions
from djbench.run.modes.rounds import RoundsMode
from djbench.run.selection import Selection


class SoakMode(RoundsMode):
    name = "soak"

    def check(self, opts: RunOptions, selection: Selection, driver: Driver) -> None:
        if not driver.time_series:
            raise OptionError(
                f"--soak needs the {having('time_series')} driver (it reports the load as a "
                f"time series); {driver.name} reports totals only: leave out --driver"
            )
