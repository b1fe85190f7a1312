# ruff: noqa: E402  (Django is configured before djbench is imported)
"""Does a short window read the same as a long one? (issue "figures you can defend")

On one warm server per case (server on CPU 0, driver on CPU 1, c=32), runbench's own
trial (`run_trial`: warm-up until settled, sampler, window) with a 1 s and a 10 s
window, interleaved in a shuffled order each round, for both drivers:

- builtin: warm-up and window in one process, the window opening and closing with the
  load running (the default since this change);
- wrk: the builtin warm-up, then wrk's own window (connections opened at its start,
  up to one request per connection unanswered at its end).

    python loadtests/window_length.py [ROUNDS]

Prints, per case and driver, the median req/s of each window length and the ratio
1 s / 10 s with its 95% bootstrap interval. Target: the builtin's within 3% of 1.

On a 2-core machine shared with other tenants the Django cases move by +-20% from trial
to trial, which hides a 3% effect; so a third case isolates the window's edges from the
machine: a loopback server that answers every request after 200 ms, concurrently
(tests/slowserver.py), whose throughput is 32 / 0.2 = 160 req/s whatever the CPU does.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sampleproject.settings")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django

django.setup()

from djbench.launch.live import Deployment, deploy
from djbench.launch.process import pinned_self
from djbench.measure.drivers import DRIVERS, LoadSpec
from djbench.measure.trial import LoadSettings, drive, run_trial
from djbench.plan import scenarios
from djbench.plan.project import current
from djbench.servers import SERVERS
from djbench.verdicts.engine.stats import ratio_ci
from tests.slowserver import SlowServer

SERVER_CPUS, DRIVER_CPUS = (0,), (1,)
CASES = [("gunicorn-sync", "health-sync"), ("uvicorn", "movies-sync")]
WINDOWS = (1.0, 10.0)


def report(title: str, drivers: list[str], found: dict[tuple[str, float], list[float]]) -> None:
    print(title)
    for driver in drivers:
        short, long = found[(driver, WINDOWS[0])], found[(driver, WINDOWS[1])]
        ratio = statistics.median(short) / statistics.median(long)
        ci = ratio_ci(long, short)
        interval = f" [95% {ci[0]:.3f}-{ci[1]:.3f}]" if ci else ""
        print(
            f"  {driver:8s} 1 s: {statistics.median(short):8,.1f}  10 s: "
            f"{statistics.median(long):8,.1f} req/s  1 s / 10 s = {ratio:.3f}{interval}"
        )
        print(f"           1 s trials {[round(v, 1) for v in short]}")
        print(f"           10 s trials {[round(v, 1) for v in long]}")


def latency_bound(rounds: int, drivers: list[str], work: Path) -> None:
    """The same windows against a server whose throughput does not depend on the CPU."""
    found: dict[tuple[str, float], list[float]] = {(d, w): [] for d in drivers for w in WINDOWS}
    rng = random.Random(11)
    with SlowServer() as server:
        for _ in range(rounds):
            for driver, window in rng.sample(list(found), len(found)):
                spec = LoadSpec(
                    host="127.0.0.1",
                    port=server.port,
                    method="GET",
                    path="/",
                    body=None,
                    content_type=None,
                    connections=32,
                    duration=window,
                    warmup=1.0 if driver == "builtin" else 0.0,
                )
                d = DRIVERS[driver]
                ran = drive(d.argv(spec), d.env(spec), DRIVER_CPUS, work / "d.log", 120)
                found[(driver, window)].append(d.parse(ran.output).rps)
    report(f"latency-bound loopback server (200 ms, 160 req/s), {rounds} rounds:", drivers, found)


def main(rounds: int) -> None:
    project = current()
    file = scenarios.load(Path(project.scenarios))
    drivers = [d for d in ("builtin", "wrk") if DRIVERS[d].available()]
    with tempfile.TemporaryDirectory() as tmp, pinned_self(DRIVER_CPUS):
        work = Path(tmp)
        for server, name in CASES:
            scenario = file.select([name])[0]
            deployment = Deployment(SERVERS[server], workers=1, cpus=SERVER_CPUS)
            found: dict[tuple[str, float], list[float]] = {
                (d, w): [] for d in drivers for w in WINDOWS
            }
            with deploy(project, deployment, work, scenario.request.path) as live:
                rng = random.Random(7)
                for _ in range(rounds):
                    for driver, window in rng.sample(list(found), len(found)):
                        settings = LoadSettings(
                            duration=window, warmup=1.0, driver_cpus=DRIVER_CPUS
                        )
                        trial = run_trial(DRIVERS[driver], live, scenario, 32, settings, work)
                        found[(driver, window)].append(trial.rps)
            report(f"{server} / {name}, {rounds} interleaved rounds, c=32:", drivers, found)
        latency_bound(rounds, drivers, work)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
