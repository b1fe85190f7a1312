"""Deep health checks: the database and the cache, each reported on its own."""

from __future__ import annotations

import asyncio
import platform
import secrets
from typing import Any

import django
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.db import connection

CACHE_KEY = "sampleproject:health"


def check_database() -> str:
    """One query: ``SELECT 1``."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return f"error: {type(exc).__name__}"
    return "ok"


def check_cache() -> str:
    token = secrets.token_hex(8)
    try:
        cache.set(CACHE_KEY, token, 10)
        ok = cache.get(CACHE_KEY) == token
    except Exception as exc:
        return f"error: {type(exc).__name__}"
    return "ok" if ok else "error: value not read back"


async def acheck_cache() -> str:
    token = secrets.token_hex(8)
    try:
        await cache.aset(CACHE_KEY, token, 10)
        ok = await cache.aget(CACHE_KEY) == token
    except Exception as exc:
        return f"error: {type(exc).__name__}"
    return "ok" if ok else "error: value not read back"


def report(database: str, cache_state: str) -> tuple[int, dict[str, Any]]:
    healthy = database == "ok" and cache_state == "ok"
    body: dict[str, Any] = {
        "status": "ok" if healthy else "error",
        "checks": {"database": database, "cache": cache_state},
    }
    if settings.HEALTH_VERBOSE:  # off by default: no host or version details leak
        body["host"] = platform.node()
        body["versions"] = {"python": platform.python_version(), "django": django.get_version()}
    return (200 if healthy else 503), body


def deep_health() -> tuple[int, dict[str, Any]]:
    return report(check_database(), check_cache())


async def adeep_health() -> tuple[int, dict[str, Any]]:
    # Django has no async cursor: the raw SELECT 1 runs in the ORM's thread, the
    # cache check concurrently with it.
    database, cache_state = await asyncio.gather(sync_to_async(check_database)(), acheck_cache())
    return report(database, cache_state)
