"""The child of a cost probe (djbench.measure.cost): requests made in this process
through the project's own WSGI or ASGI application, under Valgrind's callgrind.

It is started by the parent as ``python -m djbench.measure.cost_child PLAN.json`` under
``valgrind --tool=callgrind --dump-before=getsid``: every ``os.getsid(0)`` below makes
callgrind write the instructions counted since the last one to a file of its own
(``cg.PID.N``). The steps, in order:

1. Django set up, the application imported, then ``warmup`` requests (each path of the
   page cycled, each answer's status checked), all with Valgrind's instrumentation off
   (``--instr-atstart=no``: 4-5 times faster); then "ready" to the parent, which
   switches it on (``vgdb ... instrumentation on``) while this waits blocked in a read,
   and answers "go"; marker: the end of
   everything that is not a measured request.
2. Segments of ``per_segment`` requests, each ended by a marker; after each, one line
   to the parent ("segment N") and one line back: ``more K`` or ``stop``. The parent
   reads the segment's count from its file and decides (its rule:
   djbench.measure.cost.SETTLED).
3. Uncounted by the parent (after the last marker): one request per path with the SQL
   it runs recorded (normalised: djbench.measure.sqlshape), the response's size, and,
   with ``attribute``, the Python functions' opcodes (djbench.measure.opcodes).

Without Valgrind (``--attribute`` runs) the markers are plain system calls.
What it writes: one JSON file (``out``), read by the parent alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

HOST = "127.0.0.1"


class Refused(Exception):
    """The page did not answer as its scenario expects: a finding, with what it said."""

    def __init__(self, got: int, expected: int, path: str) -> None:
        super().__init__(path)
        self.params = {"got": got, "expected": expected, "path": path}


def _headers(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [("Host", HOST), *((str(k), str(v)) for k, v in request["headers"])]


def wsgi_environ(request: dict[str, Any]) -> dict[str, Any]:
    path, _, query = request["path"].partition("?")
    body = (request.get("body") or "").encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request["method"],
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote(path),
        "QUERY_STRING": query,
        "SERVER_NAME": HOST,
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": HOST,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if request.get("content_type"):
        environ["CONTENT_TYPE"] = request["content_type"]
    for name, value in _headers(request):
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[f"HTTP_{key}"] = value
    return environ


def wsgi_sender(app: Any) -> Callable[[dict[str, Any]], tuple[int, int]]:
    def send(request: dict[str, Any]) -> tuple[int, int]:
        status: list[int] = []

        def start_response(line: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(int(line.split()[0]))
            return lambda data: None

        answer = app(wsgi_environ(request), start_response)
        try:
            size = sum(len(chunk) for chunk in answer)
        finally:
            getattr(answer, "close", lambda: None)()
        return status[0], size

    return send


def asgi_scope(request: dict[str, Any]) -> dict[str, Any]:
    path, _, query = request["path"].partition("?")
    headers = [(k.lower().encode(), v.encode()) for k, v in _headers(request)]
    if request.get("content_type"):
        headers.append((b"content-type", request["content_type"].encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request["method"],
        "scheme": "http",
        "path": unquote(path),
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "client": (HOST, 50000),
        "server": (HOST, 8000),
    }


async def asgi_request(app: Any, request: dict[str, Any]) -> tuple[int, int]:
    """One request through the ASGI application. The client disconnects only after the
    whole answer came (Django listens for a disconnect while the view runs)."""
    done = asyncio.Event()
    sent = False
    status = 0
    size = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            body = (request.get("body") or "").encode()
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, size
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    await app(asgi_scope(request), receive, send)
    return status, size


def load_app(dotted: str) -> Any:
    import importlib

    module, _, attribute = dotted.partition(":")
    return getattr(importlib.import_module(module), attribute or "application")


def _allow_ptrace() -> None:
    """prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY): vgdb, the parent's child, may attach."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(0x59616D61, ctypes.c_ulong(-1), 0, 0, 0)


class Talk:
    """The parent's line protocol over two named pipes: "segment N" up, then "more K"
    (count K requests next) or "stop" down. Without pipes: one segment."""

    def __init__(self, fifos: list[str] | None) -> None:
        self.fifos = fifos
        self.up = Path(fifos[0]).open("w", buffering=1) if fifos else None  # noqa: SIM115
        self.down: Any = None

    def ready(self) -> None:
        """Say "ready" and wait, blocked in a read, for "go": the parent switches the
        instrumentation on meanwhile (vgdb reaches a blocked process through ptrace,
        allowed to any process here first, for Ubuntu's ptrace_scope 1). Blocked, not
        polling: a poll's allocations vary with its length and moved later counts."""
        if self.up is None or self.fifos is None:
            return
        _allow_ptrace()
        self.up.write("ready\n")
        self.down = Path(self.fifos[1]).open()  # noqa: SIM115
        self.down.readline()

    def more(self, segment: int) -> int:
        """Requests in the next segment; 0: stop."""
        if self.up is None or self.fifos is None:
            return 0
        self.up.write(f"segment {segment}\n")
        if self.down is None:
            # blocks until the parent opens its end
            self.down = Path(self.fifos[1]).open()  # noqa: SIM115
        words = self.down.readline().split()
        return int(words[1]) if words and words[0] == "more" else 0


def run(plan: dict[str, Any], send: Callable[[dict[str, Any]], tuple[int, int]]) -> dict[str, Any]:
    """Warm-up, counted segments, then what the page does (uncounted)."""
    from djbench.measure import sqlshape

    requests = plan["requests"]
    expected = plan["status"]

    def one(i: int) -> int:
        request = requests[i % len(requests)]
        status, size = send(request)
        if status != expected:
            raise Refused(status, expected, request["path"])
        return size

    for i in range(plan["warmup"]):
        one(i)
    talk = Talk(plan.get("fifos"))
    talk.ready()  # the parent switches Valgrind's instrumentation on
    # The cyclic collector is off while segments are counted (as timeit does): its
    # collections come in bursts every few hundred requests, and where a short count
    # stops among them moved health-sync's figure by up to 2% (Django 6.0 against 5.2:
    # paired ratios over three seeds 0.12-0.48% apart). Allocation itself is counted.
    gc.collect()
    if not plan.get("collector"):  # on for a server's handler figure (it runs with it)
        gc.disable()
    os.getsid(0)  # marker: the end of set-up and warm-up
    segment, size = 0, plan["per_segment"]
    while size:
        for i in range(size):
            one(i)
        os.getsid(0)  # marker: one segment
        segment += 1
        size = talk.more(segment)
    gc.enable()
    with sqlshape.recording() as statements:
        sizes = [one(i) for i in range(len(requests))]
    found: dict[str, Any] = {
        "segments": segment,
        "queries": len(statements) / len(requests),
        "fingerprints": dict(Counter(sqlshape.normalise(s) for s in statements)),
        "response_bytes": round(sum(sizes) / len(sizes)),
    }
    if plan.get("attribute"):
        from djbench.measure import opcodes

        with opcodes.counting() as counts:
            for i in range(len(requests)):
                one(i)
        found["functions"] = opcodes.per_request(counts, len(requests))
    return found


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[1]).read_text())
    out = Path(plan["out"])
    import django

    django.setup()
    from djbench.measure import sqlshape

    sqlshape.watch()
    app = load_app(plan["app"])
    try:
        if plan["interface"] == "asgi":
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            found = run(plan, lambda r: loop.run_until_complete(asgi_request(app, r)))
        else:
            found = run(plan, wsgi_sender(app))
    except Refused as refused:
        out.write_text(json.dumps({"refused": refused.params}))
        return 3
    out.write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
