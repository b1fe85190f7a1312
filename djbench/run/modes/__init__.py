"""Every job of runbench, by its name in djbench.run.flags.JOBS: one module each, one
:class:`~djbench.run.modes.base.Mode` subclass in it. A new job is a module here, its
entry below and its switch in the table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from djbench.plan.runplan import RunOptions
from djbench.run.modes.base import Invocation, Mode
from djbench.run.modes.capacity import CapacityMode
from djbench.run.modes.churn import ChurnMode
from djbench.run.modes.inventory import ListMode
from djbench.run.modes.matrix import MatrixMode
from djbench.run.modes.rounds import RoundsMode
from djbench.run.modes.soak import SoakMode
from djbench.run.modes.sweep import SweepMode
from djbench.run.modes.tune import TuneMode
from djbench.run.modes.verify import VerifyMode

# In the table's order of precedence (djbench.run.flags.JOBS).
MODES: dict[str, type[Mode]] = {
    m.name: m
    for m in (
        ListMode,
        VerifyMode,
        MatrixMode,
        TuneMode,
        ChurnMode,
        CapacityMode,
        SweepMode,
        SoakMode,
        RoundsMode,
    )
}


def for_command(job: str, options: Mapping[str, Any]) -> Mode:
    """The job the command's options ask for (djbench.run.cli.check named it)."""
    return MODES[job].from_command(options)


def for_options(opts: RunOptions) -> Mode:
    """The job resolved options name: a resumed run's, from its saved options."""
    return MODES[opts.job.job]()


__all__ = ["MODES", "Invocation", "Mode", "for_command", "for_options"]
