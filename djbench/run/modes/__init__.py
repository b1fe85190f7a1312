"""Every job of runbench, by its name in djbench.run.flags.JOBS: one module each, one
:class:`~djbench.run.modes.job.Mode` subclass in it. A new job needs:

- its module here: the Mode (its refusals, plan line, progress ticks, ``run``), and its
  entry in MODES below;
- its switch and the options it takes in djbench.run.flags (the table builds the
  parser, the checks, a matrix cell's argv and the option reference);
- its own options' plan in djbench.plan.jobplans, built in djbench.plan.runplan;
- what it records in the results model (djbench.results), its judgements in
  djbench.verdicts, and its table in djbench.reports (djbench.reports.endings prints
  whatever a results file holds, so no job registers a presenter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from djbench.plan.runplan import RunOptions
from djbench.run.modes.capacity import CapacityMode
from djbench.run.modes.churn import ChurnMode
from djbench.run.modes.cost import CostMode
from djbench.run.modes.job import Invocation, Mode
from djbench.run.modes.listing import ListMode
from djbench.run.modes.matrix import MatrixMode
from djbench.run.modes.rounds import RoundsMode
from djbench.run.modes.soak import SoakMode
from djbench.run.modes.sweep import SweepMode
from djbench.run.modes.tune import TuneMode
from djbench.run.modes.verify_only import VerifyMode

# In the table's order of precedence (djbench.run.flags.JOBS).
MODES: dict[str, type[Mode]] = {
    m.name: m
    for m in (
        ListMode,
        VerifyMode,
        CostMode,
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
