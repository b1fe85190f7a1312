"""The worker count, measured (djbench.run.layouts): the leader's server at each of its
layouts, in a small chart of its own beside a table, never among the deployments."""

from __future__ import annotations

from django.utils.safestring import mark_safe

from djbench.reports import charts
from djbench.reports.figures import number
from djbench.reports.sections import Section
from djbench.reports.sweep_words import sweep_lines, windows_each
from djbench.verdicts import rules
from djbench.verdicts.runs import Run


def _layout(workers: int, threads: int | None) -> str:
    return f"{workers} x {threads}" if threads and threads > 1 else f"{workers} x 1"


def layout_sections(runs: list[Run]) -> list[Section]:
    out = []
    for run in runs:
        swept = run.plan.layouts
        if swept is None:
            continue
        rows = sorted(swept.rows, key=lambda r: (r.workers, r.threads or 0))
        measured = [r for r in rows if r.rps is not None and r.status == "ok"]
        raced = swept.rounds >= rules.MIN_ROUNDS
        section = Section(
            id=f"layouts-{run.run_tag}",
            title=f"The worker count: {swept.server} on {swept.scenario}",
            intro=f"{swept.server} (the leader, {swept.leader}"
            + (", on the heaviest page" if swept.page == "heaviest" else "")
            + ") at each layout of its tuning "
            f"space on {swept.server_cpus} server CPU(s), workers x threads, after the "
            "rounds: "
            + (
                f"raced in {swept.rounds} whole rounds, each figure the median with its 95% "
                "interval; the row marked 'in the rounds' is the leader as the rounds ran "
                "it (not paired with the sweep's rounds)."
                if raced
                else f"{windows_each(swept.rounds)}, a screen, not a test (--tune confirms)."
            ),
            headers=["workers x threads", "req/s", "95% interval", "rounds", "p99 ms", "status"],
            rows=[
                [
                    _layout(r.workers, r.threads)
                    + (" (in the rounds)" if r.label == swept.leader else ""),
                    number(r.rps),
                    f"{r.rps_low:,.0f}-{r.rps_high:,.0f}" if r.rps_low and r.rps_high else "none",
                    str(r.rounds),
                    number(r.p99_ms, 1),
                    r.status,
                ]
                for r in rows
            ],
            notes=[line.strip() for line in sweep_lines(run)],
        )
        if measured:
            section.svg = mark_safe(
                charts.hbar(
                    f"{swept.server} on {swept.scenario}: req/s by layout (workers x threads)",
                    [
                        _layout(r.workers, r.threads)
                        + (" (in the rounds)" if r.label == swept.leader else "")
                        + (f"  p99 {r.p99_ms:,.0f} ms" if r.p99_ms is not None else "")
                        for r in measured
                    ],
                    [r.rps or 0.0 for r in measured],
                    "req/s (median, 95% interval)"
                    if raced
                    else f"req/s, {windows_each(swept.rounds)}",
                    [
                        (r.rps_low, r.rps_high) if r.rps_low and r.rps_high else None
                        for r in measured
                    ],
                )
            )
        if swept.skipped:
            section.notes.append("no time was left for: " + ", ".join(swept.skipped))
        out.append(section)
    return out
