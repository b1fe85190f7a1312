"""What the builtin load generator sends: one request (its paths cycled), or a mix of
pages each request drawn by weight, and the figures it keeps per page.

A mix's draws come from one `random.Random(seed)` in the generator's single event
loop, so a run's sequence of pages is fixed by its seed (which connection sends which
draw still depends on the server's timing, as it must). Each page's paths are cycled
in turn, as a plain scenario's are. Per-page tallies hold what the window's totals hold
(completions, errors, unexpected statuses, an HDR histogram), so the pages' counts sum
to the mix's; only open loop's `unsent` (due, never sent: no page was drawn) is the
mix's alone.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hdrh.histogram import HdrHistogram

from djbench.measure.drivers.base import MAX_LATENCY_US, Page, percentiles_ms

if TYPE_CHECKING:
    from djbench.plan.scenarios import Scenario


def pages_of(scenario: Scenario) -> tuple[Page, ...]:
    """A mix's pages as a driver sends them (empty: not a mix)."""
    return tuple(
        Page(
            name=part.name,
            weight=part.weight,
            method=part.scenario.request.method,
            paths=part.scenario.request.path_list(),
            body=part.scenario.request.body,
            content_type=part.scenario.request.content_type,
            headers=part.scenario.request.all_headers(),
            expect_status=part.scenario.expect.status,
        )
        for part in scenario.mix
    )


def build_request(args: argparse.Namespace, path: str, page: dict[str, Any] | None = None) -> bytes:
    """One request's bytes: the command line's method, headers and body, or a mix
    page's own."""
    method = page["method"] if page else args.method
    body_text = (page.get("body") if page else args.body) or ""
    content_type = (page.get("content_type") if page else args.content_type) or ""
    headers = [f"{k}: {v}" for k, v in page["headers"]] if page else list(args.header)
    body = body_text.encode()
    host = f"[{args.host}]" if ":" in args.host else args.host
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}:{args.port}",
        # Nothing else, as wrk sends (HTTP/1.1 keeps connections alive by default):
        # three more headers cost a one-core gunicorn-sync 7% of its req/s on the
        # health check (wrk with and without them, interleaved, issue 22 item 8).
        *headers,
    ]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
        if content_type:
            lines.append(f"Content-Type: {content_type}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class PageTally:
    """One page's share of the window: what the window's totals count, for this page."""

    name: str
    weight: float
    expect_status: int | None
    histogram: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, MAX_LATENCY_US, 3))
    requests: int = 0
    errors: int = 0
    unexpected: int = 0

    def figures(self, seconds: float) -> dict[str, Any]:
        return {
            "name": self.name,
            "weight": self.weight,
            "requests": self.requests,
            "rps": round(self.requests / seconds, 2) if seconds > 0 else 0.0,
            "errors": self.errors,
            "unexpected": self.unexpected,
            "latency_ms": percentiles_ms(self.histogram),
        }


class Requests:
    """The request(s) to send: one, its paths taken in turn by every connection; or a
    mix (--page), each request's page drawn by weight and its paths taken in turn."""

    def __init__(self, args: argparse.Namespace) -> None:
        pages = [json.loads(text) for text in args.page or []]
        self.pages = [
            PageTally(p["name"], float(p["weight"]), p.get("expect_status")) for p in pages
        ]
        if pages:
            self.raw = [[build_request(args, path, p) for path in p["paths"]] for p in pages]
        else:
            self.raw = [[build_request(args, path) for path in args.path]]
        self.turns = [itertools.cycle(range(len(raws))) for raws in self.raw]
        self.cumulative = list(itertools.accumulate(p.weight for p in self.pages))
        self.random = random.Random(args.seed)

    def next(self) -> tuple[int, bytes]:
        """The next request: its page's index (0 when there is no mix) and its bytes."""
        page = 0
        if len(self.raw) > 1:
            drawn = self.random.random() * self.cumulative[-1]
            page = min(bisect.bisect_right(self.cumulative, drawn), len(self.raw) - 1)
        return page, self.raw[page][next(self.turns[page])]


def check(args: argparse.Namespace) -> str | None:
    """Why the --page arguments cannot be used (None: they can)."""
    for text in args.page or []:
        try:
            page = json.loads(text)
            ok = (
                isinstance(page, dict)
                and isinstance(page.get("name"), str)
                and float(page.get("weight", 0)) > 0
                and isinstance(page.get("method"), str)
                and page.get("paths")
                and all(isinstance(p, str) and p.startswith("/") for p in page["paths"])
            )
        except (ValueError, TypeError):
            ok = False
        if not ok:
            return f"--page takes a JSON object with name, weight > 0, method and paths: {text}"
    return None
