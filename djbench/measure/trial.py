"""One timed trial: warm up, then load one scenario at one concurrency while sampling.

Also the WebSocket idle-connections memory test. Knows nothing about plans or files.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from djbench.launch.live import LiveServer
from djbench.launch.process import (
    RECORD_DIR,
    ProcessTree,
    command_record,
    deathsig_prefix,
    pinned,
)
from djbench.measure import machine
from djbench.measure.drivers import DRIVERS, Driver, DriverError, LoadResult, LoadSpec
from djbench.measure.drivers.base import WS_MARKER, marked_json
from djbench.measure.sampler import MB, TreeSampler, sample, summarise
from djbench.plan.scenarios import Scenario
from djbench.results.model import Command, Notice, Trial, WsIdle

DRAIN_SECONDS = 0.2  # let sockets close between warm-up and the timed window


@dataclass(frozen=True)
class LoadSettings:
    duration: float
    warmup: float
    driver_cpus: tuple[int, ...]
    rate: float | None = None
    max_error_rate: float = 0.01
    sample_interval: float = 0.2


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


def drive(
    argv: list[str], env: dict[str, str], cpus: tuple[int, ...], log: Path, timeout: float
) -> Drive:
    """Run a driver to completion in its own process group (killed on timeout/interrupt).

    Its CPU time comes from RUSAGE_CHILDREN around the run: the only child reaped in
    that window is the driver.
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
    tree.start()
    try:
        assert tree.popen is not None
        tree.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DriverError(f"the load driver did not finish within {timeout:.0f}s") from None
    finally:
        tree.stop(timeout=5)
    wall = time.monotonic() - started
    output = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    command = command_record(full, env, Path.cwd())
    return Drive(
        output=output, cpu_seconds=_children_cpu() - before, wall_seconds=wall, command=command
    )


def load_spec(
    live: LiveServer, scenario: Scenario, connections: int, duration: float, settings: LoadSettings
) -> LoadSpec:
    r = scenario.request
    return LoadSpec(
        host=live.host,
        port=live.port,
        method=r.method,
        path=r.path,
        body=r.body,
        content_type=r.content_type,
        connections=connections,
        duration=duration,
        threads=max(1, len(settings.driver_cpus)),
        rate=settings.rate,
        headers=r.all_headers(),
        paths=r.paths,
    )


def ws_argv(live: LiveServer, scenario: Scenario, connections: int, duration: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "djbench.measure.drivers.wsload",
        "echo",
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
        extra={"mode": "ws-echo"},
    )


def _run_driver(
    driver: Driver,
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    duration: float,
    settings: LoadSettings,
    log: Path,
) -> tuple[LoadResult, Drive]:
    timeout = duration * 3 + 60
    if scenario.kind == "websocket":
        ran = drive(
            ws_argv(live, scenario, connections, duration), {}, settings.driver_cpus, log, timeout
        )
        return _parse_ws(ran.output), ran
    spec = load_spec(live, scenario, connections, duration, settings)
    ran = drive(driver.argv(spec), driver.env(spec), settings.driver_cpus, log, timeout)
    return driver.parse(ran.output), ran


def in_flight(result: LoadResult) -> float | None:
    """Mean requests in flight during the window, by Little's law (throughput x latency)."""
    mean = result.latency_ms.get("mean")
    return round(result.rps * mean / 1000, 2) if mean and result.requests else None


def driver_cpu_percent(ran: Drive, cpus: tuple[int, ...]) -> float:
    """The driver's CPU time over its wall time, as % of the CPUs it was pinned to."""
    count = len(cpus) or (os.cpu_count() or 1)
    return ran.cpu_seconds / ran.wall_seconds / count * 100 if ran.wall_seconds else 0.0


def warnings_for(
    result: LoadResult, ran: Drive, connections: int, settings: LoadSettings, closed_loop: bool
) -> list[Notice]:
    found = []
    client_cpu = driver_cpu_percent(ran, settings.driver_cpus)
    client_busy = client_cpu >= 90
    if client_busy:
        found.append(Notice(code="driver_busy", params={"cpu_percent": round(client_cpu, 1)}))
    served = in_flight(result)
    if closed_loop and served is not None and served < 0.8 * connections:
        # The client could not keep the concurrency, or the server left connections unserved.
        code = "client_short" if client_busy else "underserved"
        found.append(Notice(code=code, params={"in_flight": served, "concurrency": connections}))
    return found


def error_rate(result: LoadResult) -> float:
    failed = result.error_count + result.non_2xx
    attempts = result.requests + result.error_count
    return failed / attempts if attempts else 1.0


def run_trial(
    driver: Driver,
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    settings: LoadSettings,
    log_dir: Path,
    round_index: int = 0,
) -> Trial:
    """Warm up, drain, then a timed window with the server (and proxy) sampled."""
    slug = f"{live.deployment.slug}-{scenario.name}-c{connections}"
    if settings.warmup > 0:
        # Warm-up always uses the builtin driver at the same concurrency: it takes
        # fractional seconds (wrk only whole ones, so a 0.3 s warm-up would last 1 s),
        # and only its effect on the server (caches, pools, threads) matters.
        warmer = driver if scenario.kind == "websocket" else DRIVERS["builtin"]
        _run_driver(
            warmer,
            live,
            scenario,
            connections,
            settings.warmup,
            settings,
            log_dir / f"{slug}.warmup.log",
        )
        time.sleep(DRAIN_SECONDS)
    machine_before = machine.read_stat()
    server_sampler = TreeSampler(live.server, settings.sample_interval).start()
    proxy_sampler = (
        TreeSampler(live.proxy, settings.sample_interval).start() if live.proxy else None
    )
    try:
        result, ran = _run_driver(
            driver,
            live,
            scenario,
            connections,
            settings.duration,
            settings,
            log_dir / f"{slug}.driver.log",
        )
    finally:
        server_samples = server_sampler.stop()
        proxy_samples = proxy_sampler.stop() if proxy_sampler else []
    window = machine.load(
        machine_before, machine.read_stat(), live.deployment.cpus, settings.driver_cpus
    )
    rate = error_rate(result)
    valid = rate <= settings.max_error_rate and result.requests > 0
    invalid = None
    if not valid:
        invalid = (
            Notice(
                code="too_many_errors",
                params={
                    "rate": round(rate, 5),
                    "socket_errors": result.error_count,
                    "errors": dict(result.errors),
                    "non_2xx": result.non_2xx,
                    "limit": settings.max_error_rate,
                },
            )
            if result.requests
            else Notice(code="no_requests")
        )
    return Trial(
        **result.as_dict(),
        round=round_index,
        valid=valid,
        invalid=invalid,
        error_count=result.error_count,
        error_rate=round(rate, 5),
        in_flight_mean=in_flight(result),
        driver_cpu_percent=round(driver_cpu_percent(ran, settings.driver_cpus), 1),
        driver_cpu_seconds=round(ran.cpu_seconds, 3),
        driver_wall_seconds=round(ran.wall_seconds, 3),
        memory_mb=summarise(server_samples),
        proxy_memory_mb=summarise(proxy_samples) if proxy_samples else None,
        warnings=warnings_for(
            result,
            ran,
            connections,
            settings,
            closed_loop=settings.rate is None or scenario.kind == "websocket",
        ),
        driver_command=ran.command,
        machine=window,
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
            ready = proc.stdout.readline().split()
            opened = int(ready[1]) if len(ready) == 2 and ready[0] == "READY" else 0
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
        closed_in_time=closed_in_time,
        command=shlex.join(argv),
    )
