"""System checks: what djbench needs from the project it benchmarks."""

from __future__ import annotations

import shutil
from typing import Any

from django.conf import settings
from django.core import checks

MIDDLEWARE_PATH = "djbench.middleware.QueryCountMiddleware"


def check_query_count_middleware(
    app_configs: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if MIDDLEWARE_PATH in settings.MIDDLEWARE:
        if settings.MIDDLEWARE[0] != MIDDLEWARE_PATH:
            return [
                checks.Warning(
                    f"{MIDDLEWARE_PATH} is not first in MIDDLEWARE.",
                    hint="Queries made by middleware above it are not counted by the verify gate.",
                    id="djbench.W002",
                )
            ]
        return []
    return [
        checks.Warning(
            f"{MIDDLEWARE_PATH} is not in MIDDLEWARE.",
            hint="Add it first in MIDDLEWARE so that the verify gate can check query counts; "
            "without it, scenarios that declare a query count are reported as failed.",
            id="djbench.W001",
        )
    ]


def check_wrk(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if shutil.which("wrk"):
        return []
    return [
        checks.Info(
            "wrk is not on PATH: runbench will use its builtin load driver.",
            hint="On Debian/Ubuntu: apt-get install wrk",
            id="djbench.I001",
        )
    ]


def register() -> None:
    checks.register(check_query_count_middleware, "djbench")
    checks.register(check_wrk, "djbench")
