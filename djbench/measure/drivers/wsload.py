"""WebSocket load, run as ``python -m djbench.measure.drivers.wsload``.

echo:  N connections, each sends a message and waits for its echo, again and again
       for the duration (closed loop); messages/s and round-trip latency (HDR).
idle:  open K connections, print a READY line, hold them until stdin closes or the
       hold time ends; the caller samples the server's memory meanwhile.

Uses the `websockets` library's asyncio client on uvloop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import sys
import time

import uvloop
from hdrh.histogram import HdrHistogram
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from djbench.measure.drivers.base import WS_MARKER, percentiles_ms

MAX_LATENCY_US = 120_000_000


def raise_open_files(wanted: int) -> int:
    """Raise the soft open-files limit towards `wanted` (up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


async def echo(args: argparse.Namespace) -> dict[str, object]:
    histogram = HdrHistogram(1, MAX_LATENCY_US, 3)
    errors = {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    count = 0
    start = time.perf_counter_ns()
    deadline = start + int(args.duration * 1e9)

    async def worker() -> None:
        nonlocal count
        while time.perf_counter_ns() < deadline:
            try:
                ws = await asyncio.wait_for(connect(args.url, compression=None), args.timeout)
            except (OSError, TimeoutError, WebSocketException):
                errors["connect"] += 1
                await asyncio.sleep(0.01)
                continue
            async with ws:
                while time.perf_counter_ns() < deadline:
                    sent = time.perf_counter_ns()
                    try:
                        await ws.send(args.message)
                        reply = await asyncio.wait_for(ws.recv(), args.timeout)
                    except TimeoutError:
                        errors["timeout"] += 1
                        break
                    except (OSError, WebSocketException):
                        errors["read"] += 1
                        break
                    if reply != args.message:
                        errors["read"] += 1
                        continue
                    histogram.record_value(max(1, (time.perf_counter_ns() - sent) // 1000))
                    count += 1

    await asyncio.gather(*(worker() for _ in range(args.connections)))
    elapsed = (time.perf_counter_ns() - start) / 1e9
    latency = percentiles_ms(histogram)
    return {
        "requests": count,
        "duration_s": round(elapsed, 6),
        "errors": errors,
        "non_2xx": 0,
        "latency_ms": latency,
        "mode": "ws-echo",
    }


async def idle(args: argparse.Namespace) -> dict[str, object]:
    limit = raise_open_files(args.count + 256)
    conns: list[ClientConnection] = []
    failed = 0
    started = time.monotonic()
    for _ in range(args.count):
        if time.monotonic() - started > args.open_within:
            break  # bounded in time: report what was opened
        try:
            conns.append(await asyncio.wait_for(connect(args.url, compression=None), args.timeout))
        except (OSError, TimeoutError, WebSocketException):
            failed += 1
            if failed > 50 and not conns:
                break
    opened = time.monotonic() - started
    sys.stdout.write(f"READY {len(conns)}\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(reader.read(), timeout=args.hold)  # EOF: the caller is done
    alive = sum(1 for c in conns if c.state.name == "OPEN")
    await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
    return {
        "opened": len(conns),
        "failed": failed,
        "still_open": alive,
        "open_seconds": round(opened, 3),
        "open_files_limit": limit,
        "mode": "ws-idle",
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m djbench.measure.drivers.wsload")
    sub = p.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("echo")
    e.add_argument("--url", required=True)
    e.add_argument("--connections", type=int, default=16)
    e.add_argument("--duration", type=float, default=5.0)
    e.add_argument("--message", default="djbench")
    e.add_argument("--timeout", type=float, default=10.0)
    i = sub.add_parser("idle")
    i.add_argument("--url", required=True)
    i.add_argument("--count", type=int, default=1000)
    i.add_argument("--hold", type=float, default=60.0, help="seconds at most")
    i.add_argument("--open-within", type=float, default=60.0, help="seconds to open them")
    i.add_argument("--timeout", type=float, default=10.0)
    args = p.parse_args(argv)
    if not args.url.startswith(("ws://127.", "ws://[::1]", "ws://localhost")):
        p.error("only loopback targets are allowed")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result = uvloop.run(echo(args) if args.mode == "echo" else idle(args))
    sys.stdout.write(WS_MARKER + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
