"""``manage.py benchinit``: scaffold djbench for this project (scenarios, and deploy files)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import tomli_w
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from djbench.plan import discover
from djbench.plan.options import OptionError, split_list
from djbench.plan.project import PACKAGED_DEPLOY, current


class Command(BaseCommand):
    help = (
        "Write a djbench scenario file from this project's URLconf (each page probed once "
        "in-process to fill what a correct answer is), and optionally copy djbench's "
        "server configs into the project for editing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        a = parser.add_argument
        a("--output", type=Path, help="scenario file to write (default: DJBENCH['SCENARIOS'])")
        a("--force", action="store_true", help="overwrite files that exist")
        a("--deploy", action="store_true", help="copy djbench's deploy/ files into the project")
        a("--user", help="probe pages behind login as this user (it must exist)")
        a(
            "--sample-values",
            help="values for route arguments, e.g. pk=1,slug=hello (else taken from the database)",
        )
        a("--include-admin", action="store_true", help="also probe the admin site's pages")

    def handle(
        self,
        *args: Any,
        output: Path | None,
        force: bool,
        deploy: bool,
        user: str | None,
        sample_values: str | None,
        include_admin: bool,
        **options: Any,
    ) -> None:
        project = current()
        try:
            samples = dict(_pair(item) for item in split_list(sample_values))
        except OptionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if user:
            self._check_user(user)
        path = output or project.scenarios
        if path.exists() and not force:
            raise CommandError(
                f"{path} exists; run with --force to overwrite it (or --output elsewhere)",
                returncode=2,
            )
        try:
            kept, skipped = discover.discover(samples, user, include_admin)
        except DatabaseError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CommandError(
                f"the project's database is not ready ({first}); run manage.py migrate first"
            ) from None
        if not kept:
            raise CommandError(
                "no page answered 200 to a GET: nothing to write "
                f"({len(skipped)} route(s) skipped; see --sample-values and --user)"
            )
        health = discover.health_of(kept)
        counted = any(p.queries is not None for p in kept)
        document = discover.document(kept, health)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(discover.HEADER + "\n" + tomli_w.dumps(document), encoding="utf-8")
        self.stdout.write(self.style.SUCCESS(f"Wrote {path}: {len(kept)} scenario(s)"))
        for p in kept:
            queries = "" if p.queries is None else f", {p.queries} SQL queries"
            who = f", as {p.user}" if p.user else ""
            self.stdout.write(f"  {p.scenario['name']}: GET {p.path} -> {p.status}{queries}{who}")
        if health:
            self.stdout.write(f"Health path (polled until a server is ready): {health.path}")
        if not counted:
            self.stdout.write(
                "SQL query counts are not checked: add "
                "'djbench.middleware.QueryCountMiddleware' first in MIDDLEWARE, then rerun "
                "benchinit --force to record them."
            )
        if skipped:
            self.stdout.write(f"Skipped {len(skipped)} route(s):")
            admin = [p for p in skipped if p.route.admin and not p.path]
            if admin:
                self.stdout.write(
                    f"  {len(admin)} route(s) of the admin site, e.g. {admin[0].route.template} "
                    "(--include-admin probes them)"
                )
            for p in skipped:
                if p not in admin:
                    self.stdout.write(f"  {p.path or p.route.template}: {p.skipped}")
        if deploy:
            self._copy_deploy(project.deploy_dir, force)
        self.stdout.write(
            "Next: python manage.py runbench --verify-only, then python manage.py runbench --quick"
        )

    def _check_user(self, user: str) -> None:
        from django.contrib.auth import get_user_model

        model = get_user_model()
        try:
            model._default_manager.get_by_natural_key(user)
        except model.DoesNotExist:
            raise CommandError(
                f"--user {user!r}: no such user in the project's database", returncode=2
            ) from None
        except DatabaseError:
            raise CommandError(
                "the project's database is not ready; run manage.py migrate first"
            ) from None

    def _copy_deploy(self, target: Path, force: bool, source_dir: Path = PACKAGED_DEPLOY) -> None:
        """djbench's deploy files, and its CI gate (ci/: the script keeps its mode)."""
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(source_dir.iterdir()):
            if source.name.startswith(("_", ".")):
                continue
            if source.is_dir():
                self._copy_deploy(target / source.name, force, source)
                continue
            dest = target / source.name
            if dest.exists() and not force:
                self.stdout.write(f"  kept {dest} (exists; --force to overwrite)")
                continue
            shutil.copy2(source, dest)
            self.stdout.write(f"  copied {dest}")


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise OptionError(f"--sample-values takes name=value pairs, got {item!r}")
    return name.strip(), value.strip()
