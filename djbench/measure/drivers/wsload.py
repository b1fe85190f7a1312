"""WebSocket load, run as ``python -m djbench.measure.drivers.wsload``.

echo:  N connections, each sends a message and waits for its echo, again and again
       for the duration (closed loop); messages/s and round-trip latency (HDR).
broadcast:
       N connections join one room; each sends a message carrying its sender, sequence
       number and send time, and sends its next one when its own comes back (one
       message in flight per member). Every member receives every message: each
       delivery is counted against the messages sent (N deliveries each), with its
       fan-out latency (receipt - send, one clock: one process). Messages in and
       deliveries out per second; deliveries missing after a short grace are "lost".
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


async def open_many(
    url: str, count: int, within: float, timeout: float, parallel: int
) -> tuple[list[ClientConnection], int, float]:
    """Open up to `count` connections, `parallel` at a time, stopping at `within` seconds.

    Returns (connections, failures, seconds taken). Bounded: an attempt still pending at
    the bound is cancelled, and after 50 failures with nothing open it gives up.
    """
    conns: list[ClientConnection] = []
    failed = 0
    started = time.monotonic()
    gate = asyncio.Semaphore(parallel)

    async def one() -> None:
        nonlocal failed
        async with gate:
            if failed > 50 and not conns:
                return
            left = within - (time.monotonic() - started)
            if left <= 0:
                return
            try:
                conns.append(
                    await asyncio.wait_for(connect(url, compression=None), min(timeout, left))
                )
            except (OSError, TimeoutError, WebSocketException):
                failed += 1

    tasks = [asyncio.ensure_future(one()) for _ in range(count)]
    await asyncio.wait(tasks, timeout=within + timeout)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return conns, failed, time.monotonic() - started


async def broadcast(args: argparse.Namespace) -> dict[str, object]:
    raise_open_files(args.connections + 256)
    histogram = HdrHistogram(1, MAX_LATENCY_US, 3)
    errors = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "lost": 0}
    members, failed, _ = await open_many(
        args.url, args.connections, args.timeout, args.timeout, args.connections
    )
    errors["connect"] = failed
    count = len(members)
    own_back = [asyncio.Event() for _ in members]
    sent_in_window: set[tuple[int, int]] = set()
    delivered = 0
    start = time.perf_counter_ns()
    deadline = start + int(args.duration * 1e9)
    sending = True

    async def reader(index: int, ws: ClientConnection) -> None:
        nonlocal delivered
        with contextlib.suppress(OSError, WebSocketException):
            async for raw in ws:
                now = time.perf_counter_ns()
                try:
                    message = json.loads(raw)
                    key = (int(message["from"]), int(message["seq"]))
                    sent_at = int(message["t"])
                except (ValueError, KeyError, TypeError):
                    errors["read"] += 1
                    continue
                if key in sent_in_window:
                    delivered += 1
                    histogram.record_value(min(max(1, (now - sent_at) // 1000), MAX_LATENCY_US))
                if key[0] == index:
                    own_back[index].set()

    async def sender(index: int, ws: ClientConnection) -> None:
        seq = 0
        while sending and time.perf_counter_ns() < deadline:
            own_back[index].clear()
            now = time.perf_counter_ns()
            body = {"from": index, "seq": seq, "t": now, "text": args.message}
            try:
                await ws.send(json.dumps(body))
            except (OSError, WebSocketException):
                errors["write"] += 1
                return
            sent_in_window.add((index, seq))
            seq += 1
            try:
                await asyncio.wait_for(own_back[index].wait(), args.timeout)
            except TimeoutError:
                errors["timeout"] += 1

    readers = [asyncio.ensure_future(reader(i, ws)) for i, ws in enumerate(members)]
    await asyncio.gather(*(sender(i, ws) for i, ws in enumerate(members)))
    sending = False
    elapsed = (time.perf_counter_ns() - start) / 1e9
    expected = len(sent_in_window) * count
    grace_end = time.monotonic() + min(args.timeout, 2.0)
    while delivered < expected and time.monotonic() < grace_end:
        await asyncio.sleep(0.01)  # deliveries still on their way
    errors["lost"] = expected - delivered
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in members), return_exceptions=True)
    return {
        "requests": delivered,
        "duration_s": round(elapsed, 6),
        "errors": errors,
        "non_2xx": 0,
        "latency_ms": percentiles_ms(histogram),
        "mode": "ws-broadcast",
        "members": count,
        "messages_in": len(sent_in_window),
        "messages_in_per_s": round(len(sent_in_window) / elapsed, 2) if elapsed else 0.0,
        "deliveries_per_s": round(delivered / elapsed, 2) if elapsed else 0.0,
        "expected_deliveries": expected,
    }


async def idle(args: argparse.Namespace) -> dict[str, object]:
    limit = raise_open_files(args.count + 256)
    # In parallel (a few hundred handshakes at a time), bounded in time: what was
    # opened by then is reported, with the time it took.
    conns, failed, opened = await open_many(
        args.url, args.count, args.open_within, args.timeout, args.parallel
    )
    sys.stdout.write(f"READY {len(conns)} {opened:.3f}\n")
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
    for mode in ("echo", "broadcast"):  # the same closed-loop options
        m = sub.add_parser(mode)
        m.add_argument("--url", required=True)
        m.add_argument("--connections", type=int, default=16)
        m.add_argument("--duration", type=float, default=5.0)
        m.add_argument("--message", default="djbench")
        m.add_argument("--timeout", type=float, default=10.0)
    i = sub.add_parser("idle")
    i.add_argument("--url", required=True)
    i.add_argument("--count", type=int, default=1000)
    i.add_argument("--hold", type=float, default=60.0, help="seconds at most")
    i.add_argument("--open-within", type=float, default=60.0, help="seconds to open them")
    i.add_argument("--parallel", type=int, default=200, help="handshakes under way at once")
    i.add_argument("--timeout", type=float, default=10.0)
    args = p.parse_args(argv)
    if not args.url.startswith(("ws://127.", "ws://[::1]", "ws://localhost")):
        p.error("only loopback targets are allowed")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    modes = {"echo": echo, "broadcast": broadcast, "idle": idle}
    result = uvloop.run(modes[args.mode](args))
    sys.stdout.write(WS_MARKER + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
