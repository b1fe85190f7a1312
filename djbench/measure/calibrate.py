"""How far this machine's measurements can be trusted: the load drivers' ceiling and
the sampler's cost. Figures, not tests: printed and saved, never asserted.

- Driver ceiling: wrk and the builtin driver against the same fast target (Caddy
  answering a static 200 from memory, written in Go), interleaved, pinned apart.
- Sampler overhead: a Django server's req/s with the memory/CPU sampler on and off,
  interleaved.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from djbench.launch.live import Deployment, deploy
from djbench.launch.process import ProcessTree, free_port, pinned, running
from djbench.launch.servers import SERVERS, executable_path
from djbench.measure.drivers import DRIVERS, LoadSpec
from djbench.measure.sampler import TreeSampler
from djbench.measure.trial import drive, driver_cpu_percent
from djbench.plan.project import Project

STATIC_CADDYFILE = """{
\tadmin off
\tauto_https off
\tpersist_config off
}
http://:{$CADDY_LISTEN_PORT} {
\tbind 127.0.0.1
\trespond "ok" 200
}
"""


@dataclass(frozen=True)
class Figures:
    name: str
    rps: list[float]
    driver_cpu: list[float] = field(default_factory=list)  # % of the driver's CPUs

    @property
    def median(self) -> float:
        return statistics.median(self.rps)


def _load(
    driver_name: str,
    port: int,
    path: str,
    connections: int,
    duration: float,
    cpus: tuple[int, ...],
    log: Path,
) -> tuple[float, float]:
    """(req/s, driver CPU as % of its CPUs) of one run."""
    driver = DRIVERS[driver_name]
    spec = LoadSpec(
        host="127.0.0.1",
        port=port,
        method="GET",
        path=path,
        body=None,
        content_type=None,
        connections=connections,
        duration=duration,
        threads=max(1, len(cpus)),
    )
    ran = drive(driver.argv(spec), driver.env(spec), cpus, log, duration * 3 + 60)
    return driver.parse(ran.output).rps, round(driver_cpu_percent(ran, cpus), 1)


def driver_ceiling(
    server_cpus: tuple[int, ...],
    driver_cpus: tuple[int, ...],
    trials: int,
    duration: float,
    connections: int,
    work: Path,
) -> list[Figures]:
    caddy = executable_path("caddy")
    if caddy is None:
        raise RuntimeError('driver ceiling needs caddy: pip install "djbench[caddy]"')
    config = work / "Caddyfile.static"
    config.write_text(STATIC_CADDYFILE)
    port = free_port()
    tree = ProcessTree(
        name="caddy-static",
        cwd=work,
        log_path=work / "caddy-static.log",
        argv=pinned([caddy, "run", "--config", str(config), "--adapter", "caddyfile"], server_cpus),
        env={
            "CADDY_LISTEN_PORT": str(port),
            "HOME": str(work),
            "XDG_DATA_HOME": str(work / "data"),
            "XDG_CONFIG_HOME": str(work / "config"),
        },
    )
    names = [n for n in ("wrk", "builtin") if DRIVERS[n].available()]
    found: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    with running(tree):
        tree.wait_ready(f"http://127.0.0.1:{port}/")
        for _ in range(trials):
            for name in names:  # interleaved
                found[name].append(
                    _load(name, port, "/", connections, duration, driver_cpus, work / f"{name}.log")
                )
    return [Figures(n, [r for r, _ in v], [c for _, c in v]) for n, v in found.items()]


def sampler_overhead(
    project: Project,
    server: str,
    path: str,
    server_cpus: tuple[int, ...],
    driver_cpus: tuple[int, ...],
    trials: int,
    duration: float,
    connections: int,
    work: Path,
) -> list[Figures]:
    driver = "wrk" if DRIVERS["wrk"].available() else "builtin"
    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    deployment = Deployment(server=SERVERS[server], cpus=server_cpus)
    with deploy(project, deployment, work, "/api/sync/health") as live:
        _load(driver, live.port, path, connections, 1.0, driver_cpus, work / "warm.log")
        for _ in range(trials):
            off.append(
                _load(driver, live.port, path, connections, duration, driver_cpus, work / "off.log")
            )
            sampler = TreeSampler(live.server).start()  # runbench's interval (0.2 s)
            try:
                on.append(
                    _load(
                        driver, live.port, path, connections, duration, driver_cpus, work / "on.log"
                    )
                )
            finally:
                sampler.stop()
    return [
        Figures("sampler off", [r for r, _ in off], [c for _, c in off]),
        Figures("sampler on", [r for r, _ in on], [c for _, c in on]),
    ]


def run(
    project: Project,
    server_cpus: tuple[int, ...],
    driver_cpus: tuple[int, ...],
    trials: int,
    duration: float,
    say: Callable[[str], None],
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="djbench-calibrate-") as tmp:
        work = Path(tmp)
        ceiling = driver_ceiling(server_cpus, driver_cpus, trials, duration, 64, work)
        for f in ceiling:
            say(
                f"driver ceiling {f.name}: {f.median:,.0f} req/s "
                f"(trials {[round(r) for r in f.rps]}; driver CPU {f.driver_cpu}%)"
            )
        overhead = sampler_overhead(
            project,
            "uwsgi",
            "/api/sync/health",
            server_cpus,
            driver_cpus,
            trials,
            duration,
            1,
            work,
        )
        for f in overhead:
            say(f"{f.name}: {f.median:,.0f} req/s (trials {[round(r) for r in f.rps]})")
    by_name = {f.name: f.median for f in ceiling}
    report: dict[str, Any] = {
        "driver_ceiling_rps": {f.name: f.rps for f in ceiling},
        "driver_ceiling_cpu_percent": {f.name: f.driver_cpu for f in ceiling},
        "sampler_rps": {f.name: f.rps for f in overhead},
    }
    if "wrk" in by_name and "builtin" in by_name:
        report["builtin_over_wrk"] = round(by_name["builtin"] / by_name["wrk"], 3)
        say(f"builtin / wrk = {report['builtin_over_wrk']:.2f}")
    off_rps, on_rps = overhead[0].median, overhead[1].median
    report["sampler_overhead_percent"] = round((off_rps - on_rps) / off_rps * 100, 2)
    say(
        f"sampler overhead: {report['sampler_overhead_percent']:+.1f}% of req/s "
        "(positive: slower with sampling)"
    )
    return report
