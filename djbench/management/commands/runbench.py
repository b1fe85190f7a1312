"""``manage.py runbench``: start every server, verify it, load it, record everything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from djbench.plan import runplan
from djbench.plan.options import OptionError
from djbench.run import benchrun


class Command(BaseCommand):
    help = (
        "Benchmark this Django project under each installed application server: "
        "throughput, latency, errors and memory, with the exact commands used."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        a = parser.add_argument
        a("--list", action="store_true", help="list servers and scenarios, then exit")
        a("--verify-only", action="store_true", help="run the verify gate only (nothing timed)")
        a("--servers", help="comma-separated server names (default: every installed one)")
        a("--scenarios", help="comma-separated scenario names (default: the profile's set)")
        a("--scenario-file", type=Path, help="scenario file (default: DJBENCH['SCENARIOS'])")
        a("--proxy", default="none", help="none, caddy, or both: none,caddy (default: none)")
        a("--workers", type=int, default=1, help="worker processes per server (default 1)")
        a("--threads", type=int, help="threads per worker where the server has them")
        a("--cpus", default="auto", help="auto, none, or SERVER/DRIVER CPU lists like 0/1")
        a("--port", type=int, help="client-facing port (default: a free one per server)")
        a("--output", type=Path, default=Path("bench-results"), help="results folder")
        a("--no-setup", action="store_true", help="skip DJBENCH['SETUP_COMMANDS']")
        benchrun.add_load_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        action = benchrun.Action(
            list=options["list"],
            verify_only=options["verify_only"],
            resume=options.get("resume"),
            no_color=options.get("no_color", False),
        )
        try:
            problem = benchrun.main(self, runplan.from_command(options), action)
        except OptionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted; every server was stopped", returncode=130) from None
        if problem:  # results are saved; the exit code tells CI that something failed
            raise CommandError(problem, returncode=1)
