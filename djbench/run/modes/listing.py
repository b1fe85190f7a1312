"""--list: the servers (installed or what installs them), the load drivers and the
scenarios, nothing run (djbench.plan.inventory; the command shows it)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from djbench.measure.drivers import DRIVERS
from djbench.plan import scenarios
from djbench.plan.inventory import Inventory
from djbench.plan.project import current
from djbench.plan.runplan import RunOptions
from djbench.run.exits import Ended
from djbench.run.modes.job import Invocation, Mode
from djbench.run.session import begin


class ListMode(Mode):
    name = "list"

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Ended:
        begin(how.show, opts)
        return Ended(inventory=inventory(opts))


def inventory(opts: RunOptions) -> Inventory:
    """Scenarios when the scenario file loads, else why not (and how to make one)."""
    path = Path(opts.scenario_file or current().scenarios)
    try:
        file = scenarios.load(path)
    except scenarios.ScenarioError as exc:
        return Inventory(str(path), drivers(), problem=str(exc))
    return Inventory(
        str(file.path),
        drivers(),
        list(file.scenarios),
        profiles=file.profiles,
        own=file.deployments,
    )


def drivers() -> dict[str, str]:
    """Each load driver, and whether it can run here (or what installs it)."""
    return {
        name: "available" if d.available() else f"not available: {d.install_hint}"
        for name, d in DRIVERS.items()
    }
