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
