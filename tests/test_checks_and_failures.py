"""What breaks a run is said before it starts (system checks with ids), and a broken
server config makes that server `failed` with a sentence while the run goes on."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core import checks
from django.core.management import CommandError, call_command
from django.test import override_settings

from djbench import checks as dj_checks
from djbench.plan.project import PACKAGED_DEPLOY
from djbench.reports.words import say
from djbench.results import store

ROOT = Path(__file__).resolve().parent.parent


def ids(**overrides: object) -> set[str]:
    with override_settings(**overrides):
        return {m.id for m in checks.run_checks(tags=["djbench"]) if m.id}


def djbench_conf(**extra: object) -> dict[str, object]:
    from django.conf import settings

    return {**settings.DJBENCH, **extra}


def test_the_sample_project_is_clean() -> None:
    assert ids() == set()


def test_missing_and_invalid_scenario_files(tmp_path: Path) -> None:
    assert "djbench.W003" in ids(DJBENCH=djbench_conf(SCENARIOS=tmp_path / "none.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("version = 1\n[[scenario]]\nname='a'\npath='/'\nmetod='GET'\n")
    with override_settings(DJBENCH=djbench_conf(SCENARIOS=bad)):
        [message] = [m for m in checks.run_checks(tags=["djbench"]) if m.id == "djbench.W004"]
    assert "metod: unknown key (a typo?)" in message.msg


def test_benchinit_does_not_warn_about_the_file_it_writes(tmp_path: Path) -> None:
    """Each warning once per command, never before the command that fixes it: the
    scenario file benchinit is about to write is not said to be missing (issue 57)."""
    from io import StringIO

    from django.core.management import load_command_class
    from django.core.management.base import OutputWrapper

    missing = djbench_conf(SCENARIOS=tmp_path / "none.toml")
    for command, said in (("benchinit", False), ("runbench", True)):
        found = StringIO()
        cmd = load_command_class("djbench", command)
        cmd.stderr = OutputWrapper(found)
        with override_settings(DJBENCH=missing, DEBUG=True):
            cmd.check()
        assert ("djbench.W003" in found.getvalue()) is said, command
        assert found.getvalue().count("djbench.W009") == 1  # the others, once


@pytest.mark.parametrize(
    ("argv", "quiet"),
    [
        (["manage.py", "migrate"], True),
        (["/srv/site/manage.py", "runserver", "8000"], True),
        (["django-admin", "shell"], True),
        (["manage.py", "check"], False),
        (["manage.py", "runbench", "--quick"], False),
        (["manage.py", "benchinit"], False),
        (["/venv/bin/pytest", "tests"], False),
        (["/venv/lib/python3.11/site-packages/pytest/__main__.py", "tests/x.py"], False),
        (["/venv/lib/python3.11/site-packages/django/__main__.py", "migrate"], True),
        (["manage.py"], False),
    ],
)
def test_djbench_s_checks_speak_in_its_commands_only(argv: list[str], quiet: bool) -> None:
    """The project's other commands do not repeat djbench's warnings at their top."""
    assert dj_checks._in_another_command(argv) is quiet


def test_hosts_debug_and_apps() -> None:
    assert "djbench.W008" in ids(ALLOWED_HOSTS=["example.com"])
    assert "djbench.W009" in ids(DEBUG=True)
    assert "djbench.W006" in ids(WSGI_APPLICATION="nowhere.wsgi.application")
    assert "djbench.W007" in ids(DJBENCH=djbench_conf(ASGI_APP="nowhere.asgi:application"))
    assert "djbench.W002" in ids(
        MIDDLEWARE=[
            "django.middleware.common.CommonMiddleware",
            "djbench.middleware.QueryCountMiddleware",
        ]
    )


def test_persistent_connections_are_said_with_the_project_s_own_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CONN_MAX_AGE > 0 or None (without a pool): a warning whose remedy names the line
    of the project's settings that sets it, never a variable only the sample reads."""
    from django.conf import settings

    default = settings.DATABASES["default"]
    for age in (None, 500):
        monkeypatch.setitem(default, "CONN_MAX_AGE", age)
        [found] = [m for m in checks.run_checks(tags=["djbench"]) if m.id == "djbench.W010"]
        assert f"CONN_MAX_AGE is {age!r}" in found.msg
        hint = found.hint or ""
        assert f"Set CONN_MAX_AGE (now {age!r}) to 0 where it is set (sampleproject/" in hint
    monkeypatch.setitem(default, "CONN_MAX_AGE", 0)
    assert "djbench.W010" not in ids()


def test_deploy_files_ship_with_djbench() -> None:
    names = {p.name for p in PACKAGED_DEPLOY.iterdir()}
    assert {"uvicorn.args", "gunicorn.conf.py", "uwsgi.ini", "Caddyfile"} <= names


@pytest.mark.servers
def test_unreadable_config_fails_that_server_only(live_database: str, tmp_path: Path) -> None:
    # The project's own deploy/uvicorn.args overrides djbench's; here it cannot be read.
    deploy = tmp_path / "deploy"
    (deploy / "uvicorn.args").mkdir(parents=True)
    out = StringIO()
    with (
        override_settings(DJBENCH=djbench_conf(DEPLOY_DIR=deploy)),
        pytest.raises(CommandError) as caught,
    ):
        call_command(
            "runbench",
            "--verify-only",
            "--servers",
            "uvicorn,gunicorn-sync",
            "--scenarios",
            "health-sync",
            "--output",
            str(tmp_path / "out"),
            "--no-setup",
            stdout=out,
            stderr=StringIO(),
        )
    assert caught.value.returncode == 1
    assert str(caught.value) == "verification failed for uvicorn (see above)"
    [path] = (tmp_path / "out").glob("*.json")
    document = store.load(path)
    by_server = {e.server: e for e in document.results}
    assert by_server["gunicorn-sync"].status == "ok"
    failed = by_server["uvicorn"]
    assert failed.status == "failed" and failed.reason is not None
    assert say(failed.reason) == (
        f"uvicorn: its config {deploy / 'uvicorn.args'} cannot be read (Is a directory); "
        f"put one in {deploy} (python manage.py benchinit --deploy copies djbench's "
        "defaults there)"
    )
    # gunicorn's config came from djbench's defaults, and the file says which.
    assert by_server["gunicorn-sync"].command["server"].config_file == str(
        PACKAGED_DEPLOY / "gunicorn.conf.py"
    )
    assert json.loads(path.read_text())["kind"] == "verify"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample-values", "pk"], "--sample-values takes name=value pairs, got 'pk'"),
        (["--user", "nobody-here"], "--user 'nobody-here': no such user in the project's database"),
    ],
)
@pytest.mark.django_db
def test_benchinit_bad_input_is_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("benchinit", "--output", str(tmp_path / "s.toml"), *args, stdout=StringIO())
    assert caught.value.returncode == 2
    assert str(caught.value) == message


@pytest.mark.django_db
def test_benchinit_on_the_sample_project(tmp_path: Path) -> None:
    out = StringIO()
    target = tmp_path / "s.toml"
    call_command("benchinit", "--output", str(target), "--sample-values", "member_id=1", stdout=out)
    text = out.getvalue()
    assert "GET /api/sync/health -> 200, 0 SQL queries" in text
    assert "GET /api/sync/movies -> 200, 2 SQL queries" in text
    assert "/api/sync/reviews: does not answer GET (POST-only?)" in text
    assert "Health path (polled until a server is ready): /api/sync/health" in text
    from djbench.plan import scenarios

    loaded = scenarios.load(target)  # what benchinit writes is a valid scenario file
    movies = next(s for s in loaded.scenarios if s.request.path == "/api/sync/movies")
    # The steady count, as a range (a count outside it warns; a single number pins it).
    assert movies.expect.queries_range == (2, 2) and movies.expect.json == "object"
    assert movies.expect.queries is None
    assert loaded.health_path == "/api/sync/health"
