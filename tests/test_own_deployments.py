"""The deployment a team runs now (issue 36 item 5): found in its own files by
benchinit, written as [[deployment]]s, and run by runbench as written, beside djbench's
layouts, listening on loopback only."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from djbench.servers import recognise
from djbench.servers.discovery import find
from tests.userproject import users_project

UWSGI_INI = """\
[uwsgi]
http-socket=:$(PORT)
master=true
workers=2
threads=2
http-keepalive=1
virtualenv=$(VIRTUAL_ENV)
lazy-apps=true
wsgi-file=mysite/wsgi.py
"""


def test_commands_are_read_as_the_team_wrote_them(tmp_path: Path) -> None:
    """Procfile, Dockerfile CMD (its image paths made the project's), a gunicorn config
    read from its lines (never executed), and ASGI servers by their flags."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "uwsgi.ini").write_text(UWSGI_INI)
    (tmp_path / "Procfile").write_text(
        "release: python manage.py migrate\nweb: uwsgi ./etc/uwsgi.ini\n"
        "worker: newrelic-admin run-program gunicorn app.asgi -k uvicorn_worker.UvicornWorker "
        "-w 3 --bind 0.0.0.0:$PORT\n"
    )
    (tmp_path / "Dockerfile").write_text(
        'FROM python\nWORKDIR /code\nCMD ["uwsgi", "/code/etc/uwsgi.ini"]\n'
    )
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "gunicorn_conf.py").write_text(
        'workers = 4\nthreads = 8  # io\nbind = "x"\n'
    )
    found = {c.name: c for c in find(tmp_path, "app.wsgi:application")}
    uwsgi = found["yours-uwsgi"]
    assert (uwsgi.server, uwsgi.config, uwsgi.workers, uwsgi.threads) == (
        "uwsgi", "etc/uwsgi.ini", 2, 2,
    )  # fmt: skip
    assert uwsgi.found_in == "Procfile (web); Dockerfile CMD"
    asgi = found["yours-gunicorn"]
    assert (asgi.server, asgi.workers, asgi.threads) == ("gunicorn-uvicorn", 3, None)
    # A config file no command names is a deployment of its own (sync with threads is
    # gthread, Gunicorn's rule).
    alone = found["yours-gunicorn-2"]
    assert (alone.server, alone.workers, alone.threads) == ("gunicorn-gthread", 4, 8)
    assert alone.command == "gunicorn -c config/gunicorn_conf.py app.wsgi:application"

    def server(line: str) -> str | None:
        own = recognise(tmp_path, line, "x", "app.wsgi:application")
        return own.server if own else None

    assert server("exec granian --interface asgi app.asgi:application") == "granian-asgi"
    assert server("granian app:main") is None  # RSGI, Granian's default: not Django's
    assert server("python -m uvicorn app.asgi:application --workers 4") == "uvicorn"
    assert server("daphne -b 0.0.0.0 -p $PORT app.asgi:application") == "daphne"
    assert server("hypercorn -k uvloop app.asgi:application") == "hypercorn-uvloop"
    assert server("celery -A app worker") is None


def test_djbench_s_own_deploy_folder_is_not_the_team_s(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "uwsgi.ini").write_text(UWSGI_INI)
    (deploy / "gunicorn.conf.py").write_text("workers = 2\n")
    assert find(tmp_path, "app.wsgi:application", (deploy,)) == []
    assert [c.config for c in find(tmp_path, "app.wsgi:application")] == [
        "deploy/gunicorn.conf.py", "deploy/uwsgi.ini",
    ]  # fmt: skip
    # This repository: djbench's packaged deploy/ folder is djbench's too.
    from djbench.plan.project import PACKAGED_DEPLOY

    repository = PACKAGED_DEPLOY.parent.parent
    if (repository / "pyproject.toml").exists():  # an editable install: the checkout
        assert (
            find(repository, "x.wsgi:application", (repository / "deploy", PACKAGED_DEPLOY)) == []
        )


@pytest.mark.servers
def test_a_project_s_procfile_and_uwsgi_ini_are_measured_as_written(
    tmp_path: Path, one_pass: None
) -> None:
    """A startproject site with a Procfile naming its uwsgi.ini (listening on every
    interface at $PORT) and a Dockerfile running Gunicorn: benchinit writes both as
    deployments; runbench verifies them on loopback, recording the command it ran."""
    from djbench.servers import SERVERS

    for name in ("uwsgi", "gunicorn-sync"):
        if SERVERS[name].missing():
            pytest.skip(f"{name} is not installed")
    root, env = users_project(tmp_path)
    (root / "etc").mkdir()
    (root / "etc" / "uwsgi.ini").write_text(UWSGI_INI)
    (root / "Procfile").write_text("web: uwsgi ./etc/uwsgi.ini\n")
    (root / "Dockerfile").write_text(
        'FROM python\nCMD ["gunicorn", "mysite.wsgi", "--workers", "2", "-b", "0.0.0.0:80"]\n'
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=root, env=env, check=True, timeout=120)
    init = subprocess.run(
        [*manage, "benchinit", "--force", "--crawl", "0"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert init.returncode == 0, init.stderr
    said = " ".join(init.stdout.split())
    assert "yours-uwsgi: uwsgi etc/uwsgi.ini (Procfile (web); 2 worker(s) x 2 thread(s))" in said
    assert "yours-gunicorn: gunicorn mysite.wsgi --workers 2 -b 0.0.0.0:80" in said
    written = tomllib.loads((root / "loadtests" / "default.toml").read_text())
    assert [d["name"] for d in written["deployment"]] == ["yours-uwsgi", "yours-gunicorn"]
    listed = subprocess.run(
        [*manage, "runbench", "--list"], cwd=root, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert "yours-uwsgi: uwsgi etc/uwsgi.ini (as uwsgi; Procfile (web)" in listed.stdout
    out = tmp_path / "out"
    run = subprocess.run(
        [*manage, "runbench", "--verify-only", "--servers", "yours-uwsgi,yours-gunicorn,uwsgi",
         "--output", str(out)],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    [results] = out.glob("*.json")
    document = json.loads(results.read_text())
    by_label = {(e.get("own") or e["server"]): e for e in document["results"]}
    assert set(by_label) == {"yours-uwsgi", "yours-gunicorn", "uwsgi"}
    assert all(e["verify"]["status"] == "ok" for e in document["results"])
    uwsgi = by_label["yours-uwsgi"]["command"]["server"]
    assert uwsgi["config_file"].endswith("etc/uwsgi.ini")
    argv = uwsgi["argv"]
    assert argv[-3:-1] == ["--http-socket", argv[-2]] and argv[-2].startswith("127.0.0.1:")
    copy = Path(next(a for a in argv if a.endswith("yours-uwsgi.ini")))
    assert "http-socket=:$(PORT)" not in [line.strip() for line in copy.read_text().splitlines()]
    gunicorn = by_label["yours-gunicorn"]["command"]["server"]["argv"]
    assert "0.0.0.0:80" not in gunicorn and "--workers" in gunicorn
    assert gunicorn[gunicorn.index("--bind") + 1].startswith("127.0.0.1:")
    assert document["plan"]["own"][0]["command"] == "uwsgi etc/uwsgi.ini"
