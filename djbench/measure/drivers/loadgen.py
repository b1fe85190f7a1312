"""djbench's builtin load generator, run as ``python -m djbench.measure.drivers.loadgen``.

asyncio on uvloop, HTTP/1.1 keep-alive connections, responses parsed by httptools,
latencies in an HDR histogram (exact to 3 significant digits, every request recorded).

Steady-state windows: the load runs from the start; the timed window opens only after
the warm-up (closed loop: once throughput has settled, see `settle`) and closes with the
load still running, so no window edge is spent opening connections or draining them.
Only completions inside the window count; requests in flight are integrated over it
(an exact mean, not Little's-law inference). A request in flight during the window that
has no answer by the window's close plus AFTER_GRACE_S is *hung*: an error of the window
("timeout"), with its age then recorded as its latency (a lower bound), so a server that
never answers 1 request in 50 shows 2% errors and a p99 of at least the grace instead
of reading fast and clean. A request that fails after the close but was sent before it
is an error of the window too. The per-request timeout is recorded (`timeout_s`).
The window's opening and closing are printed as they happen (`DJBENCH-WINDOW
open|closed <monotonic time>`) so that the memory sampler can cover the same window.

Closed loop (default): each connection sends its next request when the last one
returns. Open loop (--rate R): request i is due at start + i/R; a free connection
takes the next due request, and latency runs from the *due* time, so a stalled server
shows up in the percentiles instead of silently lowering the offered load (no
coordinated omission, as in wrk2 or oha --latency-correction).

Written by hand because no maintained Python library offers an open-loop HTTP load
generator with corrected latencies; wrk is used instead whenever it fits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import ssl
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httptools
import uvloop

from djbench.measure.drivers.base import BUILTIN_MARKER as MARKER
from djbench.measure.drivers.base import SERIES_MARKER, WINDOW_MARKER, percentiles_ms
from djbench.measure.drivers.loadpages import Requests, check
from djbench.measure.drivers.loadtally import Bucket, Tally, completed, failed

# How long requests in flight at the window's close may still finish; those that do not
# are hung (errors of the window, their age a latency).
AFTER_GRACE_S = 2.0
IDEMPOTENT = (b"GET ", b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS ")


class Closed(Exception):
    pass


class Connection(asyncio.Protocol):
    """One keep-alive connection; `request()` sends and waits for a whole response.

    Against servers that close every connection (gunicorn's sync worker) two things
    matter, as wrk does them (issue 22 item 8, measured against a one-core
    gunicorn-sync on the health check, c=32, 10 interleaved rounds with the server's
    CPU read mid-window):

    - a new connection is given its first request (`first`) and writes it from
      `connection_made`, in the loop iteration that sees the connect complete: the
      server accepts as soon as the kernel has finished the handshake and then blocks
      reading; writing only once the awaiting coroutine had resumed cost the server
      15% more CPU per request (0.567 ms against wrk's 0.491) and read x0.95 of wrk;
    - a response that ends the connection (`Connection: close`) is answered by closing
      at once, in `on_message_complete`: leaving the close to the next request left the
      server ~7% idle (92.6% busy against wrk's 99.3%) and read x0.81 of wrk.

    With both: the server 98.6% busy, 0.555 ms per request against wrk's 0.558, and
    builtin/wrk x1.08 median (x0.78-x1.18 per round: the machine's noise).
    """

    def __init__(self, first: bytes | None = None) -> None:
        self.transport: Any = None  # uvloop's transports do not subclass asyncio.Transport
        self.parser = httptools.HttpResponseParser(self)
        self.done: asyncio.Future[int] | None = None
        self.keep_alive = True
        self.answered = 0  # answers read on this connection (--new-connection-every)
        self.received = False  # a byte of the current request's answer has arrived
        self.first = first
        if first is not None:
            self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if self.first is not None:
            transport.write(self.first)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(exc)

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        if self.done is not None and not self.done.done():
            self.done.set_result(self.parser.get_status_code())
        if not self.keep_alive and self.transport is not None:
            self.transport.close()  # at once, as wrk does (the class's note)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._fail(exc or Closed("connection closed"))

    def _fail(self, exc: BaseException) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)

    async def request(self, raw: bytes) -> int:
        self.received = False  # first: a close seen before this runs sent nothing
        if self.transport is None:
            raise Closed("connection closed")
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return await self.done

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(args: argparse.Namespace, first: bytes | None = None) -> Connection:
    """A new connection; with `first`, its first request is already on its way (its
    answer is `protocol.done`)."""
    loop = asyncio.get_running_loop()
    _, protocol = await asyncio.wait_for(
        loop.create_connection(
            lambda: Connection(first), args.host, args.port, ssl=tls_context(args)
        ),
        timeout=args.timeout,
    )
    return protocol


_TLS: list[ssl.SSLContext] = []  # one context for every connection (made once)


def tls_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    """--tls: a client context speaking HTTP/1.1 by ALPN, the certificate not checked
    (as wrk and h2load do: the handshake's cost is the same)."""
    if not args.tls:
        return None
    if not _TLS:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["http/1.1"])
        _TLS.append(context)
    return _TLS[0]


async def one(
    conn: Connection | None,
    raw: bytes,
    args: argparse.Namespace,
    tally: Tally,
    started_ns: int,
    who: int = 0,
    page: int = 0,
) -> Connection | None:
    """Send one request (reconnecting if needed); record it. Returns the connection to
    reuse. `who` is the connection's (worker's) number, for the served-connections count;
    `page` the request's page of a mix."""
    tally.flight.change(+1, time.perf_counter_ns())
    tally.tokens += 1
    token = tally.tokens
    tally.inflight[token] = (started_ns, page)
    try:
        return await _one(conn, raw, args, tally, started_ns, who, page)
    finally:
        tally.inflight.pop(token, None)
        tally.flight.change(-1, time.perf_counter_ns())


async def _one(
    conn: Connection | None,
    raw: bytes,
    args: argparse.Namespace,
    tally: Tally,
    started_ns: int,
    who: int,
    page: int,
) -> Connection | None:
    fresh = conn is None or conn.transport is None or not conn.keep_alive
    try:
        if fresh:
            if conn is not None:
                conn.close()
            conn = await connect(args, first=raw)
    except (OSError, TimeoutError):
        failed(tally, "connect", started_ns, bool(args.rate), page)
        await asyncio.sleep(0.01)  # do not spin on a refused port
        return None
    assert conn is not None
    try:
        answer = conn.done if fresh and conn.done is not None else conn.request(raw)
        status = await asyncio.wait_for(answer, timeout=args.timeout)
    except TimeoutError:
        failed(tally, "timeout", started_ns, bool(args.rate), page)
        conn.close()
        return None
    except (Closed, OSError):
        if fresh or conn.received or not raw.startswith(IDEMPOTENT):
            failed(tally, "read", started_ns, bool(args.rate), page)
            conn.close()
            return None
        # A kept connection the server closed (or reset) without saying so (no
        # `Connection: close`), before any byte of the answer: resent once on a new one, as
        # browsers and HTTP libraries do for idempotent requests (RFC 9110 9.2.2); its
        # latency keeps the failed attempt. Counted, and said next to the figures.
        if tally.window.phase(started_ns if args.rate else time.perf_counter_ns()) == "window":
            tally.resent += 1
        return await _one(None, raw, args, tally, started_ns, who, page)
    except httptools.HttpParserError:
        failed(tally, "read", started_ns, bool(args.rate), page)
        conn.close()
        return None
    completed(tally, args, status, started_ns, time.perf_counter_ns(), who, page)
    conn.answered += 1
    if args.new_connection_every and conn.answered >= args.new_connection_every:
        conn.close()  # the client closes, as a browser does; the next request reconnects
        return None
    return conn


def mark(event: str) -> None:
    """Tell whoever reads our output (runbench's sampler) that the window opened/closed."""
    sys.stdout.write(f"{WINDOW_MARKER}{event} {time.monotonic():.6f}\n")
    sys.stdout.flush()


def emit(bucket: Bucket, window_opened: int, now: int) -> None:
    """Print one finished slice of the time line (seconds from the window's opening)."""
    latency = percentiles_ms(bucket.histogram)
    line = {
        "t": round((bucket.started - window_opened) / 1e9, 3),
        "s": round((now - bucket.started) / 1e9, 3),
        "requests": bucket.requests,
        "errors": bucket.errors,
        "unexpected": bucket.unexpected,
        "p50": latency.get("p50"),
        "p99": latency.get("p99"),
        "max": latency.get("max"),
    }
    sys.stdout.write(SERIES_MARKER + json.dumps(line) + "\n")
    sys.stdout.flush()


async def series(args: argparse.Namespace, tally: Tally, opened: int) -> None:
    """--series S: every S seconds of the window, print its slice and start the next.
    The window's close prints the last slice (stop_series): a boundary that would fall
    at the close itself is left to it, so a 30 s window at 1 s gives 30 slices, never a
    31st of a few microseconds (whichever of the two timers fired first decided it).
    The first slice is opened by `start_series`, before this task first runs."""
    step = int(args.series * 1e9)
    end = opened + int(args.duration * 1e9)
    boundary = opened
    while True:
        boundary += step
        if boundary > end - step // 100:
            return  # the close's slice
        await asyncio.sleep(max(0.0, (boundary - time.perf_counter_ns()) / 1e9))
        now = time.perf_counter_ns()
        done, tally.bucket = tally.bucket, Bucket(started=now)
        if done is not None:
            emit(done, opened, now)


def start_series(args: argparse.Namespace, tally: Tally, opened: int) -> asyncio.Task[None] | None:
    """The first slice opened at once, with the window: a completion handled before the
    series task first ran had no slice, and a soak's slices summed to one request fewer
    than its total (seen once in 30 s at 478 req/s)."""
    if not args.series:
        return None
    tally.bucket = Bucket(started=opened)
    return asyncio.ensure_future(series(args, tally, opened))


async def stop_series(task: asyncio.Task[None] | None, tally: Tally, opened: int) -> None:
    if task is None:
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    if tally.bucket is not None:
        last, tally.bucket = tally.bucket, None
        emit(last, opened, time.perf_counter_ns())


SLICE_MIN_S = 0.25  # a warm-up slice at least (the counting noise is allowed for)


@dataclass
class Settling:
    """How the warm-up ended: its length, whether throughput settled, the slices seen."""

    seconds: float = 0.0
    settled: bool | None = None  # None: no settling asked (no warm-up, or open loop)
    slices_rps: list[float] = field(default_factory=list)


async def settle(args: argparse.Namespace, tally: Tally, start: int) -> Settling:
    """Warm up for at least --warmup s, then until two successive slices agree.

    A slice lasts four mean latencies of the warm-up so far (at least 0.5 s, at most
    2 s, and at most half the timed window, down to SLICE_MIN_S: no finer than the
    window that follows is judged, and a test's 0.5 s window is not preceded by a
    warm-up twice its length; a quick run's 2 s window on 50 ms pages at 9 connections
    spent 4 s settling in two 2 s slices), so that a slow page's lumpy completions do
    not pass for instability. Two slices agree when their throughputs differ by at
    most --settle-tolerance of the larger, plus the counting noise of the slices
    themselves (sqrt(n1 + n2) completions: about one standard deviation of the
    difference of two counts), which would otherwise dominate at a few hundred req/s.
    The warm-up ends when the last two slices agree, or at --max-warmup (then
    `settled` is false and the trial is flagged).
    """
    result = Settling()
    if args.warmup <= 0:
        return result
    max_end = start + int(args.max_warmup * 1e9)
    counts: list[tuple[int, float]] = []  # (completions, seconds) per slice
    while True:
        done = tally.warmup_requests
        mean_s = tally.warmup_latency_us / done / 1e6 if done else 0.0
        longest = max(SLICE_MIN_S, min(2.0, args.duration / 2)) if args.duration > 0 else 2.0
        slice_s = min(longest, max(0.5, 4 * mean_s))
        slice_start = time.perf_counter_ns()
        await asyncio.sleep(slice_s)
        now = time.perf_counter_ns()
        counts.append((tally.warmup_requests - done, (now - slice_start) / 1e9))
        result.slices_rps.append(round(counts[-1][0] / counts[-1][1], 1))
        elapsed = (now - start) / 1e9
        if elapsed >= args.warmup and len(counts) > 1 and agree(counts[-2], counts[-1], args):
            result.settled = True
            break
        if now >= max_end:
            result.settled = False
            break
    result.seconds = round((time.perf_counter_ns() - start) / 1e9, 3)
    return result


def agree(a: tuple[int, float], b: tuple[int, float], args: argparse.Namespace) -> bool:
    """Two slices' throughputs agree within tolerance plus their counting noise."""
    (na, ta), (nb, tb) = a, b
    ra, rb = na / ta, nb / tb
    noise = math.sqrt(na + nb) / ((ta + tb) / 2)
    return abs(ra - rb) <= args.settle_tolerance * max(ra, rb) + noise


async def closed_loop(args: argparse.Namespace, requests: Requests, tally: Tally) -> Settling:
    """Connections loop from the start; the window opens once the warm-up has settled and
    closes --duration later with the load still running. Requests in flight at the close
    may finish within a short grace (counted apart, as `after_window`), then are dropped."""
    stopping = False

    async def worker(who: int) -> None:
        conn: Connection | None = None
        try:
            while not stopping:
                page, raw = requests.next()
                conn = await one(conn, raw, args, tally, time.perf_counter_ns(), who, page)
        finally:
            if conn is not None:
                conn.close()

    start = time.perf_counter_ns()
    tasks = [asyncio.ensure_future(worker(i)) for i in range(args.connections)]
    settling = await settle(args, tally, start)
    if args.duration > 0:
        now = time.perf_counter_ns()
        tally.window.opened = now
        tally.flight.start(now)
        mark("open")
        timeline = start_series(args, tally, now)
        await asyncio.sleep(args.duration)
        closed = time.perf_counter_ns()
        tally.window.closed = closed
        tally.flight.stop(closed)
        mark("closed")
        await stop_series(timeline, tally, now)
    stopping = True
    _, pending = await asyncio.wait(tasks, timeout=AFTER_GRACE_S)
    tally.count_hung(time.perf_counter_ns(), by_due=False)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return settling


def _first_due(offset_ns: int, interval_ns: float) -> int:
    """The first request index whose due time (start + int(i x interval)) is at or past
    `offset_ns` after the start: the workers' own rounding, so the count is exact."""
    i = max(0, math.ceil(offset_ns / interval_ns))
    while i > 0 and int((i - 1) * interval_ns) >= offset_ns:
        i -= 1
    while int(i * interval_ns) < offset_ns:
        i += 1
    return i


async def open_loop(args: argparse.Namespace, requests: Requests, tally: Tally) -> Settling:
    """Request i is due at start + i/R. Those due during the warm-up are not recorded;
    those due in the window are, with latency from their due time (requests due in the
    window and answered after it still count: that lateness is the point), until the
    window's close + AFTER_GRACE_S: still unanswered then, they are hung; due and never
    sent by then, unsent. Both are errors of the window, whose length is the window's
    (the drain is not in the denominator)."""
    interval_ns = 1e9 / args.rate
    start = time.perf_counter_ns()
    opened = start + int(args.warmup * 1e9)
    closed = opened + int(args.duration * 1e9)
    next_index = 0

    async def worker(who: int) -> None:
        nonlocal next_index
        conn: Connection | None = None
        try:
            while True:
                due = start + int(next_index * interval_ns)
                if due >= closed:
                    break
                next_index += 1
                wait = (due - time.perf_counter_ns()) / 1e9
                if wait > 0:
                    await asyncio.sleep(wait)
                elif due >= opened:
                    tally.late_starts += 1
                page, raw = requests.next()
                conn = await one(conn, raw, args, tally, due, who, page)  # from due
        finally:
            if conn is not None:
                conn.close()

    timeline: list[asyncio.Task[None]] = []

    async def windows() -> None:
        await asyncio.sleep(max(0.0, (opened - time.perf_counter_ns()) / 1e9))
        tally.flight.start(time.perf_counter_ns())
        mark("open")
        if (task := start_series(args, tally, opened)) is not None:
            timeline.append(task)
        await asyncio.sleep(max(0.0, (closed - time.perf_counter_ns()) / 1e9))
        tally.flight.stop(time.perf_counter_ns())
        mark("closed")

    # Open loop records by due time, so the window's bounds are known from the start.
    tally.window.opened, tally.window.closed = opened, closed - 1
    opener = asyncio.ensure_future(windows())
    workers = [asyncio.ensure_future(worker(i)) for i in range(args.connections)]
    await opener
    await asyncio.wait(workers, timeout=AFTER_GRACE_S)
    tally.count_hung(time.perf_counter_ns(), by_due=True)
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    first, end = (_first_due(t - start, interval_ns) for t in (opened, closed))
    due_in_window = end - first
    accounted = tally.requests + sum(tally.errors.values())
    tally.unsent = max(0, due_in_window - accounted)
    tally.finished = closed
    await stop_series(timeline[0] if timeline else None, tally, opened)
    return Settling(seconds=args.warmup)


async def run(args: argparse.Namespace) -> dict[str, object]:
    requests = Requests(args)
    tally = Tally(pages=requests.pages)
    if args.rate:
        settling = await open_loop(args, requests, tally)
    else:
        settling = await closed_loop(args, requests, tally)
    opened, closed = tally.window.opened, tally.finished or tally.window.closed
    elapsed = (closed - opened) / 1e9 if opened is not None and closed is not None else 0.0
    latency = percentiles_ms(tally.histogram)
    return {
        # Throughput: completions inside the window over the window's length.
        "requests": tally.requests,
        "duration_s": round(elapsed, 6),
        "errors": {**tally.errors, **({"unsent": tally.unsent} if args.rate else {})},
        "non_2xx": tally.non_2xx,
        "unexpected_status": tally.unexpected,
        "expect_status": args.expect_status,
        "status": {str(k): v for k, v in sorted(tally.status.items())},
        "latency_ms": latency,
        "in_flight_mean": round(tally.flight.area_ns / (elapsed * 1e9), 3) if elapsed else None,
        # Connections that got at least one answer inside the window: a server that
        # serves one keep-alive connection at a time (uWSGI, one thread) leaves the
        # others waiting with their request in flight, which the in-flight mean
        # cannot show (from the client's side every connection has a request out).
        "connections_served": len(tally.served),
        "late_starts": tally.late_starts,
        "mode": "open" if args.rate else "closed",
        "rate": args.rate,
        "warmup": {
            "seconds": settling.seconds,
            "settled": settling.settled,
            "slices_rps": settling.slices_rps,
            "tolerance": args.settle_tolerance,
            "requests": tally.warmup_requests,
            "errors": tally.warmup_errors,
        },
        "after_window": tally.after_window,
        # Hung: no answer by the window's close + grace (in errors["timeout"] too).
        "hung": tally.hung,
        "resent": tally.resent,
        "grace_s": AFTER_GRACE_S,
        "timeout_s": args.timeout,
        **(
            {"seed": args.seed, "pages": [p.figures(elapsed) for p in tally.pages]}
            if tally.pages
            else {}
        ),
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m djbench.measure.drivers.loadgen", description=__doc__
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--method", default="GET")
    p.add_argument(
        "--path", action="append", help="request path; several: requests cycle over them"
    )
    p.add_argument("--header", action="append", default=[], help='"Name: value", repeatable')
    p.add_argument(
        "--page",
        action="append",
        default=[],
        help="a mix's page as JSON (name, weight, method, paths, body, content_type, headers, "
        "expect_status), repeatable: each request's page drawn by weight",
    )
    p.add_argument("--seed", type=int, default=0, help="the seed of a mix's page draws")
    p.add_argument("--body", default="")
    p.add_argument("--content-type", default="")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--duration", type=float, default=5.0, help="the timed window, seconds")
    p.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        help="load before the window, seconds (closed loop: at least this, until settled)",
    )
    p.add_argument(
        "--settle-tolerance",
        type=float,
        default=0.05,
        help="the warm-up has settled when two successive slices' req/s differ by at most this",
    )
    p.add_argument(
        "--max-warmup", type=float, default=None, help="bound on the warm-up (default: see docs)"
    )
    p.add_argument(
        "--expect-status",
        type=int,
        default=None,
        help="the status a correct answer has (default: any 2xx)",
    )
    p.add_argument("--rate", type=float, default=None, help="open loop: requests/s in total")
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument(
        "--tls", action="store_true", help="TLS (HTTP/1.1 by ALPN; the certificate unchecked)"
    )
    p.add_argument(
        "--new-connection-every",
        type=int,
        default=None,
        metavar="N",
        help="close each connection after its Nth answer and open a new one (with --tls, "
        "a full handshake): the cost of connections (default: keep them)",
    )
    p.add_argument(
        "--series",
        type=float,
        default=None,
        help="print the window as a time line: one DJBENCH-SERIES line every this many s",
    )
    args = p.parse_args(argv)
    args.path = args.path or ["/"]
    if (problem := check(args) or _refused(args)) is not None:
        p.error(problem)
    if args.max_warmup is None:
        args.max_warmup = default_max_warmup(args.warmup)
    args.max_warmup = max(args.max_warmup, args.warmup)
    return args


def _refused(args: argparse.Namespace) -> str | None:
    """Why these numbers cannot run (None: they can)."""
    if args.connections < 1 or (args.rate is not None and args.rate <= 0):
        return "--connections and --rate must be positive"
    if args.new_connection_every is not None and args.new_connection_every < 1:
        return "--new-connection-every takes a whole number of at least 1"
    if args.duration < 0 or args.warmup < 0 or (args.duration == 0 and args.warmup == 0):
        return "--duration must be positive (or 0 with a --warmup: warm-up only)"
    # Bounded: a timed window lasts an hour at most, a soak (a window with --series) a day.
    if args.duration > (86400 if args.series else 3600) or args.warmup > 3600:
        return "--duration is capped at 3600 s (86400 with --series), --warmup at 3600 s"
    if args.series is not None and args.series < 0.1:
        return "--series takes at least 0.1 s"
    return None


def default_max_warmup(warmup: float) -> float:
    """The warm-up's bound: twice the asked minimum, and at least 2 s more than it."""
    return max(2 * warmup, warmup + 2.0) if warmup > 0 else 0.0


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result = uvloop.run(run(args))
    sys.stdout.write(MARKER + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
