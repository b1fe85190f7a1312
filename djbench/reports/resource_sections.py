"""What each server holds while it serves, in the report: its memory (PSS of the whole
process tree, the largest worker's USS, idle WebSocket connections), req/s per 100 MiB
of it, and the threads, descriptors and database connections it held (with the leak
verdicts of djbench.verdicts.held). Reads results files only."""

from __future__ import annotations

from django.utils.safestring import mark_safe

from djbench.reports import charts
from djbench.reports.figures import number
from djbench.reports.held_words import exceptions_text
from djbench.reports.sections import Section, label_of, row_name
from djbench.reports.words import say, ws_short
from djbench.verdicts.held import held
from djbench.verdicts.ranking import unfit
from djbench.verdicts.runs import Pair, Run


def memory_section(runs: list[Run]) -> Section | None:
    many = len(runs) > 1
    worst: dict[str, Pair] = {}
    for run in runs:
        for p in run.pairs:
            if p.ok and unfit(p) is None and p.memory("pss_peak"):
                name = f"{p.label} [{p.run_tag}]" if many else p.label
                if name not in worst or (p.memory("pss_peak") or 0) > (
                    worst[name].memory("pss_peak") or 0
                ):
                    worst[name] = p
    if not worst:
        return None
    names = sorted(worst, key=lambda n: worst[n].memory("pss_peak") or 0)
    section = Section(
        id="memory",
        title="Memory (PSS of the whole process tree)",
        intro="PSS splits shared pages between the processes sharing them, so the tree's sum "
        "is its real footprint. Peak is the largest over every scenario; the largest "
        "worker's USS is the cost of one more worker. The proxy is listed apart.",
        svg=mark_safe(
            charts.grouped(
                "Memory per server (MiB)",
                names,
                {
                    "PSS idle": [worst[n].memory("pss_idle") or 0 for n in names],
                    "PSS peak": [worst[n].memory("pss_peak") or 0 for n in names],
                    "largest worker USS": [worst[n].memory("uss_worker_peak") or 0 for n in names],
                },
                "MiB",
            )
        ),
        headers=[
            "server",
            "processes",
            "PSS idle MiB (median)",
            "PSS peak MiB (max of trials)",
            "PSS after MiB",
            "USS peak MiB",
            "largest worker USS MiB",
            "RSS peak MiB",
            "proxy PSS peak MiB",
        ],
    )
    for n in names:
        p = worst[n]
        proxy = p.entry.proxy_memory_mb.pss_peak if p.entry.proxy_memory_mb else None
        section.rows.append(
            [
                n,
                str(p.memory("processes") or ""),
                number(p.memory("pss_idle"), 1),
                number(p.memory("pss_peak"), 1),
                number(p.memory("pss_after"), 1),
                number(p.memory("uss_peak"), 1),
                number(p.memory("uss_worker_peak"), 1),
                number(p.memory("rss_peak"), 1),
                number(proxy, 1),
            ]
        )
    idle = [(p, w) for run in runs for p in run.pairs if (w := p.entry.ws_idle) is not None]
    section.notes += [
        f"{p.label}: {w.opened} idle WebSocket connections"
        + f", PSS {w.pss_before_mb} -> {w.pss_with_mb} MiB ({w.per_connection_kb} KiB each)"
        + (f"; warning: {short}" if (short := ws_short(w)) else "")
        for p, w in idle
    ]
    return section


def efficiency_section(runs: list[Run]) -> Section | None:
    many = len(runs) > 1
    pairs = [
        p for run in runs for p in run.pairs if p.ok and unfit(p) is None and p.rps_per_100mb()
    ]
    if not pairs:
        return None
    pairs.sort(key=lambda p: -(p.rps_per_100mb() or 0))
    labels = [f"{label_of(p, many)} {p.scenario}" for p in pairs]
    return Section(
        id="efficiency",
        title="Requests per second per 100 MiB of peak PSS",
        svg=mark_safe(
            charts.hbar(
                "req/s per 100 MiB of PSS",
                labels,
                [p.rps_per_100mb() or 0 for p in pairs],
                "req/s per 100 MiB (median peak)",
            )
        ),
        headers=["server", "scenario", "req/s per 100 MiB"],
        rows=[[label_of(p, many), p.scenario, number(p.rps_per_100mb())] for p in pairs],
    )


def held_section(runs: list[Run]) -> Section | None:
    """Threads, descriptors, database connections, exceptions and leak verdicts per pair."""
    many = len(runs) > 1
    rows = []
    for run in runs:
        for p in run.pairs:
            h = held(p.entry)
            if h is None:
                continue
            rows.append(
                [
                    row_name(p, many), p.scenario, str(h.threads_peak), str(h.fds_peak),
                    number(h.db_peak), number(h.db_after), number(h.explained), exceptions_text(h),
                    "; ".join(say(v) for v in h.verdicts),
                ]
            )  # fmt: skip
    if not rows:
        return None
    return Section(
        id="held",
        title="What each server held: threads, descriptors, database connections",
        intro="Peaks over the trials, summed over the server's processes; database "
        "connections on PostgreSQL only (pg_stat_activity, by the application_name runbench "
        "gives the server), the most at one reading and 0.2 s after the load; layout: the "
        "connections its workers and threads (or pool) explain.",
        headers=[
            *("server", "scenario", "threads", "fds", "DB conns", "after", "layout"),
            *("exceptions raised", "found"),
        ],
        rows=rows,
    )
