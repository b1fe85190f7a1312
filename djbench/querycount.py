"""Count the SQL queries of one request, for the verify gate only.

A request that carries the header ``X-Djbench-Count-Queries: 1`` gets a fresh counter
in a context variable; every database connection has an execute wrapper (installed
when the connection opens) that increments the counter when one is set. The count is
returned in the ``X-Djbench-Queries`` response header by
:class:`djbench.middleware.QueryCountMiddleware`.

Why a context variable and not ``CaptureQueriesContext``: under ASGI the ORM runs in a
``sync_to_async`` worker thread with its own connection object, so a wrapper set on
the event-loop thread's connection would see nothing. asgiref copies the context into
that thread, so the counter (a mutable cell) is shared. Without the header, the
wrapper costs one ``ContextVar.get`` per query.

Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is not counted: on
SQLite, ``atomic()`` outside a transaction runs ``BEGIN IMMEDIATE`` as a statement,
while psycopg starts transactions without one, so counting them would make the same
endpoint differ by backend (and by whether a test wraps it in a transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

REQUEST_HEADER = "HTTP_X_DJBENCH_COUNT_QUERIES"
RESPONSE_HEADER = "X-Djbench-Queries"

_TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "END")

_counter: ContextVar[list[int] | None] = ContextVar("djbench_query_counter", default=None)


def start() -> list[int]:
    """Begin counting in the current context; returns the cell that gets the count."""
    cell = [0]
    _counter.set(cell)
    return cell


def stop() -> None:
    _counter.set(None)


def _counting_wrapper(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    cell = _counter.get()
    if cell is not None and not sql.lstrip()[:9].upper().startswith(_TRANSACTION_CONTROL):
        cell[0] += 1
    return execute(sql, params, many, context)


def install(sender: object, connection: Any, **kwargs: object) -> None:
    """``connection_created`` receiver: add the counting wrapper once per connection."""
    if _counting_wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(_counting_wrapper)
