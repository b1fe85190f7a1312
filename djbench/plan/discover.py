"""benchinit's logic: a scenario file drawn from a project's URLconf, each page probed once.

Every route that takes no argument is a candidate; a route with arguments is one when
they can be filled: from ``--sample-values name=value``, or from the database when the
view is a class-based view with a model (the first row, by primary key). Each candidate
is requested once in this process (Django's test client, against the project's own
database: GET only) and what it answered fills ``expect``: status, media type, a body
marker, JSON keys, and the SQL queries it made (counted the way the verify gate counts
them, when the project has djbench's query-count middleware).

The URL walk is written here by hand (Django's admindocs has one, but importing it
pulls in the admin); it reads the public ``pattern`` / ``url_patterns`` attributes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern

from djbench import querycount

HEALTH_WORDS = ("healthz", "health", "ping", "status", "ready", "live")
_CONVERTER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


@dataclass
class Route:
    template: str  # "/shop/<int:pk>/"
    view: Any
    name: str  # "shop:detail", or "" when unnamed
    admin: bool = False

    @property
    def arguments(self) -> list[str]:
        return [m.group("name") for m in _CONVERTER.finditer(self.template)]


@dataclass
class Probe:
    """One candidate page and what it answered (or why it was skipped)."""

    route: Route
    path: str = ""
    skipped: str = ""  # why it is not a scenario
    status: int = 0
    content_type: str = ""
    queries: int | None = None
    seconds: float = 0.0
    body: bytes = b""
    user: str | None = None
    location: str = ""  # where a redirect pointed
    scenario: dict[str, Any] = field(default_factory=dict)


def _regex_template(regex: str) -> str | None:
    """A regex route without groups as a plain path; None when it takes arguments."""
    if "(" in regex:
        return None
    text = regex.lstrip("^").rstrip("$").replace("\\Z", "")
    text = re.sub(r"\\(.)", r"\1", text)
    return None if re.search(r"[.*+?\[\]{}|]", text) else text


def routes(patterns: list[Any] | None = None, prefix: str = "", namespace: str = "") -> list[Route]:
    """Every URL pattern of the project's URLconf, with its full path template."""
    found: list[Route] = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        pattern = entry.pattern
        piece: str
        if isinstance(pattern, RoutePattern):
            piece = str(pattern)  # the route as written: "shop/<int:pk>/"
        elif isinstance(pattern, RegexPattern):
            piece = _regex_template(str(pattern)) or (
                # A catch-all that also matches nothing (a CMS's page tree: Wagtail's
                # `^((?:[\w\-]+/)*)$`) serves its prefix: the site's root page.
                "" if pattern.regex.fullmatch("") else "<regex>"  # "<regex>": cannot fill
            )
        else:
            piece = "<unknown>"
        if isinstance(entry, URLResolver):
            ns = entry.namespace or ""
            inner = f"{namespace}:{ns}" if namespace and ns else (ns or namespace)
            found += routes(entry.url_patterns, prefix + piece, inner)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name or ""
            template = "/" + (prefix + piece).lstrip("/")
            admin = namespace.split(":")[0] == "admin" or template.startswith("/admin/")
            found.append(Route(template=template, view=entry.callback, name=name, admin=admin))
    return found


def _model_of(view: Any) -> Any:
    view_class = getattr(view, "view_class", None)
    model = getattr(view_class, "model", None)
    if model is None:
        queryset = getattr(view_class, "queryset", None)
        model = getattr(queryset, "model", None)
    return model


def fill(route: Route, samples: dict[str, str]) -> tuple[str | None, str]:
    """(path, "") with every argument filled, or (None, why not)."""
    if "<regex>" in route.template or "<unknown>" in route.template:
        return None, "a regular-expression route with arguments (add it to the file by hand)"
    values: dict[str, str] = {}
    missing = [a for a in route.arguments if a not in samples]
    if missing:
        model = _model_of(route.view)
        first = model._default_manager.order_by("pk").first() if model is not None else None
        for name in missing:
            if first is None:
                break
            attr = "pk" if name in ("pk", "id", "object_id") else name
            if attr == "pk" or hasattr(first, attr):
                values[name] = str(getattr(first, attr))
    values.update({k: v for k, v in samples.items() if k in route.arguments})
    unfilled = [a for a in route.arguments if a not in values]
    if unfilled:
        names = ", ".join(unfilled)
        return None, (
            f"needs {names}: give a value with --sample-values {unfilled[0]}=... "
            "(or a class-based view with a model and a row in the database)"
        )
    path = _CONVERTER.sub(lambda m: values[m.group("name")], route.template)
    return path, ""


def _login_url() -> str:
    from django.shortcuts import resolve_url

    return str(resolve_url(settings.LOGIN_URL))


def probe(route: Route, path: str, user: str | None, count_queries: bool) -> Probe:
    """Request `path` once in-process; what came back."""
    from django.test import Client

    client = Client(raise_request_exception=False, HTTP_HOST="127.0.0.1")
    # Django logs every 4xx/5xx on django.request; benchinit reports them itself.
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        return _probe(client, route, path, user, count_queries)
    finally:
        logger.setLevel(level)


def _probe(client: Any, route: Route, path: str, user: str | None, count_queries: bool) -> Probe:
    found = Probe(route=route, path=path)
    for as_user in (None, user) if user else (None,):
        if as_user is not None:
            from django.contrib.auth import get_user_model

            model = get_user_model()
            client.force_login(model._default_manager.get_by_natural_key(as_user))
        cell = querycount.start() if count_queries else None
        started = time.perf_counter()
        try:
            response = client.get(path)
        finally:
            querycount.stop()
        found.seconds = time.perf_counter() - started
        found.status = response.status_code
        found.content_type = response.get("Content-Type", "")
        found.queries = cell[0] if cell is not None else None
        found.body = b"" if getattr(response, "streaming", False) else response.content
        found.user = as_user
        found.location = response.get("Location", "")
        if not found.location.startswith(_login_url()):
            break
    return found


def _why_not(found: Probe, user: str | None) -> str:
    if found.status in (301, 302, 303, 307, 308):
        if found.location.startswith(_login_url()):
            if user:
                return f"still redirects to the login page when logged in as {user!r}"
            return f"login required (redirects to {_login_url()}): give a user with --user NAME"
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


def _marker(body: str) -> str | None:
    title = re.search(r"<title>([^<]{1,80})</title>", body, flags=re.IGNORECASE)
    return f"<title>{title.group(1)}</title>" if title else None


def _name(route: Route, path: str, taken: set[str]) -> str:
    base = route.name.replace(":", "-") if route.name else path.strip("/").replace("/", "-")
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-") or "home"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _is_async(view: Any) -> bool:
    view_class = getattr(view, "view_class", None)
    if view_class is not None:
        return bool(getattr(view_class, "view_is_async", False))
    return asyncio.iscoroutinefunction(view)


def scenario_for(found: Probe, name: str) -> dict[str, Any]:
    media = found.content_type.split(";")[0].strip()
    expect: dict[str, Any] = {"status": found.status}
    if media:
        expect["content_type"] = media
    text = found.body.decode("utf-8", errors="replace")
    if media == "application/json":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            expect["json"] = "object"
            expect["keys"] = sorted(data)[:10]
        elif isinstance(data, list):
            expect["json"] = "list"
    else:
        marker = _marker(text)
        if marker:
            expect["contains"] = [marker]
    if found.queries is not None:
        expect["queries"] = found.queries
    variant = "async" if _is_async(found.route.view) else "sync"
    scenario: dict[str, Any] = {
        "name": name,
        "description": f"GET {found.path} (found by benchinit from {found.route.template})",
        "path": found.path,
        "variant": variant,
        "workload": (
            f"{variant}-orm" if found.queries else "trivial" if found.queries == 0 else "sync-orm"
        ),
    }
    if found.user:
        scenario["user"] = found.user
    scenario["expect"] = expect
    return scenario


def health_of(probes: list[Probe]) -> Probe | None:
    """A page answering 200 without queries, preferring a health-like name; else the
    cheapest page (fewest queries, then fastest)."""
    ok = [p for p in probes if not p.skipped and p.user is None]
    if not ok:
        return None
    quiet = [p for p in ok if p.queries == 0]
    for word in HEALTH_WORDS:
        for p in quiet or ok:
            if word in p.path.lower() or word in p.route.name.lower():
                return p
    return min(ok, key=lambda p: (p.queries if p.queries is not None else 99, p.seconds))


def discover(
    samples: dict[str, str], user: str | None, include_admin: bool = False
) -> tuple[list[Probe], list[Probe]]:
    """(probes that became scenarios, probes that were skipped with why)."""
    count = "djbench.middleware.QueryCountMiddleware" in settings.MIDDLEWARE
    kept: list[Probe] = []
    skipped: list[Probe] = []
    taken: set[str] = set()
    seen_paths: set[str] = set()
    for route in routes():
        if route.admin and not include_admin:
            skipped.append(Probe(route=route, skipped="the admin site (not your pages)"))
            continue
        path, why = fill(route, samples)
        if path is None:
            skipped.append(Probe(route=route, skipped=why))
            continue
        if path in seen_paths:
            continue
        seen_paths.add(path)
        found = probe(route, path, user, count)
        found.skipped = _why_not(found, user)
        if found.skipped:
            skipped.append(found)
            continue
        found.scenario = scenario_for(found, _name(route, path, taken))
        kept.append(found)
    return kept, skipped


def document(kept: list[Probe], health: Probe | None) -> dict[str, Any]:
    names = [p.scenario["name"] for p in kept]
    first = [health.scenario["name"]] if health else names[:1]
    return {
        "version": 1,
        "health_path": health.path if health else "/",
        "profiles": {
            "default": list(dict.fromkeys(first + names))[:6],
            "quick": list(dict.fromkeys(first + names))[:2],
        },
        "scenario": [p.scenario for p in kept],
    }


HEADER = """\
# djbench scenarios for this project, written by `manage.py benchinit` from the URLconf.
# Each [[scenario]] is one request a load driver repeats; `expect` is what the page
# answered when benchinit probed it once in-process, and what the verify gate checks
# against every live server before anything is timed. Edit freely: add pages that take
# a body (POST), headers/cookies, `user = "name"` for pages behind login, `csrf = true`,
# or `paths = [...]` to cycle over several ids. Format: djbench's README.
"""
