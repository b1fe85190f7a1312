"""Query strings of an access log, kept where the view reads them (benchinit --from-log).

A log's `/search/?query=bread` and `/blog/?utm_source=mail` are not alike: the search
view reads `query`, the blog index never looks at `utm_source`. Whether a view reads a
key is seen in-process: the logged URL is requested once with Django's QueryDict
watched, and the keys the view (or its middleware) asked for are the ones kept; the
rest of the query string is dropped, as an unread query was before. A page whose view
reads none keeps its bare path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode

from djbench.plan import inprocess

MAX_VARIANTS = 5  # a page's commonest query strings probed (its scenario's paths)
_BUILDING = "_djbench_building"  # set on a QueryDict while its __init__ fills it
_WATCHED = ("__getitem__", "get", "getlist", "__contains__", "lists", "items", "dict")


@contextlib.contextmanager
def keys_read() -> Iterator[set[str]]:
    """The QueryDict keys read while inside (every QueryDict: GET's is the one a view
    reads; POST's are empty on a GET)."""
    from django.http import QueryDict

    read: set[str] = set()
    originals = {name: QueryDict.__dict__.get(name) for name in _WATCHED}
    bases = {name: getattr(QueryDict, name) for name in _WATCHED}

    def watch(name: str) -> Any:
        base = bases[name]

        def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.__dict__.get(_BUILDING):  # its own filling asks `key in self`
                if args and isinstance(args[0], str):
                    read.add(args[0])
                elif name in ("lists", "items", "dict"):  # every key at once
                    read.update(self.keys())
            return base(self, *args, **kwargs)

        return watched

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        self.__dict__[_BUILDING] = True
        try:
            build(self, *args, **kwargs)
        finally:
            self.__dict__.pop(_BUILDING, None)

    build = QueryDict.__init__
    for name in _WATCHED:
        setattr(QueryDict, name, watch(name))
    QueryDict.__init__ = init  # type: ignore[method-assign]
    try:
        yield read
    finally:
        QueryDict.__init__ = build  # type: ignore[method-assign]
        for name, original in originals.items():
            if original is None:
                delattr(QueryDict, name)
            else:
                setattr(QueryDict, name, original)


def read_part(uri: str, user: str | None) -> str | None:
    """The part of `uri`'s query string its view reads (None: it reads none of it)."""
    query = uri.partition("?")[2]
    pairs = parse_qsl(query, keep_blank_values=True)
    if not pairs:
        return None
    with keys_read() as read:
        c = inprocess.client(user)
        with contextlib.suppress(Exception):  # the project's code: a failure reads nothing
            c.get(uri, secure=bool(inprocess.https_headers()))
    kept = [(k, v) for k, v in pairs if k in read]
    return urlencode(kept) if kept else None


def variants(path: str, queries: list[str], user: str | None) -> list[str]:
    """The logged URLs of `path` (its commonest query strings first), each reduced to what
    its view reads, without repeats; [] when the view reads none of them."""
    found: list[str] = []
    for query in queries[:MAX_VARIANTS]:
        part = read_part(f"{path}?{query}", user)
        if part is not None and f"{path}?{part}" not in found:
            found.append(f"{path}?{part}")
    return found
