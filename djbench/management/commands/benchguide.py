"""``manage.py benchguide [RESULTS.json]``: a deployment choice guide from measured figures
(with no file: the newest run's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from djbench.management.shared_arguments import add_runs
from djbench.reports import guide
from djbench.reports.report import markdown_to_html_page
from djbench.results.store import ResultsError, given_or_newest
from djbench.verdicts.runs import load_one, load_runs


class Command(BaseCommand):
    help = "Write a deployment choice guide drawn from a runbench results file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "results", type=Path, nargs="?", help="a results file (default: the newest run)"
        )
        add_runs(parser)
        parser.add_argument(
            "--output", type=Path, help="guide.md or guide.html (default: print Markdown)"
        )
        parser.add_argument(
            "--cost",
            type=Path,
            help="a cost probe's results (runbench --cost --servers ...): its counts and the "
            "servers' own cost go in the guide's cost section",
        )

    def handle(
        self,
        *args: Any,
        results: Path | None,
        runs: Path,
        output: Path | None,
        cost: Path | None,
        **options: Any,
    ) -> None:
        if output is not None and output.suffix not in (".md", ".html"):
            raise CommandError("--output must end in .md or .html", returncode=2)
        try:
            [path] = given_or_newest([results] if results else [], runs, 1)
            run = load_one(path)
            counted = load_runs(cost)[0] if cost is not None else None
            if counted is not None and counted.document.cost is None:
                raise ResultsError(f"--cost {cost}: not a cost probe's results (runbench --cost)")
        except ResultsError as exc:
            raise CommandError(str(exc), returncode=2) from None
        text = guide.markdown(run, counted)
        if output is None:
            self.stdout.write(text)
            return
        if output.suffix == ".html":
            output.write_text(markdown_to_html_page(f"djbench guide {run.run_id}", text))
        else:
            output.write_text(text)
        self.stdout.write(f"Guide written to {output}")
