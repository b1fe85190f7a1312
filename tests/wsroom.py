"""A WebSocket broadcast room, run as its own process by tests/test_ws_drivers.py:
every message goes to every member; with --drop-every N, every Nth delivery is silently
not sent. It prints its port, then serves until its stdin closes.

A process of its own, not a thread of the test's: the connections a test leaves half
open (the driver's bounded open of 5,000) die with the process, instead of being
garbage-collected later in some other test as an "unclosed transport" warning.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from websockets.asyncio.server import ServerConnection, serve


async def main(drop_every: int) -> None:
    members: set[ServerConnection] = set()
    counter = 0

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

    async with serve(handler, "127.0.0.1", 0, backlog=1024) as server:
        print(next(iter(server.sockets)).getsockname()[1], flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the test closes stdin


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--drop-every", type=int, default=0)
    asyncio.run(main(parser.parse_args().drop_every))
