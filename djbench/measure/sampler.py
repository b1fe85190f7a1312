"""Memory and CPU of a process tree, sampled in a background thread.

Headline memory is PSS summed over the tree: shared pages are split between the
processes that share them, so the sum is the tree's real footprint (summing RSS counts
shared pages once per process and overstates a preforking server). USS per worker is
the marginal cost of one more worker; RSS is kept for reference. psutil reads
/proc/PID/smaps_rollup for these. The tree is re-listed at every sample, since workers
are recycled.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psutil

from djbench.launch.process import ProcessTree
from djbench.results.model import RestMemory, WindowMemory

MB = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    at: float
    pss: int
    uss: int
    rss: int
    processes: int
    uss_worker_max: int  # the largest USS among non-leader processes (0 if none)
    cpu_seconds: float  # user + system of the tree so far (exited processes included)


@dataclass
class _CpuBook:
    """Last CPU time seen per process, so a process that exits keeps its share."""

    seen: dict[tuple[int, float], float] = field(default_factory=dict)

    def total(self) -> float:
        return sum(self.seen.values())


def sample(tree: ProcessTree, book: _CpuBook | None = None) -> Sample:
    pss = uss = rss = worker_max = 0
    procs = tree.processes()
    count = 0
    for proc in procs:
        try:
            with proc.oneshot():
                mem = proc.memory_full_info()
                cpu = proc.cpu_times()
                created = proc.create_time()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        count += 1
        pss += mem.pss
        uss += mem.uss
        rss += mem.rss
        if proc.pid != tree.pid:
            worker_max = max(worker_max, mem.uss)
        if book is not None:
            book.seen[(proc.pid, created)] = cpu.user + cpu.system
    return Sample(
        at=time.monotonic(),
        pss=pss,
        uss=uss,
        rss=rss,
        processes=count,
        uss_worker_max=worker_max,
        cpu_seconds=book.total() if book else 0.0,
    )


class TreeSampler:
    """Samples a tree every `interval` seconds between start() and stop()."""

    def __init__(self, tree: ProcessTree, interval: float = 0.2) -> None:
        self.tree = tree
        self.interval = interval
        self.samples: list[Sample] = []
        self._book = _CpuBook()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"sampler-{tree.name}", daemon=True)

    def _loop(self) -> None:
        while True:
            self.samples.append(sample(self.tree, self._book))
            if self._stop.wait(self.interval):
                break

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join(timeout=10)
        self.samples.append(sample(self.tree, self._book))
        return self.samples


def summarise(samples: list[Sample]) -> WindowMemory | None:
    """Peak and mean memory (MB) and CPU (% of one core) over a window of samples."""
    live = [s for s in samples if s.processes]
    if not live:
        return None
    wall = live[-1].at - live[0].at
    cpu = (live[-1].cpu_seconds - live[0].cpu_seconds) / wall * 100 if wall > 0 else 0.0
    return WindowMemory(
        pss_peak=round(max(s.pss for s in live) / MB, 2),
        pss_mean=round(sum(s.pss for s in live) / len(live) / MB, 2),
        uss_peak=round(max(s.uss for s in live) / MB, 2),
        rss_peak=round(max(s.rss for s in live) / MB, 2),
        uss_worker_peak=round(max(s.uss_worker_max for s in live) / MB, 2),
        processes=max(s.processes for s in live),
        cpu_percent=round(cpu, 1),
        samples=len(live),
    )


def settle(tree: ProcessTree, seconds: float = 1.0, interval: float = 0.2) -> RestMemory:
    """Memory of a tree at rest: sampled for `seconds`, reported as the median PSS."""
    taken = []
    deadline = time.monotonic() + seconds
    while True:
        taken.append(sample(tree))
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    pss = sorted(s.pss for s in taken)[len(taken) // 2]
    last = taken[-1]
    return RestMemory(
        pss=round(pss / MB, 2),
        uss=round(last.uss / MB, 2),
        rss=round(last.rss / MB, 2),
        processes=last.processes,
    )
