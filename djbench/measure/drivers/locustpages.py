"""A mix's pages in djbench's Locust driver (djbench.plan.scenarios): each request's page
drawn by weight, each page's figures kept by the process that sent it and merged by
the master, as the window's totals are (djbench.measure.drivers.locustfile).

Imported by the locustfile under Locust's gevent (as the drivers' package is: nothing
here touches Django). Every process draws from its own `random.Random(seed)`: with
several workers each one repeats the same sequence, which keeps the shares at the
weights.
"""

from __future__ import annotations

import base64
import bisect
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from djbench.measure.drivers.base import MAX_LATENCY_US, percentiles_ms


@dataclass
class PageTally:
    histogram: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, MAX_LATENCY_US, 3))
    requests: int = 0
    errors: int = 0
    unexpected: int = 0


class Pages:
    """One process's draws and tallies (empty when the trial is not a mix)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.pages: list[dict[str, Any]] = list(spec.get("pages") or [])
        self.cumulative = list(itertools.accumulate(float(p["weight"]) for p in self.pages))
        self.random = random.Random(spec.get("seed") or 0)
        self.turns = [itertools.cycle(p["paths"]) for p in self.pages]
        self.tallies = [PageTally() for _ in self.pages]

    def draw(self) -> int | None:
        if not self.pages:
            return None
        drawn = self.random.random() * self.cumulative[-1]
        return min(bisect.bisect_right(self.cumulative, drawn), len(self.pages) - 1)

    def request(self, index: int) -> tuple[str, str, str, dict[str, str], int | None]:
        """(method, path, body, headers, expected status) of the page's next request."""
        page = self.pages[index]
        headers = dict(page.get("headers") or [])
        if page.get("content_type"):
            headers["Content-Type"] = page["content_type"]
        path = next(self.turns[index])
        return page["method"], path, page.get("body") or "", headers, page.get("expect_status")

    def answered(self, index: int, latency_us: int, unexpected: bool) -> None:
        tally = self.tallies[index]
        tally.requests += 1
        tally.unexpected += unexpected
        tally.histogram.record_value(latency_us)

    def failed(self, index: int, latency_us: int | None) -> None:
        tally = self.tallies[index]
        tally.errors += 1
        if latency_us is not None:
            tally.histogram.record_value(latency_us)

    def payload(self) -> list[dict[str, Any]]:
        return [
            {
                "name": page["name"],
                "weight": page["weight"],
                "requests": t.requests,
                "errors": t.errors,
                "unexpected": t.unexpected,
                "histogram": base64.b64encode(t.histogram.encode()).decode()
                if t.histogram.get_total_count()
                else "",
            }
            for page, t in zip(self.pages, self.tallies, strict=True)
        ]


def merged(parts: list[list[dict[str, Any]]], seconds: float) -> list[dict[str, Any]]:
    """Every process's pages summed, in the figures the builtin driver reports."""
    out: dict[str, dict[str, Any]] = {}
    histograms: dict[str, HdrHistogram] = {}
    for part in parts:
        for page in part:
            name = page["name"]
            into = out.setdefault(
                name,
                {"name": name, "weight": page["weight"], "requests": 0, "errors": 0,
                 "unexpected": 0},
            )  # fmt: skip
            for key in ("requests", "errors", "unexpected"):
                into[key] += page[key]
            histogram = histograms.setdefault(name, HdrHistogram(1, MAX_LATENCY_US, 3))
            if page["histogram"]:
                histogram.decode_and_add(base64.b64decode(page["histogram"]))
    for name, page in out.items():
        page["rps"] = round(page["requests"] / seconds, 2) if seconds > 0 else 0.0
        page["latency_ms"] = percentiles_ms(histograms[name])
    return list(out.values())
