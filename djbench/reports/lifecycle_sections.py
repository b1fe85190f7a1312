"""A server's life under a steady load, in the report: a soak's timeline (memory, req/s
and p99 against time, its worker restarts) and churn's events (deploys and restarts:
the requests each lost, and how long until the p99 came back). Reads results files
only."""

from __future__ import annotations

from django.utils.safestring import mark_safe

from djbench.reports import charts
from djbench.reports.figures import number
from djbench.reports.held_words import growth_text, restarts_text
from djbench.reports.sections import Section, label_of, row_name
from djbench.verdicts.runs import Run


def soak_sections(runs: list[Run]) -> list[Section]:
    """One timeline per soaked pair (--soak): memory, throughput, p99 and restarts."""
    many = len(runs) > 1
    sections: list[Section] = []
    for run in runs:
        for p in run.pairs:
            for trial in p.entry.trials:
                line = trial.timeline
                if line is None:
                    continue
                name = f"{label_of(p, many)} {p.scenario}"
                sections.append(
                    Section(
                        id=f"soak-{len(sections)}",
                        title=f"Soak: {name}",
                        intro=f"One {trial.duration_s:,.0f} s window; load in "
                        f"{line.interval_s:g} s slices, memory read every {line.interval_s:g} "
                        f"s, the process list every {line.poll_s:g} s.",
                        svg=mark_safe(
                            charts.timeline(
                                name,
                                [(m.t, m.pss) for m in line.memory],
                                [(x.t, x.requests / x.seconds) for x in line.load if x.seconds],
                                [(x.t, x.p99_ms) for x in line.load if x.p99_ms is not None],
                                [r.t for r in line.restarts],
                            )
                        ),
                        headers=[
                            "restart at s",
                            "new pid",
                            "replaced",
                            "errors near",
                            "p99 near ms",
                        ],
                        rows=[
                            [
                                number(r.t, 1),
                                str(r.pid),
                                ", ".join(str(x) for x in r.replaced),
                                str(r.errors_around),
                                number(r.p99_around_ms, 1),
                            ]
                            for r in line.restarts
                        ],
                        notes=[
                            restarts_text(line),
                            "PSS of the tree: " + growth_text(line.pss_growth, trial.duration_s),
                            "largest worker's USS: "
                            + growth_text(line.uss_worker_growth, trial.duration_s),
                            *([line.pss_growth.method] if line.pss_growth.method else []),
                        ],
                    )
                )
    return sections


def churn_section(runs: list[Run]) -> Section | None:
    """--churn: every event, per pair."""
    many = len(runs) > 1
    rows = [
        [
            row_name(p, many), p.proxy, p.scenario, str(c.workers),
            f"{e.kind} ({e.signal})" if e.signal else e.kind, number(e.t, 1), f"{e.failed:,}",
            number(e.worst_p99_ms, 1), number(e.steady_p99_ms, 1),
            "never" if e.recovered_after_s is None else number(e.recovered_after_s, 1),
            "yes" if e.kept_serving else "no",
        ]
        for run in runs
        for p in run.pairs
        if (c := p.entry.churn) is not None
        for e in c.events
    ]  # fmt: skip
    if not rows:
        return None
    return Section(
        id="churn",
        title="Deploys and restarts: requests lost per event",
        intro="Each event under a steady open-loop load, a third of the way into its "
        "window; failed: errors and wrong statuses from the event to the window's end; "
        "back after: until every later slice's p99 was within twice the steady p99 (or "
        "+5 ms) with no error.",
        headers=[
            *("server", "proxy", "scenario", "workers", "event", "at s", "failed"),
            *("worst p99 ms", "steady p99 ms", "back after s", "kept serving"),
        ],
        rows=rows,
    )
