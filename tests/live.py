"""Helpers for tests that start real servers: a seeded database they can all use."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
LIVE_POSTGRES_URL = os.environ.get(
    "TEST_LIVE_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"
)


def live_database_url(tmp: Path) -> str:
    """Where live servers keep their data in this pass: PostgreSQL's `test` database in
    the PostgreSQL pass, a fresh SQLite file otherwise (never pytest-django's test DB,
    which only this process can see)."""
    if connection.vendor == "postgresql":
        return LIVE_POSTGRES_URL
    return f"sqlite:///{tmp / 'live.sqlite3'}"


def prepare(database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    for argv in (["migrate", "--noinput", "-v", "0"], ["seed", "-v", "0"]):
        subprocess.run(
            [sys.executable, "manage.py", *argv], cwd=ROOT, env=env, check=True, timeout=300
        )


def group_members(pgid: int) -> list[psutil.Process]:
    """Every live process whose process group is pgid (zombies excluded)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return found


def watch_children(
    pid: int, until: Callable[[dict[int, psutil.Process]], bool], timeout: float = 90
) -> dict[int, psutil.Process]:
    """Every descendant of pid seen while polling, until `until(seen)` is true or timeout."""
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for child in psutil.Process(pid).children(recursive=True):
                seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            break
        if until(seen):
            break
        time.sleep(0.05)
    return seen


def still_running(processes: dict[int, psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes.values() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


# A census of the processes one runbench started, whatever they became: every process
# inherits this variable from the runbench a test starts (servers, their workers, load
# drivers, proxies), so counting it machine-wide counts even what the test never saw.
MARK = "DJBENCH_TEST_RUN"


def marked(mark: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(MARK) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def census(test: str, mark: str, during: int, seconds: float = 5.0) -> int:
    """Processes still carrying `mark` after up to `seconds` (0 is the only right answer);
    the line is appended to $DJBENCH_CENSUS when set (the figures of the kill tests)."""
    deadline = time.monotonic() + seconds
    left = marked(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = marked(mark)
    if path := os.environ.get("DJBENCH_CENSUS"):
        with Path(path).open("a") as f:
            f.write(f"{test}: before 0, during {during}, after {len(left)}\n")
    return len(left)


def answers_per_connection(
    host: str, port: int, path: str, connections: int = 32, seconds: float = 1.0
) -> list[int]:
    """How many answers each of `connections` clients got in `seconds`, each sending its
    next request as soon as the last was answered, over one keep-alive connection (or a
    new one when the server closes it, as gunicorn's sync worker does). Bounded by time."""
    import asyncio

    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()

    async def answer(reader: asyncio.StreamReader) -> bool:
        """Read one response; whether the server keeps the connection."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = [line.lower() for line in head.split(b"\r\n")]
        length = next(int(x.split(b":", 1)[1]) for x in lines if x.startswith(b"content-length:"))
        await reader.readexactly(length)
        return b"connection: close" not in lines

    async def client(counts: list[int], i: int, until: float) -> None:
        while time.monotonic() < until:
            reader, writer = await asyncio.open_connection(host, port)
            try:
                keeps = True
                while keeps and time.monotonic() < until:
                    writer.write(request)
                    await writer.drain()
                    keeps = await answer(reader)
                    counts[i] += 1
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

    async def main() -> list[int]:
        counts = [0] * connections
        until = time.monotonic() + seconds
        tasks = [asyncio.create_task(client(counts, i, until)) for i in range(connections)]
        await asyncio.wait(tasks, timeout=seconds + 5)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return counts

    return asyncio.run(main())
