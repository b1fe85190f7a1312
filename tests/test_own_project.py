"""djbench on a project nobody here wrote: made by `django-admin startproject` in the test.

The project gets one app (a model, a list view, a detail view with an id, a page behind
login), loses its asgi.py, and gets "djbench" in INSTALLED_APPS and nothing else of
djbench's. Then: benchinit writes the scenarios, runbench --verify-only verifies them
under two WSGI and two ASGI servers (uvicorn among them) as real processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from djbench.results import store
from djbench.results.model import SCHEMA_VERSION

pytestmark = pytest.mark.servers

MODELS = """
from django.db import models


class Product(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(unique=True)

    def __str__(self):
        return self.name
"""

VIEWS = """
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_POST
from django.views.generic import DetailView, ListView

from .models import Product


class ProductList(ListView):
    model = Product


class ProductDetail(DetailView):
    model = Product


@login_required
def account(request):
    return HttpResponse(f"<html><title>Account</title>{request.user.username}</html>")


def ping(request):
    return JsonResponse({"ok": True})


@require_POST
def vote(request):  # behind Django's CSRF middleware, as startproject sets it up
    return JsonResponse({"voted": request.POST.get("choice")})
"""

URLS = """
from django.urls import path

from . import views

app_name = "shop"
urlpatterns = [
    path("", views.ProductList.as_view(), name="list"),
    path("<int:pk>/", views.ProductDetail.as_view(), name="detail"),
    path("account/", views.account, name="account"),
    path("ping/", views.ping, name="ping"),
    path("vote/", views.vote, name="vote"),
]
"""

LIST_TEMPLATE = (
    "<html><title>Products</title>{% for p in object_list %}{{ p.name }} {% endfor %}</html>"
)
DETAIL_TEMPLATE = "<html><title>{{ object.name }}</title>{{ object.slug }}</html>"


EXTRA = """
[[scenario]]
name = "vote"
method = "POST"
path = "/shop/vote/"
body = "choice=red"
content_type = "application/x-www-form-urlencoded"
csrf = true
expect = { status = 200, json = "object", keys = ["voted"], contains = ['"red"'] }

[[scenario]]
name = "vote-without-csrf"  # proves the token above is what lets the POST through
method = "POST"
path = "/shop/vote/"
body = "choice=red"
content_type = "application/x-www-form-urlencoded"
expect = { status = 403 }

[[scenario]]
name = "products"
path = "/shop/1/"
paths = ["/shop/2/", "/shop/3/"]
expect = { status = 200, content_type = "text/html", contains = ["<title>Thing"] }
"""


def run(
    argv: list[str], cwd: Path, env: dict[str, str], check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("own") / "mysite"
    root.mkdir()
    # Nothing of this repository's settings may leak into the user's project.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")
    }
    python = sys.executable
    run([python, "-m", "django", "startproject", "mysite", str(root)], root, env)
    run([python, "manage.py", "startapp", "shop"], root, env)
    shop = root / "shop"
    (shop / "models.py").write_text(MODELS)
    (shop / "views.py").write_text(VIEWS)
    (shop / "urls.py").write_text(URLS)
    templates = shop / "templates" / "shop"
    templates.mkdir(parents=True)
    (templates / "product_list.html").write_text(LIST_TEMPLATE)
    (templates / "product_detail.html").write_text(DETAIL_TEMPLATE)
    (root / "mysite" / "asgi.py").unlink()  # many real projects have none
    urls = root / "mysite" / "urls.py"
    urls.write_text(
        urls.read_text()
        .replace("from django.urls import path", "from django.urls import include, path")
        .replace("]", '    path("shop/", include("shop.urls")),\n]')
    )
    settings = root / "mysite" / "settings.py"
    # The one djbench line a user adds (and their own app).
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["shop", "djbench"]\n')
    run([python, "manage.py", "makemigrations", "shop", "-v", "0"], root, env)
    run([python, "manage.py", "migrate", "-v", "0"], root, env)
    create = textwrap.dedent(
        """
        from django.contrib.auth.models import User
        from shop.models import Product
        User.objects.create_user("alice", password="x")
        for i in range(3):
            Product.objects.create(name=f"Thing {i}", slug=f"thing-{i}")
        """
    )
    run([python, "manage.py", "shell", "-c", create], root, env)
    return root, env


def test_benchinit_then_verify_under_wsgi_and_asgi_servers(
    project: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = project
    python = sys.executable
    init = run([python, "manage.py", "benchinit", "--user", "alice"], root, env)
    scenario_file = root / "loadtests" / "default.toml"
    assert f"Wrote {scenario_file}: 4 scenario(s)" in init.stdout, init.stdout
    assert "shop-account: GET /shop/account/ -> 200, as alice" in init.stdout
    assert "shop-detail: GET /shop/1/ -> 200" in init.stdout
    assert "route(s) of the admin site" in init.stdout  # skipped, and said
    assert "/shop/vote/: does not answer GET (POST-only?)" in init.stdout
    assert "Health path (polled until a server is ready): /shop/ping/" in init.stdout
    # Running it again does not overwrite without --force (exit code 2, one line).
    again = run([python, "manage.py", "benchinit"], root, env, check=False)
    assert again.returncode == 2 and "exists; run with --force" in again.stderr

    # What a user adds by hand: a POST behind CSRF, and a page loaded over several ids.
    with scenario_file.open("a") as f:
        f.write(EXTRA)
    out = tmp_path / "out"
    verify = run(
        [
            python,
            "manage.py",
            "runbench",
            "--verify-only",
            "--servers",
            "gunicorn-sync,granian-wsgi,uvicorn,daphne",
            "--output",
            str(out),
        ],
        root,
        env,
        check=False,
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    [path] = out.glob("*.json")
    document = store.load(path)
    statuses = {(e.server, e.scenario): e.status for e in document.results}
    assert len(statuses) == 4 * 7
    assert set(statuses.values()) == {"ok"}, statuses
    # No ASGI entry point in the project: djbench served Django's own, and says so.
    assert document.environment.asgi_app == "djbench.asgi:application"
    assert "djbench.asgi" in (document.environment.asgi_app_source or "")
    # Each server's config came from djbench's packaged defaults (the project has none).
    command = document.results[0].command["server"]
    assert command.config_file and Path(command.config_file).name in command.shell
    assert command.config_sha256 and len(command.config_sha256) == 64
    # Thread hops under ASGI were counted for each page, with their causes.
    hops = {n: m.asgi_hops for n, m in document.plan.scenarios.items()}
    gets = [h for n, h in hops.items() if not n.startswith("vote")]
    assert all(h is not None and h.counted and h.hops > 0 for h in gets), hops
    posted = hops["vote"]
    assert posted is not None and not posted.counted  # a POST would write: not replayed
    assert posted.why == "only GET and HEAD scenarios are counted"
    assert any("SessionMiddleware" in c for h in hops.values() if h for c in h.causes)
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
