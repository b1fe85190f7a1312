"""A project nobody here wrote, for the tests of upgrade validation: a fresh
`startproject` with one page and djbench in INSTALLED_APPS, in git (no commit yet)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SLOW_MIDDLEWARE = """
import time


class Slow:
    \"\"\"The regression a pull request brings: 20 ms more per request.\"\"\"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        time.sleep(0.02)
        return self.get_response(request)
"""

SCENARIOS = """
version = 1
health_path = "/ping/"

[[scenario]]
name = "ping"
path = "/ping/"
expect = { status = 200, contains = ["pong"] }
"""


def git(root: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=60,
    )


def users_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The project's folder (a git repository with its first commit) and the
    environment to run its manage.py in (the test process's Django settings left out)."""
    root = tmp_path / "mysite"
    root.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")
    }
    env["DJBENCH_CACHE"] = str(tmp_path / "cache")
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(root)],
        cwd=root,
        env=env,
        check=True,
        timeout=120,
    )
    (root / "mysite" / "views.py").write_text(
        "from django.http import HttpResponse\n\n\ndef ping(request):\n"
        '    return HttpResponse("pong")\n'
    )
    urls = root / "mysite" / "urls.py"
    urls.write_text(
        urls.read_text()
        .replace(
            "from django.urls import path", "from django.urls import path\n\nfrom . import views"
        )
        .replace("]", '    path("ping/", views.ping),\n]')
    )
    settings = root / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["djbench"]\n')
    (root / "loadtests").mkdir()
    (root / "loadtests" / "default.toml").write_text(SCENARIOS)
    (root / ".gitignore").write_text("db.sqlite3\n__pycache__/\nbench-results/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a project")
    return root, env
