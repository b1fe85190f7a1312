"""benchinit's search: the pages of a project, each probed in this process.

Pages come from three places, in this order:

1. **The URLconf.** Every route that takes no argument is a candidate; a route with
   arguments is one when they can be filled: from ``--sample-values name=value``, or
   from the database: the rows (first by primary key) of the view's model, else of each
   model with fields of the arguments' names and types (``<uuid:code>``: a UUIDField
   named code), tried in turn until the page answers (three models may all name their
   identifier ``code``); more rows of the one that answered are the pages it cycles.
2. **The sitemap** (``/sitemap.xml``, indexes followed, those robots.txt names) and
3. **the links from the home page** (a bounded crawl): the pages a CMS serves from one
   catch-all route (djbench.plan.sitepages).

Each candidate is requested in this process (Django's test client, against the
project's own database, GET only, as over HTTPS when the settings trust a proxy's
header: djbench.plan.inprocess), warmed once and then requested a few times: what it
answered fills ``expect``, and the statements that changed rows mark a page that writes
(a GET too: an endpoint clients ping). Every probe's writes are rolled back (one
transaction per database): benchinit leaves the data as it found it. Then, in one
transaction rolled back at its end, the pages that write run once and every page is
requested again: what the writes changed is not chosen as a marker. djbench.plan.drafts
turns the answers into scenarios; the routes and their arguments' values are
djbench.plan.routes'.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from djbench.plan import inprocess, logqueries, sitepages
from djbench.plan.inprocess import Answered
from djbench.plan.routes import SAMPLES, Route, fillings, routes

SOURCES = ("urlconf", "linked", "sitemap")  # where a page was found


@dataclass
class Probe:
    """One candidate page and what it answered (or why it was skipped)."""

    route: Route | None  # None: a page of the site's own (sitemap, links) off the URLconf
    path: str = ""
    traffic: int = 0  # requests to this page's group in the access log (--from-log)
    source: str = "urlconf"
    skipped: str = ""  # why it is not a scenario
    answer: Answered | None = None
    scenario: dict[str, Any] = field(default_factory=dict)
    samples: list[Answered] = field(default_factory=list)  # a group's pages (paths cycled)
    extra: list[Answered] = field(default_factory=list)  # the route's other rows' pages
    after: Answered | None = None  # its page again, after every page that writes ran

    @property
    def where(self) -> str:
        return self.path or (self.route.template if self.route else "?")

    @property
    def user(self) -> str | None:
        return self.answer.user if self.answer else None


@dataclass
class Discovery:
    kept: list[Probe]
    skipped: list[Probe]
    site: sitepages.Found
    queried: list[str] = field(default_factory=list)  # pages loaded with a logged query

    def reasons(self, n: int = 5) -> list[tuple[str, int]]:
        """The commonest reasons pages were skipped, with counts."""
        return Counter(kind(p.skipped) for p in self.skipped).most_common(n)


def kind(reason: str) -> str:
    """A skip reason without its particulars (which page, which value), for counting."""
    reason = re.sub(r"https://\S+", "https://...", reason)
    reason = re.sub(r"--sample-values \w+=\.\.\.", "--sample-values NAME=...", reason)
    return re.sub(r"^needs [\w, ]+:", "needs values:", reason)


def _login_url() -> str:
    from django.shortcuts import resolve_url

    return str(resolve_url(settings.LOGIN_URL))


def probe(path: str, user: str | None, count_queries: bool, steady: bool = True) -> Answered:
    """`path` as a visitor gets it; again as `user` when it redirects to the login page.
    Not `steady`: one request (what serves it), its steady figures left for later."""
    times = inprocess.STEADY_PROBES if steady else 0
    found = inprocess.answered(inprocess.client(), path, count_queries, times)
    if user and found.location.startswith(_login_url()):
        found = inprocess.answered(inprocess.client(user), path, count_queries, times)
        found.user = user
    return found


def why_not(found: Answered, user: str | None) -> str:
    """Why a page that answered is not a scenario ("" when it is one)."""
    if found.status in (301, 302, 303, 307, 308):
        if found.location.startswith(_login_url()):
            if user:
                return f"still redirects to the login page when logged in as {user!r}"
            return f"login required (redirects to {_login_url()}): give a user with --user NAME"
        if found.location.startswith("https://") and (problem := inprocess.https_problem()):
            return f"redirects to https://... ({problem})"
        return f"redirects to {found.location} (load its target instead)"
    if found.status == 405:
        return "does not answer GET (POST-only?): add it by hand with a body"
    if found.status == 404:
        return "answers 404 with the values tried"
    if found.status >= 500:
        return f"fails in-process (HTTP {found.status})"
    if found.status != 200:
        return f"answers HTTP {found.status}"
    return ""


def _admin_prefixes(every: list[Route]) -> tuple[str, ...]:
    """Where the admin sites live ("/admin/", "/django-admin/"): not crawled."""
    heads = {r.template.split("<")[0] for r in every if r.admin}
    return tuple(sorted(h for h in heads if h.count("/") == 2)) or ("/admin/",)


def _from_urlconf(
    every: list[Route], samples: dict[str, str], user: str | None, include_admin: bool, count: bool
) -> list[Probe]:
    probes: list[Probe] = []
    seen: set[str] = set()
    for route in every:
        if route.admin and not include_admin:
            probes.append(Probe(route=route, skipped="the admin site (not your pages)"))
            continue
        options, why = fillings(route, samples)
        if not options:
            probes.append(Probe(route=route, skipped=why))
            continue
        found = _first_answering(options, seen, user, count)
        if found is None:
            continue
        paths, answer = found
        extra = [probe(p, user, count, steady=False) for p in paths[1:] if p not in seen]
        seen.update(paths)
        probes.append(
            Probe(route=route, path=paths[0], answer=answer, skipped=why_not(answer, user),
                  extra=[a for a in extra if a.status == 200])
        )  # fmt: skip
    return probes


def _first_answering(
    options: list[list[str]], seen: set[str], user: str | None, count: bool
) -> tuple[list[str], Answered] | None:
    """The first candidate whose first page does not answer 404 (else the last tried),
    with its answer; None when its page was probed already."""
    last: tuple[list[str], Answered] | None = None
    for paths in options:
        if paths[0] in seen:
            return None
        answer = probe(paths[0], user, count)
        last = (paths, answer)
        if answer.status != 404:
            break
    return last


def _from_site(site: sitepages.Found, seen: set[str], user: str | None, count: bool) -> list[Probe]:
    """The site's own pages not in the URLconf walk, linked ones first."""
    probes: list[Probe] = []
    for source, paths in (("linked", site.linked), ("sitemap", site.sitemap)):
        for path in paths:
            if path in seen:
                continue
            seen.add(path)
            answer = probe(path, user, count, steady=False)
            skipped = why_not(answer, user)
            probes.append(
                Probe(route=None, path=path, source=source, answer=answer, skipped=skipped)
            )
    return probes


def _from_log(
    log_paths: dict[str, int] | None, seen: set[str], user: str | None, count: bool
) -> list[Probe]:
    """The access log's pages (the commonest first) not found already."""
    probes: list[Probe] = []
    for path in log_paths or {}:
        if path in seen:
            continue
        seen.add(path)
        answer = probe(path, user, count, steady=False)
        skipped = why_not(answer, user)
        probes.append(Probe(route=None, path=path, source="log", answer=answer, skipped=skipped))
    return probes


def weigh(kept: list[Probe], probes: list[Probe], log_paths: dict[str, int] | None) -> None:
    """Each kept probe's share of the log's requests: a logged page counts for the probe
    whose page it is, else for the first of its group (as group() merged it)."""
    if not log_paths:
        return
    by_path = {p.path: p for p in kept if p.path}
    by_key: dict[tuple[str, str], Probe] = {}
    for p in kept:
        assert p.answer is not None
        by_key.setdefault(group_key(p.answer), p)
    answered = {p.path: p for p in probes if p.path and p.answer and not p.skipped}
    for path, requests in log_paths.items():
        found = answered.get(path)
        owner = by_path.get(path) or (
            by_key.get(group_key(found.answer)) if found and found.answer else None
        )
        if owner is not None:
            owner.traffic += requests


def discover(
    samples: dict[str, str],
    user: str | None,
    include_admin: bool = False,
    crawl_pages: int = sitepages.CRAWL_PAGES,
    log_paths: dict[str, int] | None = None,
    log_queries: dict[str, list[str]] | None = None,
) -> Discovery:
    """Every candidate page probed: (kept, skipped, what the site's own search saw)."""
    count = "djbench.middleware.QueryCountMiddleware" in settings.MIDDLEWARE
    every = routes()
    admin = _admin_prefixes(every)
    with inprocess.instrumented():
        probes = _from_urlconf(every, samples, user, include_admin, count)
        seen = {a.path for p in probes for a in ([p.answer] if p.answer else []) + p.extra}
        site = sitepages.site_pages(
            inprocess.client(), lambda p: p.startswith(admin) and not include_admin, crawl_pages
        )
        logged = _from_log(log_paths, seen, user, count)
        probes += logged + _from_site(site, seen, user, count)
        kept = group([p for p in probes if not p.skipped])
        weigh(kept, probes, log_paths)
        queried = _queried(kept, log_queries or {}, user)
        for p in kept:  # the samples kept are probed again, warmed: steady counts
            p.samples = [
                s if p.source == "urlconf" and i == 0 else probe(s.path, user, count)
                for i, s in enumerate(p.samples)
            ]
            p.answer = p.samples[0]
            if p.source != "urlconf":
                p.route = _route_of(p.path, every)
        after_writes(kept, user, count)
    return Discovery(
        kept=kept,
        skipped=[p for p in probes if p.skipped],
        site=site,
        queried=queried,
    )


def after_writes(kept: list[Probe], user: str | None, count: bool) -> None:
    """Every page again once every page that writes has run (a ping that changes a
    check's status changes the check's page): what the run's own writes change is then
    seen, and markers are chosen from what stayed (djbench.plan.drafts)."""
    writers = [s for p in kept for s in p.samples if s.writes]
    if not writers:
        return
    with inprocess.rolled_back():  # one transaction: each page sees the writes before it
        for s in writers:
            probe(s.path, s.user or user, False, steady=False)
        for p in kept:
            if p.answer is not None and p.answer.status == 200:
                p.after = probe(p.path, p.user or user, count, steady=False)


def _queried(kept: list[Probe], log_queries: dict[str, list[str]], user: str | None) -> list[str]:
    """Pages whose logged query strings their view reads: the page loaded with them (the
    commonest first, reduced to the keys read) in place of its bare path."""
    changed = []
    for p in kept:
        if not p.path or not (queries := log_queries.get(p.path)):
            continue
        found = logqueries.variants(p.path, queries, p.user or user)
        if not found:
            continue
        samples = [probe(uri, user, False, steady=False) for uri in found]
        samples = [s for s in samples if s.status == 200]
        if not samples:
            continue
        p.samples = samples + [s for s in p.samples if s.path != p.path][: SAMPLES - len(samples)]
        p.path, p.answer = samples[0].path, samples[0]
        changed.append(p.path)
    return changed


def group_key(answer: Answered) -> tuple[str, str]:
    """What serves a page: its view and the template it rendered first (else media)."""
    media = answer.content_type.split(";")[0].strip()
    return answer.view, answer.templates[0] if answer.templates else media


def group(kept: list[Probe]) -> list[Probe]:
    """URLconf probes as they are; the site's pages merged by group_key into the first
    probe of their kind (a URLconf one when there is one), at most SAMPLES each."""
    heads: dict[tuple[str, str], Probe] = {}
    out: list[Probe] = []
    for p in kept:
        assert p.answer is not None
        key = group_key(p.answer)
        p.samples = [p.answer, *p.extra]
        if p.source == "urlconf":
            heads.setdefault(key, p)
            out.append(p)
        elif key in heads:
            if len(heads[key].samples) < SAMPLES:
                heads[key].samples.append(p.answer)
        else:
            heads[key] = p
            out.append(p)
    return out


def _route_of(path: str, every: list[Route]) -> Route | None:
    """The URLconf route that serves a page found on the site (its catch-all for a CMS)."""
    from django.urls import Resolver404, resolve

    try:
        match = resolve(path.split("?")[0])
    except Resolver404:
        return None
    func = match.func
    return next((r for r in every if r.view is func), None)
