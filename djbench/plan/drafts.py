"""The scenario file benchinit drafts from its probes (djbench.plan.discover).

- **One scenario per kind of page** (djbench.plan.discover.group): a URLconf route, or
  the site's pages that one view rendered with one template first (a CMS's page type:
  Wagtail's blog post and bread page are one view, two templates); a group's pages are
  cycled by the load (``paths``).
- **What a correct answer is**: status, media type, a body marker every sample shares
  (the common part of their ``<title>``s), JSON keys, and the steady query count as a
  range over every sample (``queries = [low, high]``; a count outside it is a warning).
- **Profiles start from what a visitor reads**: the home page, then the pages linked
  from it, then the rest of the sitemap, then the URLconf's other pages; JSON and XML
  listings, login forms and pages behind login last. ``default`` takes the first
  DEFAULT_SIZE, ``quick`` the first QUICK_SIZE.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import asdict
from typing import Any

from djbench.plan.discover import Probe
from djbench.plan.inprocess import Answered, https_headers, redirects_to_https
from djbench.plan.owncommands import OwnCommand

DEFAULT_SIZE = 6
LOG_MIX = "log-mix"  # the access log's mix, first in the default profile
QUICK_SIZE = 1
HEALTH_WORDS = ("healthz", "health", "ping", "status", "ready", "live")
_TITLE = re.compile(r"<title>([^<]{1,200})</title>", re.IGNORECASE)


def _media(answer: Answered) -> str:
    return answer.content_type.split(";")[0].strip()


def title_marker(samples: list[Answered]) -> str | None:
    """`<title>X</title>` when every sample has that one-line title; else the longest
    line of their titles that all share (" | The Bakery"), when it says something."""
    titles = []
    for s in samples:
        found = _TITLE.search(s.body.decode("utf-8", errors="replace"))
        if found is None:
            return None
        titles.append(found.group(1))
    if len(set(titles)) == 1 and "\n" not in titles[0]:
        return f"<title>{titles[0]}</title>"
    lines = [{line.strip() for line in t.splitlines() if line.strip()} for t in titles]
    shared = max(sorted(set.intersection(*lines)), key=len, default="")
    whole = [f"<title>{t}</title>" for t in titles]
    ending = whole[0]
    while ending and not all(t.endswith(ending) for t in whole):
        ending = ending[1:]
    ending = ending.strip() if len(ending) >= len("</title>") + 6 else ""
    best = max(shared, ending, key=len)
    return best if len(best) >= 4 else None


def _name(base: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-").lower() or "home"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def name_of(p: Probe, taken: set[str]) -> str:
    """The route's name; for a group of site pages, its template's (blog_page -> blog-page)."""
    assert p.answer is not None
    if p.path == "/":
        return _name("home", taken)
    if p.source == "urlconf" and p.route is not None and p.route.name:
        return _name(p.route.name.replace(":", "-"), taken)
    if p.route is not None and p.route.arguments:
        # Named by its view, never by a sample value (a 36-character uuid).
        view = getattr(p.route.view, "view_class", p.route.view)
        return _name(getattr(view, "__name__", "page").replace("_", "-"), taken)
    if p.source != "urlconf" and p.answer.templates:
        stem = p.answer.templates[0].rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return _name(stem.replace("_", "-"), taken)
    return _name(p.path.split("?")[0].strip("/").replace("/", "-"), taken)


def _is_async(view: Any) -> bool:
    view_class = getattr(view, "view_class", None)
    if view_class is not None:
        return bool(getattr(view_class, "view_is_async", False))
    return asyncio.iscoroutinefunction(view)


def expect_of(samples: list[Answered], after: tuple[Answered, ...] = ()) -> dict[str, Any]:
    """What a correct answer is; `after`: the page again after the pages that write ran
    (a marker is chosen from what stayed: a title holding a live status is not one)."""
    first = samples[0]
    media = _media(first)
    expect: dict[str, Any] = {"status": first.status}
    if media:
        expect["content_type"] = media
    if media == "application/json":
        try:
            data = json.loads(first.body.decode("utf-8", errors="replace"))
        except ValueError:
            data = None
        if isinstance(data, dict):
            expect["json"] = "object"
            expect["keys"] = sorted(data)[:10]
        elif isinstance(data, list):
            expect["json"] = "list"
    elif marker := title_marker(samples + list(after)):
        expect["contains"] = [marker]
    counts = [s.queries for s in samples if s.queries is not None]
    if counts:
        expect["queries"] = [min(c[0] for c in counts), max(c[1] for c in counts)]
    return expect


def scenario_for(p: Probe, name: str) -> dict[str, Any]:
    assert p.answer is not None
    samples = p.samples or [p.answer]
    view = p.route.view if p.route is not None else None
    variant = "async" if view is not None and _is_async(view) else "sync"
    queries = [s.queries for s in samples if s.queries is not None]
    found_by = {
        "linked": "the links of the site's pages",
        "sitemap": "the site's sitemap",
    }.get(p.source, p.route.template if p.route else "the URLconf")
    scenario: dict[str, Any] = {
        "name": name,
        "description": f"GET {p.path} (found by benchinit from {found_by})"
        + (f", {len(samples)} pages of this kind cycled" if len(samples) > 1 else ""),
        "path": p.path,
        "variant": variant,
        "workload": (
            f"{variant}-orm" if any(q[1] for q in queries) else "trivial" if queries else "sync-orm"
        ),
    }
    if len(samples) > 1:
        scenario["paths"] = [s.path for s in samples[1:]]
    if p.user:
        scenario["user"] = p.user
    after = (p.after,) if p.after is not None and p.after.status == first_status(p) else ()
    scenario["expect"] = expect_of(samples, after)
    if any(s.writes for s in samples):
        scenario["writes"] = True
    return scenario


def first_status(p: Probe) -> int:
    return p.answer.status if p.answer is not None else 0


# Pages a team would not load first: a CSRF token endpoint, a "link sent" or "done"
# page after a form (their names or paths say so).
_ASIDE = re.compile(r"csrf|token|sent|done|confirm|success|thanks|complete|logout", re.I)
# Why a page stands where it does in the profiles, by tier (benchinit says it).
TIERS = (
    "the home page",
    "an endpoint that writes: what the site's clients call",
    "where signed-in users land (LOGIN_REDIRECT_URL)",
    "linked from the home page",
    "in the sitemap",
    "a page of the URLconf",
    "a listing (JSON, XML)",
    "a login form, or behind login",
    "a CSRF, confirmation or logout page",
)


def _landing() -> str | None:
    from django.conf import settings
    from django.shortcuts import resolve_url

    try:
        return str(resolve_url(settings.LOGIN_REDIRECT_URL))
    except Exception:  # a URL name that does not resolve
        return None


def visitor_rank(p: Probe, order: int) -> tuple[int, int]:
    """Lower first (TIERS): the home page, the endpoints clients call (pages that
    write), where signed-in users land, pages linked from the home page, the sitemap's,
    the URLconf's other pages; then listings, login forms and pages behind login; CSRF
    and confirmation pages last."""
    assert p.answer is not None
    body = p.answer.body.decode("utf-8", errors="replace").lower()
    name = p.route.name if p.route is not None else ""
    if _ASIDE.search(f"{p.path.split('?')[0]} {name}"):
        tier = 8
    elif p.path == "/" and 'type="password"' not in body:
        tier = 0
    elif any(s.writes for s in p.samples or [p.answer]):
        tier = 1
    elif p.path == _landing() and p.path != "/":
        tier = 2
    elif p.user or 'type="password"' in body:
        tier = 7
    elif _media(p.answer) != "text/html":
        tier = 6
    else:
        tier = {"linked": 3, "sitemap": 4}.get(p.source, 5)
    return tier, order


def why_chosen(p: Probe) -> str:
    """Why a page stands where it does in the profiles (benchinit says it)."""
    return TIERS[visitor_rank(p, 0)[0]] + (
        f"; {p.traffic:,} requests in the log" if p.traffic else ""
    )


def ranked(scenarios: list[Probe]) -> list[Probe]:
    """The scenarios in the order visitors read them: by their share of an access log's
    requests when one was read (--from-log), then by visitor_rank."""
    return [
        p
        for _, p in sorted(
            (((-p.traffic, *visitor_rank(p, i)), p) for i, p in enumerate(scenarios)),
            key=lambda x: x[0],
        )
    ]


def health_of(probes: list[Probe]) -> Probe | None:
    """A page answering 200 with a health-like name (without queries first); else the
    home page; else the cheapest page (fewest queries, then fastest). Never a page that
    writes, nor one under a record's identifier, when another will do."""
    ok = [
        p
        for p in probes
        if p.answer is not None
        and p.user is None
        and not any(s.writes for s in p.samples)
        and not (p.route is not None and p.route.arguments)
    ] or [p for p in probes if p.answer is not None and p.user is None]
    if not ok:
        return None

    def queries(p: Probe) -> int:
        found = p.answer.queries if p.answer else None
        return found[1] if found is not None else 99

    quiet = [p for p in ok if queries(p) == 0]
    for word in HEALTH_WORDS:
        for p in quiet or ok:
            name = p.route.name.lower() if p.route else ""
            if word in p.path.lower() or word in name:
                return p
    if home := [p for p in ok if p.path == "/"]:
        return home[0]  # a page every visitor gets, rather than a login form
    return min(ok, key=lambda p: (queries(p), p.answer.seconds if p.answer else 0.0))


def deployments(found: list[OwnCommand]) -> list[dict[str, Any]]:
    """The project's own server commands as [[deployment]] tables."""
    defaults = asdict(OwnCommand(name="", server="", command="", found_in=""))
    return [
        {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(c).items()
         if v is not None and (k in ("name", "server", "command", "found_in") or v != defaults[k])}
        for c in found
    ]  # fmt: skip


def draft(kept: list[Probe]) -> tuple[list[Probe], dict[str, Any]]:
    """(the scenarios' probes in the file's order, the file as a TOML-ready dict)."""
    scenarios = ranked(kept)
    taken: set[str] = set()
    for p in scenarios:
        p.scenario = scenario_for(p, name_of(p, taken))
    health = health_of(scenarios)
    names = [p.scenario["name"] for p in scenarios]
    document: dict[str, Any] = {
        "version": 1,
        "health_path": health.path if health else "/",
    }
    if (headers := https_headers()) and redirects_to_https():
        document["headers"] = headers
    document["profiles"] = {"default": names[:DEFAULT_SIZE], "quick": names[:QUICK_SIZE]}
    document["scenario"] = [p.scenario for p in scenarios]
    if (mix := log_mix(scenarios, taken)) is not None:
        document["scenario"].append(mix)
        document["profiles"]["default"] = [mix["name"], *names[: DEFAULT_SIZE - 1]]
        document["profiles"]["log"] = [mix["name"]]
    return scenarios, document


def log_mix(scenarios: list[Probe], taken: set[str]) -> dict[str, Any] | None:
    """The access log's mix (benchinit --from-log): every scenario the log's requests
    fell in, weighted by their count (None: fewer than two)."""
    weighted = {p.scenario["name"]: p.traffic for p in scenarios if p.traffic}
    if len(weighted) < 2:
        return None
    return {
        "name": _name(LOG_MIX, taken),
        "description": "the access log's mix: each page weighted by its requests in the log",
        "mix": weighted,
    }


HEADER = """\
# djbench scenarios for this project, written by `manage.py benchinit` from the URLconf,
# the sitemap and the links from the home page. Each [[scenario]] is one kind of page a
# load driver repeats (`paths` are more pages of that kind, cycled); `expect` is what the
# page answered when benchinit probed it in-process, and what the verify gate checks
# against every live server before anything is timed (`queries = [low, high]`: the
# steady count's range, a warning outside it; a single number pins it exactly).
# `headers` go with every request (here: the header your settings trust to say a
# request came over HTTPS). Profiles start from the pages a visitor reads. Edit freely:
# add pages that take a body (POST), `user = "name"` for pages behind login,
# `csrf = true`. Each [[deployment]] is a server command of your own files (a Procfile,
# a Dockerfile, a uwsgi.ini, a gunicorn config), measured beside djbench's layouts as
# written (only its address is djbench's). `mix = {page = weight, ...}` makes a scenario
# a weighted mix of others (`log-mix`, from --from-log, is the access log's own).
# Format: djbench's docs (docs/own-project.md).
"""
