"""ASGI readiness: how many thread hops one request makes under ASGI, and what forces them.

Under an ASGI server Django runs on an event loop; every sync piece on a request's path
(a middleware that is not async-capable, a sync view, the sync receivers of
request_started / request_finished such as the database connection handlers) runs
through asgiref's SyncToAsync in a worker thread, and async code called back from there
through AsyncToSync. Each hop costs a thread hand-off per request.

The count is read directly from asgiref: its two adapters are wrapped while one request
of the scenario goes through Django's ASGIHandler in this process (the same handler the
ASGI servers run; no network, no server). Only GET/HEAD scenarios are counted: a POST
would write to the project's database.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from asgiref import sync

from djbench.plan.scenarios import Scenario
from djbench.results.model import AsgiHops

_lock = threading.Lock()


def _signal_name(signal: Any) -> str:
    from django.core import signals

    for name in ("request_started", "request_finished", "got_request_exception"):
        if getattr(signals, name) is signal:
            return name
    return "a signal"


def describe(func: Any) -> str:
    """What an adapter wrapped, in words a Django developer recognises: Django's own
    wrappers (convert_exception_to_response's `inner`, via functools.wraps) are looked
    through to the middleware they wrap."""
    func = inspect.unwrap(func) if callable(func) else func
    qualname = getattr(func, "__qualname__", "")
    if qualname.endswith("Signal.asend.<locals>.sync_send"):
        found: dict[str, Any] = {}
        for cell in func.__closure__ or ():
            value = cell.cell_contents
            if type(value).__name__ == "Signal":
                found["signal"] = value
            elif isinstance(value, list):
                found["receivers"] = value
        receivers = ", ".join(
            getattr(r, "__qualname__", type(r).__name__) for r in found.get("receivers", [])
        )
        return f"sync receivers of {_signal_name(found.get('signal'))} ({receivers})"
    owner = getattr(func, "__self__", None)
    if owner is not None:
        cls = type(owner)
        if qualname.endswith(".close") and "Response" in cls.__name__:
            return f"{cls.__name__}.close (runs request_finished's sync receivers)"
        return f"{cls.__module__}.{cls.__qualname__}.{getattr(func, '__name__', '')}"
    if callable(func) and not hasattr(func, "__qualname__"):
        cls = type(func)  # a middleware instance: its __call__
        return f"middleware {cls.__module__}.{cls.__qualname__}"
    module = getattr(func, "__module__", "")
    return f"{module}.{qualname}" if module else qualname or repr(func)


def _view_of(path: str) -> Any:
    from django.urls import Resolver404, resolve

    try:
        return resolve(path).func
    except Resolver404:
        return None


@contextlib.contextmanager
def _counting(view: Any = None) -> Iterator[list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    to_async, to_sync = sync.SyncToAsync.__call__, sync.AsyncToSync.__call__

    async def counted_to_async(self: Any, *args: Any, **kwargs: Any) -> Any:
        what = describe(self.func)
        if view is not None and self.func is view:
            what = f"the sync view {what}"
        seen.append(("sync_to_async", what))
        return await to_async(self, *args, **kwargs)

    def counted_to_sync(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(("async_to_sync", describe(self.awaitable)))
        return to_sync(self, *args, **kwargs)

    with _lock:
        sync.SyncToAsync.__call__ = counted_to_async  # type: ignore[method-assign]
        sync.AsyncToSync.__call__ = counted_to_sync  # type: ignore[method-assign]
        try:
            yield seen
        finally:
            sync.SyncToAsync.__call__ = to_async  # type: ignore[method-assign]
            sync.AsyncToSync.__call__ = to_sync  # type: ignore[method-assign]


async def _one_request(scenario: Scenario) -> int:
    from django.core.handlers.asgi import ASGIHandler

    request = scenario.request
    url = urlsplit(request.path)
    headers = [(b"host", b"127.0.0.1")]
    headers += [(k.lower().encode(), v.encode()) for k, v in request.all_headers()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": url.path,
        "raw_path": url.path.encode(),
        "query_string": url.query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
    done = asyncio.Event()
    status = 0
    sent_body = False

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()  # the client stays connected until the response is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await ASGIHandler()(scope, receive, send)  # type: ignore[arg-type]
    return status


def sync_only_middleware() -> list[tuple[str, bool]]:
    """settings.MIDDLEWARE, outermost first, each with whether it is sync only (Django
    runs a middleware async only if it says `async_capable`; the default is sync only)."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    chain = []
    for path in settings.MIDDLEWARE:
        try:
            cls = import_string(path)
        except ImportError:
            continue
        chain.append(
            (f"{cls.__module__}.{cls.__qualname__}", not getattr(cls, "async_capable", False))
        )
    return chain


def blame(kind: str, what: str, chain: list[tuple[str, bool]]) -> str:
    """Name a middleware hop by the sync-only middleware that forces it.

    Under ASGI, one sync-only middleware makes Django run every middleware above it sync
    (one hop into a thread at the top of the chain, whoever is there: djbench's own
    middleware in a verify run) and call the chain below it back through AsyncToSync
    (the hop names the middleware below). Both are that sync-only middleware's doing."""
    if not what.startswith("middleware "):
        return what
    name = what.removeprefix("middleware ")
    names = [n for n, _ in chain]
    if name not in names:
        return what
    at = names.index(name)
    if chain[at][1]:
        return f"middleware {name}: sync only"
    if kind == "sync_to_async":  # entered sync because of one below it
        below = [n for n, sync_only in chain[at + 1 :] if sync_only]
        return f"middleware {below[0]}: sync only (the chain above it runs sync)" if below else what
    above = [n for n, sync_only in chain[:at] if sync_only]  # calls back the chain below
    return f"middleware {above[-1]}: sync only (calls the chain below it back)" if above else what


def count(scenario: Scenario) -> AsgiHops:
    """The thread hops of one request of `scenario` through Django's ASGIHandler."""
    if scenario.kind != "http" or scenario.request.method not in ("GET", "HEAD"):
        return AsgiHops(counted=False, why="only GET and HEAD scenarios are counted")
    from django.db import connections

    with _counting(_view_of(urlsplit(scenario.request.path).path)) as seen:
        status = asyncio.run(_one_request(scenario))
    connections.close_all()
    chain = sync_only_middleware()
    causes: dict[str, int] = {}
    for kind, what in seen:
        key = f"{kind}: {blame(kind, what, chain)}"
        causes[key] = causes.get(key, 0) + 1
    return AsgiHops(
        counted=True,
        status=status,
        hops=len(seen),
        sync_to_async=sum(1 for k, _ in seen if k == "sync_to_async"),
        async_to_sync=sum(1 for k, _ in seen if k == "async_to_sync"),
        causes=causes,
    )
