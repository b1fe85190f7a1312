"""``manage.py seed``: deterministic benchmark data, idempotent."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sampleproject.catalog.seeding import seed


class Command(BaseCommand):
    help = "Create the sample project's benchmark data (idempotent; --force rebuilds it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="rebuild even if present")

    def handle(self, *args: Any, force: bool, **options: Any) -> None:
        started = time.perf_counter()
        report = seed(force=force)
        elapsed = time.perf_counter() - started
        rows = ", ".join(f"{n} {name}" for name, n in report.counts.items())
        verb = "created" if report.created else "already present"
        if options["verbosity"] >= 1:
            self.stdout.write(f"Seed data {verb}: {rows} ({elapsed:.2f}s)")
