"""A loopback HTTP server whose latency is known: every request is answered after DELAY
seconds, all of them concurrently, so its throughput is connections / DELAY whatever
the machine's CPU is doing (used by tests/test_windows.py and loadtests/window_length.py);
with `hang_every=N`, every Nth request is never answered (tests/test_hung.py); with
`workers=N`, N requests at most are served at once (tests/test_capacity.py).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from typing import Any

from djbench.measure.drivers import DRIVERS, LoadResult, LoadSpec

DELAY = 0.2


class SlowServer:
    """HTTP/1.1 keep-alive server answering every request after DELAY s, concurrently,
    with the status given (so that the drivers' status accounting can be checked)."""

    def __init__(
        self,
        status: int = 200,
        delay: float = DELAY,
        hang_every: int | None = None,
        workers: int | None = None,
        silent_close: float | None = None,
    ) -> None:
        self.status, self.delay, self.hang_every = status, delay, hang_every
        # `silent_close`: this many seconds after each answer the connection is closed
        # without a `Connection: close` (as uWSGI's http-socket does with keep-alive off)
        self.silent_close = silent_close
        self.seen = 0
        self.connections = 0  # connections accepted (tests/test_own_tls.py)
        # `workers`: at most this many requests served at once (the rest wait), so the
        # capacity is workers / delay req/s (tests/test_capacity.py).
        self.workers = workers
        self.slots: asyncio.Semaphore | None = None
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    break
                self.seen += 1
                if self.hang_every and self.seen % self.hang_every == 0:
                    await reader.read()  # never answered: held until the client gives up
                    break
                if self.slots is not None:
                    async with self.slots:
                        await asyncio.sleep(self.delay)
                elif self.delay:
                    await asyncio.sleep(self.delay)
                reason = {200: "OK", 302: "Found", 404: "Not Found"}[self.status]
                writer.write(
                    f"HTTP/1.1 {self.status} {reason}\r\nContent-Length: 2\r\n"
                    "Content-Type: text/plain\r\n\r\nok".encode()
                )
                await writer.drain()
                if self.silent_close is not None:
                    await asyncio.sleep(self.silent_close)
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        if self.workers:
            self.slots = asyncio.Semaphore(self.workers)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=256)
        )
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()
        server.close()
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(server.wait_closed())
        self.loop.close()

    def __enter__(self) -> SlowServer:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def builtin_load(port: int, connections: int, duration: float, **more: Any) -> LoadResult:
    """One window of the builtin driver against this loopback server, run as runbench
    runs it (its own process, from a LoadSpec)."""
    spec = LoadSpec(
        host="127.0.0.1", port=port, method="GET", path="/", body=None, content_type=None,
        connections=connections, duration=duration, **more,
    )  # fmt: skip
    driver = DRIVERS["builtin"]
    out = subprocess.run(
        driver.argv(spec), env={**os.environ, **driver.env(spec)},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return driver.parse(out.stdout)
