"""Reachability of the external services some tests need.

Under CI=true a missing service fails the test; elsewhere it skips it.
"""

from __future__ import annotations

import os
import socket

import pytest

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def require(name: str, host: str, port: int) -> None:
    if reachable(host, port):
        return
    message = f"{name} is not reachable on {host}:{port}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: a missing service fails the suite)")
    pytest.skip(message)


def require_postgres() -> None:
    require("PostgreSQL", "127.0.0.1", 5432)


def require_redis() -> None:
    require("Redis", "127.0.0.1", 6379)
