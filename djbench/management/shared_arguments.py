"""Arguments the read commands share (benchreport, benchguide, benchcompare)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandParser

from djbench.results.store import RUNS_DIR


def add_runs(parser: CommandParser) -> None:
    """--runs DIR: where to find the newest run(s) when no results file is named."""
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path(RUNS_DIR),
        help="with no results file: the newest run in this folder (runbench's --output; "
        f"default {RUNS_DIR})",
    )
