"""How a job speaks while it runs: the words of its codes, its log lines and its progress
lines, behind one interface the command gives it (djbench.reports.console_show.ConsoleShow).
run/ computes, records and judges; it never imports a presenter. What a job prints at its
end (tables, the answer, the files written beside the results) is the command's, from
the results file (djbench.reports.endings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from rich.console import Console

from djbench.results.model import (
    Capacity,
    MatrixCost,
    MatrixNoise,
    Notice,
    PageCost,
    PlanRecord,
    ServerCost,
    Trial,
)


class Show(Protocol):
    console: Console

    def line(self, text: str) -> None:
        """A line of the run's log, as it is (escaped)."""

    def words(self, notice: Notice | None) -> str:
        """A code in words (for a message that embeds one)."""

    def refused(self, label: str, why: Notice | str) -> None:
        """A deployment or variant that will not run: incompatible with the options."""

    def skipped(self, skipped: Mapping[str, Notice]) -> None:
        """Servers left out of the selection, each with why."""

    def trial(self, done: int, planned: int, label: str, trial: Trial) -> str:
        """A finished window, as a log line (a log without a terminal prints them)."""

    def capacity(self, found: Capacity) -> str:
        """A capacity search's result, in a few words."""

    def noise(self, found: MatrixNoise) -> str:
        """A matrix runner's measured noise, in one sentence."""

    def gate(self, label: str, seconds: float | None, error: str | None) -> None:
        """One deployment's verify gate done (--verify-only)."""

    def budget(self, plan: PlanRecord) -> str:
        """What --budget bought, after the rounds."""

    def cost(self, page: PageCost) -> None:
        """One page counted (--cost)."""

    def server_cost(self, found: ServerCost) -> None:
        """One server's own cost counted (--cost --servers)."""

    def matrix_cost(self, found: MatrixCost) -> str:
        """A matrix's cost phase, in one line."""
