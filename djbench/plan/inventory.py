"""What --list shows: the scenario file's scenarios, profiles and the project's own
deployments (or why the file did not load), and each load driver's availability.
The servers are the registry's own (djbench.launch.servers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from djbench.plan.owncommands import OwnCommand
from djbench.plan.scenarios import Scenario


@dataclass(frozen=True)
class Inventory:
    scenario_file: str
    drivers: dict[str, str]  # name -> "available", or what it needs
    scenarios: list[Scenario] = field(default_factory=list)
    profiles: dict[str, list[str]] | None = None
    own: tuple[OwnCommand, ...] = ()
    problem: str | None = None  # why the scenario file did not load
