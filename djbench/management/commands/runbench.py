"""``manage.py runbench``: start every server, verify it, load it, record everything."""

from __future__ import annotations

import argparse
import os
from typing import Any

from django.core.management.base import (
    BaseCommand,
    CommandError,
    CommandParser,
    DjangoHelpFormatter,
)

from djbench.launch.process import interrupt_once
from djbench.plan import runplan
from djbench.plan.options import OptionError, redact
from djbench.reports import endings
from djbench.reports.console import console_for
from djbench.reports.console_show import ConsoleShow
from djbench.reports.outputs import CiFiles
from djbench.run import cli, exits, modes, services, session
from djbench.run.flags import Job
from djbench.run.modes import Invocation
from djbench.run.turns import TurnLost, Turns


class _Formatter(DjangoHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Django's option order, with the epilog's lines (the exit codes) kept."""


class Command(BaseCommand):
    help = (
        "Benchmark this Django project under each installed application server: "
        "throughput, latency, errors and memory, with the exact commands used."
    )

    # The job whose --help is asked (`runbench --capacity --help`): only its options.
    help_job: Job | None = None

    def run_from_argv(self, argv: list[str]) -> None:
        if "-h" in argv or "--help" in argv:
            self.help_job = cli.job_named_in(argv[2:])
        with interrupt_once():
            super().run_from_argv(argv)

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # The exit codes' table after the options, its lines kept as written.
        parser.epilog = exits.help_text()
        parser.formatter_class = _Formatter
        # The jobs and their options first; Django's own options (--settings, -v) last.
        django_options = parser._action_groups[1]
        parser._action_groups.remove(django_options)
        parser._action_groups.append(django_options)
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_arguments(parser, only=self.help_job)

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
            job = cli.check(options)  # which option goes with which job, before anything
            self.services(options)
            opts = runplan.from_command(options, job.name)
            until = options["until_round"]
            if until is not None and until < 1:
                raise OptionError("--until-round takes a round number of at least 1")
            show = ConsoleShow(console_for(self.stdout, no_color=options["no_color"]))
            turns = Turns.of(options["turns"]) if options.get("turns") else None
            how = Invocation(show=show, until_round=until, turns=turns)
            mode = modes.for_command(job.name, options)
            if options["resume"]:  # the run's own options, and so its own job
                opts, how = session.resumed(options["resume"], opts, how)
                mode = modes.for_options(opts)
            ended = mode.main(self, opts, how)
        except OptionError as exc:
            raise CommandError(str(exc), returncode=exits.USAGE) from None
        except TurnLost as exc:  # a matrix cell whose referee is gone: its servers stopped
            raise CommandError(str(exc), returncode=exits.INTERRUPTED) from None
        except KeyboardInterrupt:
            raise CommandError(
                "interrupted; every server was stopped", returncode=exits.INTERRUPTED
            ) from None
        ci = CiFiles(options["summary"], options["junit"], options["bmf"])
        endings.show(show.console, ended, ci, strict=opts.on_inconclusive == "fail")
        if (outcome := ended.outcome) is not None:  # results are saved; run/exits.py
            raise CommandError(show.words(outcome.why), returncode=outcome.code)
