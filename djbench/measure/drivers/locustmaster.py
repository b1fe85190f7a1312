"""A Locust master that lives for the whole run, for workers on other machines.

A headless master ends with its run and tells its workers to quit, so workers on other
hosts would have to be restarted for every trial. With ``--locust-master-bind
HOST[:PORT]`` djbench starts one master (its own process tree, stopped with the run
whatever ends it) listening for workers at that address, its web UI on loopback only
(djbench drives each trial through it: locustctl), prints the command
each remote worker runs, waits a bounded time for ``--locust-expect-workers`` of them
and checks that their Locust version is the master's (Locust itself only logs a
mismatch; the message format and the users' behaviour can differ between releases).

Facts (Locust 2.47): ``locust --worker -f -`` asks the master for the locustfile, so a
load machine needs Locust and hdrhistogram only (``pip install locust==<version>
hdrhistogram``), not djbench; a worker retries joining for 5 minutes, so it may be
started before runbench; after each stop a worker re-joins as ready after the master's
``--stop-timeout``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from djbench.launch.process import RECORD_DIR, ProcessTree, ServerError, free_port, pinned
from djbench.measure.drivers.locust import LOCUSTFILE
from djbench.servers import executable_path

DEFAULT_PORT = 5557  # Locust's own default master port


class MasterError(Exception):
    """The lasting master cannot be used (one sentence): the run cannot start."""


def parse_bind(raw: str) -> tuple[str, int]:
    """'10.0.0.5' or '10.0.0.5:5557' or '[::1]:5557' -> (host, port)."""
    text = raw.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.lstrip(":")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
    except ValueError:
        raise ValueError(f"--locust-master-bind takes HOST or HOST:PORT, got {raw!r}") from None
    if not host or not 1 <= port <= 65535:
        raise ValueError(f"--locust-master-bind takes HOST or HOST:PORT, got {raw!r}")
    return host, port


def worker_command(host: str, port: int, version: str | None) -> str:
    """What each load machine runs (the README's "Two machines" gives the same line)."""
    pin = f"=={version.split()[-1]}" if version else ""
    address = f"[{host}]" if ":" in host else host
    return (
        f'pip install "locust{pin}" hdrhistogram && '
        f"locust --worker -f - --master-host {address} --master-port {port}"
    )


def _workers(web: str) -> dict[str, object]:
    """Who has joined; a master that stops answering is a sentence, not a traceback."""
    try:
        with urllib.request.urlopen(web + "/djbench/workers", timeout=10) as response:
            state: dict[str, object] = json.loads(response.read())
            return state
    except (OSError, ValueError) as exc:
        raise MasterError(f"the Locust master's web UI at {web} did not answer: {exc}") from None


def wait_for_workers(
    web: str, expect: int, timeout: float, say: Callable[[str], None], tree: ProcessTree
) -> dict[str, object]:
    """Until `expect` workers have joined and said their versions, or `timeout` s."""
    deadline = time.monotonic() + timeout
    seen = -1
    while True:
        if tree.exited() is not None:
            raise MasterError(
                f"the Locust master exited; last lines of {tree.log_path}:\n{tree.log_tail()}"
            )
        state = _workers(web)
        joined, hellos = state["joined"], state["hellos"]
        assert isinstance(joined, list) and isinstance(hellos, dict)
        if len(joined) != seen:
            seen = len(joined)
            say(f"Locust workers joined: {seen} of {expect}")
        if len(joined) >= expect and len(hellos) >= expect:
            return state
        if time.monotonic() >= deadline:
            raise MasterError(
                f"{len(joined)} of {expect} Locust workers joined within {timeout:g} s "
                "(--locust-join-timeout); nothing was measured"
            )
        time.sleep(0.5)


def check_versions(state: dict[str, object]) -> None:
    master, hellos = state["master"], state["hellos"]
    assert isinstance(hellos, dict)
    other = {w: h["locust"] for w, h in hellos.items() if h.get("locust") != master}
    if other:
        listed = ", ".join(f"{w} runs {v}" for w, v in sorted(other.items()))
        raise MasterError(
            f"Locust workers must run the master's Locust {master}: {listed}; "
            f'on each: pip install "locust=={master}"'
        )


@contextlib.contextmanager
def lasting_master(
    bind: str,
    expect: int,
    join_timeout: float,
    run_dir: Path,
    cpus: tuple[int, ...],
    say: Callable[[str], None],
) -> Iterator[str]:
    """Start the master, wait for its workers, yield its web UI's URL; stop it on exit."""
    host, port = parse_bind(bind)
    exe = executable_path("locust") or "locust"
    web_port = free_port()
    argv = [
        exe, "-f", str(LOCUSTFILE), "--master", "--master-bind-host", host,
        "--master-bind-port", str(port), "--web-host", "127.0.0.1", "--web-port", str(web_port),
        "--stop-timeout", "1", "--loglevel", "WARNING",
    ]  # fmt: skip
    tree = ProcessTree(
        name="locust-master",
        argv=pinned(argv, cpus),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=run_dir,
        log_path=run_dir / "logs" / "locust-master.log",
        record_dir=run_dir / RECORD_DIR,
    )
    web = f"http://127.0.0.1:{web_port}"
    run_dir.mkdir(parents=True, exist_ok=True)
    tree.start()
    try:
        try:
            tree.wait_ready(web + "/djbench/workers", timeout=60)
        except ServerError as exc:
            raise MasterError(str(exc)) from None
        from djbench.measure.drivers import DRIVERS

        say(f"Locust master on {host}:{port} waits for {expect} worker(s); on each load machine:")
        say("    " + worker_command(host, port, DRIVERS["locust"].version()))
        check_versions(wait_for_workers(web, expect, join_timeout, say, tree))
        yield web
    finally:
        tree.stop()
