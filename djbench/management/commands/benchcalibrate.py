"""``manage.py benchcalibrate``: the load drivers' ceiling and the sampler's overhead here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from djbench.launch.process import ServerError, interrupt_once, terminate_on_signals
from djbench.measure import calibrate
from djbench.plan import scenarios
from djbench.plan.options import OptionError, cpu_split
from djbench.plan.project import current


class Command(BaseCommand):
    help = "Measure the load drivers' ceiling and the sampler's overhead on this machine."

    def run_from_argv(self, argv: list[str]) -> None:
        with interrupt_once():  # a second Ctrl-C while it exits: still exit 130
            super().run_from_argv(argv)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--trials",
            type=int,
            default=calibrate.MIN_ROUNDS,
            help=f"interleaved rounds of every check (default {calibrate.MIN_ROUNDS}: the "
            "fewest that give the agreement's median a 95%% interval)",
        )
        parser.add_argument("--duration", type=float, default=3.0)
        parser.add_argument("--cpus", default="auto", help="auto, none or SERVER/DRIVER")
        parser.add_argument(
            "--scenario",
            default="health-sync",
            help="scenario (of the project's scenario file) loaded for the observer and "
            "agreement checks (default health-sync)",
        )
        parser.add_argument(
            "--json", dest="json_path", type=Path, help="also write the figures to this file"
        )
        parser.add_argument(
            "--agreement-only",
            action="store_true",
            help="only runbench against an independent wrk (gunicorn-sync x1, x4, uvicorn)",
        )
        parser.add_argument(
            "--agreement-on",
            metavar="SERVER[:WORKERS],...",
            help="only the agreement, on these servers (e.g. gunicorn-sync:4,uvicorn)",
        )

    def handle(
        self,
        *args: Any,
        trials: int,
        duration: float,
        cpus: str,
        scenario: str,
        json_path: Path | None,
        agreement_only: bool = False,
        agreement_on: str | None = None,
        **options: Any,
    ) -> None:
        if trials < 1 or not 0 < duration <= 60:
            raise CommandError("--trials >= 1 and 0 < --duration <= 60", returncode=2)
        try:
            server_cpus, driver_cpus = cpu_split(cpus)
        except OptionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        try:
            targets = calibrate.agreement_targets(agreement_on) if agreement_on else None
        except ValueError as exc:
            raise CommandError(f"--agreement-on: {exc}", returncode=2) from None
        if targets is None and agreement_only:
            targets = calibrate.AGREEMENT
        project = current()
        try:
            file = scenarios.load(project.scenarios)
            [chosen] = file.select([scenario])
        except scenarios.ScenarioError as exc:
            raise CommandError(str(exc), returncode=2) from None
        except KeyError:
            raise CommandError(
                f"unknown scenario {scenario!r}; valid: {', '.join(file.names())}", returncode=2
            ) from None
        try:
            with terminate_on_signals():
                report = calibrate.run(
                    project, chosen, server_cpus, driver_cpus, trials, duration,
                    self.stdout.write, targets,
                )  # fmt: skip
        except (RuntimeError, ServerError) as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted; every process was stopped", returncode=130) from None
        if json_path is not None:
            json_path.write_text(json.dumps(report, indent=2) + "\n")
