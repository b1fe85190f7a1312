"""How far this machine's measurements can be trusted: the load drivers' ceiling and
the sampler's cost. Figures, not tests: printed and saved, never asserted.

- Driver ceiling: wrk, the builtin driver, h2load (HTTP/1.1) and Locust (one worker: its ceiling per
  worker) against the same fast target (Caddy answering a static 200 from memory,
  written in Go), interleaved, pinned apart.
- Observer cost: a Django server's req/s with runbench's memory/CPU sampler on and off,
  interleaved, at runbench's default concurrency, with 1 and 4 workers.
- Agreement: runbench's trial (warm-up, sampler, window) against an independent run of
  the same recorded wrk command on the same server, interleaved in every round; the
  median of the round-by-round ratios, and the same with the server's CPU divided out.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from djbench.launch.live import Deployment, LiveServer, deploy
from djbench.launch.process import ProcessTree, free_port, pinned, pinned_self, running
from djbench.measure.drivers import DEFAULT, DRIVERS, REFERENCE, LoadSpec
from djbench.measure.drivers.wrk import parse_output as parse_wrk
from djbench.measure.sampler import CpuBook, TreeSampler, sample
from djbench.measure.trial import LoadSettings, drive, driver_cpu_percent, load_spec, run_trial
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.servers import (
    CLOSES_CONNECTIONS,
    KEEPS_CONNECTIONS,
    SERVERS,
    caddy,
)
from djbench.verdicts.calibration import MIN_ROUNDS, Figures, paired_line, ratio_line

CONCURRENCY = 32  # runbench's default
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
        # Locust's users need a moment to spawn; its window follows a fixed warm-up.
        warmup=1.0 if driver.worker_processes else 0.0,
        workers=1,
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
    proxy = caddy.path()
    if proxy is None:
        raise RuntimeError(f'driver ceiling needs caddy: pip install "djbench[{caddy.EXTRA}]"')
    config = work / "Caddyfile.static"
    config.write_text(STATIC_CADDYFILE)
    port = free_port()
    tree = ProcessTree(
        name="caddy-static",
        cwd=work,
        log_path=work / "caddy-static.log",
        argv=pinned([proxy, "run", "--config", str(config), "--adapter", "caddyfile"], server_cpus),
        env={
            "CADDY_LISTEN_PORT": str(port),
            "HOME": str(work),
            "XDG_DATA_HOME": str(work / "data"),
            "XDG_CONFIG_HOME": str(work / "config"),
        },
    )
    # h2load over HTTP/1.1 (--h1), so that its ceiling compares with wrk's
    names = [n for n, d in DRIVERS.items() if d.available()]
    found: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    with running(tree):
        tree.wait_ready(f"http://127.0.0.1:{port}/")
        for _ in range(trials):
            for name in names:  # interleaved
                found[name].append(
                    _load(name, port, "/", connections, duration, driver_cpus, work / f"{name}.log")
                )
    return [Figures(n, [r for r, _ in v], [c for _, c in v]) for n, v in found.items()]


def _plain_wrk(argv: list[str], env: dict[str, str], work: Path) -> float:
    """A wrk command run on its own, outside runbench's machinery: its req/s."""
    log = work / "independent.log"
    with log.open("w") as out:
        done = subprocess.run(
            argv,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=600,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"wrk exited with {done.returncode}: {log.read_text()[-300:]}")
    return parse_wrk(log.read_text()).rps


def observer_cost(
    project: Project,
    scenario: Scenario,
    server_cpus: tuple[int, ...],
    driver_cpus: tuple[int, ...],
    trials: int,
    duration: float,
    workers: int,
    work: Path,
) -> list[Figures]:
    """req/s of one warm server with runbench's sampler off and on, interleaved (random
    order in each round), at runbench's default concurrency."""
    driver = REFERENCE.name if REFERENCE.available() else DEFAULT.name
    found: dict[str, list[tuple[float, float]]] = {"sampler off": [], "sampler on": []}
    deployment = Deployment(server=SERVERS[CLOSES_CONNECTIONS], workers=workers, cpus=server_cpus)
    rng = random.Random(workers)
    path = scenario.request.path
    with deploy(project, deployment, work, path) as live:
        _load(driver, live.port, path, CONCURRENCY, 1.0, driver_cpus, work / "warm.log")
        for _ in range(trials):
            for name in rng.sample(list(found), 2):
                sampler = TreeSampler(live.server).start() if name == "sampler on" else None
                try:
                    found[name].append(
                        _load(
                            driver,
                            live.port,
                            path,
                            CONCURRENCY,
                            duration,
                            driver_cpus,
                            work / "o.log",
                        )
                    )
                finally:
                    if sampler is not None:
                        sampler.stop()
    return [Figures(n, [r for r, _ in v], [c for _, c in v]) for n, v in found.items()]


def agreement(
    project: Project,
    scenario: Scenario,
    server_cpus: tuple[int, ...],
    driver_cpus: tuple[int, ...],
    trials: int,
    duration: float,
    workers: int,
    work: Path,
    server: str = CLOSES_CONNECTIONS,
) -> list[Figures]:
    """runbench's trial against an independent run of the same commands, interleaved.

    Each round starts the recorded server command once and runs the three sides on it in
    a random order, each after its own warm-up: the pairs compare the measuring on one
    server, not two launches of it (a fresh process moves req/s by a few percent on its
    own: memory layout, hash seeds). runbench's sides are run_trial() itself, with each
    driver: the builtin one (the default: warm-up and steady-state window in one
    process, sampler over the window) and wrk (builtin warm-up until settled, sampler,
    the wrk window). The independent side warms up with wrk for as long, then runs the
    exact wrk command runbench recorded, as a plain subprocess: no sampler, no runbench
    code in between. Every side also records the server's CPU over its window, so that
    what a side asked of the server (CPU per request) can be told from what the machine
    gave it (a neighbour's burst takes CPU from one side, not work from its requests).
    Returns [runbench builtin, runbench wrk, independent wrk].
    """
    if not REFERENCE.available():
        raise RuntimeError(f"the agreement check needs {REFERENCE.name}: {REFERENCE.install_hint}")
    settings = LoadSettings(duration=duration, warmup=1.0, driver_cpus=driver_cpus)
    deployment = Deployment(server=SERVERS[server], workers=workers, cpus=server_cpus)
    names = ("runbench (builtin)", "runbench (wrk)", "independent wrk")
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    rng = random.Random(100 + workers)
    for _ in range(trials):
        with deploy(project, deployment, work, scenario.request.path) as live:
            for name in rng.sample(names, len(names)):
                found[name].append(_side(name, live, scenario, settings, work))
    return [Figures(n, [r for r, _ in v], server_cpu=[c for _, c in v]) for n, v in found.items()]


def _side(
    name: str, live: LiveServer, scenario: Scenario, settings: LoadSettings, work: Path
) -> tuple[float, float]:
    """One side of an agreement round: (req/s, the server tree's CPU % over its window)."""
    wrk = REFERENCE
    if name.startswith("runbench"):
        driver = DEFAULT if DEFAULT.name in name else wrk
        trial = run_trial(driver, live, scenario, CONCURRENCY, settings, work)
        memory = trial.memory_mb
        return trial.rps, memory.cpu_percent if memory is not None else math.nan
    # The very command line (and variables) run_trial gives wrk.
    spec = load_spec(live, scenario, CONCURRENCY, settings.duration, settings)
    warm = replace(spec, duration=settings.warmup)
    cpus = settings.driver_cpus
    _plain_wrk(pinned(wrk.argv(warm), cpus), wrk.env(warm), work)
    book = CpuBook()
    before = sample(live.server, book, full=False)
    rps = _plain_wrk(pinned(wrk.argv(spec), cpus), wrk.env(spec), work)
    after = sample(live.server, book, full=False)
    cpu = (after.cpu_seconds - before.cpu_seconds) / (after.at - before.at) * 100
    return rps, cpu


def run(
    project: Project,
    scenario: Scenario,
    server_cpus: tuple[int, ...],
    driver_cpus: tuple[int, ...],
    trials: int,
    duration: float,
    say: Callable[[str], None],
    agreement_only: tuple[tuple[str, int], ...] | None = None,
) -> dict[str, Any]:
    """Every check, or with `agreement_only` the agreement alone, on those (server,
    workers) pairs."""
    report: dict[str, Any] = {"trials": trials, "duration": duration, "scenario": scenario.name}
    with (
        tempfile.TemporaryDirectory(prefix="djbench-calibrate-") as tmp,
        pinned_self(driver_cpus),  # as during a run: this process stays off the server's CPUs
    ):
        work = Path(tmp)
        if agreement_only:
            report["agreement"] = agreements(
                project, scenario, (server_cpus, driver_cpus), trials, duration, work, say,
                agreement_only,
            )  # fmt: skip
            return report
        ceiling = driver_ceiling(server_cpus, driver_cpus, trials, duration, 64, work)
        for f in ceiling:
            say(
                f"driver ceiling {f.name}: {f.median:,.0f} req/s "
                f"(trials {[round(r) for r in f.rps]}; driver CPU {f.driver_cpu}%)"
            )
        report["driver_ceiling_rps"] = {f.name: f.rps for f in ceiling}
        report["driver_ceiling_cpu_percent"] = {f.name: f.driver_cpu for f in ceiling}
        by_name = {f.name: f.median for f in ceiling}
        report |= ceiling_ratios(by_name, say)
        report["observer"] = []
        for workers in (1, 4):
            off, on = observer_cost(
                project, scenario, server_cpus, driver_cpus, trials, duration, workers, work
            )
            line = ratio_line(f"sampler on / off, gunicorn-sync x{workers}", on, off)
            report["observer"].append(line)
            say(_say_ratio(line))
        report["agreement"] = agreements(
            project, scenario, (server_cpus, driver_cpus), trials, duration, work, say
        )
    return report


def ceiling_ratios(by_name: dict[str, float], say: Callable[[str], None]) -> dict[str, float]:
    """Each driver's ceiling over the reference's ("builtin_over_wrk"): a Locust figure
    is one worker's, an h2load one is HTTP/1.1 (--h1)."""
    ref = REFERENCE.name
    found = {}
    for name, rps in by_name.items():
        if name != ref and ref in by_name and by_name[ref]:
            found[f"{name}_over_{ref}"] = round(rps / by_name[ref], 3)
            say(f"{name} / {ref} = {found[f'{name}_over_{ref}']:.2f}")
    return found


# Where runbench is held against an independent wrk: a server that closes every
# connection (gunicorn-sync, one and four workers) and one that keeps them (uvicorn).
AGREEMENT = ((CLOSES_CONNECTIONS, 1), (CLOSES_CONNECTIONS, 4), (KEEPS_CONNECTIONS, 1))


def agreement_targets(text: str) -> tuple[tuple[str, int], ...]:
    """--agreement-on "gunicorn-sync:4,uvicorn": server[:workers] pairs (workers 1 unless
    said). ValueError with the valid choices on anything else."""
    found = []
    for part in (p.strip() for p in text.split(",")):
        name, _, count = part.partition(":")
        if name not in SERVERS:
            raise ValueError(f"unknown server {name!r}; valid: {', '.join(sorted(SERVERS))}")
        if not (count or "1").isdigit() or not 1 <= int(count or "1") <= 64:
            raise ValueError(f"{part!r}: workers must be a whole number from 1 to 64")
        found.append((name, int(count or "1")))
    return tuple(found)


def agreements(
    project: Project,
    scenario: Scenario,
    cpus: tuple[tuple[int, ...], tuple[int, ...]],
    trials: int,
    duration: float,
    work: Path,
    say: Callable[[str], None],
    targets: tuple[tuple[str, int], ...] = AGREEMENT,
) -> list[dict[str, Any]]:
    """runbench (builtin and wrk drivers) / an independent wrk, for each target (server,
    workers): AGREEMENT unless told."""
    if not REFERENCE.available():
        say(
            f"agreement with an independent {REFERENCE.name} run: skipped "
            f"({REFERENCE.install_hint})"
        )
        return []
    lines = []
    for server, workers in targets:
        *benches, independent = agreement(
            project, scenario, *cpus, trials, duration, workers, work, server
        )
        for bench in benches:
            name = f"{bench.name} / independent wrk, {server} x{workers}"
            lines.append(paired_line(name, bench, independent))
            say(_say_paired(lines[-1]))
    return lines


def _say_ratio(line: dict[str, Any]) -> str:
    ci = line["ci95"]
    interval = f" [95% interval {ci[0]:.3f}-{ci[1]:.3f}]" if ci else ""
    return (
        f"{line['name']}: {line['ratio']:.3f}{interval} "
        f"({line['new_median']:,.0f} vs {line['base_median']:,.0f} req/s, "
        f"{line['n'][1]} vs {line['n'][0]} interleaved trials)"
    )


def _say_paired(line: dict[str, Any]) -> str:
    def interval(ci: list[float] | None) -> str:
        if ci:
            return f" [95% interval {ci[0]:.3f}-{ci[1]:.3f}]"
        return f" [no 95% interval under {MIN_ROUNDS} rounds]"

    if line["ratio"] is None:
        return f"{line['name']}: no round to compare"
    per_cpu = line["per_cpu_ratio"]
    cpu_part = (
        f"; per server CPU-second {per_cpu:.3f}{interval(line['per_cpu_ci95'])}, "
        f"server CPU {line['new_server_cpu']}% vs {line['base_server_cpu']}%"
        if per_cpu is not None
        else ""
    )
    return (
        f"{line['name']}: median of round ratios {line['ratio']:.3f}{interval(line['ci95'])} "
        f"({line['new_median']:,.0f} vs {line['base_median']:,.0f} req/s, "
        f"{line['rounds']} rounds){cpu_part}"
    )
