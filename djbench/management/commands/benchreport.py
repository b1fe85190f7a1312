"""``manage.py benchreport [RESULTS.json ...]``: HTML and Markdown reports (with no file:
the newest run's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from djbench.management.shared_arguments import add_runs
from djbench.reports import report
from djbench.results.store import ResultsError, given_or_newest
from djbench.verdicts.runs import load_runs


class Command(BaseCommand):
    help = "Make a self-contained HTML report (and/or Markdown) from runbench results files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "results",
            type=Path,
            nargs="*",
            help="results files, or a --matrix run's matrix.json (default: the newest run)",
        )
        add_runs(parser)
        parser.add_argument("--html", type=Path, help="HTML file to write")
        parser.add_argument("--markdown", type=Path, help="Markdown file to write")

    def handle(
        self,
        *args: Any,
        results: list[Path],
        runs: Path,
        html: Path | None,
        markdown: Path | None,
        **options: Any,
    ) -> None:
        try:
            results = given_or_newest(results, runs, 1)
            loaded = [run for path in results for run in load_runs(path)]
        except ResultsError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if html is None and markdown is None:
            html = results[0].with_suffix(".html")
        if html is not None:
            html.write_text(report.html(loaded), encoding="utf-8")
            self.stdout.write(f"HTML report: {html}")
        if markdown is not None:
            markdown.write_text(report.markdown(loaded), encoding="utf-8")
            self.stdout.write(f"Markdown report: {markdown}")
