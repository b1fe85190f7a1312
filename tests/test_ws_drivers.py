"""The WebSocket driver's accounting, against small loopback servers whose behaviour is
known: a room that relays every message to every member (optionally dropping some),
and a server that accepts connections and holds them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from djbench.measure.drivers.base import WS_MARKER, marked_json
from tests.live import ROOT


@contextmanager
def room(drop_every: int = 0) -> Iterator[int]:
    """A broadcast room (tests/wsroom.py) in its own process on a free port; stopped and
    waited for on the way out."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.wsroom", "--drop-every", str(drop_every)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


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
