"""``manage.py benchinit``: scaffold djbench for this project (scenarios, and deploy files)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import tomli_w
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from django.test.utils import override_settings

from djbench.plan import accesslogs, discover, drafts, owncommands, sitepages
from djbench.plan.options import OptionError, split_list
from djbench.plan.project import PACKAGED_DEPLOY, current
from djbench.servers import discovery

# A replay at the log's own rate: a window of this length needs this many answers for
# its p99 to rest on more than one request (as the pilot's fitted windows do).
REPLAY_WINDOW_S = 10
REPLAY_ANSWERS = 200
# The system checks this command fixes (djbench.checks): not said before it runs.
FIXED_HERE = ("djbench.W003", "djbench.W004")


class Command(BaseCommand):
    help = (
        "Write a djbench scenario file from this project's URLconf (each page probed once "
        "in-process to fill what a correct answer is), and optionally copy djbench's "
        "server configs into the project for editing."
    )

    def check(self, *args: Any, **kwargs: Any) -> None:
        """Django's system checks, less those about the scenario file this command
        writes (djbench.W003 missing, W004 invalid): a warning that the file being
        written does not exist says nothing."""
        silenced = [*settings.SILENCED_SYSTEM_CHECKS, *FIXED_HERE]
        with override_settings(SILENCED_SYSTEM_CHECKS=silenced):
            super().check(*args, **kwargs)

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
        a(
            "--crawl",
            type=int,
            default=sitepages.CRAWL_PAGES,
            metavar="PAGES",
            help="pages fetched for their links from the home page, in-process "
            f"(default {sitepages.CRAWL_PAGES}; 0: the URLconf and the sitemap only)",
        )
        a(
            "--from-log",
            type=Path,
            metavar="FILE",
            help="an access log (Caddy JSON, nginx/Apache/Gunicorn combined): its pages are "
            "probed too, and scenarios are ordered by their share of its requests",
        )

    def handle(
        self,
        *args: Any,
        output: Path | None,
        force: bool,
        deploy: bool,
        user: str | None,
        sample_values: str | None,
        include_admin: bool,
        crawl: int,
        from_log: Path | None,
        **options: Any,
    ) -> None:
        project = current()
        if not 0 <= crawl <= 1000:
            raise CommandError("--crawl takes a number of pages from 0 to 1000", returncode=2)
        try:
            samples = dict(_pair(item) for item in split_list(sample_values))
        except OptionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if user:
            self._check_user(user)
        traffic = self._traffic(from_log)
        path = output or project.scenarios
        if path.exists() and not force:
            raise CommandError(
                f"{path} exists; run with --force to overwrite it (or --output elsewhere)",
                returncode=2,
            )
        try:
            logged = dict(traffic.commonest()) if traffic else None
            queries = traffic.queried() if traffic else None
            found = discover.discover(samples, user, include_admin, crawl, logged, queries)
        except DatabaseError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CommandError(
                f"the project's database is not ready ({first}); run manage.py migrate first"
            ) from None
        if not found.kept:
            self._why_nothing(found)
            raise CommandError(
                "no page answered 200 to a GET: nothing to write "
                f"({len(found.skipped)} page(s) skipped; the commonest reasons are above)"
            )
        scenarios, document = drafts.draft(found.kept)
        own = discovery.find(
            project.directory, project.wsgi_app, (project.deploy_dir, PACKAGED_DEPLOY)
        )
        if own:
            document["deployment"] = drafts.deployments(own)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(drafts.HEADER + "\n" + tomli_w.dumps(document), encoding="utf-8")
        self._said(path, scenarios, document, found)
        if traffic is not None:
            self._traffic_said(from_log, traffic, scenarios, found)
            self._mix_said(traffic, document)
        self._own(own)
        if deploy:
            self._copy_deploy(project.deploy_dir, force)
        self.stdout.write(
            "Next: python manage.py runbench --verify-only, then python manage.py runbench --quick"
        )

    def _said(
        self, path: Path, scenarios: list[discover.Probe], document: dict[str, Any], found: Any
    ) -> None:
        """What was written: each scenario, the profiles, the health path, the skips."""
        self.stdout.write(self.style.SUCCESS(f"Wrote {path}: {len(scenarios)} scenario(s)"))
        for p in scenarios:
            self.stdout.write(f"  {described(p)}")
        site = found.site
        self.stdout.write(
            f"The site's own pages: {len(site.sitemap)} in its sitemap "
            f"({', '.join(site.sitemaps_read) or 'none found'}), {len(site.linked)} reached by "
            "links from the home page"
            + (f" (crawl stopped: {site.crawl_stopped})" if site.crawl_stopped else "")
            + (f"; {site.robots}" if site.robots else "")
        )
        for name, members in document["profiles"].items():
            self.stdout.write(f"Profile {name}: {', '.join(members)}")
        why = {p.scenario["name"]: drafts.why_chosen(p) for p in scenarios}
        for name in document["profiles"].get("default", []):
            if name in why:
                self.stdout.write(f"  {name}: {why[name]}")
        self.stdout.write(
            f"Health path (polled until a server is ready): {document['health_path']}"
        )
        if headers := document.get("headers"):
            said = ", ".join(f"{k}: {v}" for k, v in headers.items())
            self.stdout.write(
                f"Every request carries {said}: your settings redirect plain HTTP "
                "(SECURE_SSL_REDIRECT) and trust that header as a TLS proxy sends it"
            )
        if not any(p.answer and p.answer.queries is not None for p in scenarios):
            self.stdout.write(
                "SQL query counts are not checked: add "
                "'djbench.middleware.QueryCountMiddleware' first in MIDDLEWARE, then rerun "
                "benchinit --force to record them."
            )
        self._skipped(found.skipped)

    def _traffic(self, from_log: Path | None) -> accesslogs.Traffic | None:
        """The access log's traffic, read before anything else (one line if it cannot)."""
        if from_log is None:
            return None
        try:
            traffic = accesslogs.read(from_log)
        except OSError as exc:
            raise CommandError(
                f"--from-log: cannot read {from_log}: {exc.strerror or exc}", returncode=2
            ) from None
        if not traffic.paths:
            raise CommandError(
                f"--from-log: {from_log} holds no GET or HEAD request in a known format "
                "(Caddy JSON, combined, common): " + traffic.summary(),
                returncode=2,
            )
        return traffic

    def _traffic_said(
        self,
        from_log: Path | None,
        traffic: accesslogs.Traffic,
        scenarios: list[discover.Probe],
        found: discover.Discovery,
    ) -> None:
        """The log's span and rate, each scenario's share, and the pages no longer served."""
        total = traffic.requests
        self.stdout.write(f"Traffic in {from_log}: {traffic.summary()}")
        shares = [(p.scenario["name"], p.traffic) for p in scenarios if p.traffic]
        said = ", ".join(f"{name} {n / total:.0%}" for name, n in shares)
        covered = sum(n for _, n in shares)
        self.stdout.write(
            f"Share of the log's requests by scenario: {said or 'none'} "
            f"({covered / total:.0%} of the log's requests are in a scenario)"
        )
        if traffic.with_query:
            kept = ", ".join(found.queried) or "none"
            self.stdout.write(
                "Query strings kept where the view reads them (its keys only): "
                f"{kept}; the others dropped"
            )
        gone = [p for p in found.skipped if p.source == "log"]
        if gone:
            lost = sum(traffic.paths[p.path] for p in gone)
            self.stdout.write(f"{len(gone)} page(s) of the log left out ({lost} request(s)):")
            for p in sorted(gone, key=lambda p: -traffic.paths[p.path])[:5]:
                self.stdout.write(f"  {p.path} ({traffic.paths[p.path]} x): {p.skipped}")

    def _mix_said(self, traffic: accesslogs.Traffic, document: dict[str, Any]) -> None:
        """The log's mix, and the runbench lines that replay it at its own rate."""
        mix = next((s for s in document["scenario"] if "mix" in s), None)
        if mix is None:
            return
        total = sum(mix["mix"].values())
        said = ", ".join(f"{page} {n / total:.0%}" for page, n in mix["mix"].items())
        self.stdout.write(f"Mix {mix['name']} (first in the default profile): {said}")
        rate = traffic.rate()
        if rate:
            rate *= total / traffic.requests  # the requests the mix's pages cover
            self.stdout.write(
                f"Replay it at the log's rate ({rate:.2f} req/s), open loop: python manage.py "
                f"runbench --scenarios {mix['name']} --rate {rate:.2f}; at 2x: --rate "
                f"{2 * rate:.2f}"
            )
            if rate * REPLAY_WINDOW_S < REPLAY_ANSWERS:
                self.stdout.write(
                    f"  At that rate a {REPLAY_WINDOW_S} s window holds about "
                    f"{rate * REPLAY_WINDOW_S:.0f} answers, too few for a p99: replay a "
                    f"multiple of it, or find the rate the mix holds at your latency target "
                    f"(runbench --capacity --slo-p99 MS --scenarios {mix['name']})"
                )

    def _own(self, own: list[owncommands.OwnCommand]) -> None:
        """The project's own deployments, measured beside djbench's layouts."""
        if not own:
            self.stdout.write(
                "No server command of your own was found (Procfile, Dockerfile CMD, "
                "uwsgi ini, gunicorn config): add a [[deployment]] to measure yours"
            )
            return
        self.stdout.write("Your own deployments, measured beside djbench's layouts:")
        for c in own:
            self.stdout.write(f"  {c.name}: {c.command} ({c.found_in}; {c.layout()})")
            for change in c.changes:
                self.stdout.write(f"    {change}")

    def _skipped(self, skipped: list[discover.Probe]) -> None:
        if not skipped:
            return
        self.stdout.write(f"Skipped {len(skipped)} page(s):")
        admin = [p for p in skipped if p.route and p.route.admin and not p.path]
        if admin:
            assert admin[0].route is not None
            self.stdout.write(
                f"  {len(admin)} route(s) of the admin site, e.g. {admin[0].route.template} "
                "(--include-admin probes them)"
            )
        for p in skipped:
            if p not in admin:
                self.stdout.write(f"  {p.where}: {p.skipped}")

    def _why_nothing(self, found: discover.Discovery) -> None:
        """The commonest reasons, with counts, when no page answered."""
        self.stderr.write("No page answered 200. The commonest reasons:")
        for reason, count in found.reasons():
            self.stderr.write(f"  {count} x {reason}")

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


def described(p: discover.Probe) -> str:
    """One scenario as benchinit wrote it: its page, answer, queries, samples."""
    assert p.answer is not None
    queries = ""
    if counts := [s.queries for s in p.samples if s.queries is not None]:
        low, high = min(c[0] for c in counts), max(c[1] for c in counts)
        queries = f", {low} SQL queries" if low == high else f", {low}-{high} SQL queries"
    who = f", as {p.user}" if p.user else ""
    more = f" (+{len(p.samples) - 1} more of its kind)" if len(p.samples) > 1 else ""
    writes = ", writes (changes rows)" if p.scenario.get("writes") else ""
    return f"{p.scenario['name']}: GET {p.path} -> {p.answer.status}{queries}{writes}{who}{more}"


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise OptionError(f"--sample-values takes name=value pairs, got {item!r}")
    return name.strip(), value.strip()
