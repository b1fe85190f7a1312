"""Memory and CPU of a process tree, sampled in a background thread.

Headline memory is PSS summed over the tree: shared pages are split between the
processes that share them, so the sum is the tree's real footprint (summing RSS counts
shared pages once per process and overstates a preforking server). USS per worker is
the marginal cost of one more worker; RSS is kept for reference. The tree is re-listed
at every sample, since workers are recycled.

What a reading costs the server (measured, see README "What measuring costs"):
PSS and USS come from /proc/PID/smaps_rollup, which makes the kernel walk the target's
page tables under its memory-map lock; RSS comes from /proc/PID/statm and CPU time from
/proc/PID/stat, which read counters. So during a timed window the sampler takes only
the cheap readings (RSS, CPU) every `interval`, and the full one (PSS, USS) at the
window's edges: just before the load starts and just after it stops (Python processes
do not give memory back quickly, so the closing reading is the window's PSS peak
within a few hundred kB, while the RSS peak is seen throughout). The sampler runs in
runbench's process, which is pinned to the load driver's CPUs during a run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from djbench.launch.process import ProcessTree
from djbench.results.model import RestMemory, WindowMemory

MB = 1024 * 1024
METHOD = (
    "during the window: RSS (/proc/PID/statm) and CPU (/proc/PID/stat) of every process "
    "of the tree every {interval:g} s; at its edges and once in its middle (the load "
    "running, whatever the driver): PSS and USS (/proc/PID/smaps_rollup)"
)


@dataclass(frozen=True)
class Sample:
    at: float
    rss: int
    processes: int
    cpu_seconds: float  # user + system of the tree so far (exited processes included)
    pss: int | None = None  # full readings only
    uss: int | None = None
    uss_worker_max: int | None = None  # the largest USS of a worker (the leader if alone)
    threads: int = 0  # over the tree (/proc/PID/stat)
    fds: int = 0  # open file descriptors over the tree (/proc/PID/fd)


@dataclass
class CpuBook:
    """Last CPU time seen per process, so a process that exits keeps its share."""

    seen: dict[tuple[int, float], float] = field(default_factory=dict)

    def total(self) -> float:
        return sum(self.seen.values())


def sample(tree: ProcessTree, book: CpuBook | None = None, full: bool = True) -> Sample:
    """One reading of the tree: cheap (RSS, CPU) or full (also PSS and USS)."""
    pss = uss = rss = threads = fds = 0
    uss_by_pid: dict[int, int] = {}
    count = 0
    for proc in tree.processes():
        try:
            with proc.oneshot():
                mem = proc.memory_full_info() if full else proc.memory_info()
                cpu = proc.cpu_times()
                created = proc.create_time()
                threads += proc.num_threads()
                fds += proc.num_fds()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        count += 1
        rss += mem.rss
        if full:
            pss += mem.pss  # type: ignore[union-attr]
            uss += mem.uss  # type: ignore[union-attr]
            uss_by_pid[proc.pid] = mem.uss  # type: ignore[union-attr]
        if book is not None:
            book.seen[(proc.pid, created)] = cpu.user + cpu.system
    worker_max = None
    if full:
        workers = [u for pid, u in uss_by_pid.items() if pid != tree.pid]
        # A single-process server (uvicorn, daphne) is its own only worker.
        worker_max = max(workers) if workers else max(uss_by_pid.values(), default=0)
    return Sample(
        at=time.monotonic(),
        rss=rss,
        processes=count,
        cpu_seconds=book.total() if book else 0.0,
        pss=pss if full else None,
        uss=uss if full else None,
        uss_worker_max=worker_max,
        threads=threads,
        fds=fds,
    )


class TreeSampler:
    """A full reading at start() and stop(), cheap readings every `interval` between, and
    one more full reading `full_after` seconds in (the window's middle): the PSS peak is
    then read while the load runs for every driver, not only at the window's edges
    (for wrk and the WebSocket loads both edges lie outside the load). One
    smaps_rollup walk per process per window: a tenth of the rate measured to cost ~3%
    with four workers (five a second, README), so about 0.3% at most."""

    def __init__(
        self, tree: ProcessTree, interval: float = 0.2, full_after: float | None = None
    ) -> None:
        self.tree = tree
        self.interval = interval
        self.full_after = full_after
        self.samples: list[Sample] = []
        self._book = CpuBook()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"sampler-{tree.name}", daemon=True)

    def _loop(self) -> None:
        started = time.monotonic()
        pending = self.full_after is not None
        while not self._stop.wait(self.interval):
            full = pending and time.monotonic() - started >= (self.full_after or 0.0)
            pending = pending and not full
            self.samples.append(sample(self.tree, self._book, full=full))

    def start(self) -> TreeSampler:
        self.samples.append(sample(self.tree, self._book, full=True))
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        """The closing full reading (once: stopping again returns the same samples)."""
        if self._stop.is_set():
            return self.samples
        self._stop.set()
        self._thread.join(timeout=10)
        self.samples.append(sample(self.tree, self._book, full=True))
        return self.samples


def summarise(samples: list[Sample]) -> WindowMemory | None:
    """Peak and mean memory (MB) and CPU (% of one core) over a window of samples."""
    live = [s for s in samples if s.processes]
    full = [s for s in live if s.pss is not None]
    if not live or not full:
        return None
    wall = live[-1].at - live[0].at
    cpu = (live[-1].cpu_seconds - live[0].cpu_seconds) / wall * 100 if wall > 0 else 0.0
    return WindowMemory(
        pss_peak=round(max(s.pss or 0 for s in full) / MB, 2),
        pss_mean=round(sum(s.pss or 0 for s in full) / len(full) / MB, 2),
        uss_peak=round(max(s.uss or 0 for s in full) / MB, 2),
        rss_peak=round(max(s.rss for s in live) / MB, 2),
        uss_worker_peak=round(max(s.uss_worker_max or 0 for s in full) / MB, 2),
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
    pss = sorted(s.pss or 0 for s in taken)[len(taken) // 2]
    last = taken[-1]
    return RestMemory(
        pss=round(pss / MB, 2),
        uss=round((last.uss or 0) / MB, 2),
        rss=round(last.rss / MB, 2),
        processes=last.processes,
    )


@dataclass(frozen=True)
class Birth:
    """A process of the tree (not its leader) that appeared after the first listing."""

    at: float  # time.monotonic() of its creation (from its start time)
    pid: int
    gone: tuple[int, ...]  # processes of the tree that had disappeared by then


class TimelineSampler:
    """A soak's watcher: a full reading (PSS, USS) every `interval`, and the tree's
    process list every `poll` seconds, so that every worker restart is seen with its
    time (the new process's own start time, to the kernel's clock tick), even when
    memory is read much less often.

    A worker that is born and dies between two polls is missed; `poll` is recorded
    next to the count. Listing the tree reads /proc/PID/stat of the leader's children
    (counters, no page-table walk), so polling often costs the server nothing measurable.
    """

    def __init__(
        self,
        tree: ProcessTree,
        interval: float,
        poll: float = 0.25,
        tick: Callable[[Sample, int], None] | None = None,
    ) -> None:
        self.tree = tree
        self.interval = interval
        self.poll = poll
        self.samples: list[Sample] = []
        self.births: list[Birth] = []
        self.first: tuple[int, ...] = ()
        self._tick = tick
        self._book = CpuBook()
        self._known: dict[int, float] = {}
        self._gone: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"soak-{tree.name}", daemon=True)
        # psutil's create_time() is /proc/stat's boot time (whole seconds) plus the
        # process's start in clock ticks since boot: taking that boot time off again
        # gives the start on CLOCK_BOOTTIME to the tick (10 ms), which is then moved to
        # the monotonic clock (wall-clock conversion would be off by up to a second).
        self._offset = (
            psutil.boot_time() + time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic()
        )

    def _list(self) -> None:
        now: dict[int, float] = {}
        for proc in self.tree.processes():
            if proc.pid == self.tree.pid:
                continue
            try:
                now[proc.pid] = proc.create_time()
            except psutil.Error:
                continue
        for pid in self._known.keys() - now.keys():
            self._gone.append(pid)
        for pid in sorted(now.keys() - self._known.keys(), key=lambda p: now[p]):
            if self.samples or self.births:  # the first listing is the starting set
                self.births.append(Birth(now[pid] - self._offset, pid, tuple(self._gone)))
                self._gone = []
        self._known = now

    def _loop(self) -> None:
        next_full = time.monotonic() + self.interval
        while not self._stop.wait(self.poll):
            self._list()
            if time.monotonic() >= next_full:
                next_full += self.interval
                self.samples.append(sample(self.tree, self._book, full=True))
                if self._tick is not None:
                    self._tick(self.samples[-1], len(self.births))

    def start(self) -> TimelineSampler:
        self._list()
        self.first = tuple(sorted(self._known))
        self.samples.append(sample(self.tree, self._book, full=True))
        self._thread.start()
        return self

    def stop(self) -> TimelineSampler:
        if self._stop.is_set():
            return self
        self._stop.set()
        self._thread.join(timeout=30)
        self._list()
        self.samples.append(sample(self.tree, self._book, full=True))
        return self
