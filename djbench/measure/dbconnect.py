"""What a new database connection costs here (issue 54 item 6).

With ``CONN_MAX_AGE = 0`` (Django's default) and no pool, every request that queries
opens a connection to the database and closes it at its end: the connect (for
PostgreSQL a TCP or socket handshake, authentication, a backend process forked, and
Django's session set-up: time zone, isolation) is paid once per request. It is measured
here, in runbench's process, as Django opens it (``ensure_connection``, then
``close``): CONNECTS times after two warm-ups, its median with a distribution-free 95%
interval (order statistics of the binomial). The answer says it next to the pages that
query, with the setting that saves it (``CONN_MAX_AGE`` where the settings set it, a
pool under ASGI) and the environment variable the settings read it from, when they do
(what ``--axis`` varies).
"""

from __future__ import annotations

import contextlib
import re
import statistics
import time

from django.db import connections
from scipy.stats import binom

from djbench.plan import dbsettings
from djbench.results.plan_model import ConnectCost

CONNECTS = 21
WARMUPS = 2
# A name read from the environment: os.environ["X"], os.environ.get("X"), os.getenv("X"),
# env("X") / env.int("X") (django-environ), env_int("X") (a project's own helper).
_VARIABLE = re.compile(
    r"(?:environ(?:\.get)?|getenv|\benv[\w.]*)\s*[\[(]\s*[\"']([A-Z][A-Z0-9_]{2,})[\"']"
)


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """The order statistics that hold the median with at least `confidence`."""
    ordered = sorted(values)
    n = len(ordered)
    k = int(binom.ppf((1 - confidence) / 2, n, 0.5))  # P(X < k) <= alpha/2
    low, high = max(0, k - 1), min(n - 1, n - k)
    return ordered[low], ordered[high]


def _timed_connects(alias: str) -> list[float]:
    wrapper = connections[alias]
    wrapper.close()
    found = []
    for i in range(WARMUPS + CONNECTS):
        started = time.perf_counter()
        wrapper.ensure_connection()
        wrapper.close()
        if i >= WARMUPS:
            found.append((time.perf_counter() - started) * 1000)
    return found


def variable() -> str | None:
    """The environment variable the settings read CONN_MAX_AGE from, when one line
    that sets it names one ('DB_CONN_MAX_AGE')."""
    where = dbsettings.where_set() or ""
    line = where.split(": ", 1)[-1]
    found = _VARIABLE.findall(line)
    return next((v for v in found if "AGE" in v or "CONN" in v), found[0] if found else None)


def connect_cost(querying: list[str], alias: str = "default") -> ConnectCost | None:
    """The cost of the connection each request opens, when the settings open one per
    request (None: connections persist or are pooled, or the database is unreachable)."""
    persistent, value = dbsettings.conn_max_age(alias)
    if persistent or dbsettings.pooled(alias):
        return None
    try:
        times = _timed_connects(alias)
    except Exception:  # the database unreachable here: nothing measured, nothing said
        return None
    with contextlib.suppress(Exception):
        connections[alias].close()
    low, high = median_interval(times)
    return ConnectCost(
        vendor=connections[alias].vendor,
        conn_max_age=repr(value),
        median_ms=round(statistics.median(times), 3),
        low_ms=round(low, 3),
        high_ms=round(high, 3),
        samples=len(times),
        where=dbsettings.where_set(),
        variable=variable(),
        pages=querying,
    )
