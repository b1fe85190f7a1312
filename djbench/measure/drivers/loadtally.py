"""What the builtin load generator counts (djbench.measure.drivers.loadgen): the timed
window and its phases, requests in flight integrated over it, a --series slice, and the
window's tally, each request recorded as completed or failed in the phase it belongs to
(a mix's page too: djbench.measure.drivers.loadpages).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from djbench.measure.drivers.loadpages import MAX_LATENCY_US, PageTally


@dataclass
class Flight:
    """Requests in flight, integrated over the window: its mean is exact, not inferred.

    Every send and every completion (or failure) moves the count; while the window is
    open, count x time accumulates, so area / window length is the time-weighted mean
    number of requests outstanding (what Little's law estimates from throughput x mean
    latency, measured directly instead).
    """

    count: int = 0
    area_ns: int = 0
    last_ns: int = 0
    open: bool = False

    def change(self, delta: int, now: int) -> None:
        if self.open:
            self.area_ns += self.count * (now - self.last_ns)
            self.last_ns = now
        self.count += delta

    def start(self, now: int) -> None:
        self.open, self.last_ns, self.area_ns = True, now, 0

    def stop(self, now: int) -> None:
        self.change(0, now)
        self.open = False


@dataclass
class Window:
    """The timed window (perf_counter_ns): completions inside it are the figures."""

    opened: int | None = None
    closed: int | None = None

    def phase(self, t: int) -> str:
        if self.opened is None or t < self.opened:
            return "warmup"
        if self.closed is None or t <= self.closed:
            return "window"
        return "after"


def _small_histogram() -> HdrHistogram:
    # Two significant digits: a series bucket's percentiles are for a timeline, and a
    # bucket's histogram is rebuilt every --series seconds.
    return HdrHistogram(1, MAX_LATENCY_US, 2)


@dataclass
class Bucket:
    """One slice of a --series time line: what completed (or failed) in it."""

    started: int  # perf_counter_ns
    histogram: HdrHistogram = field(default_factory=_small_histogram)
    requests: int = 0
    errors: int = 0
    unexpected: int = 0


@dataclass
class Tally:
    histogram: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, MAX_LATENCY_US, 3))
    requests: int = 0
    non_2xx: int = 0
    unexpected: int = 0  # responses whose status is not the expected one
    errors: dict[str, int] = field(
        default_factory=lambda: {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    )
    status: dict[int, int] = field(default_factory=dict)
    late_starts: int = 0  # open loop: requests sent after their due time
    unsent: int = 0  # open loop: due in the window, never sent by its close + the grace
    window: Window = field(default_factory=Window)
    flight: Flight = field(default_factory=Flight)
    warmup_requests: int = 0  # completed before the window (not in the figures)
    warmup_errors: int = 0
    warmup_latency_us: int = 0  # their summed latency, to size the settling slices
    after_window: int = 0  # completed after the window closed (not in the figures)
    served: set[int] = field(default_factory=set)  # connections answered in the window
    finished: int | None = None  # open loop: the window's close (nominal)
    bucket: Bucket | None = None  # --series: the slice being filled while the window is open
    inflight: dict[int, tuple[int, int]] = field(default_factory=dict)  # token -> (ns, page)
    pages: list[PageTally] = field(default_factory=list)  # a mix's, per page
    tokens: int = 0
    hung: int = 0  # no answer by the window's close + AFTER_GRACE_S (also in errors)
    resent: int = 0  # in the window, sent on a kept connection the server had closed: resent

    def count_hung(self, now: int, by_due: bool) -> None:
        """Requests still unanswered now that were in flight during the window (closed
        loop: sent by its close) or, open loop, due in it: errors of the window, their age
        recorded as a latency. (Open loop, one due in the warm-up is the warm-up's.)"""
        opened, closed = self.window.opened, self.window.closed
        for started, page in self.inflight.values():
            if closed is None or started > closed:
                continue
            if by_due and (opened is None or started < opened):
                continue
            self.hung += 1
            self.errors["timeout"] += 1
            age = min(max(1, (now - started) // 1000), MAX_LATENCY_US)
            self.histogram.record_value(age)
            if self.pages:
                self.pages[page].errors += 1
                self.pages[page].histogram.record_value(age)
        self.inflight.clear()


def failed(tally: Tally, kind: str, started_ns: int, by_due: bool, page: int = 0) -> None:
    """A failure belongs to the window if the request was in flight during it (closed
    loop: sent by the close, failed after the opening) or, open loop, due in it."""
    now = time.perf_counter_ns()
    closed = tally.window.closed
    if by_due:
        at = started_ns
    elif closed is not None and started_ns <= closed:
        at = min(now, closed)
    else:
        at = now
    phase = tally.window.phase(at)
    if phase == "window":
        tally.errors[kind] += 1
        mine = tally.pages[page] if tally.pages else None
        if mine is not None:
            mine.errors += 1
        if kind == "timeout":  # its latency is at least its age: in the percentiles
            age = min(max(1, (now - started_ns) // 1000), MAX_LATENCY_US)
            tally.histogram.record_value(age)
            if mine is not None:
                mine.histogram.record_value(age)
        if tally.bucket is not None:
            tally.bucket.errors += 1
    elif phase == "warmup":
        tally.warmup_errors += 1


def completed(
    tally: Tally,
    args: argparse.Namespace,
    status: int,
    started_ns: int,
    now: int,
    who: int,
    page: int = 0,
) -> None:
    elapsed_us = max(1, (now - started_ns) // 1000)
    # Closed loop: by completion time. Open loop: by due time (latency runs from it).
    phase = tally.window.phase(started_ns if args.rate else now)
    if phase == "warmup":
        tally.warmup_requests += 1
        tally.warmup_latency_us += elapsed_us
        return
    if phase == "after":
        tally.after_window += 1
        return
    tally.histogram.record_value(min(elapsed_us, MAX_LATENCY_US))
    tally.requests += 1
    tally.served.add(who)
    tally.status[status] = tally.status.get(status, 0) + 1
    if not 200 <= status < 300:
        tally.non_2xx += 1
    mine = tally.pages[page] if tally.pages else None
    expect = mine.expect_status if mine is not None else args.expect_status
    unexpected = status != expect if expect else not 200 <= status < 300
    if unexpected:
        tally.unexpected += 1
    if mine is not None:
        mine.requests += 1
        mine.unexpected += unexpected
        mine.histogram.record_value(min(elapsed_us, MAX_LATENCY_US))
    if tally.bucket is not None:
        tally.bucket.histogram.record_value(min(elapsed_us, MAX_LATENCY_US))
        tally.bucket.requests += 1
        tally.bucket.unexpected += unexpected
