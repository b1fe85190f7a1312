"""One trial on a lasting Locust master: djbench's side of the locustfile's routes.

``python -m djbench.measure.drivers.locustctl WEB_URL`` with the trial's scenario in
DJBENCH_LOCUST (as a per-trial ``locust`` would get it). It waits until every expected
worker is ready (a worker re-joins a second after each stop), has every worker fetch the
scenario's first URL once (the verify gate from the load machines' side: a worker that
cannot reach the server fails the trial with its reason instead of counting connection
errors), starts the users, marks the window on its own clock (so that memory is read
mid-window, as for the builtin driver), collects the workers' merged tallies, stops the
users and prints the same ``DJBENCH-LOCUST`` line a per-trial master prints. Every wait
is bounded; the users are stopped whatever happens.

Written by hand: Locust's web API starts and stops a swarm but has no way to send a
scenario to the workers or to collect a window's tallies.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from typing import Any

from djbench.measure.drivers.base import WINDOW_MARKER
from djbench.measure.drivers.locust import MARGIN_S, MARKER, SEND_GRACE_S, VARIABLE

READY_WAIT_S = 30.0  # for the workers to be ready again after the last trial's stop


class TrialFailed(Exception):
    """One sentence on stderr, exit code 2."""


def call(web: str, path: str, payload: dict[str, Any] | None = None) -> Any:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        web + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_ready(web: str, expected: int) -> None:
    deadline = time.monotonic() + READY_WAIT_S
    while True:
        state = call(web, "/djbench/workers")
        if state["ready"] >= expected:
            return
        if time.monotonic() >= deadline:
            raise TrialFailed(
                f"{state['ready']} of {expected} Locust workers ready after {READY_WAIT_S:g} s "
                f"(joined: {len(state['joined'])})"
            )
        time.sleep(0.2)


def probe(web: str, spec: dict[str, Any]) -> dict[str, Any]:
    url = spec["base_url"] + (spec.get("paths") or ["/"])[0]
    answers: dict[str, Any] = call(web, "/djbench/probe", {"url": url})
    if len(answers) < int(spec["workers"]):
        raise TrialFailed(f"{len(answers)} of {spec['workers']} Locust workers answered a probe")
    for worker, answer in answers.items():
        if not answer.get("status"):
            raise TrialFailed(f"Locust worker {worker} cannot reach {url}: {answer.get('error')}")
    return answers


def mark(event: str) -> None:
    sys.stdout.write(f"{WINDOW_MARKER}{event} {time.monotonic():.6f}\n")
    sys.stdout.flush()


def collect(web: str, expected: int) -> dict[str, Any]:
    deadline = time.monotonic() + SEND_GRACE_S + MARGIN_S + 5
    while True:
        result: dict[str, Any] = call(web, "/djbench/result")
        if result["workers_reported"] >= expected or time.monotonic() >= deadline:
            return result  # the driver's parse() refuses a partial one, saying so
        time.sleep(0.2)


def trial(web: str, spec: dict[str, Any]) -> dict[str, Any]:
    expected = int(spec["workers"])
    wait_ready(web, expected)
    answers = probe(web, spec)
    call(web, "/djbench/trial", spec)
    try:
        time.sleep(float(spec["warmup"]))
        mark("open")
        time.sleep(float(spec["duration"]))
        mark("closed")
        result = collect(web, expected)
    finally:
        call(web, "/djbench/stop", {})
    result["worker_probe"] = {worker: a["status"] for worker, a in answers.items()}
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m djbench.measure.drivers.locustctl WEB_URL\n")
        return 2
    spec = json.loads(os.environ.get(VARIABLE) or "{}")
    try:
        result = trial(argv[1].rstrip("/"), spec)
    except TrialFailed as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"the Locust master at {argv[1]} did not answer: {exc}\n")
        return 2
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
