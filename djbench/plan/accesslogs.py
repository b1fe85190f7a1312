"""The pages a site really serves, from its access log (issue 38 item 3, first part):
``benchinit --from-log FILE``.

Formats, told apart line by line:
- Caddy's JSON log (``{"ts": ..., "request": {"method": ..., "uri": ...}, "status": ...}``);
- the combined and common formats of nginx, Apache and Gunicorn's default
  ``access_log_format`` (``%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"``).
A line in neither is counted as unread, never a failure. Only GET and HEAD are kept
(other methods are counted: a load that posts forms is written by hand); each path's
query strings are counted, and kept in its scenario only for the keys its view reads
(djbench.plan.logqueries). At most MAX_LINES
lines are read, and the MAX_PATHS commonest paths probed. The log's own span and rate
are stated, so that a run can be sized against the traffic it replays.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINES = 1_000_000
MAX_PATHS = 200
MAX_QUERIES = 50  # distinct query strings counted per path
METHODS = ("GET", "HEAD")
_COMBINED = re.compile(
    r'^\S+ \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<method>[A-Z]+) (?P<uri>\S+)[^"]*" (?P<status>\d{3})'
)
_TIME = "%d/%b/%Y:%H:%M:%S %z"


@dataclass
class Traffic:
    """What a log says of the site's traffic."""

    paths: Counter[str] = field(default_factory=Counter)  # GET/HEAD requests per path
    other_methods: Counter[str] = field(default_factory=Counter)
    with_query: int = 0  # requests with a query string (kept where the view reads it)
    # Each path's query strings (the first MAX_QUERIES distinct ones counted)
    queries: dict[str, Counter[str]] = field(default_factory=dict)
    unread: int = 0  # lines in no known format
    first: float | None = None  # the first and last request's time (epoch seconds)
    last: float | None = None
    format: str = ""

    @property
    def requests(self) -> int:
        return sum(self.paths.values())

    @property
    def span_s(self) -> float | None:
        if self.first is None or self.last is None or self.last <= self.first:
            return None
        return self.last - self.first

    def rate(self) -> float | None:
        """GET/HEAD requests per second over the log's span."""
        span = self.span_s
        return self.requests / span if span else None

    def commonest(self) -> list[tuple[str, int]]:
        return self.paths.most_common(MAX_PATHS)

    def queried(self) -> dict[str, list[str]]:
        """Each path's query strings, the commonest first."""
        return {path: [q for q, _ in found.most_common()] for path, found in self.queries.items()}

    def summary(self) -> str:
        """'1,204 GET/HEAD requests over 2 h 3 min (0.16 req/s), Caddy JSON; ...'"""
        span = self.span_s
        said = f"{self.requests:,} GET/HEAD request(s)"
        if span:
            said += f" over {_duration(span)} ({self.rate():.2f} req/s)"
        said += f", {self.format or 'no known format'}"
        extra = []
        if self.other_methods:
            other = ", ".join(f"{n} {m}" for m, n in self.other_methods.most_common())
            extra.append(f"left out: {other}")
        if self.with_query:
            extra.append(f"{self.with_query} with a query string")
        if self.unread:
            extra.append(f"{self.unread} line(s) in no known format")
        return said + (f"; {'; '.join(extra)}" if extra else "")


def _duration(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _caddy(line: str) -> tuple[str, str, float | None] | None:
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        entry = json.loads(line)
        request = entry["request"]
        ts = entry.get("ts")
        return str(request["method"]), str(request["uri"]), float(ts) if ts else None
    return None


def _combined(line: str) -> tuple[str, str, float | None] | None:
    match = _COMBINED.match(line)
    if match is None:
        return None
    when: float | None = None
    with contextlib.suppress(ValueError):
        when = dt.datetime.strptime(match["time"], _TIME).timestamp()
    return match["method"], match["uri"], when


def read(path: Path, max_lines: int = MAX_LINES) -> Traffic:
    """The traffic of an access log (OSError when it cannot be read)."""
    traffic = Traffic()
    formats: Counter[str] = Counter()
    with path.open(encoding="utf-8", errors="replace") as log:
        for number, line in enumerate(log):
            if number >= max_lines:
                break
            line = line.strip()
            if not line:
                continue
            found = _caddy(line) if line.startswith("{") else _combined(line)
            if found is None:
                traffic.unread += 1
                continue
            formats["Caddy JSON" if line.startswith("{") else "combined/common"] += 1
            _count(traffic, *found)
    traffic.format = ", ".join(name for name, _ in formats.most_common())
    return traffic


def _count(traffic: Traffic, method: str, uri: str, when: float | None) -> None:
    if method not in METHODS:
        traffic.other_methods[method] += 1
        return
    path, _, query = uri.partition("?")
    if not path.startswith("/"):
        traffic.unread += 1
        return
    traffic.with_query += bool(query)
    traffic.paths[path] += 1
    if query:
        found = traffic.queries.setdefault(path, Counter())
        if query in found or len(found) < MAX_QUERIES:
            found[query] += 1
    if when is not None:
        traffic.first = when if traffic.first is None else min(traffic.first, when)
        traffic.last = when if traffic.last is None else max(traffic.last, when)
