"""``manage.py runbench``: start every server, verify it, load it, record everything."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from djbench.plan import runplan
from djbench.plan.options import OptionError, redact
from djbench.results import decide
from djbench.run import arguments, benchrun, services, upgrade


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
        a(
            "--proxy",
            default="none",
            help="none, caddy, caddy-tls (Caddy terminating TLS), comma-separated (default: none)",
        )
        a(
            "--workers",
            default="1",
            help="worker processes per server (default 1), or auto: the layout each "
            "server's documentation recommends for the CPUs it is pinned to",
        )
        a("--threads", type=int, help="threads per worker where the server has them")
        a("--cpus", default="auto", help="auto, none, or SERVER/DRIVER CPU lists like 0/1")
        a("--port", type=int, help="client-facing port (default: a free one per server)")
        a("--output", type=Path, default=Path("bench-results"), help="results folder")
        a("--no-setup", action="store_true", help="skip DJBENCH['SETUP_COMMANDS']")
        a(
            "--database",
            metavar="postgres[=URL]",
            help="run on PostgreSQL (default postgres://postgres@127.0.0.1:5432/djbench), "
            "creating the database when missing",
        )
        a(
            "--redis",
            nargs="?",
            const=services.DEFAULT_REDIS,
            metavar="URL",
            help="put the cache and channel layer on Redis (default redis://127.0.0.1:6379/0)",
        )
        arguments.add_load_arguments(parser)
        a(
            "--matrix",
            metavar="AXES",
            help='version matrix, e.g. "django=5.2,6.0" or "ref=main,HEAD": the same plan in '
            "one isolated environment per cell (built with uv), rounds interleaved, each "
            "cell compared with the first; exit code 1 when anything got worse",
        )
        a("--matrix-base", metavar="CELL", help="the cell the others are compared with")
        a(
            "--budget",
            metavar="DURATION",
            help=f"--matrix: wall time of the whole command (default {upgrade.DEFAULT_BUDGET}); "
            "rounds go on until every pair is decided or it is spent (with --trials N: "
            "exactly N rounds). A plain run: its wall time (default profile: 10m unless "
            "--trials is given); after --trials rounds, more go to the servers whose rank "
            "is still open while it lasts",
        )
        a(
            "--threshold",
            type=float,
            help="--matrix: smallest change that counts, and the equivalence margin "
            f"(default {decide.THRESHOLD})",
        )
        a(
            "--alpha",
            type=float,
            help="--matrix: false discovery rate per metric over the pairs and the looks "
            f"(default {decide.ALPHA}; paired t on per-round log-ratios)",
        )
        a("--python", metavar="PATH", help="--matrix: an interpreter to try first")
        a("--offline", action="store_true", help="--matrix: build from uv's cache only")
        a("--until-round", type=int, help=argparse.SUPPRESS)  # --matrix's own interleaving

    def services(self, options: dict[str, Any]) -> None:
        """--database / --redis: make sure they answer, then restart with their URLs."""
        if not options.get("database") and not options.get("redis"):
            return
        if os.environ.get(services.MARK) == "1":
            # This is the restarted runbench: the URLs are in the environment. Say when
            # the project's settings do not read one.
            for option, variable in (("database", "DATABASE_URL"), ("redis", "REDIS_URL")):
                url = os.environ.get(variable) if options.get(option) else None
                if url and (warning := services.unread(variable, url)) is not None:
                    self.stdout.write(warning)
            return
        env: dict[str, str] = {}
        if options.get("database"):
            url = services.database_url(options["database"])
            self.stdout.write(services.ensure_database(url))
            env["DATABASE_URL"] = url
        if options.get("redis"):
            self.stdout.write(services.check_redis(options["redis"]))
            env["REDIS_URL"] = options["redis"]
        self.stdout.write(
            "restarting runbench with " + ", ".join(f"{k}={redact(v)}" for k, v in env.items())
        )
        services.restart_with(env)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self.services(options)
        except OptionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if not options.get("matrix"):
            extra = [o for o in ("threshold", "alpha") if options.get(o) is not None]
            if extra:
                raise CommandError(
                    f"--{extra[0]} goes with --matrix (a verdict between cells)", returncode=2
                )
        until = options.get("until_round")
        if until is not None and until < 1:
            raise CommandError("--until-round takes a round number of at least 1", returncode=2)
        action = benchrun.Action(
            list=options["list"],
            verify_only=options["verify_only"],
            resume=options.get("resume"),
            no_color=options.get("no_color", False),
            until_round=until,
        )
        try:
            if options.get("matrix"):
                problem = upgrade.main(self, runplan.from_command(options), options)
            else:
                problem = benchrun.main(self, runplan.from_command(options), action)
        except OptionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted; every server was stopped", returncode=130) from None
        if problem:  # results are saved; the exit code tells CI that something failed
            raise CommandError(problem, returncode=1)
