"""What a pair held over its trials (threads, descriptors, database connections), the
exceptions behind its errors, and the leak verdicts (issue 24). Codes only: the words
are djbench.reports.words's.

Connections a layout explains: one per thread of every worker process (a sync worker
holds at most one at a time, a threaded one one per thread), or the pool's max_size per
process when the server's processes reported a pool. Under ASGI Django runs each
request's sync code in its own thread, so a server may open one per request in flight:
that is over the layout (`db_over_layout`), and worst when the connections outlive the
load (`db_kept_after`: persistent connections of threads nobody will reuse). Threads and
descriptors that end every window higher than they began it grow (`threads_grow`,
`fds_grow`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from djbench.results.model import Notice, PairResult, Trial
from djbench.verdicts.engine import stats

GROWTH_TRIALS = 3  # a growth verdict needs at least this many trials in a row
THREADS_GROWTH = 2  # ... and this much more at the end than at the start
FDS_GROWTH = 8
# Over a soak: growth per hour beyond these, with the trend's interval above 0
THREADS_PER_HOUR = 10.0
FDS_PER_HOUR = 50.0
PRODUCTION_WORKERS = 8  # the worker count the cost is projected to ("at 8 workers ...")
TOO_MANY = ("too many clients", "too many connections")  # PostgreSQL: server, role or db limit


@dataclass(frozen=True)
class Held:
    """A pair's figures over its valid and invalid trials alike (a leak shows in both)."""

    threads_peak: int
    fds_peak: int
    db_peak: int | None = None
    db_after: int | None = None
    max_connections: int | None = None
    explained: int | None = None
    exceptions: list[tuple[str, str, int]] = field(default_factory=list)
    exceptions_total: int = 0
    verdicts: list[Notice] = field(default_factory=list)


def explained_connections(entry: PairResult, pool_max: int | None) -> int:
    per_process = pool_max if pool_max else max(1, entry.threads or 1)
    return max(1, entry.workers or 1) * per_process


def held(entry: PairResult) -> Held | None:
    trials = [t for t in entry.trials if t.resources is not None]
    if not trials:
        return None
    found = [t.resources for t in trials if t.resources]
    counted: Counter[tuple[str, str]] = Counter()
    for r in found:
        for e in r.exceptions:
            counted[(e.type, e.message)] += e.count
    dbs = [r.db for r in found if r.db is not None]
    peak = max((d.peak for d in dbs), default=None)
    after = max((d.after for d in dbs if d.after is not None), default=None)
    pool = next((d.pool_max for d in dbs if d.pool_max), None)
    explained = explained_connections(entry, pool) if dbs else None
    figures = Held(
        threads_peak=max(r.threads[1] for r in found),
        fds_peak=max(r.fds[1] for r in found),
        db_peak=peak,
        db_after=after,
        max_connections=next((d.max_connections for d in dbs if d.max_connections), None),
        explained=explained,
        exceptions=[(k, m, c) for (k, m), c in counted.most_common(3)],
        exceptions_total=sum(r.exceptions_total for r in found),
    )
    figures.verdicts.extend(_verdicts(entry, figures, trials))
    return figures


def _verdicts(entry: PairResult, figures: Held, trials: list[Trial]) -> list[Notice]:
    said: list[Notice] = []
    workers = max(1, entry.workers or 1)
    if figures.explained is not None and figures.db_peak is not None:
        kept = figures.db_after is not None and figures.db_after > figures.explained
        if kept or figures.db_peak > figures.explained:
            held_most = max(figures.db_peak, figures.db_after or 0)
            said.append(
                Notice(
                    code="db_kept_after" if kept else "db_over_layout",
                    params={
                        "peak": figures.db_peak,
                        "after": figures.db_after,
                        "explained": figures.explained,
                        "workers": workers,
                        "projected": -(-held_most * PRODUCTION_WORKERS // workers),
                        "production_workers": PRODUCTION_WORKERS,
                        "max_connections": figures.max_connections,
                    },
                )
            )
    exhausted = sum(c for _, m, c in figures.exceptions if any(t in m for t in TOO_MANY))
    if exhausted:
        said.append(Notice(code="db_exhausted", params={"count": exhausted}))
    said += _growth(trials) + _soak_growth(trials)
    return said


def _soak_growth(trials: list[Trial]) -> list[Notice]:
    """Over a soak's time line: threads or descriptors whose trend (stats.trend, its
    interval widened for autocorrelation) grows beyond the per-hour threshold."""
    said = []
    for trial in trials:
        line = trial.timeline
        if line is None:
            continue
        for what, threshold in (("threads", THREADS_PER_HOUR), ("fds", FDS_PER_HOUR)):
            points = [(m.t, float(v)) for m in line.memory if (v := getattr(m, what)) is not None]
            found = stats.trend(points, threshold)
            if found["verdict"] == "grows":
                said.append(
                    Notice(
                        code=f"{what}_grow_soak",
                        params={"per_hour": round(found["per_hour"], 1), "ci95": found["ci95"]},
                    )
                )
    return said


def _growth(trials: list[Trial]) -> list[Notice]:
    """Threads or descriptors higher at the window's end than at its start, by at least
    the threshold, in every trial (each round is a fresh server, and the warm-up has
    filled its pools: a steady window should end where it began)."""
    said = []
    for what, least in (("threads", THREADS_GROWTH), ("fds", FDS_GROWTH)):
        edges = [
            (r.threads if what == "threads" else r.fds)
            for t in trials
            if (r := t.resources) is not None
        ]
        rises = [end - start for start, _, end in edges]
        if len(rises) >= GROWTH_TRIALS and min(rises) >= least:
            said.append(
                Notice(
                    code=f"{what}_grow",
                    params={"least": min(rises), "most": max(rises), "trials": len(rises)},
                )
            )
    return said
