"""The SQL a request runs, as shapes: what a cost probe records per page, so that a
changed query is a finding even when the count of queries is the same.

A shape is the statement with its literals replaced (numbers and quoted strings by
``?``, a list of placeholders in ``IN (...)`` by one), whitespace collapsed. Django
passes parameters separately, so most statements already are their shape; the
replacement catches raw SQL and ``IN`` lists whose length follows the data.
Hand-written (a few regular expressions): sqlparse would parse more than is needed.

Transaction control is left out, as in djbench.querycount (SQLite runs it as
statements, psycopg does not).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_STRING = re.compile(r"'(?:[^']|'')*'")
_NUMBER = re.compile(r"(?<![\w\"$])-?\d+(?:\.\d+)?\b")
_PLACEHOLDERS = re.compile(r"\(\s*(?:\?|%s)(?:\s*,\s*(?:\?|%s))*\s*\)")
_SPACE = re.compile(r"\s+")
_TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "END")


def normalise(sql: str) -> str:
    shape = _STRING.sub("?", sql)
    shape = _NUMBER.sub("?", shape)
    shape = _PLACEHOLDERS.sub("(...)", shape)
    return _SPACE.sub(" ", shape).strip()


_recorded: list[str] | None = None


def _wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    if _recorded is not None and not sql.lstrip()[:9].upper().startswith(_TRANSACTION_CONTROL):
        _recorded.append(sql)
    return execute(sql, params, many, context)


def _install(sender: object, connection: Any, **kwargs: object) -> None:
    if _wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(_wrapper)


def watch() -> None:
    """Put the recorder on every connection opened from now on, in any thread (under
    ASGI the ORM runs in a worker thread with connections of its own). Call it before
    the first request; outside :func:`recording` it costs one global read per query."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(_install, weak=False)
    for connection in connections.all(initialized_only=True):
        _install(None, connection)


@contextmanager
def recording() -> Iterator[list[str]]:
    """Every statement run while inside, on the connections :func:`watch` reaches."""
    global _recorded
    statements: list[str] = []
    _recorded = statements
    try:
        yield statements
    finally:
        _recorded = None
