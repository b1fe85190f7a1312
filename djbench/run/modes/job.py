"""The one shape of a runbench job (a mode): what it refuses, the line that says what
it will do, how many steps its progress counts, and what it runs; what it leaves for the
command to show (its results file: djbench.run.exits.Ended, djbench.reports.endings).

A job is named in djbench.run.flags.JOBS (its switch, and what it takes there); its
module under djbench.run.modes holds one subclass of :class:`Mode`. The timed jobs
share the flow of djbench.run.session (its ``TimedMode``); --list, --verify-only and
--matrix have their own ``main``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from djbench.measure.drivers import Driver
from djbench.plan.runplan import RunOptions
from djbench.results.model import PairResult, RunDocument
from djbench.run.bench import Bench
from djbench.run.exits import Ended
from djbench.run.roundplan import Plan
from djbench.run.selection import Selection
from djbench.run.show import Show
from djbench.run.turns import Turns

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand


@dataclass(frozen=True)
class Invocation:
    """What this invocation does with the options (never saved with a run)."""

    show: Show
    # --resume: the run's saved document and file (its options are the run's own)
    resumed: RunDocument | None = None
    path: Path | None = None
    # Stop after this many rounds (the file stays resumable): how --matrix interleaves
    # its cells round by round, each round one runbench per cell.
    until_round: int | None = None
    # --turns: a matrix cell whose windows take turns with the other cells' (run/turns.py)
    turns: Turns | None = None


@dataclass(frozen=True)
class Context:
    """Everything a timed job's ``run`` is given: the bench its rounds run on (project,
    plan, recorder, logs, progress, deadline), and what only the job reads."""

    bench: Bench
    selection: Selection
    opts: RunOptions
    until_round: int | None


class Mode:
    """A job of runbench. The defaults are the plain run's."""

    name: ClassVar[str]

    @classmethod
    def from_command(cls, options: Mapping[str, Any]) -> Mode:
        """The job, given what only it reads of the command's options (the matrix's
        settings); every other job reads the resolved RunOptions alone."""
        return cls()

    def says_budget(self, opts: RunOptions) -> bool:
        """Whether a --budget line is printed after the rounds (a search budgets its own)."""
        return True

    # Its --budget buys rounds: the planned rounds are fitted to the budget before the
    # first window (djbench.run.pilot_fit.reshaped).
    budgets_rounds = False

    def chosen(self, opts: RunOptions) -> bool:
        """Whether resolved options (a resumed run's) ask for this job: they name it."""
        return opts.job.job == self.name

    def check(self, opts: RunOptions, selection: Selection, driver: Driver) -> None:
        """Refusals that need the selection or the driver, before any process starts
        (those of a value alone are djbench.plan.runplan's, of a pairing the table's)."""

    def each_pair(self, opts: RunOptions, plan: Plan) -> str:
        """What every pair gets, for the run's plan line."""
        return f"{plan.trials} trial(s)"

    def budget_line(self, opts: RunOptions) -> str:
        """What --budget buys, for the plan line (empty: nothing to say)."""
        return ""

    def more(self, opts: RunOptions, plan: Plan, selection: Selection) -> list[str]:
        """Lines of the plan beyond the first (a tuning's candidates)."""
        return []

    def ticks(self, opts: RunOptions, plan: Plan, selection: Selection) -> int:
        """The progress bar's total."""
        return plan.total_trials()

    def run(self, ctx: Context) -> None:
        raise NotImplementedError

    def measured(self, document: RunDocument) -> list[PairResult]:
        """The pairs the job measured (the others are findings): none is exit code 3."""
        return [e for e in document.results if e.status == "ok"]

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Ended:
        """The whole job; what it leaves to show and how it ended (djbench.run.exits;
        the timed jobs': djbench.run.session.TimedMode)."""
        raise NotImplementedError
