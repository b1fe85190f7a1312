"""Middleware that make each request costlier (sync only): SpinMiddleware by a share of
its CPU time (moves with the machine: for the wall clock), FixedWorkMiddleware by a fixed
number of instructions and ExtraQueryMiddleware by one SQL query on one page (for the
cost probe)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse


class SpinMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.fraction = float(getattr(settings, "SPIN_FRACTION", 0.25))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.thread_time()
        response = self.get_response(request)
        until = time.thread_time() + (time.thread_time() - started) * self.fraction
        while time.thread_time() < until:  # burn CPU, not wall time: a slower code path
            pass
        return response


class FixedWorkMiddleware:
    """The same instructions on every request: FIXED_WORK_LOOPS turns of a Python loop
    (for the cost probe, whose count must not move with the machine)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.loops = int(getattr(settings, "FIXED_WORK_LOOPS", 35))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        total = 0
        for i in range(self.loops):
            total += i * i
        request.fixed_work = total  # type: ignore[attr-defined]
        return self.get_response(request)


class ExtraQueryMiddleware:
    """One more SQL query on the sync movie list alone (EXTRA_QUERY_PATH): a regression
    the cost probe must flag on that page only, by its SQL shape, whatever its count."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.path = str(getattr(settings, "EXTRA_QUERY_PATH", "/api/sync/movies"))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == self.path:
            with connection.cursor() as cursor:
                cursor.execute("SELECT COUNT(*) FROM django_migrations")
                cursor.fetchone()
        return self.get_response(request)
