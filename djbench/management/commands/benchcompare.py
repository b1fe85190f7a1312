"""``manage.py benchcompare [BASE.json NEW.json]``: worse, better, equivalent or
inconclusive (with no files: the two newest runs, older as the base).

Two separate runs: the machine may have changed between them (other work shifts whole
runs here by 20-30%); comparing in one command (``runbench --matrix``) pairs the sides
round by round and is the honest way to validate an upgrade.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from djbench.management.shared_arguments import add_runs
from djbench.reports.compare_output import as_json, markdown, print_table
from djbench.reports.console import console_for
from djbench.reports.cost_output import print_comparison
from djbench.reports.words import say
from djbench.results import store
from djbench.results.model import Notice, RunDocument
from djbench.results.store import ResultsError, given_or_newest
from djbench.verdicts import cost, rules
from djbench.verdicts.comparable import reachable
from djbench.verdicts.compare import compare
from djbench.verdicts.runs import load_run


class Command(BaseCommand):
    help = (
        "Compare two runbench results files (e.g. before and after a Django upgrade): "
        "worse, better, equivalent or inconclusive per pair. Exit code 1 when anything "
        "got worse, 0 otherwise, 2 for unusable input or when no verdict is reachable."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("base", type=Path, nargs="?", help="results file of the reference run")
        parser.add_argument("new", type=Path, nargs="?", help="results file of the run to judge")
        add_runs(parser)
        parser.add_argument(
            "--threshold",
            type=float,
            default=None,
            help="smallest change that counts, and the equivalence margin, as a fraction "
            f"(default {rules.THRESHOLD}; two cost probes: {cost.THRESHOLD})",
        )
        parser.add_argument(
            "--alpha",
            type=float,
            default=rules.ALPHA,
            help="false discovery rate over every pair x metric (Benjamini-Hochberg) of "
            f"Welch's t on log trial values (default {rules.ALPHA})",
        )
        parser.add_argument(
            "--json", dest="json_path", type=Path, help="write the verdicts as JSON"
        )
        parser.add_argument(
            "--markdown",
            dest="markdown_path",
            type=Path,
            help="write the verdicts as Markdown (e.g. for a CI summary)",
        )

    def handle(
        self,
        *args: Any,
        base: Path | None,
        new: Path | None,
        runs: Path,
        threshold: float | None,
        alpha: float,
        json_path: Path | None,
        markdown_path: Path | None,
        **options: Any,
    ) -> None:
        if threshold is not None and not 0 < threshold < 1:
            raise CommandError("--threshold takes a fraction like 0.05", returncode=2)
        if not 0 < alpha < 1:
            raise CommandError(
                "--alpha takes a probability between 0 and 1, like 0.01", returncode=2
            )
        if (base is None) != (new is None):
            raise CommandError(
                "give both results files, or neither (the two newest runs)", returncode=2
            )
        try:
            paths = given_or_newest([p for p in (base, new) if p], runs, 2)
            if len(paths) < 2:
                raise ResultsError(f"only one run in {runs}/: name the two results files")
            documents = _documents(paths[:2])
            if any(d.cost is not None for d in documents):
                self.compare_costs(documents[0], documents[1], threshold or cost.THRESHOLD, options)
                return
            base_run, new_run = load_run(paths[0]), load_run(paths[1])
        except ResultsError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if (why := reachable(base_run, new_run)) is not None:
            raise CommandError(say(why), returncode=2)
        result = compare(base_run, new_run, threshold=threshold or rules.THRESHOLD, alpha=alpha)
        print_table(console_for(self.stdout, no_color=options.get("no_color", False)), result)
        if json_path:
            json_path.write_text(json.dumps(as_json(result), indent=2) + "\n")
        if markdown_path:
            markdown_path.write_text(markdown(result))
        if result.worse:
            raise CommandError(f"{len(result.worse)} pair(s) got worse", returncode=1)

    def compare_costs(
        self, base: RunDocument, new: RunDocument, threshold: float, options: dict[str, Any]
    ) -> None:
        """Two cost probes (runbench --cost): each page's instructions per request."""
        if base.cost is None or new.cost is None:
            raise CommandError(say(Notice(code="cost_mixed")), returncode=2)
        result = cost.compare(base.cost, new.cost, threshold)
        print_comparison(console_for(self.stdout, no_color=options.get("no_color", False)), result)
        if result.failing:
            notice = Notice(code="cost_failing", params={"count": len(result.failing)})
            raise CommandError(say(notice), returncode=1)


def _documents(paths: list[Path]) -> list[RunDocument]:
    """Both files as results documents; none when one is not (load_run then says why)."""
    try:
        return [store.load(p) for p in paths]
    except ResultsError:
        return []
