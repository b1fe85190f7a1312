"""The locustfile of djbench's Locust driver: one scenario, read from DJBENCH_LOCUST
(a mix's pages drawn by weight: djbench.measure.drivers.locustpages).

Run by Locust itself (``locust -f .../locustfile.py``), never imported by runbench:
Locust monkey-patches the standard library with gevent on import.

Every request's latency (microseconds, not Locust's own buckets, which round to whole
milliseconds below 100 ms) goes into an HDR histogram in the worker that made it, when
it completes inside the window [start + warmup, start + warmup + duration] of that
worker's own clock. When the window closes, each worker sends its histogram and counts
to the master (Locust's worker-to-master messages, so remote workers need no shared
disk); the master merges them and prints one ``DJBENCH-LOCUST`` line when it quits,
with Locust's own totals beside them (to check against the server's access log).
With no worker (a local run) the single process does both.

A master that lives for the whole run (``--locust-master-bind``: remote workers join
once and stay) is driven through routes this file adds to its web UI, which djbench
binds to loopback: ``/djbench/workers`` (who has joined, with their versions),
``/djbench/probe`` (each worker fetches a URL once: the verify gate from the load
machines' side), ``/djbench/trial`` (the next trial's scenario, sent to every worker
before the users are spawned), ``/djbench/result`` and ``/djbench/stop``. The
per-trial driver process is then ``locustctl`` (djbench's side of those routes).
"""

from __future__ import annotations

import base64
import json
import os
import platform
import resource
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import gevent
from hdrh.histogram import HdrHistogram
from locust import FastHttpUser, __version__, constant, events, task
from locust.runners import MasterRunner, WorkerRunner

from djbench.measure.drivers.locustpages import Pages, merged

SPEC: dict[str, Any] = json.loads(os.environ.get("DJBENCH_LOCUST", "{}") or "{}")
MAX_LATENCY_US = 120_000_000
MARKER = "DJBENCH-LOCUST "
WINDOW_MARKER = "DJBENCH-WINDOW "
# After the window closes: requests in flight may still end (answered late: not counted;
# failed: an error of the window); those still unanswered then are hung, as in the
# builtin driver (an error of the window, their age a latency).
SEND_GRACE_S = 2.0


class Tally:
    def __init__(self) -> None:
        self.histogram = HdrHistogram(1, MAX_LATENCY_US, 3)
        self.requests = 0
        self.errors: dict[str, int] = {}
        self.non_2xx = 0
        self.unexpected = 0
        self.status: dict[str, int] = {}
        self.opened: float | None = None
        self.closed: float | None = None
        self.wall: list[float] = []  # the window's edges by the wall clock (time.time())
        self.inflight: dict[int, tuple[float, int | None]] = {}  # token -> (sent, page)
        self.pages = Pages(SPEC)  # a mix's draws and per-page tallies
        self.tokens = 0
        self.hung = 0
        self.users_at_open = 0  # users this process ran when its window opened
        self.cpu_at_open = 0.0  # this process's CPU seconds when its window opened
        self.cpu_percent: float | None = None  # of one core, over its window

    def during(self, sent: float, now: float) -> bool:
        """In flight during the window: sent by its close, ended after its opening."""
        return (
            self.opened is not None
            and now >= self.opened
            and (self.closed is None or sent <= self.closed)
        )

    def count_hung(self, now: float) -> None:
        for sent, page in self.inflight.values():
            if self.closed is not None and sent <= self.closed:
                self.hung += 1
                self.errors["timeout"] = self.errors.get("timeout", 0) + 1
                age_us = min(max(1, int((now - sent) * 1e6)), MAX_LATENCY_US)
                self.histogram.record_value(age_us)
                if page is not None:
                    self.pages.failed(page, age_us)
        self.inflight.clear()

    def inside(self, now: float) -> bool:
        return (
            self.opened is not None
            and self.opened <= now
            and (self.closed is None or now <= self.closed)
        )

    def payload(self) -> dict[str, Any]:
        return {
            "histogram": base64.b64encode(self.histogram.encode()).decode()
            if self.histogram.get_total_count()
            else "",
            "requests": self.requests,
            "hung": self.hung,
            # The window as this process's clock measured it (gevent's sleep can overrun).
            "window_s": (self.closed or 0.0) - (self.opened or 0.0),
            "errors": self.errors,
            "non_2xx": self.non_2xx,
            "unexpected": self.unexpected,
            "status": self.status,
            "users_at_open": self.users_at_open,
            "cpu_percent": self.cpu_percent,
            "wall": self.wall,
            "pages": self.pages.payload(),
        }


TALLY = Tally()
MERGED: list[dict[str, Any]] = []
HELLOS: dict[str, dict[str, Any]] = {}  # the master's: worker id -> its versions
PROBES: dict[str, dict[str, Any]] = {}  # the master's: worker id -> its probe's answer


def _record(
    response_time: float,
    status: int,
    exception: Any,
    sent: float,
    page: int | None = None,
    expected: int | None = None,
) -> None:
    now = time.monotonic()
    latency_us = min(max(1, int(response_time * 1000)), MAX_LATENCY_US)
    if exception is not None and not status:
        if TALLY.during(sent, now):
            text = f"{type(exception).__name__} {exception}".lower()
            timed_out = "timeout" in text or "timed out" in text  # socket.timeout: "timed out"
            kind = "timeout" if timed_out else "connect" if "refused" in text else "read"
            TALLY.errors[kind] = TALLY.errors.get(kind, 0) + 1
            if kind == "timeout":  # its latency is at least its age: in the percentiles
                TALLY.histogram.record_value(latency_us)
            if page is not None:
                TALLY.pages.failed(page, latency_us if kind == "timeout" else None)
        return
    if not TALLY.inside(now):
        return
    TALLY.requests += 1
    TALLY.histogram.record_value(latency_us)
    TALLY.status[str(status)] = TALLY.status.get(str(status), 0) + 1
    if not 200 <= status < 300:
        TALLY.non_2xx += 1
    unexpected = (status != expected) if expected else not 200 <= status < 300
    if unexpected:
        TALLY.unexpected += 1
    if page is not None:
        TALLY.pages.answered(page, latency_us, unexpected)


class ScenarioUser(FastHttpUser):
    """One connection of the scenario: requests back to back (closed loop)."""

    wait_time = constant(0)
    host = SPEC.get("base_url", "http://127.0.0.1")
    # FastHttpUser's timeouts are the client's (60 s by default), not request()'s
    # `timeout` keyword: without these a request that is never answered holds its user
    # for a minute, and one server that hangs 1 request in 50 stops every user.
    network_timeout = float(SPEC.get("timeout", 10.0))
    connection_timeout = float(SPEC.get("timeout", 10.0))

    def on_start(self) -> None:
        self.index = 0

    def _next(self) -> tuple[int | None, str, str, str, dict[str, str], int | None]:
        """(page of a mix or None, method, path, body, headers, expected status)."""
        page = TALLY.pages.draw()
        if page is not None:
            return (page, *TALLY.pages.request(page))
        paths = SPEC.get("paths") or ["/"]
        path = paths[self.index % len(paths)]
        self.index += 1
        headers = SPEC.get("headers") or {}
        return (
            None,
            SPEC.get("method", "GET"),
            path,
            SPEC.get("body") or "",
            headers,
            (SPEC.get("expect_status")),
        )

    @task
    def one(self) -> None:
        page, method, path, body, headers, expected = self._next()
        started = time.perf_counter()
        sent = time.monotonic()
        TALLY.tokens += 1
        token = TALLY.tokens
        TALLY.inflight[token] = (sent, page)
        status = 0
        failure: Any = None
        try:
            with self.client.request(
                method,
                path,
                data=body or None,
                headers=headers or None,
                catch_response=True,
                timeout=SPEC.get("timeout", 10.0),
            ) as response:
                status = response.status_code or 0
                failure = response.error if not status else None
                if status:
                    response.success()  # djbench judges statuses itself (expect.status)
                else:
                    response.failure(str(failure or "no response"))
        except Exception as exc:  # a connection that failed before any response
            failure = exc
        finally:
            TALLY.inflight.pop(token, None)
        elapsed = (time.perf_counter() - started) * 1000
        _record(elapsed, status, failure, sent, page, expected)


def _apply(spec: dict[str, Any], environment: Any) -> None:
    """The next trial's scenario (a lasting master's workers get one per trial)."""
    SPEC.clear()
    SPEC.update(spec)
    ScenarioUser.host = SPEC.get("base_url", ScenarioUser.host)
    ScenarioUser.network_timeout = float(SPEC.get("timeout", 10.0))
    ScenarioUser.connection_timeout = float(SPEC.get("timeout", 10.0))
    environment.host = ScenarioUser.host


def _probe(url: str) -> dict[str, Any]:
    """One GET of `url` from this process: its status, or why there was none. Over TLS
    the certificate is not checked, as FastHttpUser does not (insecure by default)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return {"status": response.status}
    except urllib.error.HTTPError as exc:
        return {"status": exc.code}
    except OSError as exc:
        return {"status": 0, "error": str(getattr(exc, "reason", exc))}


def _window(environment: Any) -> None:
    """Open and close this process's window on its own clock, then report."""
    warmup, duration = float(SPEC.get("warmup", 0)), float(SPEC.get("duration", 1))
    gevent.sleep(warmup)
    TALLY.opened = time.monotonic()
    TALLY.wall = [time.time()]
    TALLY.users_at_open = int(getattr(environment.runner, "user_count", 0) or 0)
    TALLY.cpu_at_open = _cpu_seconds()
    if not isinstance(environment.runner, WorkerRunner):
        _mark("open")
    gevent.sleep(duration)
    TALLY.closed = time.monotonic()
    TALLY.wall.append(time.time())
    window = TALLY.closed - TALLY.opened
    if window > 0:  # each worker's own saturation (issue 25 item 4): one gevent loop, one core
        TALLY.cpu_percent = round((_cpu_seconds() - TALLY.cpu_at_open) / window * 100, 1)
    if not isinstance(environment.runner, WorkerRunner):
        _mark("closed")
    gevent.sleep(SEND_GRACE_S)
    TALLY.count_hung(time.monotonic())
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.send_message("djbench_tally", TALLY.payload())
    elif not isinstance(environment.runner, MasterRunner):
        MERGED.append(TALLY.payload())


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _mark(event: str) -> None:
    sys.stdout.write(f"{WINDOW_MARKER}{event} {time.monotonic():.6f}\n")
    sys.stdout.flush()


@events.init.add_listener
def _on_init(environment: Any, **_: Any) -> None:
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        runner.register_message(
            "djbench_tally", lambda environment, msg, **kw: MERGED.append(msg.data)
        )
        runner.register_message(
            "djbench_hello", lambda environment, msg, **kw: HELLOS.update({msg.node_id: msg.data})
        )
        runner.register_message(
            "djbench_probed", lambda environment, msg, **kw: PROBES.update({msg.node_id: msg.data})
        )
        if environment.web_ui is not None:
            _routes(environment)
    elif isinstance(runner, WorkerRunner):
        runner.register_message(
            "djbench_spec", lambda environment, msg, **kw: _apply(msg.data, environment)
        )
        runner.register_message(
            "djbench_probe",
            lambda environment, msg, **kw: runner.send_message("djbench_probed", _probe(msg.data)),
            concurrent=True,
        )
        runner.send_message(
            "djbench_hello",
            {"locust": __version__, "python": platform.python_version(), "host": platform.node()},
        )


def _routes(environment: Any) -> None:
    """A lasting master's routes (djbench's locustctl calls them, on loopback)."""
    from flask import jsonify, request

    app, runner = environment.web_ui.app, environment.runner

    @app.route("/djbench/workers")
    def workers() -> Any:
        joined = [c.id for c in runner.clients.all]
        ready = len(runner.clients.ready)
        return jsonify(ready=ready, joined=joined, hellos=HELLOS, master=__version__)

    @app.route("/djbench/probe", methods=["POST"])
    def probe() -> Any:
        PROBES.clear()
        runner.send_message("djbench_probe", request.get_json()["url"])
        deadline = time.monotonic() + 10
        while len(PROBES) < len(runner.clients.all) and time.monotonic() < deadline:
            gevent.sleep(0.05)
        return jsonify(PROBES)

    @app.route("/djbench/trial", methods=["POST"])
    def trial() -> Any:
        spec = request.get_json()
        MERGED.clear()
        _apply(spec, environment)
        runner.send_message("djbench_spec", spec)
        runner.start(int(spec["users"]), float(spec["spawn_rate"]))
        return jsonify(started=len(runner.clients.all))

    @app.route("/djbench/result")
    def result() -> Any:
        return jsonify(_merged(environment))

    @app.route("/djbench/stop", methods=["POST"])
    def stop() -> Any:
        runner.stop()
        return jsonify(stopped=True)


@events.test_start.add_listener
def _on_test_start(environment: Any, **_: Any) -> None:
    global TALLY
    TALLY = Tally()  # a lasting worker runs one trial after another
    gevent.spawn(_window, environment)


@events.quitting.add_listener
def _on_quitting(environment: Any, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner) or environment.web_ui is not None:
        return  # a lasting master's results go through /djbench/result, trial by trial
    sys.stdout.write(MARKER + json.dumps(_merged(environment)) + "\n")
    sys.stdout.flush()


def _merged(environment: Any) -> dict[str, Any]:
    """Every reported window merged: one histogram, summed counts, Locust's totals."""
    histogram = HdrHistogram(1, MAX_LATENCY_US, 3)
    totals: dict[str, Any] = {
        "requests": 0, "non_2xx": 0, "unexpected": 0, "hung": 0, "users_at_open": 0,
    }  # fmt: skip
    errors: dict[str, int] = {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    status: dict[str, int] = {}
    for part in MERGED:
        if part["histogram"]:
            histogram.decode_and_add(base64.b64decode(part["histogram"]))
        for key in totals:
            totals[key] += part.get(key, 0)
        for key, n in part["errors"].items():
            errors[key] = errors.get(key, 0) + n
        for key, n in part["status"].items():
            status[key] = status.get(key, 0) + n
    total = environment.stats.total
    result = {
        **totals,
        # Each worker's measured window (they run side by side): their mean.
        "duration_s": (
            sum(part["window_s"] for part in MERGED) / len(MERGED)
            if MERGED
            else float(SPEC.get("duration", 1))
        ),
        "warmup_s": float(SPEC.get("warmup", 0)),
        "errors": errors,
        "status": status,
        "latency_us": {
            "p50": histogram.get_value_at_percentile(50),
            "p90": histogram.get_value_at_percentile(90),
            "p99": histogram.get_value_at_percentile(99),
            "p999": histogram.get_value_at_percentile(99.9),
            "max": histogram.get_max_value(),
            "mean": histogram.get_mean_value(),
        }
        if histogram.get_total_count()
        else {},
        "workers_reported": len(MERGED),
        "workers_expected": int(SPEC.get("workers", 1)),
        "users_expected": int(SPEC.get("users", 0)),
        # Each worker's window by the wall clock, [opened, closed]: to hold the windowed
        # count against a server's timestamped access log (tests/test_two_hosts.py).
        "windows_wall": [part["wall"] for part in MERGED if len(part.get("wall") or []) == 2],
        "worker_cpu_percent": [
            part["cpu_percent"] for part in MERGED if part.get("cpu_percent") is not None
        ],
        # Locust's own counts over the whole run (warm-up included): what it sent and
        # had answered, to hold against the server's access log.
        "locust_total_requests": total.num_requests,
        "locust_total_failures": total.num_failures,
    }
    pages = [part["pages"] for part in MERGED if part.get("pages")]
    if pages:
        result["pages"] = merged(pages, result["duration_s"])
        result["seed"] = SPEC.get("seed")
    return result
