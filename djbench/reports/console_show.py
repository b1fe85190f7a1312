"""The console's side of djbench.run.show.Show: how a job's codes, log lines and
progress lines are said while it runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from djbench.reports.console import print_skipped, trial_line
from djbench.reports.cost_output import matrix_cost_line, page_line, server_line
from djbench.reports.gate_output import print_gate
from djbench.reports.matrix_output import noise_line
from djbench.reports.search_words import capacity_text
from djbench.reports.words import budget_text, say
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


@dataclass
class ConsoleShow:
    console: Console

    def line(self, text: str) -> None:
        self.console.print(escape(text))

    def words(self, notice: Notice | None) -> str:
        return say(notice)

    def refused(self, label: str, why: Notice | str) -> None:
        said = why if isinstance(why, str) else say(why)
        self.console.print(f"[yellow]incompatible[/] {escape(label)}: {escape(said)}")

    def skipped(self, skipped: Mapping[str, Notice]) -> None:
        print_skipped(self.console, dict(skipped))

    def trial(self, done: int, planned: int, label: str, trial: Trial) -> str:
        return trial_line(done, planned, label, trial)

    def capacity(self, found: Capacity) -> str:
        return capacity_text(found)

    def noise(self, found: MatrixNoise) -> str:
        return noise_line(found)

    def gate(self, label: str, seconds: float | None, error: str | None) -> None:
        print_gate(self.console, label, seconds, error or "")

    def budget(self, plan: PlanRecord) -> str:
        return budget_text(plan)

    def cost(self, page: PageCost) -> None:
        self.console.print(escape(page_line(page)))

    def server_cost(self, found: ServerCost) -> None:
        self.console.print(escape(server_line(found)))

    def matrix_cost(self, found: MatrixCost) -> str:
        return matrix_cost_line(found)
