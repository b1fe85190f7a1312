"""One timed trial: warm up, then load one scenario at one concurrency while sampling.

Also the WebSocket idle-connections memory test. Knows nothing about plans or files.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from djbench.launch.live import LiveServer
from djbench.launch.process import (
    RECORD_DIR,
    ProcessTree,
    command_record,
    deathsig_prefix,
    pinned,
)
from djbench.measure import machine
from djbench.measure import timeline as timelines
from djbench.measure.drivers import DEFAULT, DRIVERS, Driver, DriverError, LoadResult, LoadSpec
from djbench.measure.drivers.base import (
    WINDOW_MARKER,
    WS_MARKER,
    marked_json,
    request_timeout,
)
from djbench.measure.drivers.loadpages import pages_of
from djbench.measure.resource_watch import ResourceWatch, postgres_conninfo
from djbench.measure.sampler import MB, Sample, TimelineSampler, TreeSampler, sample, summarise
from djbench.plan.runplan import GROWTH_THRESHOLD_MB_H
from djbench.plan.scenarios import MIX_SEED, Scenario
from djbench.results.driver_model import DriverFigures
from djbench.results.model import (
    Command,
    Notice,
    PageFigures,
    Resources,
    Trial,
    Warmup,
    WindowMemory,
    WsIdle,
)
from djbench.verdicts import error_rate as error_limit

DRAIN_SECONDS = 0.1  # wrk: let the warm-up's sockets close before wrk connects
WATCH_INTERVAL = 0.01  # how often the driver's output is read for its window's edges
WINDOW_EDGE_LIMIT = 0.03  # wrk: flag a window whose end may have cut more than this share


@dataclass(frozen=True)
class LoadSettings:
    duration: float
    warmup: float
    driver_cpus: tuple[int, ...]
    rate: float | None = None
    max_error_rate: float = 0.01
    sample_interval: float = 0.2
    settle_tolerance: float = 0.05  # the warm-up settles when two slices agree this well
    series: float | None = None  # a soak: the window as a time line, slices of this many s
    growth_threshold: float = GROWTH_THRESHOLD_MB_H  # a soak: MB/h where "grows" starts
    driver_workers: int = 1  # Locust: worker processes
    master_web: str | None = None  # Locust: a lasting master's web UI (remote workers)
    event: TimedEvent | None = None  # --churn: what to do to the server during the window
    new_connection_every: int | None = None  # builtin: a new connection after N answers
    request_timeout: float | None = None  # fitted to the pages (djbench.plan.fitting)
    seed: int | None = None  # the run's: a mix's page draws


@dataclass(frozen=True)
class TimedEvent:
    """Something done to the server `at_s` seconds after the window opens (a reload
    signal, a worker killed), in a timer thread of runbench's process."""

    at_s: float
    fire: Callable[[], None]


@dataclass
class Drive:
    """What running a driver process gave: its output, CPU, wall time, exact command."""

    output: str
    cpu_seconds: float
    wall_seconds: float
    command: Command | None = None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Window:
    """What happens at the load window's edges: samplers start and stop there.

    A driver that announces its window (the builtin one prints `DJBENCH-WINDOW open` and
    `closed` lines) is watched; for one that does not (wrk, the WebSocket driver), the
    window is the driver process's life, which starts within milliseconds of its load.
    """

    def __init__(self, on_open: Callable[[], None], on_close: Callable[[], None]) -> None:
        self._on_open, self._on_close = on_open, on_close
        self.opened_at: float | None = None  # time.monotonic(), the driver's own clock
        self.closed_at: float | None = None
        self._started = self._stopped = False

    def open(self, at: float) -> None:
        if not self._started:
            self._started, self.opened_at = True, at
            self._on_open()

    def close(self, at: float) -> None:
        if self._started and not self._stopped:
            self._stopped, self.closed_at = True, at
            self._on_close()

    def feed(self, line: str) -> None:
        if not line.startswith(WINDOW_MARKER):
            return
        event, _, at = line[len(WINDOW_MARKER) :].partition(" ")
        try:
            when = float(at)
        except ValueError:
            return
        if event == "open":
            self.open(when)
        elif event == "closed":
            self.close(when)


def drive(
    argv: list[str],
    env: dict[str, str],
    cpus: tuple[int, ...],
    log: Path,
    timeout: float,
    window: Window | None = None,
    announces: bool = False,
) -> Drive:
    """Run a driver to completion in its own process group (killed on timeout/interrupt).

    Its CPU time comes from RUSAGE_CHILDREN around the run: the only child reaped in
    that window is the driver. With a `window`, the driver's output is followed while it
    runs (`announces`: it prints its window's edges) so the window's callbacks run at
    the edges; otherwise at the process's start and exit.
    """
    full = pinned(argv, cpus)
    tree = ProcessTree(
        name="driver",
        argv=full,
        env={**os.environ, **env},
        cwd=Path.cwd(),
        log_path=log,
        record_dir=log.parent.parent / RECORD_DIR,  # the run's folder (logs/ is in it)
    )
    log.unlink(missing_ok=True)
    before = _children_cpu()
    started = time.monotonic()
    if window is not None and not announces:
        window.open(time.monotonic())
    tree.start()
    try:
        assert tree.popen is not None
        _wait(tree.popen, log, timeout, window if announces else None)
    except subprocess.TimeoutExpired:
        raise DriverError(f"the load driver did not finish within {timeout:.0f}s") from None
    finally:
        tree.stop(timeout=5)
        if window is not None:
            window.close(time.monotonic())  # no-op if the driver announced its close
    wall = time.monotonic() - started
    output = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    command = command_record(full, env, Path.cwd())
    return Drive(
        output=output, cpu_seconds=_children_cpu() - before, wall_seconds=wall, command=command
    )


def _wait(popen: subprocess.Popen[bytes], log: Path, timeout: float, window: Window | None) -> None:
    """Wait for the driver; meanwhile pass each new line of its output to the window."""
    if window is None:
        popen.wait(timeout=timeout)
        return
    deadline = time.monotonic() + timeout
    offset = 0
    pending = b""
    while True:
        exited = popen.poll() is not None
        if log.exists():
            with log.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                window.feed(line.decode("utf-8", "replace"))
        if exited:
            return
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(popen.args, timeout)
        time.sleep(WATCH_INTERVAL)


def load_spec(
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    duration: float,
    settings: LoadSettings,
    warmup: float = 0.0,
    round_index: int = 0,
) -> LoadSpec:
    """A mix's draws are seeded with the run's seed plus the round: every deployment of a
    round loads the same sequence of pages (paired, like the rounds themselves), and each
    round a new one, so the rounds' spread includes the mix's sampling."""
    r = scenario.request
    pages = pages_of(scenario)
    return LoadSpec(
        host=live.host,
        port=live.port,
        method=r.method,
        path=r.path,
        body=r.body,
        content_type=r.content_type,
        connections=connections,
        duration=duration,
        timeout=settings.request_timeout or request_timeout(duration),
        threads=max(1, len(settings.driver_cpus)),
        rate=settings.rate,
        headers=r.all_headers(),
        paths=r.paths,
        expect_status=scenario.expect.status,
        warmup=warmup,
        settle_tolerance=settings.settle_tolerance,
        series=settings.series,
        workers=settings.driver_workers,
        master_web=settings.master_web,
        protocol=live.deployment.protocol,
        scheme=live.scheme,
        new_connection_every=settings.new_connection_every
        or (1 if live.deployment.closes_connections else None),
        pages=pages,
        seed=(MIX_SEED if settings.seed is None else settings.seed) + round_index
        if pages
        else None,
    )


def ws_argv(live: LiveServer, scenario: Scenario, connections: int, duration: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "djbench.measure.drivers.wsload",
        scenario.ws_mode,
        "--url",
        f"ws://{live.host}:{live.port}{scenario.request.path}",
        "--connections",
        str(connections),
        "--duration",
        str(duration),
        "--message",
        scenario.message,
    ]


def _parse_ws(output: str) -> LoadResult:
    data = marked_json(output, WS_MARKER, "the WebSocket driver")
    return LoadResult(
        requests=data["requests"],
        duration_s=data["duration_s"],
        errors=data["errors"],
        non_2xx=0,
        latency_ms=data["latency_ms"],
        figures=DriverFigures.of(data),
    )


# What the WebSocket driver reports as figures; the rest (mode, broadcast's messages in
# and deliveries out per second, members, expected deliveries) is kept as `extra`.
WS_FIGURES = ("requests", "duration_s", "errors", "non_2xx", "latency_ms")


def _run_driver(
    driver: Driver,
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    duration: float,
    settings: LoadSettings,
    log: Path,
    warmup: float = 0.0,
    window: Window | None = None,
    round_index: int = 0,
) -> tuple[LoadResult, Drive]:
    timeout = (duration + warmup) * 3 + 60
    cpus = settings.driver_cpus
    if scenario.kind == "websocket":
        argv = ws_argv(live, scenario, connections, duration)
        ran = drive(argv, {}, cpus, log, timeout, window)
        return _parse_ws(ran.output), ran
    spec = load_spec(live, scenario, connections, duration, settings, warmup, round_index)
    announces = driver.own_window  # its own warm-up, and its window's edges printed
    timeout = driver.time_limit(duration, warmup, timeout)
    argv, env = driver.argv(spec), driver.env(spec)
    try:
        ran = drive(argv, env, cpus, log, timeout, window, announces)
    except DriverError:
        why = driver.stalled(log.read_text(errors="replace"), connections) if log.exists() else None
        if why is None:
            raise
        raise DriverError(why) from None
    return driver.parse(ran.output), ran


def edge_bound(result: LoadResult, connections: int) -> float | None:
    """wrk's window: the share of completions its end may have cut.

    wrk stops with every connection's request unanswered, so up to one request per
    connection that the server was working on is missing from the count.
    """
    if result.in_flight is not None or result.steady_window or not result.requests:
        return None
    return round(connections / (result.requests + connections), 4)


InFlightSource = Literal["driver", "littles_law"]


def in_flight(
    result: LoadResult, connections: int
) -> tuple[float | None, float | None, InFlightSource]:
    """Mean requests in flight over the window: (estimate, upper bound, source).

    Measured by the builtin driver (exact). For wrk only Little's law is left
    (throughput x mean latency), and throughput is an underestimate by up to one request
    per connection (see `edge_bound`), so the bound uses (requests + connections).
    """
    if result.in_flight is not None:
        return result.in_flight, result.in_flight, "driver"
    mean = result.latency_ms.get("mean")
    if not mean or not result.requests or result.duration_s <= 0:
        return None, None, "littles_law"
    estimate = result.rps * mean / 1000
    upper = (result.requests + connections) / result.duration_s * mean / 1000
    return round(estimate, 2), round(upper, 2), "littles_law"


def driver_cpu_percent(ran: Drive, cpus: tuple[int, ...]) -> float:
    """The driver's CPU time over its wall time, as % of the CPUs it was pinned to."""
    count = len(cpus) or (os.cpu_count() or 1)
    return ran.cpu_seconds / ran.wall_seconds / count * 100 if ran.wall_seconds else 0.0


DRIVER_BUSY_PERCENT = 90.0  # Locust warns its users at 90% of a worker's core
LATE_SHARE = 0.01  # open loop: more requests than this sent after their due time


def driver_loop_percent(ran: Drive, loops: int) -> float:
    """The driver's CPU time over its wall time, as % of its event loops' cores."""
    return ran.cpu_seconds / ran.wall_seconds / max(1, loops) * 100 if ran.wall_seconds else 0.0


def driver_loops(driver_name: str, settings: LoadSettings) -> int:
    """How many cores the driver can use at once: the builtin driver is one event loop;
    wrk one per thread (one per driver CPU); Locust one per worker process."""
    cpus = len(settings.driver_cpus) or (os.cpu_count() or 1)
    return DRIVERS[driver_name].event_loops(cpus)


def _locust_workers_busy(result: LoadResult) -> list[Notice]:
    """Locust: each worker process is one gevent loop on one core; a worker at
    DRIVER_BUSY_PERCENT of it limits the load whatever the pinned CPUs' average says
    (remote workers included: each measures itself). Says how many workers the
    measured rate needs to keep each under 70% (issue 25 item 4)."""
    loads = [float(x) for x in result.figures.worker_cpu_percent or []]
    if not loads or max(loads) < DRIVER_BUSY_PERCENT:
        return []
    needed = math.ceil(sum(loads) / 70.0)
    return [
        Notice(
            code="locust_worker_busy",
            params={"cpu_percent": max(loads), "workers": len(loads), "needed": needed},
        )
    ]


def warnings_for(
    result: LoadResult,
    ran: Drive,
    connections: int,
    settings: LoadSettings,
    closed_loop: bool,
    warmup: Warmup | None = None,
    loops: int = 1,
    driver_name: str = DEFAULT.name,
) -> list[Notice]:
    found = []
    # Saturation is judged per event loop: the builtin driver is one loop, so it is
    # saturated at 100% of one core however many CPUs it was given (averaged over two
    # driver CPUs, it could never show more than 50%); wrk, per thread.
    client_cpu = driver_loop_percent(ran, loops)
    client_busy = client_cpu >= DRIVER_BUSY_PERCENT
    if client_busy:
        found.append(
            Notice(code="driver_busy", params={"cpu_percent": round(client_cpu, 1), "loops": loops})
        )
    late = result.figures.late_starts or 0
    if not closed_loop and result.requests and late / result.requests > LATE_SHARE:
        found.append(
            Notice(
                code="late_starts",
                params={"share": round(late / result.requests, 4), "driver": driver_name},
            )
        )
    hung = result.figures.hung or 0
    if hung:
        found.append(Notice(code="hung", params={"count": hung, "driver": driver_name}))
    if resent := result.figures.resent or 0:
        found.append(Notice(code="resent", params={"count": resent, "requests": result.requests}))
    found += _locust_workers_busy(result)
    running, users = result.figures.users_at_open, result.figures.users_expected
    if isinstance(running, int) and isinstance(users, int) and users > 0 and running < users:
        # Locust: the window opened while users were still being spawned (issue 25 item 3)
        found.append(Notice(code="ramp_in_window", params={"running": running, "users": users}))
    served, upper, source = in_flight(result, connections)
    if result.served is not None:
        # The builtin driver knows which connections were answered in the window: a
        # connection kept waiting throughout is the under-served signal (its request is
        # in flight all along, so the in-flight mean alone cannot show it).
        shown: float | None = float(result.served)
        short, source = result.served < 0.8 * connections, "driver"
    else:
        # wrk: under-served only when even the measurement's most generous reading says so.
        shown, short = served, upper is not None and upper < 0.8 * connections
    if closed_loop and shown is not None and short:
        # The client could not keep the concurrency, or the server left connections unserved.
        code = "client_short" if client_busy else "underserved"
        found.append(
            Notice(
                code=code,
                params={"in_flight": shown, "concurrency": connections, "source": source},
            )
        )
    bound = edge_bound(result, connections) if closed_loop else None
    if bound is not None and bound > WINDOW_EDGE_LIMIT:
        longer = result.duration_s * bound / WINDOW_EDGE_LIMIT
        found.append(
            Notice(
                code="window_edge",
                params={"bound_percent": round(bound * 100, 1), "duration_s": round(longer, 1)},
            )
        )
    if (errors := error_limit.warning(*failed_of(result), settings.max_error_rate)) is not None:
        found.append(errors)
    if warmup is not None and warmup.settled is False:
        found.append(
            Notice(
                code="unsettled",
                params={"seconds": warmup.seconds, "slices_rps": warmup.slices_rps[-3:]},
            )
        )
    return found


def error_rate(result: LoadResult) -> float:
    """Socket errors and unexpected statuses over all attempts: one meaning for every
    driver (README "What counts as an error")."""
    failed, attempts = failed_of(result)
    return failed / attempts if attempts else 1.0


def failed_of(result: LoadResult) -> tuple[int, int]:
    """(failed, attempted) requests: socket errors and unexpected statuses, of all."""
    return result.error_count + result.unexpected, result.requests + result.error_count


def invalidity(result: LoadResult, limit: float, expect_status: int | None) -> Notice | None:
    """Why a window cannot stand as a sample: errors beyond the limit's uncertainty
    (djbench.verdicts.error_rate), or nothing completed."""
    if not result.requests:
        return Notice(code="no_requests")
    judged = error_limit.judge(*failed_of(result), limit)
    if judged.verdict != "beyond":
        return None
    return Notice(
        code="too_many_errors",
        params={
            "rate": round(judged.rate, 5),
            "interval": [round(v, 5) for v in judged.interval] if judged.interval else None,
            "socket_errors": result.error_count,
            "errors": dict(result.errors),
            "non_2xx": result.non_2xx,
            "unexpected_status": result.unexpected,
            "expect_status": expect_status,
            "limit": limit,
        },
    )


def _warmup_record(result: LoadResult | None, seconds: float, same_process: bool) -> Warmup:
    data = (result.warmup if result is not None else None) or {}
    return Warmup(
        seconds=data.get("seconds", seconds),
        settled=data.get("settled"),
        slices_rps=data.get("slices_rps", []),
        tolerance=data.get("tolerance"),
        requests=data.get("requests", result.requests if result is not None else 0),
        errors=data.get("errors", 0),
        same_process=same_process,
    )


class Observers:
    """What watches the server over a trial's window: its memory (and the proxy's),
    its resources (threads, descriptors, database connections), /proc/stat at the
    edges, and a timed event (--churn); started when the window opens, stopped when it
    closes (or when the driver fails). A soak's memory sampler reports each reading to
    `say`."""

    def __init__(
        self, live: LiveServer, settings: LoadSettings, say: Callable[[str], None]
    ) -> None:
        self.live, self.settings, self.say = live, settings, say
        self.samplers: list[TreeSampler | TimelineSampler] = []
        self.started = live.server.popen is not None  # not a --target deployment
        self.timers: list[threading.Timer] = []
        self.watch = ResourceWatch(live.server, postgres_conninfo() if self.started else None)
        self.edges: list[machine.Ticks | None] = []  # /proc/stat at the window's edges
        self.begun = time.monotonic()

    def _tick(self, reading: Sample, births: int) -> None:
        self.say(
            f"{time.monotonic() - self.begun:.0f}s of {self.settings.duration:.0f}s, "
            f"PSS {(reading.pss or 0) / MB:.1f} MiB, {births} restart(s)"
        )

    def open(self) -> None:
        settings, live = self.settings, self.live
        self.edges.append(machine.read_stat())
        if settings.series:
            self.samplers.append(
                TimelineSampler(live.server, settings.series, tick=self._tick).start()
            )
        else:
            middle = settings.duration / 2  # a full reading while the load runs
            self.samplers.append(TreeSampler(live.server, settings.sample_interval, middle).start())
        if live.proxy:
            self.samplers.append(TreeSampler(live.proxy, settings.sample_interval).start())
        self.watch.start()
        if settings.event is not None:
            self.timers.append(threading.Timer(settings.event.at_s, settings.event.fire))
            self.timers[-1].daemon = True
            self.timers[-1].start()

    def close(self) -> None:
        for timer in self.timers:
            timer.cancel()
        if len(self.edges) == 1:
            self.edges.append(machine.read_stat())
        for sampler in self.samplers:
            sampler.stop()
        if self.samplers:
            self.watch.stop()


def run_trial(
    driver: Driver,
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    settings: LoadSettings,
    log_dir: Path,
    round_index: int = 0,
    say: Callable[[str], None] = lambda message: None,
) -> Trial:
    """Warm up until throughput settles, then a timed window with the load running and
    the server (and proxy) sampled over that same window.

    The builtin driver does both in one process (no edge at the window's start or end).
    wrk cannot be told to skip its first seconds, so the builtin driver warms the server
    up to a settled throughput first and wrk starts 0.1 s later; what wrk's window edges
    may cost is bounded and reported (`window_edge_bound`).
    WebSocket scenarios warm up in a separate run of their driver.

    A soak (`settings.series`) is one long window of the builtin driver, which prints
    its load as slices; the server tree is watched for memory and worker restarts over
    the same window (:class:`~djbench.measure.sampler.TimelineSampler`); `say` gets a
    progress line at every memory reading.
    """
    slug = f"{live.deployment.slug}-{scenario.name}-c{connections}"
    same_process = driver.own_window and scenario.kind != "websocket"
    warmup: Warmup | None = None
    if settings.warmup > 0 and not same_process:
        warmup = _warm_up(driver, live, scenario, connections, settings, log_dir / slug)
    observers = Observers(live, settings, say)
    window = Window(observers.open, observers.close)
    try:
        result, ran = _run_driver(
            driver,
            live,
            scenario,
            connections,
            settings.duration,
            settings,
            log_dir / f"{slug}.driver.log",
            warmup=settings.warmup if same_process else 0.0,
            window=window,
            round_index=round_index,
        )
    finally:
        observers.close()  # stopped already unless the driver failed
    if same_process and settings.warmup > 0:
        warmup = _warmup_record(result, settings.warmup, same_process=True)
    done = Ran(driver.name, result, ran, window, warmup)
    return _trial(done, observers, scenario, connections, round_index)


@dataclass
class Ran:
    """A trial's load as it ran: the driver's result and process, its window, warm-up."""

    driver: str
    result: LoadResult
    process: Drive
    window: Window
    warmup: Warmup | None


def _trial(
    ran: Ran, observers: Observers, scenario: Scenario, connections: int, round_index: int
) -> Trial:
    """The trial's record from what the driver and the observers saw."""
    live, settings, samplers = observers.live, observers.settings, observers.samplers
    result, edges = ran.result, observers.edges
    load = (
        machine.load(edges[0], edges[1], live.deployment.cpus, settings.driver_cpus)
        if len(edges) == 2
        else None
    )
    server_memory = _window_memory(samplers[0], ran.window) if samplers else None
    driver_percent = round(driver_cpu_percent(ran.process, settings.driver_cpus), 1)
    load = machine.with_foreign(
        load,
        server_memory.cpu_percent if server_memory else None,
        live.deployment.cpus,
        driver_percent if settings.driver_cpus else None,
    )
    timeline = None
    if isinstance(watcher := samplers[0] if samplers else None, TimelineSampler):
        opened = ran.window.opened_at or watcher.samples[0].at
        timeline = timelines.timeline(
            watcher, result.series, opened, settings.series or 1.0, settings.growth_threshold
        )
    proxy_memory = _window_memory(samplers[1], ran.window) if len(samplers) > 1 else None
    invalid = invalidity(result, settings.max_error_rate, scenario.expect.status)
    if live.deployment.protocol in ("h2", "h2c") and _no_http2(result):
        # Judged by what the server answered, not by a flag (issue 27): over TLS by what
        # ALPN chose; over http://, h2c with prior knowledge is not negotiated, and a
        # server that lacks it answers none
        got = result.figures.protocol if result.requests else "no HTTP/2 answer"
        invalid = Notice(code="protocol_refused", params={"asked": "HTTP/2", "got": got})
    closed_loop = settings.rate is None or scenario.kind == "websocket"
    served, _, source = in_flight(result, connections)
    return Trial(
        **result.as_dict(),
        round=round_index,
        valid=invalid is None,
        invalid=invalid,
        error_count=result.error_count,
        unexpected_status=result.unexpected,
        status=result.status,
        error_rate=round(error_rate(result), 5),
        in_flight_mean=served,
        in_flight_source=source if served is not None else None,
        window_edge_bound=edge_bound(result, connections) if closed_loop else None,
        warmup=ran.warmup,
        driver_cpu_percent=driver_percent,
        driver_cpu_seconds=round(ran.process.cpu_seconds, 3),
        driver_wall_seconds=round(ran.process.wall_seconds, 3),
        memory_mb=server_memory,
        proxy_memory_mb=proxy_memory,
        warnings=warnings_for(
            result,
            ran.process,
            connections,
            settings,
            closed_loop,
            ran.warmup,
            loops=driver_loops(ran.driver, settings),
            driver_name=ran.driver,
        ),
        driver_command=ran.process.command,
        machine=load,
        timeline=timeline,
        resources=_resources(observers.watch, samplers[0])
        if samplers and observers.started
        else None,
        pages=[PageFigures(**page) for page in result.pages] or None,
    )


def _no_http2(result: LoadResult) -> bool:
    spoken = result.figures.protocol
    return spoken not in ("h2", "h2c") or result.requests == 0  # no answer of any status


def _warm_up(
    driver: Driver,
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    settings: LoadSettings,
    log_stem: Path,
) -> Warmup:
    """A warm-up run of its own (wrk and the WebSocket loads: the builtin driver does
    its warm-up in the same process as its window), then a pause for the server to drain."""
    websocket = scenario.kind == "websocket"
    warmed, _ = _run_driver(
        driver if websocket else DEFAULT,
        live,
        scenario,
        connections,
        settings.warmup if websocket else 0.0,
        settings,
        log_stem.with_name(log_stem.name + ".warmup.log"),
        warmup=0.0 if websocket else settings.warmup,
    )
    time.sleep(DRAIN_SECONDS)
    return _warmup_record(warmed, settings.warmup, same_process=False)


def _resources(watch: ResourceWatch, sampler: TreeSampler | TimelineSampler) -> Resources | None:
    live = [s for s in sampler.samples if s.processes]
    return watch.record([s.threads for s in live], [s.fds for s in live])


def _window_memory(sampler: TreeSampler | TimelineSampler, window: Window) -> WindowMemory | None:
    """The sampler's summary, with how far its edge readings lagged the load window."""
    found = summarise(sampler.samples)
    if found is None or not sampler.samples:
        return found
    first, last = sampler.samples[0].at, sampler.samples[-1].at
    return found.model_copy(
        update={
            "opened_late_s": round(first - window.opened_at, 4) if window.opened_at else None,
            "closed_late_s": round(last - window.closed_at, 4) if window.closed_at else None,
        }
    )


def ws_idle_memory(live: LiveServer, scenario: Scenario, count: int, log: Path) -> WsIdle:
    """Open `count` idle WebSocket connections; the server's PSS growth per connection."""
    before = sample(live.server)
    argv = [
        sys.executable,
        "-m",
        "djbench.measure.drivers.wsload",
        "idle",
        "--url",
        f"ws://{live.host}:{live.port}{scenario.request.path}",
        "--count",
        str(count),
        "--hold",
        "120",
    ]
    with (
        log.open("w") as err,
        subprocess.Popen(
            [*deathsig_prefix(), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        ) as proc,
    ):
        closed_in_time = True
        try:
            assert proc.stdout is not None and proc.stdin is not None
            # wsload prints READY within its --open-within bound (60 s).
            ready = proc.stdout.readline().split()  # READY <opened> <seconds>
            opened = int(ready[1]) if len(ready) >= 2 and ready[0] == "READY" else 0
            open_seconds = float(ready[2]) if len(ready) >= 3 else None
            time.sleep(1.0)  # let the server settle with the connections open
            during = sample(live.server)
            proc.stdin.close()
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            closed_in_time = False  # killed below; the memory figures stand
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    grown = (during.pss or 0) - (before.pss or 0)
    return WsIdle(
        requested=count,
        opened=opened,
        pss_before_mb=round((before.pss or 0) / MB, 2),
        pss_with_mb=round((during.pss or 0) / MB, 2),
        per_connection_kb=round(grown / opened / 1024, 2) if opened else None,
        open_seconds=open_seconds,
        closed_in_time=closed_in_time,
        command=shlex.join(argv),
    )
