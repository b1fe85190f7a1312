"""A server's own cost per request: the instructions its whole process tree executes
per request of a trivial page, beyond what Django's handler executes for the same
request in-process (:mod:`djbench.measure.cost`).

The server is started as a benchmark starts it (its registry entry's command, one
worker, one thread where it has threads), every process of its tree under Valgrind
(cachegrind without a cache model: instructions only; ``--trace-children`` so that a
worker started by exec is counted too; ASLR off; ``PYTHONHASHSEED`` pinned). Once it
listens it answers one request (on one connection, waited for: the same request in
every run), then N or 3N more on that keep-alive connection (a server that closes it
after each answer, as Gunicorn's sync worker does, gets a new connection per request,
recorded), and is stopped gracefully:
each process writes its total when it exits. The two runs differ by 2N requests alone,
so ``(total(3N) - total(N)) / 2N`` is what one request costs the tree: imports, set-up
and the first request cancel.

What it leaves out, or counts unevenly: Valgrind runs one thread at a time, so a
server's threads (Granian's Rust runtime, a thread pool) are counted but never overlap;
timers that fire while the requests run (a master's heartbeat, an event loop's
timeouts) are counted in proportion to the longer run's time under Valgrind (a few
seconds: thousands of instructions against figures of 10^5 and more per request); the
kernel's work (loopback, the socket calls) is not counted at all.

**ASGI servers**: their tree's figure is given whole. Subtracting Django's ASGI handler
counted in-process does not leave the server's own part: in-process the handler runs on
asyncio's own loop, in the server on the server's (uvloop, Granian's Rust one), and the
hops between threads cost differently on each (measured: Uvicorn's whole tree 5.8
million instructions per request of health-sync, the handler alone in-process 6.9).
ASGI servers are compared with each other on that whole figure (the same application
under each), WSGI servers on their own part.
"""

from __future__ import annotations

import http.client
import platform
import shutil
import time
from dataclasses import replace
from pathlib import Path

from djbench.launch.live import Deployment, launch_config
from djbench.launch.process import ProcessTree, ServerError, command_record, free_port
from djbench.measure import cost
from djbench.measure.cost import Probe, ProbeFailed
from djbench.plan.project import Project
from djbench.results.model import Command, Notice, ServerCost
from djbench.servers import ServerSpec

REQUESTS = 40  # N: the runs serve N and 3N requests after the first
READY_TIMEOUT_S = 600.0  # a server importing Django under Valgrind: 10-60 s here
REQUEST_TIMEOUT_S = 300.0
SEED = 0
HOST = "127.0.0.1"


def handler_probe(probe: Probe, spec: ServerSpec) -> Probe:
    """The in-process probe that prices Django's part: the page through the handler of
    the server's interface (an ASGI server runs a sync view through ASGIHandler)."""
    return replace(probe, interface="asgi" if spec.interface == "asgi" else "wsgi")


def measure(project: Project, spec: ServerSpec, probe: Probe, work: Path) -> ServerCost:
    """The server's tree per request (N and 3N, differenced); a failure is its finding."""
    found = ServerCost(server=spec.name, interface=spec.interface, scenario=probe.scenario)
    started = time.monotonic()
    try:
        for n in (REQUESTS, 3 * REQUESTS):
            total, connections, command = _run(project, spec, probe, n, work / f"{n}-requests")
            found.totals.append(total)
            found.connections.append(connections)
            found.command = found.command or command
    except ProbeFailed as failed:
        found.status, found.reason = "failed", failed.notice
        return found
    except (OSError, ValueError, http.client.HTTPException) as exc:
        found.status = "failed"
        found.reason = Notice(code="cost_error", params={"error": str(exc) or type(exc).__name__})
        return found
    finally:
        found.seconds = round(time.monotonic() - started, 1)
    found.requests = REQUESTS
    found.per_request = (found.totals[1] - found.totals[0]) / (2 * REQUESTS)
    return found


def _run(
    project: Project, spec: ServerSpec, probe: Probe, n: int, work: Path
) -> tuple[int, int, Command]:
    """One run under Valgrind: the tree's instructions, the connections it was sent."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    port = free_port(HOST)
    config = launch_config(
        project, Deployment(server=spec, workers=1, threads=1), (HOST, port), None
    )
    launch = spec.launch(config)
    argv = [*_valgrind(work), *launch.argv]
    env = {**launch.env, "PYTHONHASHSEED": str(SEED)}
    tree = cost.CountedTree(
        spec.name, argv, project.server_env(env), project.directory, work / "log"
    )
    try:
        tree.start()
        connections = _serve(tree, port, probe, n, dict(project.ready_headers))
    except ServerError as exc:
        raise ProbeFailed(Notice(code="cost_server_failed", params={"error": str(exc)})) from None
    finally:
        tree.stop(timeout=120)
    dumps = sorted(work.glob("cg.*"))
    if not dumps:
        raise ProbeFailed(Notice(code="cost_crashed", params={"log": tree.log_tail(8)}))
    total = sum(cost.dump_total(d) for d in dumps)
    return total, connections, command_record(argv, env, project.directory)


def _valgrind(work: Path) -> list[str]:
    counted = [
        cost.valgrind() or "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--trace-children=yes",
        f"--cachegrind-out-file={work}/cg.%p",
    ]
    setarch = shutil.which("setarch")
    return [setarch, platform.machine(), "-R", *counted] if setarch else counted


def _serve(tree: ProcessTree, port: int, probe: Probe, n: int, headers: dict[str, str]) -> int:
    """One request once the server listens (waited for), then n more on one keep-alive
    connection, or a new one after each answer that closes it; each must answer the
    page's status. Returns the connections opened."""
    connection, opened = _connect(tree, port), 1
    request = probe.requests[0]
    body = request["body"].encode() if request["body"] else None
    sent = {k: v for k, v in request["headers"]} | headers
    if request["content_type"]:
        sent["Content-Type"] = request["content_type"]
    try:
        for index in range(n + 1):
            connection.request(request["method"], request["path"], body=body, headers=sent)
            answer = connection.getresponse()
            answer.read()
            if answer.status != probe.status:
                params = {"path": request["path"], "got": answer.status, "expected": probe.status}
                raise ProbeFailed(Notice(code="cost_status", params=params))
            if answer.will_close and index < n:
                connection.close()
                connection, opened = _connect(tree, port), opened + 1
    finally:
        connection.close()
    return opened


def _connect(tree: ProcessTree, port: int) -> http.client.HTTPConnection:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        connection = http.client.HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT_S)
        try:
            connection.connect()
            return connection
        except ConnectionRefusedError:
            if tree.exited() is not None:
                raise ServerError(
                    f"{tree.name} ended before it listened: {tree.log_tail(8)}"
                ) from None
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{tree.name} did not listen within {READY_TIMEOUT_S:.0f} s"
                ) from None
            time.sleep(0.2)
