"""The WebSocket driver's accounting, against small loopback servers whose behaviour is
known: a room that relays every message to every member (optionally dropping some),
and a server that accepts connections and holds them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from djbench.measure.drivers.base import WS_MARKER, marked_json


@contextmanager
def room(drop_every: int = 0) -> Iterator[int]:
    """A broadcast room on a free port: every message goes to every member; with
    `drop_every` N, every Nth delivery is silently not sent."""
    members: set[ServerConnection] = set()
    counter = 0
    ready = threading.Event()
    port: list[int] = []
    stop: list[asyncio.Future[None]] = []
    loop = asyncio.new_event_loop()

    async def handler(ws: ServerConnection) -> None:
        nonlocal counter
        members.add(ws)
        try:
            async for message in ws:
                for member in list(members):
                    counter += 1
                    if drop_every and counter % drop_every == 0:
                        continue
                    with contextlib.suppress(Exception):  # a member that left meanwhile
                        await member.send(message)
        finally:
            members.discard(ws)

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0) as server:
            port.append(next(iter(server.sockets)).getsockname()[1])
            stop.append(loop.create_future())
            ready.set()
            await stop[0]

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield port[0]
    finally:
        loop.call_soon_threadsafe(stop[0].set_result, None)
        thread.join(timeout=10)
        loop.close()


def wsload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "djbench.measure.drivers.wsload", *args],
        input="",  # idle holds its connections until its stdin closes: at once here
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def broadcast(port: int, *more: str) -> dict[str, Any]:
    out = wsload(
        "broadcast",
        "--url",
        f"ws://127.0.0.1:{port}/",
        "--connections",
        "4",
        "--duration",
        "1",
        *more,
    )
    return marked_json(out.stdout, WS_MARKER, "wsload")


def test_every_delivery_is_counted_against_the_messages_sent() -> None:
    with room() as port:
        data = broadcast(port)
    assert data["mode"] == "ws-broadcast" and data["members"] == 4
    assert data["messages_in"] > 10
    # Each message reaches all 4 members, its sender included: nothing lost.
    assert data["expected_deliveries"] == 4 * data["messages_in"]
    assert data["requests"] == data["expected_deliveries"]
    assert data["errors"]["lost"] == 0 and data["errors"]["read"] == 0
    assert data["deliveries_per_s"] == pytest.approx(data["requests"] / data["duration_s"], 1e-3)
    assert data["latency_ms"]["p50"] > 0


def test_deliveries_that_never_arrive_are_lost_not_ignored() -> None:
    with room(drop_every=10) as port:
        data = broadcast(port, "--timeout", "0.5")
    lost = data["errors"]["lost"]
    assert lost > 0
    assert data["requests"] + lost == data["expected_deliveries"]
    # About one in ten deliveries was dropped by the server.
    assert 0.05 < lost / data["expected_deliveries"] < 0.15


def test_idle_connections_open_in_parallel_and_report_how_many_and_how_long() -> None:
    with room() as port:
        url = f"ws://127.0.0.1:{port}/"
        quick = wsload("idle", "--url", url, "--count", "300", "--hold", "5")
        ready = quick.stdout.splitlines()[0].split()
        assert ready[0] == "READY" and int(ready[1]) == 300 and float(ready[2]) < 30
        data = json.loads(quick.stdout.splitlines()[-1][len(WS_MARKER) :])
        assert data["opened"] == 300 and data["failed"] == 0
        # Bounded: asked for more than can be opened in the time given, it says so.
        short = wsload(
            "idle", "--url", url, "--count", "5000", "--open-within", "0.2", "--hold", "0"
        )
        opened, took = short.stdout.splitlines()[0].split()[1:]
        assert int(opened) < 5000 and float(took) < 5
