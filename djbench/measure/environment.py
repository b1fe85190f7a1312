"""Everything needed to reproduce a run: versions, machine, database, pinning, git SHA."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.db import connection

from djbench.plan.project import Project
from djbench.results.model import Environment
from djbench.servers import SERVER_PACKAGES

PACKAGES = (
    "django",
    "django-ninja",
    "channels",
    "channels-redis",
    "psycopg",
    "psycopg-pool",
    *SERVER_PACKAGES,
    "hdrhistogram",
    "psutil",
)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _command_output(argv: list[str], cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd=cwd, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if out.returncode == 0 and text else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def database() -> dict[str, Any]:
    from djbench.plan import dbsettings

    db: dict[str, Any] = settings.DATABASES["default"]
    options: dict[str, Any] = db.get("OPTIONS") or {}
    persistent, _ = dbsettings.conn_max_age()
    return {
        "persistent": persistent,
        "conn_max_age_set": dbsettings.where_set() if persistent else None,
        "vendor": connection.vendor,
        "engine": db.get("ENGINE"),
        "name": str(db.get("NAME")) if connection.vendor == "sqlite" else db.get("NAME"),
        "host": db.get("HOST") or None,
        "conn_max_age": db.get("CONN_MAX_AGE"),
        "pool": bool(options.get("pool")),
        "server_version": _server_version(),
    }


def _server_version() -> str | None:
    """The database server's version (PostgreSQL: e.g. 15.19), None when unknown."""
    try:
        if connection.vendor == "postgresql":
            connection.ensure_connection()
            number = int(connection.pg_version)  # type: ignore[attr-defined]
            return f"{number // 10000}.{number % 10000}"
        if connection.vendor == "sqlite":
            import sqlite3

            return sqlite3.sqlite_version
    except Exception:  # a record, never a reason to stop the run
        return None
    finally:
        connection.close()
    return None


def redis_version() -> str | None:
    """The version of the Redis that REDIS_URL names (when set and reachable)."""
    url = os.environ.get("REDIS_URL")
    if not url:
        return None
    try:
        import redis

        info = redis.Redis.from_url(url, socket_timeout=3).info("server")
        return str(info.get("redis_version"))
    except Exception:  # no client library or no answer: not recorded
        return None


def channel_layer() -> str | None:
    layers = getattr(settings, "CHANNEL_LAYERS", {}) or {}
    return layers.get("default", {}).get("BACKEND")


def collect(project: Project, tools: dict[str, str | None]) -> Environment:
    """`tools` are versions of external binaries (wrk, caddy) found by the caller."""
    project_dir = project.directory
    return Environment.model_validate(
        {
            "wsgi_app": project.wsgi_app,
            "asgi_app": project.asgi_app,
            "asgi_app_source": project.asgi_source,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "python": sys.version.split()[0],
            "python_implementation": platform.python_implementation(),
            "django": django.get_version(),
            "packages": {p: v for p in PACKAGES if (v := _version(p))},
            "tools": tools,
            "platform": platform.platform(),
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
            "cpus_available": sorted(os.sched_getaffinity(0)),
            "memory_total_mb": _memory_total_mb(),
            "git_sha": _command_output(["git", "rev-parse", "HEAD"], cwd=project_dir),
            "git_dirty": bool(_command_output(["git", "status", "--porcelain"], cwd=project_dir)),
            "settings_module": os.environ.get("DJANGO_SETTINGS_MODULE"),
            "middleware_profile": getattr(settings, "MIDDLEWARE_PROFILE", None),
            "database": database(),
            "channel_layer": channel_layer(),
            "cache": _cache_backend(),
            "redis": redis_version(),
        }
    )


def _cache_backend() -> str | None:
    caches: dict[str, dict[str, Any]] = settings.CACHES
    return caches.get("default", {}).get("BACKEND")


def _memory_total_mb() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total / 2**20)
    except Exception:
        return None


def tool_version(argv: list[str]) -> str | None:
    return _command_output(argv)
