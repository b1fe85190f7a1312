"""--list: the servers (installed or what installs them) and the scenarios, nothing run."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand
from rich.console import Console

from djbench.measure.drivers import DRIVERS
from djbench.plan import scenarios
from djbench.plan.project import current
from djbench.plan.runplan import RunOptions
from djbench.reports.console import console_for
from djbench.reports.listing import print_list
from djbench.run.exits import Outcome
from djbench.run.modes.base import Invocation, Mode
from djbench.run.session import begin


class ListMode(Mode):
    name = "list"

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Outcome | None:
        console = console_for(command.stdout, no_color=how.no_color)
        begin(console, opts)
        list_all(console, opts)
        return None


def list_all(console: Console, opts: RunOptions) -> None:
    """Servers always; scenarios when the scenario file loads, else how to make one."""
    path = Path(opts.scenario_file or current().scenarios)
    try:
        file = scenarios.load(path)
    except scenarios.ScenarioError as exc:
        print_list(console, [], str(path), drivers(), problem=str(exc))
        return
    print_list(
        console,
        list(file.scenarios),
        str(file.path),
        drivers(),
        profiles=file.profiles,
        own=file.deployments,
    )


def drivers() -> dict[str, str]:
    """Each load driver, and whether it can run here (or what installs it)."""
    return {
        name: "available" if d.available() else f"not available: {d.install_hint}"
        for name, d in DRIVERS.items()
    }
