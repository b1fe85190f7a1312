"""benchinit on a site whose pages live in its database, as a CMS's do (issues 36, 38).

A `startproject` site made here: production-like settings (SECURE_SSL_REDIRECT behind a
trusted X-Forwarded-Proto, HSTS, DEBUG off), one catch-all view serving every page from
the database with a template per kind of page (as Wagtail's ``serve`` does), Django's
sitemaps framework listing the posts, and products reached only by links from the home
page. Each page caches a setting on its first request (a cold request makes one query
more than the steady ones). djbench is installed as a package would be:
"djbench" in INSTALLED_APPS and its query-count middleware, nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from djbench.plan import scenarios

pytestmark = pytest.mark.servers

MODELS = """
from django.db import models


class Page(models.Model):
    slug = models.CharField(max_length=100, unique=True, blank=True)
    kind = models.CharField(max_length=20)  # home, post, product
    title = models.CharField(max_length=100)


class Setting(models.Model):
    name = models.CharField(max_length=100)
"""

VIEWS = """
from django.shortcuts import get_object_or_404, render

from .models import Page, Setting

_CACHE = {}


def serve(request, slug=""):
    page = get_object_or_404(Page, slug=slug.strip("/"))
    if slug not in _CACHE:  # a page's first request warms it: one query more
        _CACHE[slug] = Setting.objects.first()
    links = Page.objects.filter(kind="product") if page.kind == "home" else []
    return render(request, f"pages/{page.kind}.html", {"page": page, "links": links})


def search(request):  # reads `q` (and nothing else of the query string)
    hits = Page.objects.filter(title__icontains=request.GET.get("q", ""))
    return render(request, "pages/post.html", {"page": hits.first() or Page(title="none")})
"""

SITEMAPS = """
from django.contrib.sitemaps import Sitemap

from .models import Page


class Posts(Sitemap):
    def items(self):
        return Page.objects.filter(kind__in=["home", "post"]).order_by("slug")

    def location(self, page):
        return "/" + (page.slug + "/" if page.slug else "")
"""

TEMPLATE = (
    "<html><head><title>{{ page.title }} | Bakery</title></head><body>"
    '{% for p in links %}<a href="/{{ p.slug }}/">{{ p.title }}</a> {% endfor %}'
    '<a href="https://elsewhere.example/out/">out</a></body></html>'
)

URLS = """
from django.contrib import admin
from django.contrib.sitemaps.views import sitemap
from django.urls import path, re_path

from pages.sitemaps import Posts
from pages.views import search, serve

urlpatterns = [
    path("admin/", admin.site.urls),
    path("sitemap.xml", sitemap, {"sitemaps": {"posts": Posts}}),
    path("search/", search),
    re_path(r"^(?P<slug>(?:[\\w-]+/)*)$", serve),
]
"""

SETTINGS = """
INSTALLED_APPS += ["django.contrib.sitemaps", "pages", "djbench"]
MIDDLEWARE = ["djbench.middleware.QueryCountMiddleware", *MIDDLEWARE]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SECURE_SSL_REDIRECT = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = 3600
"""

CREATE = """
from pages.models import Page, Setting
Setting.objects.create(name="x")
Page.objects.create(slug="", kind="home", title="Home")
for i in range(3):
    Page.objects.create(slug=f"post-{i}", kind="post", title=f"Post {i}")
    Page.objects.create(slug=f"product-{i}", kind="product", title=f"Product {i}")
"""


def run(
    argv: list[str], cwd: Path, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("cms") / "mysite"
    root.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")
    }
    python = sys.executable
    run([python, "-m", "django", "startproject", "mysite", str(root)], root, env)
    run([python, "manage.py", "startapp", "pages"], root, env)
    app = root / "pages"
    (app / "models.py").write_text(MODELS)
    (app / "views.py").write_text(VIEWS)
    (app / "sitemaps.py").write_text(SITEMAPS)
    (app / "templates" / "pages").mkdir(parents=True)
    for kind in ("home", "post", "product"):
        (app / "templates" / "pages" / f"{kind}.html").write_text(TEMPLATE)
    (root / "mysite" / "urls.py").write_text(URLS)
    settings = root / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + SETTINGS)
    run([python, "manage.py", "makemigrations", "pages", "-v", "0"], root, env)
    run([python, "manage.py", "migrate", "-v", "0"], root, env)
    run([python, "manage.py", "shell", "-c", textwrap.dedent(CREATE)], root, env)
    return root, env


def test_benchinit_finds_the_sites_pages_over_https_and_they_verify(
    site: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = site
    python = sys.executable
    init = run([python, "manage.py", "benchinit"], root, env)
    text = init.stdout
    scenario_file = root / "loadtests" / "default.toml"
    data = tomllib.loads(scenario_file.read_text())
    by_name = {s["name"]: s for s in data["scenario"]}
    # One scenario per kind of page: the posts from the sitemap, the products (in no
    # sitemap) from the home page's links; the pages of a kind cycled.
    assert set(by_name) >= {"home", "post", "product"}, text
    assert sorted([by_name["post"]["path"], *by_name["post"]["paths"]]) == [
        "/post-0/",
        "/post-1/",
        "/post-2/",
    ]
    assert len(by_name["product"]["paths"]) == 2
    assert "elsewhere" not in scenario_file.read_text()  # no link off the site followed
    # As over HTTPS: the header the settings trust goes with every request.
    assert data["headers"] == {"X-Forwarded-Proto": "https"}
    assert "Every request carries X-Forwarded-Proto: https" in text
    # The steady query count, as a range: a page's cold first request made one more.
    assert by_name["post"]["expect"]["queries"] == [1, 1], by_name["post"]
    assert by_name["home"]["expect"]["queries"] == [2, 2], by_name["home"]
    assert by_name["post"]["expect"]["contains"] == ["| Bakery</title>"]
    # Profiles start from the home page, and benchinit says what they hold.
    assert data["profiles"]["default"][0] == "home"
    assert data["profiles"]["quick"][0] == "home"
    assert f"Profile quick: {', '.join(data['profiles']['quick'])}" in text
    listed = run([python, "manage.py", "runbench", "--list"], root, env).stdout
    assert f"quick: {', '.join(data['profiles']['quick'])}" in listed

    out = tmp_path / "out"
    verify = run(
        [
            *(python, "manage.py", "runbench", "--verify-only"),
            *("--servers", "gunicorn-sync,uvicorn", "--scenarios", "home,post,product"),
            *("--output", str(out)),
        ],
        root,
        env,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # A live server's first request is cold: its count is outside the steady range,
    # which is a warning with both numbers, never a failure.
    assert "2 SQL queries, outside the steady 1-1" in verify.stdout, verify.stdout
    assert (out / ".gitignore").exists()  # results never show as changes in the project


def test_benchinit_says_why_no_page_answers(
    site: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Every page broken: no header trusted, so plain HTTP is always redirected."""
    root, env = site
    settings = root / "mysite" / "settings.py"
    original = settings.read_text()
    settings.write_text(original.replace("SECURE_PROXY_SSL_HEADER", "IGNORED_HEADER"))
    try:
        done = run(
            [sys.executable, "manage.py", "benchinit", "--output", str(tmp_path / "s.toml")],
            root,
            env,
            check=False,
        )
    finally:
        settings.write_text(original)
    assert done.returncode == 1
    assert "No page answered 200. The commonest reasons:" in done.stderr
    assert "x redirects to https://... (SECURE_SSL_REDIRECT is on and" in done.stderr
    assert "CommandError: no page answered 200" in done.stderr


def _combined(path: str, minute: int, method: str = "GET", status: int = 200) -> str:
    return (
        f'10.0.0.1 - - [10/Dec/2026:10:{minute:02d}:00 +0000] "{method} {path} HTTP/1.1" '
        f'{status} 512 "-" "Mozilla/5.0"'
    )


def _caddy(path: str, ts: float) -> str:
    request = {"method": "GET", "uri": path, "host": "bakery.example", "proto": "HTTP/2.0"}
    return json.dumps({"level": "info", "ts": ts, "request": request, "status": 200})


def test_benchinit_from_an_access_log_orders_scenarios_by_the_site_s_traffic(
    site: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Combined and Caddy JSON lines in one log: the pages are probed and grouped like
    the sitemap's (the products, linked from nowhere with --crawl 0, come from the log
    alone), each scenario's share of the requests is said and orders the profiles; a
    POST, a query string, a page gone and a line in no format are counted and said."""
    root, env = site
    start = 1_796_896_800.0  # 2026-12-10 10:00:00 UTC
    lines = [_combined("/product-1/", i % 60) for i in range(50)]
    lines += [_caddy("/product-2/", start + 60 * i) for i in range(10)]
    lines += [_combined("/post-0/?utm_source=x", i) for i in range(20)]
    lines += [_combined("/", i) for i in range(15)]
    lines += [_combined("/search/?q=rye&utm_source=mail", i) for i in range(6)]
    lines += [_combined("/search/?q=spelt", i) for i in range(3)]
    lines += [_combined("/contact/", 3, method="POST")] * 5
    lines += [_combined("/gone/", 4, status=404)] * 8
    lines += ["not a log line", _combined("/", 59)]
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "from-log.toml"
    python = sys.executable
    done = run(
        [python, "manage.py", "benchinit", "--crawl", "0", "--from-log", str(log),
         "--output", str(out)],
        root, env,
    )  # fmt: skip
    said = " ".join(done.stdout.split())
    data = tomllib.loads(out.read_text())
    by_name = {s["name"]: s for s in data["scenario"]}
    product = by_name["product"]
    assert {product["path"], *product["paths"]} == {"/product-1/", "/product-2/"}
    assert data["profiles"]["default"][:4] == ["log-mix", "product", "post", "home"]
    # The log's mix (issue 38 item 3): its pages weighted by their requests, read back.
    assert by_name["log-mix"]["mix"] == {"product": 60, "post": 20, "home": 16, "search": 9}
    # The search view reads `q` (kept, its commonest first), never `utm_source` (dropped);
    # the pages' view reads no query string: their bare paths.
    assert by_name["search"]["path"] == "/search/?q=rye"
    assert by_name["search"]["paths"] == ["/search/?q=spelt"]
    assert "?" not in by_name["post"]["path"] and "?" not in str(by_name["post"].get("paths"))
    assert "Query strings kept where the view reads them (its keys only): /search/?q=rye" in said
    assert data["profiles"]["log"] == ["log-mix"]
    [mix] = [s for s in scenarios.load(out).scenarios if s.mix]
    assert mix.mix[0].scenario.request.path in ("/product-1/", "/product-2/")
    assert "Replay it at the log's rate" in said and "--scenarios log-mix --rate" in said
    assert "113 GET/HEAD request(s) over 59 min 0 s (0.03 req/s)" in said, said
    assert "left out: 5 POST; 29 with a query string; 1 line(s) in no known format" in said
    assert "product 53%, post 18%, home 14%, search 8%" in said
    assert "1 page(s) of the log left out (8 request(s)): /gone/ (8 x): answers 404" in said
    missing = run(
        [python, "manage.py", "benchinit", "--from-log", str(tmp_path / "none.log")],
        root, env, check=False,
    )  # fmt: skip
    assert missing.returncode == 2
    assert "--from-log: cannot read" in missing.stderr and "Traceback" not in missing.stderr


def test_a_path_no_route_matches_has_no_view() -> None:
    """A new project's home page matches no route: the test client resolves it lazily
    and raises, which stopped benchinit on a fresh startproject (issue 57's tries)."""
    from django.test import Client

    from djbench.plan import inprocess

    response = Client(raise_request_exception=False).get("/no-route-here/")
    assert response.status_code == 404
    assert inprocess._view_name(response) == ""
