"""Exceptions raised while serving a benchmark, counted where the server can't lose them.

With ``DEBUG = False`` and Django's default logging, an exception in a view becomes a 500
that may never reach the server's log (or reaches it as one line among thousands). When
runbench starts a server it sets DIRECTORY_VARIABLE; each process of that server then
appends one JSON line per exception (type and first line of the message) to its own
file there, through Django's ``got_request_exception`` signal. runbench reads the lines
written during each window (djbench.measure.resource_watch) and shows the commonest beside
the pair: "209 x OperationalError: sorry, too many clients already".

Nothing is connected when the variable is absent (a user's own deployment of djbench).
A process writes at most MAX_LINES lines, then one line saying how many it left out.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

DIRECTORY_VARIABLE = "DJBENCH_EXCEPTIONS_DIR"
MAX_LINES = 100_000
MESSAGE_CHARS = 200
SETTINGS_SUFFIX = ".settings.json"

_lock = threading.Lock()
_written = 0


def line_of(exc: BaseException) -> dict[str, str]:
    """The exception's type (module-qualified outside builtins) and message's first line."""
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return {"type": name, "message": message[:MESSAGE_CHARS]}


def record(sender: Any, request: Any = None, **kwargs: Any) -> None:
    """The got_request_exception receiver: the exception being handled, as one line."""
    global _written
    import sys

    exc = sys.exc_info()[1]
    directory = os.environ.get(DIRECTORY_VARIABLE)
    if exc is None or not directory:
        return
    with _lock:
        _written += 1
        if _written > MAX_LINES + 1:
            return
        entry = line_of(exc) if _written <= MAX_LINES else {"type": "...", "message": "truncated"}
        path = Path(directory) / f"{os.getpid()}.jsonl"
        try:
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")
        except OSError:
            pass  # counting must never change what the server answers


def database_settings() -> dict[str, Any]:
    """What explains the connections a process holds: CONN_MAX_AGE and the pool's
    max_size (Django >= 5.1's psycopg pool: OPTIONS["pool"], True for its defaults)."""
    from django.conf import settings

    default: dict[str, Any] = dict(settings.DATABASES.get("default", {}))
    options: dict[str, Any] = dict(default.get("OPTIONS") or {})
    pool = options.get("pool")
    pool_max = pool.get("max_size") if isinstance(pool, dict) else (None if not pool else 4)
    return {
        "engine": default.get("ENGINE", ""),
        "conn_max_age": default.get("CONN_MAX_AGE", 0),
        "pool_max": pool_max,  # psycopg_pool's own default max_size is its min_size, 4
    }


def connect() -> None:
    """In a server runbench started: count exceptions, and say what the process's
    database settings are (SETTINGS_FILE, once a process: written at start-up)."""
    directory = os.environ.get(DIRECTORY_VARIABLE)
    if not directory:
        return
    from django.core.signals import got_request_exception

    got_request_exception.connect(record, dispatch_uid="djbench.exceptions")
    try:
        path = Path(directory) / f"{os.getpid()}{SETTINGS_SUFFIX}"
        path.write_text(json.dumps(database_settings()), encoding="utf-8")
    except (OSError, TypeError, ValueError):
        pass
