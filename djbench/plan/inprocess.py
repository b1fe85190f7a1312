"""benchinit's probes: a page requested in this process, as a visitor's browser would.

- **Over HTTPS.** A production settings module redirects every plain-HTTP request
  (``SECURE_SSL_REDIRECT``) and trusts a proxy's header to say the request came over
  TLS (``SECURE_PROXY_SSL_HEADER``, e.g. ``X-Forwarded-Proto: https``). benchinit sends
  that header (and asks Django's test client for a secure request), and the scenarios
  it writes carry the header, so that the servers djbench starts over plain HTTP on
  loopback answer as they do behind the team's TLS proxy. Without the header setting,
  only real TLS would do: every page is skipped with that reason and its fix.
- **Steady query counts.** The first request to a page warms caches (Wagtail's site
  root, a template's fragments, ContentType's cache), so it makes more queries than the
  ones after it. A page is requested once to warm it, then ``STEADY_PROBES`` times; the
  expected count is the range those gave (``expect.queries = [low, high]``), which the
  verify gate treats as a warning when a live server's count falls outside it.
- **What rendered it.** The templates a page rendered (Django's own test
  instrumentation, switched on only while probing) tell apart the kinds of pages a
  CMS serves from one catch-all view: Wagtail's blog post and bread page are one view
  and two templates.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from djbench import querycount

STEADY_PROBES = 3  # requests after the warm-up one: the expected query count's range
HOST = "127.0.0.1"  # the Host header every probe and every djbench load sends


@dataclass
class Answered:
    """What one page answered, in process."""

    path: str
    status: int = 0
    content_type: str = ""
    queries: tuple[int, int] | None = None  # (low, high) of the steady requests
    seconds: float = 0.0  # the steady requests' median time
    body: bytes = b""
    location: str = ""  # where a redirect pointed
    templates: tuple[str, ...] = ()  # what rendered it, the outermost first
    view: str = ""  # the dotted name of the view that served it
    user: str | None = None
    writes: int = 0  # statements that changed rows (INSERT, UPDATE, DELETE), all requests


def https_headers() -> dict[str, str]:
    """The header that tells the project a request came over TLS, when its settings
    trust one (SECURE_PROXY_SSL_HEADER); empty otherwise."""
    setting = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not setting:
        return {}
    meta, value = setting
    name = str(meta).removeprefix("HTTP_").replace("_", "-").title()
    return {name: str(value)}


def redirects_to_https() -> bool:
    return bool(getattr(settings, "SECURE_SSL_REDIRECT", False))


def https_problem() -> str | None:
    """Why no plain-HTTP request can answer 200 here, or None."""
    if redirects_to_https() and not https_headers():
        return (
            "SECURE_SSL_REDIRECT is on and SECURE_PROXY_SSL_HEADER is not set: every request "
            "over plain HTTP (as djbench's servers on loopback get them) is redirected to "
            "HTTPS; benchmark with SECURE_SSL_REDIRECT = False, or set "
            'SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") as behind a proxy'
        )
    return None


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Templates report what they render (Django's test instrumentation), and Django's
    request logger stays quiet about the 4xx/5xx that benchinit reports itself."""
    from django.template import Template
    from django.test import utils

    original = Template.__dict__["_render"]
    logger = logging.getLogger("django.request")
    level = logger.level
    render = getattr(utils, "instrumented_test_render")  # noqa: B009 (not in the stubs)
    setattr(Template, "_render", render)  # noqa: B010 (a private attribute)
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        setattr(Template, "_render", original)  # noqa: B010
        logger.setLevel(level)


def client(user: str | None = None) -> Any:
    from django.test import Client

    c = Client(raise_request_exception=False, HTTP_HOST=HOST, headers=https_headers())
    if user is not None:
        from django.contrib.auth import get_user_model

        c.force_login(get_user_model()._default_manager.get_by_natural_key(user))
    return c


def _view_name(response: Any) -> str:
    """The view that answered ('' when none did: the test client resolves the path
    lazily, and a path no route matches, such as a new project's home page, raises)."""
    from django.urls import Resolver404

    try:
        match = getattr(response, "resolver_match", None)
        func = getattr(match, "func", None)
    except Resolver404:
        return ""
    if func is None:
        return ""
    func = getattr(func, "view_class", func)
    return f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', '')}".strip(".")


# Statements that change rows. Sessions are left out: a login's session row is the
# client's, not the page's (a page that only touches its session does not "write").
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE")
_NOT_THE_PAGE_S = ("django_session",)


@contextlib.contextmanager
def watching_writes(cell: list[int]) -> Iterator[None]:
    """Count, in `cell`, the statements that change rows on every database connection
    of this process while the block runs (Django's execute_wrapper, as the query
    counter's)."""
    from django.db import connections

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        head = sql.lstrip()[:8].upper()
        if head.startswith(_WRITES) and not any(t in sql[:200] for t in _NOT_THE_PAGE_S):
            cell[0] += 1
        return execute(sql, params, many, context)

    with contextlib.ExitStack() as stack:
        for alias in connections:
            stack.enter_context(connections[alias].execute_wrapper(wrapper))
        yield


_in_block = False  # inside rolled_back(): its requests' writes are seen by the next


@contextlib.contextmanager
def rolled_back() -> Iterator[None]:
    """Every database's changes made while the block runs are undone at its end (one
    transaction per database, rolled back): benchinit's probes leave the project's data
    as they found it, a page that writes included."""
    from django.db import connections, transaction

    global _in_block
    if _in_block:
        yield
        return
    aliases = list(connections)
    with contextlib.ExitStack() as stack:
        for alias in aliases:
            stack.enter_context(transaction.atomic(using=alias))
        _in_block = True
        try:
            yield
        finally:
            _in_block = False
            for alias in aliases:
                transaction.set_rollback(True, using=alias)


def get(
    c: Any, path: str, count: bool, writes: list[int] | None = None
) -> tuple[Any, int | None, float]:
    """One GET, its writes undone (rolled_back): the response, its query count (None:
    not counted), its seconds; the statements that changed rows are added to `writes`."""
    cell = querycount.start() if count else None
    started = time.perf_counter()
    try:
        with rolled_back(), watching_writes(writes if writes is not None else [0]):
            response = c.get(path, secure=bool(https_headers()))
    finally:
        querycount.stop()
    return response, (cell[0] if cell is not None else None), time.perf_counter() - started


def answered(c: Any, path: str, count: bool, steady: int = STEADY_PROBES) -> Answered:
    """`path` requested once to warm it, then `steady` times (when it answered 200)."""
    writes = [0]
    response, queries, seconds = get(c, path, count, writes)
    found = _answer(path, response)
    counts = [queries] if queries is not None else []
    times = [seconds]
    if response.status_code == 200 and steady:
        counts, times = [], []
        for _ in range(steady):
            response, queries, seconds = get(c, path, count, writes)
            times.append(seconds)
            if queries is not None:
                counts.append(queries)
    found.queries = (min(counts), max(counts)) if counts else None
    found.writes = writes[0]
    found.seconds = sorted(times)[len(times) // 2]
    return found


def _answer(path: str, response: Any) -> Answered:
    streaming = getattr(response, "streaming", False)
    return Answered(
        path=path,
        status=response.status_code,
        content_type=response.get("Content-Type", ""),
        body=b"" if streaming else response.content,
        location=response.get("Location", ""),
        templates=tuple(
            t.name for t in getattr(response, "templates", []) or [] if getattr(t, "name", None)
        ),
        view=_view_name(response),
    )
