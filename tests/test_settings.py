"""Settings read from the environment: bad values are refused with a clear sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    full.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_is_clean_by_default() -> None:
    result = check({})
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MIDDLEWARE_PROFILE": "fast"}, "MIDDLEWARE_PROFILE='fast' is not one of default, lean"),
        ({"DB_POOL": "1"}, "DB_POOL=1 needs a PostgreSQL DATABASE_URL"),
        ({"DJANGO_PRODUCTION": "1"}, "SECRET_KEY must be set when DJANGO_PRODUCTION=1"),
        ({"DB_CONN_MAX_AGE": "soon"}, "DB_CONN_MAX_AGE must be an integer, got 'soon'"),
    ],
)
def test_bad_environment_is_refused(env: dict[str, str], message: str) -> None:
    result = check(env)
    assert result.returncode != 0
    assert message in result.stderr


def test_lean_profile_has_no_sync_only_middleware() -> None:
    from django.utils.module_loading import import_string

    from sampleproject.settings import MIDDLEWARE_PROFILES

    for path in MIDDLEWARE_PROFILES["lean"]:
        cls = import_string(path)
        assert cls.async_capable and "MiddlewareMixin" not in [c.__name__ for c in cls.__mro__]


def test_check_deploy_in_production_mode_is_clean() -> None:
    result = check(
        {"DJANGO_PRODUCTION": "1", "SECRET_KEY": "x" * 60 + "-production-like-key"},
        "--deploy",
        "--fail-level",
        "WARNING",
    )
    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.servers
def test_a_database_password_appears_in_no_output_of_a_run(tmp_path: Path) -> None:
    """--database with a password in its URL (trust auth here ignores it): nothing the
    run prints or writes shows it, the restart line and the recorded commands included."""
    from django.db import connection

    from tests import services

    if connection.vendor != "postgresql":
        pytest.skip("run in the PostgreSQL pass only (it starts a PostgreSQL run)")
    services.require_postgres()
    secret = "s3cr3t-pw-7731"
    url = f"postgres://postgres:{secret}@127.0.0.1:5432/djbench_redact"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    try:
        done = _run_with(url, env, tmp_path)
    finally:
        import psycopg

        with psycopg.connect(services.POSTGRES_URL, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS djbench_redact WITH (FORCE)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restarting runbench with DATABASE_URL=postgres://postgres:***@" in done.stdout
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in written)
    for text in [done.stdout, done.stderr] + [p.read_text(errors="replace") for p in written]:
        assert secret not in text


def _run_with(url: str, env: dict[str, str], out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable, "manage.py", "runbench", "--database", f"postgres={url}",
            "--servers", "gunicorn-sync", "--scenarios", "health-sync", "--trials", "1",
            "--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0", "--no-color",
            "--output", str(out),
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
