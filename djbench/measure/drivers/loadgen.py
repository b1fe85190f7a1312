"""djbench's builtin load generator, run as ``python -m djbench.measure.drivers.loadgen``.

asyncio on uvloop, HTTP/1.1 keep-alive connections, responses parsed by httptools,
latencies in an HDR histogram (exact to 3 significant digits, every request recorded).

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
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httptools
import uvloop
from hdrh.histogram import HdrHistogram

from djbench.measure.drivers.base import BUILTIN_MARKER as MARKER
from djbench.measure.drivers.base import percentiles_ms

MAX_LATENCY_US = 120_000_000


class Closed(Exception):
    pass


class Connection(asyncio.Protocol):
    """One keep-alive connection; `request()` sends and waits for a whole response."""

    def __init__(self) -> None:
        self.transport: Any = None  # uvloop's transports do not subclass asyncio.Transport
        self.parser = httptools.HttpResponseParser(self)
        self.done: asyncio.Future[int] | None = None
        self.keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(exc)

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        if self.done is not None and not self.done.done():
            self.done.set_result(self.parser.get_status_code())

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._fail(exc or Closed("connection closed"))

    def _fail(self, exc: BaseException) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)

    async def request(self, raw: bytes) -> int:
        if self.transport is None:
            raise Closed("connection closed")
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return await self.done

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


@dataclass
class Tally:
    histogram: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, MAX_LATENCY_US, 3))
    requests: int = 0
    non_2xx: int = 0
    errors: dict[str, int] = field(
        default_factory=lambda: {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    )
    status: dict[int, int] = field(default_factory=dict)
    late_starts: int = 0  # open loop: requests sent after their due time
    unsent: int = 0  # open loop: due requests never sent (hard stop reached)


def build_request(args: argparse.Namespace, path: str | None = None) -> bytes:
    body = args.body.encode() if args.body else b""
    host = f"[{args.host}]" if ":" in args.host else args.host
    lines = [
        f"{args.method} {path or args.path[0]} HTTP/1.1",
        f"Host: {host}:{args.port}",
        "User-Agent: djbench",
        "Accept: */*",
        "Connection: keep-alive",
        *args.header,
    ]
    if body or args.method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
        if args.content_type:
            lines.append(f"Content-Type: {args.content_type}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Requests:
    """The request(s) to send: one, or several paths taken in turn by every connection."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.raw = [build_request(args, path) for path in args.path]
        self.index = 0

    def next(self) -> bytes:
        raw = self.raw[self.index % len(self.raw)]
        self.index += 1
        return raw


async def connect(args: argparse.Namespace) -> Connection:
    loop = asyncio.get_running_loop()
    _, protocol = await asyncio.wait_for(
        loop.create_connection(Connection, args.host, args.port), timeout=args.timeout
    )
    return protocol


async def one(
    conn: Connection | None, raw: bytes, args: argparse.Namespace, tally: Tally, started_ns: int
) -> Connection | None:
    """Send one request (reconnecting if needed); record it. Returns the connection to reuse."""
    try:
        if conn is None or conn.transport is None or not conn.keep_alive:
            if conn is not None:
                conn.close()
            conn = await connect(args)
    except (OSError, TimeoutError):
        tally.errors["connect"] += 1
        await asyncio.sleep(0.01)  # do not spin on a refused port
        return None
    try:
        status = await asyncio.wait_for(conn.request(raw), timeout=args.timeout)
    except TimeoutError:
        tally.errors["timeout"] += 1
        conn.close()
        return None
    except (OSError, Closed, httptools.HttpParserError):
        tally.errors["read"] += 1
        conn.close()
        return None
    elapsed_us = max(1, (time.perf_counter_ns() - started_ns) // 1000)
    tally.histogram.record_value(min(elapsed_us, MAX_LATENCY_US))
    tally.requests += 1
    tally.status[status] = tally.status.get(status, 0) + 1
    if not 200 <= status < 300:
        tally.non_2xx += 1
    return conn


async def closed_loop(
    args: argparse.Namespace, requests: Requests, tally: Tally, deadline: int
) -> None:
    async def worker() -> None:
        conn: Connection | None = None
        while time.perf_counter_ns() < deadline:
            conn = await one(conn, requests.next(), args, tally, time.perf_counter_ns())
        if conn is not None:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(args.connections)))


async def open_loop(
    args: argparse.Namespace, requests: Requests, tally: Tally, start: int, deadline: int
) -> None:
    interval_ns = 1e9 / args.rate
    next_index = 0
    # Bounded in time: past this, requests still due are counted as unsent, not sent.
    hard_stop = deadline + int(max(5.0, args.duration) * 1e9)

    async def worker() -> None:
        nonlocal next_index
        conn: Connection | None = None
        while True:
            due = start + int(next_index * interval_ns)
            next_index += 1
            if due >= deadline:
                break
            if time.perf_counter_ns() >= hard_stop:
                tally.unsent += 1
                continue
            wait = (due - time.perf_counter_ns()) / 1e9
            if wait > 0:
                await asyncio.sleep(wait)
            else:
                tally.late_starts += 1
            conn = await one(conn, requests.next(), args, tally, due)  # latency from due time
        if conn is not None:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(args.connections)))


async def run(args: argparse.Namespace) -> dict[str, object]:
    requests = Requests(args)
    tally = Tally()
    start = time.perf_counter_ns()
    deadline = start + int(args.duration * 1e9)
    if args.rate:
        await open_loop(args, requests, tally, start, deadline)
    else:
        await closed_loop(args, requests, tally, deadline)
    elapsed = (time.perf_counter_ns() - start) / 1e9
    latency = percentiles_ms(tally.histogram)
    return {
        # Throughput is completions over the wall time they took (responses in flight
        # at the deadline complete after it; an overloaded open loop runs long).
        "requests": tally.requests,
        "duration_s": round(elapsed, 6),
        "errors": {**tally.errors, **({"unsent": tally.unsent} if args.rate else {})},
        "non_2xx": tally.non_2xx,
        "status": {str(k): v for k, v in sorted(tally.status.items())},
        "latency_ms": latency,
        "late_starts": tally.late_starts,
        "mode": "open" if args.rate else "closed",
        "rate": args.rate,
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
    p.add_argument("--body", default="")
    p.add_argument("--content-type", default="")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--rate", type=float, default=None, help="open loop: requests/s in total")
    p.add_argument("--timeout", type=float, default=10.0)
    args = p.parse_args(argv)
    args.path = args.path or ["/"]
    if args.connections < 1 or args.duration <= 0 or (args.rate is not None and args.rate <= 0):
        p.error("--connections, --duration and --rate must be positive")
    if args.duration > 3600:
        p.error("--duration is capped at 3600 s")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result = uvloop.run(run(args))
    sys.stdout.write(MARKER + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
