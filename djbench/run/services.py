"""PostgreSQL and Redis one option away: `runbench --database postgres --redis`.

runbench makes sure the database exists (creating it when missing) and that Redis
answers, then starts itself again with DATABASE_URL and REDIS_URL set, so that its own
process (setup commands, sessions, the environment record) and every server read the
same settings. This works for any project whose settings take DATABASE_URL and
REDIS_URL from the environment (the sample project does, with dj-database-url).
"""

from __future__ import annotations

import os
import socket
import ssl
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/djbench"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
MARK = "DJBENCH_SERVICES_READY"  # set in the restarted process


def database_url(raw: str) -> str:
    """--database postgres[=URL] -> the URL."""
    kind, _, url = raw.partition("=")
    if kind != "postgres":
        raise OptionError(
            f"--database takes postgres or postgres=URL, got {raw!r}; valid: postgres"
        )
    url = url or DEFAULT_POSTGRES
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        raise OptionError(f"--database postgres=URL takes a postgres:// URL, got {url!r}")
    return url


def ensure_database(url: str) -> str:
    """Create the database when missing; a sentence saying what was done."""
    try:
        import psycopg
        from psycopg import sql
    except ImportError:
        raise OptionError(
            '--database postgres needs psycopg: pip install "psycopg[binary]"'
        ) from None
    parts = urlsplit(url)
    name = parts.path.lstrip("/") or "djbench"
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=5) as conn:
            query = "SELECT 1 FROM pg_database WHERE datname = %s"
            exists = conn.execute(query, (name,)).fetchone()
            if exists:
                return f"PostgreSQL database {name!r} on {where} exists"
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            return f"created PostgreSQL database {name!r} on {where}"
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "no answer"
        raise OptionError(f"--database: PostgreSQL on {where} is unreachable ({first})") from None
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0]
        raise OptionError(f"--database: PostgreSQL on {where} refused: {first}") from None


def check_redis(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise OptionError(f"--redis takes a redis:// URL, got {url!r}")
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    try:
        raw = socket.create_connection((host, port), timeout=3)
    except OSError as exc:
        raise OptionError(f"--redis: Redis on {host}:{port} is unreachable ({exc})") from None
    with raw:
        try:
            # rediss:// is Redis over TLS: a plain PING would get no answer a Redis gives.
            sock = (
                ssl.create_default_context().wrap_socket(raw, server_hostname=host)
                if parts.scheme == "rediss"
                else raw
            )
        except OSError as exc:  # ssl.SSLError and a handshake that timed out
            raise OptionError(
                f"--redis: the TLS handshake with {host}:{port} failed ({exc}); is it Redis "
                "over TLS?"
            ) from None
        try:
            sock.sendall(b"PING\r\n")
            answer = sock.recv(64)
        except OSError as exc:
            raise OptionError(f"--redis: Redis on {host}:{port} did not answer ({exc})") from None
    if not answer.startswith((b"+PONG", b"-NOAUTH")):
        raise OptionError(f"--redis: {host}:{port} did not answer PING like Redis")
    return f"Redis on {host}:{port} answers"


def restart_with(env: dict[str, str]) -> None:
    """Start this runbench again with `env` added (never returns)."""
    argv0 = Path(sys.argv[0]).name if sys.argv else ""
    if argv0 not in ("manage.py", "django-admin") and not argv0.endswith("manage.py"):
        raise OptionError(
            "--database and --redis restart runbench with DATABASE_URL/REDIS_URL set; "
            "run it from the command line (python manage.py runbench ...) or set those "
            "variables yourself"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **env, MARK: "1"})


def unread(variable: str, url: str) -> str | None:
    """A sentence when no setting of the project holds `url`'s host and port: the
    project does not read `variable`, and the option would change nothing (said, not
    silently run as if it had)."""
    from django.conf import settings

    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    names = ("DATABASES", "CACHES", "CHANNEL_LAYERS", "SESSION_ENGINE")
    text = " ".join(repr(getattr(settings, n, "")) for n in names)
    if url in text or where in text or (parts.hostname or "") in text:
        return None
    return (
        f"warning: no setting of this project holds {where}: it does not seem to read "
        f"{variable}, so the run uses the project's own settings for it"
    )


def required_for_resume(run_id: str, saved: RunOptions) -> None:
    """A run made with --database or --redis resumes only with them again (its trials
    and the new ones must meet the same database and cache)."""
    given = [f"--{k} {v}" for k, v in (("database", saved.database), ("redis", saved.redis)) if v]
    if given and os.environ.get(MARK) != "1":
        raise OptionError(
            f"--resume {run_id}: the run was made with {' '.join(given)}; resume it with the "
            "same option(s)"
        )
