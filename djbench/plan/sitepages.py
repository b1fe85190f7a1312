"""The pages a site names itself, for benchinit: its sitemap, and the links of its pages.

A CMS serves its pages from one catch-all route (Wagtail's ``serve``, django CMS's
``details``) that no URLconf walk can expand, yet the site lists them in
``/sitemap.xml`` (Django's sitemaps framework, Wagtail's, any other; sitemap indexes
followed) and links them from its home page. Both are read here in this process, with
the probes' client (djbench.plan.inprocess): no network, no server.

The crawl is bounded (pages, depth, seconds), stays within the site's own hosts,
follows no ``rel="nofollow"`` link, no query string, no asset (static, media, file
extensions), and respects the site's ``/robots.txt`` as a crawler would
(``urllib.robotparser``). Sitemap URLs are the site's own statement of its pages and are
taken as listed (query strings kept), up to MAX_SITEMAP_URLS.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit
from urllib.robotparser import RobotFileParser

from django.conf import settings

from djbench.plan.inprocess import HOST

MAX_SITEMAP_URLS = 500
MAX_SITEMAPS = 20  # sitemap files read, an index's children included
CRAWL_PAGES = 40  # --crawl's default: pages fetched for their links
CRAWL_DEPTH = 3
CRAWL_SECONDS = 30.0
ASSET_SUFFIXES = (
    ".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".ico",
    ".pdf", ".zip", ".woff", ".woff2", ".ttf", ".mp4", ".mp3", ".xml", ".txt", ".json",
)  # fmt: skip


@dataclass
class Found:
    """The site's own pages, in the order found, and what the search saw."""

    sitemap: list[str] = field(default_factory=list)  # paths listed by its sitemap(s)
    linked: list[str] = field(default_factory=list)  # paths reached by links from "/"
    sitemaps_read: list[str] = field(default_factory=list)
    robots: str = ""  # "", or what robots.txt held back
    crawl_stopped: str = ""  # why the crawl ended early (a bound), if it did
    hosts: set[str] = field(default_factory=set)  # host names the sitemaps used


def _fetch(client: Any, path: str) -> tuple[int, str, str]:
    """(status, media type, text) of a GET in process; a redirect's text is where it
    points."""
    from djbench.plan.inprocess import get

    response, _, _ = get(client, path, count=False)
    if response.status_code in (301, 302, 303, 307, 308):
        return response.status_code, "", response.get("Location", "")
    media = response.get("Content-Type", "").split(";")[0].strip()
    if getattr(response, "streaming", False):
        body = b"".join(response.streaming_content)
    else:
        body = response.content
    return response.status_code, media, body.decode("utf-8", errors="replace")


def own_hosts() -> set[str]:
    """Host names that are this site: loopback, ALLOWED_HOSTS' literal names and the
    sites framework's domains (those its sitemap uses are added as it is read)."""
    hosts = {HOST, "localhost", "testserver"}
    hosts |= {h for h in settings.ALLOWED_HOSTS if h and h != "*" and not h.startswith(".")}
    try:
        from django.contrib.sites.models import Site

        hosts |= {str(d).split(":")[0] for d in Site.objects.values_list("domain", flat=True)}
    except Exception:  # not installed, or no table: only the other names count
        pass
    return {h.lower() for h in hosts}


def as_path(url: str, base: str, hosts: set[str]) -> str | None:
    """A link as a path of this site (its query kept), None when it leaves the site."""
    parts = urlsplit(urljoin(base, url.strip()))
    if parts.scheme not in ("", "http", "https"):
        return None
    if parts.netloc and (parts.hostname or "").lower() not in hosts:
        return None
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


def _locs(text: str) -> tuple[list[str], list[str]]:
    """(page URLs, child sitemap URLs) of one sitemap document; ([], []) if not one."""
    try:
        root = ET.fromstring(text)  # the project's own output, read in its own process
    except ET.ParseError:
        return [], []
    tag = root.tag.rsplit("}", 1)[-1]
    locs = [
        (el.text or "").strip()
        for el in root.iter()
        if el.tag.rsplit("}", 1)[-1] == "loc" and (el.text or "").strip()
    ]
    return ([], locs) if tag == "sitemapindex" else (locs, []) if tag == "urlset" else ([], [])


def robots(client: Any) -> tuple[RobotFileParser | None, list[str]]:
    """The site's robots rules (None: it has none) and the sitemaps it names."""
    status, _, text = _fetch(client, "/robots.txt")
    if status != 200:
        return None, []
    parser = RobotFileParser()
    lines = text.splitlines()
    parser.parse(lines)
    named = [line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("sitemap:")]
    return parser, named


def read_sitemaps(client: Any, found: Found, named: list[str], hosts: set[str]) -> None:
    """The paths every sitemap lists (the robots-named ones and /sitemap.xml)."""
    queue = [p for u in named if (p := as_path(u, "/", hosts | _hosts_of([u])))] + ["/sitemap.xml"]
    seen: set[str] = set()
    while queue and len(seen) < MAX_SITEMAPS and len(found.sitemap) < MAX_SITEMAP_URLS:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        status, _, text = _fetch(client, path)
        if status != 200:
            continue
        pages, children = _locs(text)
        if pages or children:
            found.sitemaps_read.append(path)
        found.hosts |= _hosts_of(pages + children)
        listed = hosts | found.hosts
        queue += [p for u in children if (p := as_path(u, "/", listed))]
        for url in pages:
            page = as_path(url, "/", listed)
            if page and page not in found.sitemap and len(found.sitemap) < MAX_SITEMAP_URLS:
                found.sitemap.append(page)


def _hosts_of(urls: list[str]) -> set[str]:
    """A sitemap's own URLs name this site's host (Site.domain, Wagtail's Site)."""
    return {(urlsplit(u).hostname or "").lower() for u in urls} - {""}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        rel = (found.get("rel") or "").lower().split()
        if tag == "a" and found.get("href") and "nofollow" not in rel:
            self.hrefs.append(str(found["href"]))


def links(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.hrefs


def is_asset(path: str) -> bool:
    prefixes = [str(p) for p in (settings.STATIC_URL, settings.MEDIA_URL) if p and str(p) != "/"]
    bare = path.split("?")[0].lower()
    return bare.endswith(ASSET_SUFFIXES) or any(bare.startswith(p) for p in prefixes)


def crawl(
    client: Any,
    found: Found,
    hosts: set[str],
    allowed: Callable[[str], bool],
    pages: int = CRAWL_PAGES,
) -> None:
    """Breadth first from "/", within the bounds; `allowed(path)` says what may be
    fetched at all (robots, the admin, assets)."""
    queue: list[tuple[str, int]] = [("/", 0)]
    seen = {"/"}
    started = time.monotonic()
    fetched = 0
    while queue:
        if fetched >= pages:
            found.crawl_stopped = f"{pages} pages fetched (--crawl)"
            return
        if time.monotonic() - started > CRAWL_SECONDS:
            found.crawl_stopped = f"{CRAWL_SECONDS:.0f} s spent"
            return
        path, depth = queue.pop(0)
        status, media, text = _fetch(client, path)
        fetched += 1
        if status in (301, 302, 303, 307, 308):  # a home page that sends to the login page
            target = as_path(text.split("#")[0], path, hosts)
            if target is not None and target not in seen and allowed(target.split("?")[0]):
                seen.add(target)
                queue.append((target.split("?")[0], depth))
            continue
        if status != 200 or media != "text/html":
            continue
        found.linked.append(path)
        if depth >= CRAWL_DEPTH:
            continue
        for href in links(text):
            target = as_path(href.split("#")[0] or path, path, hosts)
            if target is None or "?" in target or target in seen or not allowed(target):
                continue
            seen.add(target)
            queue.append((target, depth + 1))


def site_pages(
    client: Any, excluded: Callable[[str], bool], crawl_pages: int = CRAWL_PAGES
) -> Found:
    """The sitemap's pages, then (crawl_pages > 0) those linked from the home page."""
    found = Found()
    rules, named = robots(client)
    hosts = own_hosts()
    read_sitemaps(client, found, named, hosts)
    hosts |= found.hosts

    def allowed(path: str) -> bool:
        if excluded(path) or is_asset(path):
            return False
        if rules is not None and not rules.can_fetch("*", path):
            found.robots = "robots.txt disallows some links (not followed)"
            return False
        return True

    found.sitemap = [p for p in found.sitemap if not excluded(p) and not is_asset(p)]
    if crawl_pages > 0:
        crawl(client, found, hosts, allowed, crawl_pages)
    return found
