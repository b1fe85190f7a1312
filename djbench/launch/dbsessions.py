"""A server's PostgreSQL sessions, by the application_name runbench starts it with
(``PGAPPNAME=djbench-<its tree's token>``, which libpq and psycopg read).

- :func:`held`: how many the server holds now.
- :func:`limit`: how many this role may open (the least of the server's
  max_connections less its reserved slots, the role's and the database's limits).
- :func:`release`: once a server is stopped, its sessions are gone before the next
  server starts: waited for (a backend ends when its client's socket closes), then
  ended with ``pg_terminate_backend`` by application name, so that one server's
  leaked connections never fail the pairs after it ("sorry, too many clients").

Only on PostgreSQL with psycopg 3 (a project on psycopg2 alone gets nothing here, and
the run says so where it reports connections); any database error is a reading missed,
never a failed run.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

RELEASE_WAIT_S = 5.0


def postgres_conninfo() -> dict[str, Any] | None:
    """Connection keywords for the project's default database when it is PostgreSQL (the
    servers use the same settings: runbench restarts itself with --database's URL)."""
    from django.db import connections

    try:
        wrapper = connections["default"]
    except Exception:
        return None
    if wrapper.vendor != "postgresql":
        return None
    settings = wrapper.settings_dict
    found = {
        "dbname": settings.get("NAME"),
        "user": settings.get("USER"),
        "password": settings.get("PASSWORD"),
        "host": settings.get("HOST"),
        "port": settings.get("PORT"),
    }
    return {k: v for k, v in found.items() if v} | {"application_name": "djbench-probe"}


def connect(conninfo: dict[str, Any]) -> Any:
    """A psycopg session in autocommit (CREATE DATABASE runs outside a transaction)."""
    import psycopg

    return psycopg.connect(**conninfo, autocommit=True, connect_timeout=5)


def held(conninfo: dict[str, Any], application_name: str) -> int | None:
    try:
        with connect(conninfo) as conn:
            return _count(conn, application_name)
    except Exception:  # psycopg missing or the database unreachable: no reading
        return None


def _count(conn: Any, application_name: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application_name,)
    ).fetchone()
    return int(row[0]) if row else 0


LIMIT_QUERY = """
WITH app AS (
    SELECT coalesce((SELECT usename FROM pg_stat_activity WHERE application_name = %(name)s
                     LIMIT 1), current_user) AS role,
           coalesce((SELECT datname FROM pg_stat_activity WHERE application_name = %(name)s
                     LIMIT 1), current_database()) AS db
), clients AS (SELECT * FROM pg_stat_activity WHERE backend_type = 'client backend')
SELECT current_setting('max_connections')::int
       - current_setting('superuser_reserved_connections')::int,
       (SELECT count(*) FROM clients),
       (SELECT rolconnlimit FROM pg_roles, app WHERE rolname = app.role),
       (SELECT count(*) FROM clients, app WHERE usename = app.role),
       (SELECT datconnlimit FROM pg_database, app WHERE datname = app.db),
       (SELECT count(*) FROM clients, app WHERE datname = app.db)
"""


def limit(conninfo: dict[str, Any], application_name: str) -> tuple[int, int] | None:
    """(the connections the server's role may open in its database, those it counts
    open now): of the server's max_connections (less its reserved slots), the role's
    CONNECTION LIMIT and the database's, the one with the least room left. The role and
    database are the server's sessions' (the probe's own when it holds none)."""
    try:
        with connect(conninfo) as conn:
            row = conn.execute(LIMIT_QUERY, {"name": application_name}).fetchone()
    except Exception:
        return None
    if row is None:
        return None
    values = [int(v) if v is not None else -1 for v in row]
    bounds = [(values[i], values[i + 1]) for i in (0, 2, 4) if values[i] >= 0]
    return min(bounds, key=lambda b: b[0] - b[1]) if bounds else None


def release(conninfo: dict[str, Any] | None, application_name: str) -> tuple[int, int]:
    """After the server stopped: (sessions still there when it stopped, sessions ended
    by pg_terminate_backend after RELEASE_WAIT_S)."""
    if conninfo is None:
        return 0, 0
    try:
        with connect(conninfo) as conn:
            first = left = _count(conn, application_name)
            deadline = time.monotonic() + RELEASE_WAIT_S
            while left and time.monotonic() < deadline:
                time.sleep(0.1)
                left = _count(conn, application_name)
            if not left:
                return first, 0
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (application_name,),
            ).fetchall()
            return first, sum(1 for (ended,) in rows if ended)
    except Exception:
        return 0, 0


def note(log_path: Any, found: tuple[int, int]) -> None:
    """A line in the server's log when sessions outlived it."""
    first, ended = found
    if not first:
        return
    with contextlib.suppress(OSError), log_path.open("a", encoding="utf-8") as log:
        log.write(
            f"djbench: {first} database session(s) of this server were still open when it "
            f"stopped; {ended} ended by pg_terminate_backend after {RELEASE_WAIT_S:g} s\n"
        )
