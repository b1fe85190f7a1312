"""Installing djbench into a project that pins its servers changes none of them
(a team measures the versions it deploys), and `runbench --list` says which servers
the pinned versions can run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
PINNED = "25.3.0"  # cookiecutter-django's pin at the time: it ships Gunicorn's -k asgi


def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(found).exists():
        pytest.fail("uv is not installed (it is one of djbench's dependencies)")
    return found


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and any(
        w in done.stderr for w in ("Failed to fetch", "dns error", "Could not connect")
    ):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the package index is out of reach (CI=true): {done.stderr[-300:]}")
        pytest.skip(f"the package index is out of reach: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def server_rows(listed: str) -> dict[str, str]:
    """--list's Servers table (name -> its row), before the table of what each is."""
    table = listed.split("What each server is", 1)[0]
    return {line.split("│")[1].strip(): line for line in table.splitlines() if "│" in line}


def test_a_project_that_pins_gunicorn_keeps_it(tmp_path: Path) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH", "VIRTUAL_ENV")
    }
    env["COLUMNS"] = "400"  # one table row a line
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run([uv(), "venv", "-q", "--python", sys.executable, str(venv)], tmp_path, env)
    # The project's own requirements: its pinned server, and djbench with the servers.
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        f"gunicorn=={PINNED}\ndjbench[gunicorn,gunicorn-asgi,uvicorn] @ {ROOT.as_uri()}\n"
    )
    run([uv(), "pip", "install", "-q", "--python", str(python), "-r", str(requirements)],
        tmp_path, env)  # fmt: skip
    version = run(
        [str(python), "-c", "import gunicorn; print(gunicorn.__version__)"], tmp_path, env
    )
    assert version.strip() == PINNED
    # A project nobody here wrote, with djbench added to INSTALLED_APPS and nothing else.
    run([str(venv / "bin" / "django-admin"), "startproject", "mysite", "."], tmp_path, env)
    settings = tmp_path / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["djbench"]\n')
    rows = server_rows(
        run([str(python), "manage.py", "runbench", "--list", "--no-color"], tmp_path, env)
    )
    assert "yes" in rows["gunicorn-sync"] and PINNED in rows["gunicorn-sync"]
    assert "yes" in rows["gunicorn-asgi"] and PINNED in rows["gunicorn-asgi"]
    assert "no: pip install" in rows["uwsgi"]  # not asked for: said how to get it
    # A project pinned to a Gunicorn without the ASGI worker: said, and nothing installed.
    run([uv(), "pip", "install", "-q", "--python", str(python), "gunicorn==23.0.0"], tmp_path, env)
    rows = server_rows(
        run([str(python), "manage.py", "runbench", "--list", "--no-color"], tmp_path, env)
    )
    assert "no: gunicorn 23.0.0 has no gunicorn.workers.gasgi" in rows["gunicorn-asgi"]
    assert "yes" in rows["gunicorn-sync"] and "23.0.0" in rows["gunicorn-sync"]
