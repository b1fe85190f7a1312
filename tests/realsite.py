"""A site nobody here wrote, made with `django-admin startproject`, that has each case of
issue 54: an endpoint its clients call that writes (a GET ping that records a row and
changes a check's status), a page whose title the pings change, pages under two models'
identifiers of the same argument name (`code`), function views only, a CSRF endpoint, a
uWSGI file written for a container (chdir to the image's path, two attach-daemons, a
migrate hook, a user to run as, http-socket without keep-alive) named by a Dockerfile,
and `CONN_MAX_AGE = 0` (a new database connection per request). PostgreSQL when
`database_url` is given, else SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODELS = """
import uuid

from django.db import models


class Project(models.Model):
    code = models.UUIDField(default=uuid.uuid4, unique=True)
    name = models.CharField(max_length=100)


class Check(models.Model):
    code = models.UUIDField(default=uuid.uuid4, unique=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    name = models.CharField(max_length=100)
    status = models.CharField(max_length=10, default="new")
    pings = models.IntegerField(default=0)


class Ping(models.Model):
    check_row = models.ForeignKey(Check, on_delete=models.CASCADE)
    created = models.DateTimeField(auto_now_add=True)
"""

VIEWS = """
from django.http import HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404

from .models import Check, Ping, Project


def home(request):
    links = "".join(f'<a href="/projects/{p.code}/">{p.name}</a>' for p in Project.objects.all())
    return HttpResponse(f"<html><head><title>Monitor</title></head><body>{links}</body></html>")


def ping(request, code):
    check = get_object_or_404(Check, code=code)
    Ping.objects.create(check_row=check)
    check.status = "up"
    check.pings += 1
    check.save(update_fields=["status", "pings"])
    return HttpResponse("OK")


def check_detail(request, code):
    check = get_object_or_404(Check, code=code)
    return HttpResponse(
        f"<html><head><title>{check.name} is {check.status} | Monitor</title></head>"
        f"<body>{check.pings} pings</body></html>"
    )


def project_detail(request, code):
    project = get_object_or_404(Project, code=code)
    rows = "".join(f"<li>{c.name}: {c.status}</li>" for c in project.check_set.all())
    return HttpResponse(
        f"<html><head><title>{project.name} | Monitor</title></head><ul>{rows}</ul></html>"
    )


def csrf(request):
    return JsonResponse({"token": get_token(request)})
"""

URLS = """
from django.urls import path

from monitor import views

urlpatterns = [
    path("", views.home),
    path("ping/<uuid:code>/", views.ping),
    path("checks/<uuid:code>/", views.check_detail),
    path("projects/<uuid:code>/", views.project_detail),
    path("api/csrf/", views.csrf),
]
"""

SEED = """
from django.core.management.base import BaseCommand

from monitor.models import Check, Project


class Command(BaseCommand):
    def handle(self, *args, **options):
        for i in range(3):
            project = Project.objects.create(name=f"project {i}")
            for j in range(4):
                Check.objects.create(project=project, name=f"check {i}.{j}")
"""

UWSGI_INI = """\
[uwsgi]
chdir = /opt/monitor
module = mysite.wsgi:application
http-socket = :8000
master = true
processes = 2
enable-threads = true
uid = monitor
attach-daemon = ./manage.py sendalerts
attach-daemon = ./manage.py sendreports
hook-pre-app = exec:./manage.py migrate
static-map = /static=/opt/monitor/static-collected
"""

DOCKERFILE = """\
FROM python:3.12
WORKDIR /opt/monitor
COPY . /opt/monitor
CMD ["uwsgi", "/opt/monitor/docker/uwsgi.ini"]
"""


def database_settings(url: str | None) -> str:
    if url is None:
        return "DATABASES['default']['CONN_MAX_AGE'] = 0\n"
    from urllib.parse import urlparse

    parts = urlparse(url)
    return (
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.postgresql', "
        f"'NAME': {parts.path.lstrip('/')!r}, 'USER': {parts.username or 'postgres'!r}, "
        f"'HOST': {parts.hostname!r}, 'PORT': {parts.port or 5432}, 'CONN_MAX_AGE': 0}}}}\n"
    )


def real_site(root: Path, env: dict[str, str], database_url: str | None = None) -> Path:
    """The site at `root`, migrated and seeded (3 projects x 4 checks)."""
    root.mkdir(parents=True)
    run = {"cwd": root, "env": env, "check": True, "timeout": 300}
    subprocess.run([sys.executable, "-m", "django", "startproject", "mysite", str(root)], **run)
    subprocess.run([sys.executable, "-m", "django", "startapp", "monitor"], **run)
    (root / "monitor" / "models.py").write_text(MODELS)
    (root / "monitor" / "views.py").write_text(VIEWS)
    commands = root / "monitor" / "management" / "commands"
    commands.mkdir(parents=True)
    for folder in (commands.parent, commands):
        (folder / "__init__.py").write_text("")
    (commands / "seed.py").write_text(SEED)
    (root / "mysite" / "urls.py").write_text(URLS)
    settings = root / "mysite" / "settings.py"
    settings.write_text(
        settings.read_text()
        + '\nINSTALLED_APPS += ["monitor", "djbench"]\n'
        + 'MIDDLEWARE.insert(0, "djbench.middleware.QueryCountMiddleware")\n'
        + database_settings(database_url)
        + 'DEBUG = False\nALLOWED_HOSTS = ["127.0.0.1", "localhost"]\n'
    )
    (root / "docker").mkdir()
    (root / "docker" / "uwsgi.ini").write_text(UWSGI_INI)
    (root / "Dockerfile").write_text(DOCKERFILE)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "makemigrations", "monitor", "-v", "0"], **run)
    subprocess.run([*manage, "migrate", "-v", "0"], **run)
    subprocess.run([*manage, "seed"], **run)
    return root


def site_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")
    }
    env["DJBENCH_CACHE"] = str(tmp_path / "cache")
    return env
