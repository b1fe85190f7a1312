# ruff: noqa: E402  (Django is configured before djbench is imported)
"""What does runbench's observer cost the server it measures? (the README's table)

Interleaved on one warm gunicorn-sync (1 and 4 workers, server on CPU 0, wrk on CPU 1,
health-sync at c=32, 3 s windows), each variant once per round in a shuffled order:
no sampler; the sampler as runbench had it (smaps_rollup every 0.2 s, runbench's process
unpinned); the same pinned to the driver's CPU; every 1.0 s; cheap readings (statm +
stat) every 0.2 s; and a rich progress display refreshing in this process.

    DJANGO_SETTINGS_MODULE=sampleproject.settings python loadtests/observer_cost.py [ROUNDS]

Prints the median req/s of each variant and its ratio to "no sampler, unpinned".
"""

from __future__ import annotations

import io
import os
import random
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sampleproject.settings")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django

django.setup()

import psutil
from rich.console import Console
from rich.progress import Progress

from djbench.launch.live import Deployment, deploy
from djbench.launch.process import ProcessTree, pinned_self
from djbench.measure.drivers import DRIVERS, LoadSpec
from djbench.measure.trial import drive
from djbench.plan.project import current
from djbench.servers import SERVERS

SERVER_CPUS, DRIVER_CPUS = (0,), (1,)


def reader(tree: ProcessTree, interval: float, full: bool, stop: threading.Event) -> None:
    while not stop.wait(interval):
        for proc in tree.processes():
            try:
                proc.memory_full_info() if full else proc.memory_info()
                proc.cpu_times()
            except psutil.Error:
                pass


# name -> (pin runbench to the driver's CPU, sampler (interval, full) or None, progress)
VARIANTS: dict[str, tuple[bool, tuple[float, bool] | None, bool]] = {
    "no sampler, unpinned": (False, None, False),
    "no sampler, pinned": (True, None, False),
    "smaps 0.2 s, unpinned (before)": (False, (0.2, True), False),
    "smaps 0.2 s, pinned": (True, (0.2, True), False),
    "smaps 1.0 s, pinned": (True, (1.0, True), False),
    "statm 0.2 s, pinned (now)": (True, (0.2, False), False),
    "statm 0.2 s, pinned, progress display": (True, (0.2, False), True),
}


def load(port: int, work: Path, seconds: float = 3.0) -> float:
    wrk = DRIVERS["wrk"]
    spec = LoadSpec(
        host="127.0.0.1",
        port=port,
        method="GET",
        path="/api/sync/health",
        body=None,
        content_type=None,
        connections=32,
        duration=seconds,
    )
    ran = drive(wrk.argv(spec), wrk.env(spec), DRIVER_CPUS, work / "wrk.log", 120)
    return wrk.parse(ran.output).rps


def one(variant: str, port: int, tree: ProcessTree, work: Path) -> float:
    pin, sampler, progress = VARIANTS[variant]
    stop = threading.Event()
    with pinned_self(DRIVER_CPUS if pin else ()):
        thread = None
        if sampler:
            thread = threading.Thread(target=reader, args=(tree, *sampler, stop), daemon=True)
            thread.start()
        display: Callable[[], None] = lambda: None  # noqa: E731
        bar = None
        if progress:
            bar = Progress(console=Console(file=io.StringIO()), refresh_per_second=10)
            bar.start()
            bar.add_task("load", total=None)
            display = bar.stop
        try:
            return load(port, work)
        finally:
            stop.set()
            if thread:
                thread.join()
            display()


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for workers in (1, 4):
            found: dict[str, list[float]] = {v: [] for v in VARIANTS}
            deployment = Deployment(SERVERS["gunicorn-sync"], workers=workers, cpus=SERVER_CPUS)
            with deploy(current(), deployment, work, "/api/sync/health") as live:
                load(live.port, work, 2.0)  # warm
                rng = random.Random(workers)
                for _ in range(rounds):
                    for variant in rng.sample(list(VARIANTS), len(VARIANTS)):
                        found[variant].append(one(variant, live.port, live.server, work))
            base = statistics.median(found["no sampler, unpinned"])
            print(f"gunicorn-sync, {workers} worker(s), {rounds} interleaved rounds:")
            for variant, values in found.items():
                median = statistics.median(values)
                print(f"  {variant:40s} {median:8,.0f} req/s  x{median / base:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
