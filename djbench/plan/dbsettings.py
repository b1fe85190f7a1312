"""The project's database connection settings, in its own terms: persistent connections
(``CONN_MAX_AGE``) and where its settings set them, so that a warning or a remedy names
the project's file and line, never a variable only djbench's sample project reads.

Persistent connections are right under a WSGI server whose workers run one request at a
time: a worker keeps one connection. Under ASGI, Django runs each request's sync code
(middleware, views, the ORM) in a thread of its own, and each thread keeps its own
connection until CONN_MAX_AGE passes: a server opens one per request and keeps them.
Django's documentation ("Persistent connections", and the ASGI deployment notes):
disable persistent connections under ASGI and use a pool instead (Django >= 5.1 with
psycopg 3: ``OPTIONS = {"pool": True}``, CONN_MAX_AGE then 0). Thread pools (Gunicorn's
gthread, uWSGI's threads, Granian's blocking threads) keep one per thread, which their
layout bounds.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections

_NAME = "conn_max_age"


def conn_max_age(alias: str = "default") -> tuple[bool, Any]:
    """(whether connections persist, CONN_MAX_AGE as set: seconds, or None: forever)."""
    db: dict[str, Any] = settings.DATABASES.get(alias, {})
    value = db.get("CONN_MAX_AGE", 0)
    options: dict[str, Any] = db.get("OPTIONS") or {}
    return (value is None or value > 0) and not options.get("pool"), value


def connection_limit_shared(alias: str = "default") -> bool:
    """Whether the servers of one run draw on one limit of database connections (a
    database server counts its clients: PostgreSQL, MySQL); False for SQLite, a file
    each server process opens for itself."""
    return str(connections[alias].vendor) != "sqlite"


def pooled(alias: str = "default") -> bool:
    """Whether the database goes through Django's connection pool (OPTIONS["pool"])."""
    db: dict[str, Any] = settings.DATABASES.get(alias, {})
    return bool((db.get("OPTIONS") or {}).get("pool"))


def _settings_files() -> list[Path]:
    """The settings module's file, and the other modules of its package (a settings
    package's production.py star-imports base.py)."""
    module = str(getattr(settings, "SETTINGS_MODULE", "") or "")
    with contextlib.suppress(ImportError, ValueError, AttributeError):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            origin = Path(spec.origin)
            siblings = sorted(origin.parent.glob("*.py"))
            return [origin, *(p for p in siblings if p != origin)]
    return []


def where_set() -> str | None:
    """'bakerydemo/settings/base.py:125: DATABASES = {...conn_max_age=500)}', the first
    line of the settings files that sets it, relative to the project; None: not found."""
    for path in _settings_files():
        with contextlib.suppress(OSError, UnicodeDecodeError, SyntaxError, ValueError):
            text = path.read_text(encoding="utf-8")
            if (number := _first_use(ast.parse(text))) is not None:
                return f"{_relative(path)}:{number}: {text.splitlines()[number - 1].strip()}"
    return None


def _first_use(tree: ast.AST) -> int | None:
    """The first line whose code names it: a variable (`conn_max_age = ...`), a keyword
    (`parse(url, conn_max_age=500)`) or a key (`"CONN_MAX_AGE": 0`); never a comment or
    a docstring that mentions it."""
    lines = []
    for node in ast.walk(tree):
        name = (
            node.id if isinstance(node, ast.Name)
            else node.arg if isinstance(node, ast.keyword)
            else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str)
            else None
        )  # fmt: skip
        exact = isinstance(node, ast.Constant)
        if name and (name.lower() == _NAME if exact else _NAME in name.lower()):
            lines.append(getattr(node, "lineno", None) or 0)
    return min((n for n in lines if n), default=None)


def _relative(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def remedy() -> str:
    """What to change, in the project's terms."""
    persistent, value = conn_max_age()
    found = where_set()
    here = f"where it is set ({found})" if found else f"in {settings.SETTINGS_MODULE}"
    # Not persistent here, yet measured so: the server's environment sets it (an axis).
    now = f"now {value!r}" if persistent else "as the server's environment sets it"
    return (
        f"set CONN_MAX_AGE ({now}) to 0 {here} for ASGI deployments, or use "
        'a connection pool (Django >= 5.1 with psycopg 3: OPTIONS = {"pool": True} with '
        "CONN_MAX_AGE 0), as Django's documentation advises under ASGI"
    )
