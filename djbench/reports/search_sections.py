"""The report's sections for the searches: capacity at a latency target (latency
against offered load, the SLO line) and the concurrency sweep."""

from __future__ import annotations

from django.utils.safestring import mark_safe

from djbench.reports import charts
from djbench.reports.figures import number
from djbench.reports.search_words import capacity_text, sweep_text
from djbench.reports.sections import Section, label_of
from djbench.verdicts.runs import Run


def capacity_sections(runs: list[Run]) -> list[Section]:
    """--capacity: per scenario, p99 against offered rate per server, and the table."""
    many = len(runs) > 1
    found = [
        (run, p)
        for run in runs
        for p in run.pairs
        if p.entry.capacity is not None and not p.entry.capacity.screening
    ]
    sections: list[Section] = []
    for scenario in sorted({p.scenario for _, p in found}):
        pairs = [p for _, p in found if p.scenario == scenario]
        pairs.sort(key=lambda p: -((p.entry.capacity.rps or 0) if p.entry.capacity else 0))
        slo = pairs[0].entry.capacity.slo_p99_ms if pairs[0].entry.capacity else 0.0
        curves = {
            label_of(p, many): [
                (s.offered, s.p99_ms)
                for s in p.entry.capacity.steps
                if s.phase == "search" and s.p99_ms
            ]
            for p in pairs
            if p.entry.capacity is not None
        }
        knees = {
            label_of(p, many): p.entry.capacity.rps
            for p in pairs
            if p.entry.capacity is not None and p.entry.capacity.rps
        }
        sections.append(
            Section(
                id=f"capacity-{scenario}",
                title=f"Capacity at p99 <= {slo:g} ms: {scenario}",
                intro="The highest offered rate (open loop, latency from each request's due "
                "time) served with p99 within the target, errors within the limit and 99% "
                "completed, found by doubling then bisecting and confirmed by fresh windows "
                "(the marker); each dot is one window of the search.",
                svg=mark_safe(charts.capacity_curves(scenario, curves, knees, slo)),
                headers=["server", "req/s at the target", "per core", "per 100 MiB", "how"],
                rows=[
                    [
                        label_of(p, many),
                        number(p.entry.capacity.rps),
                        number(p.entry.capacity.per_core),
                        number(p.entry.capacity.per_100mib),
                        capacity_text(p.entry.capacity),
                    ]
                    for p in pairs
                    if p.entry.capacity is not None
                ],
            )
        )
    return sections


def sweep_sections(runs: list[Run]) -> list[Section]:
    """--sweep: req/s against concurrency per server, one chart per scenario."""
    many = len(runs) > 1
    found = [p for run in runs for p in run.pairs if p.entry.sweep is not None]
    sections: list[Section] = []
    for scenario in sorted({p.scenario for p in found}):
        pairs = [p for p in found if p.scenario == scenario and p.entry.sweep is not None]
        curves = {
            label_of(p, many): [(float(s.concurrency), s.rps) for s in p.entry.sweep.steps]
            for p in pairs
            if p.entry.sweep is not None
        }
        sections.append(
            Section(
                id=f"sweep-{scenario}",
                title=f"Concurrency sweep: {scenario}",
                intro="Closed-loop req/s at 1, 2, 4, ... connections until two doublings in "
                "a row raised it by less than 10%; the knee is the smallest concurrency "
                "within 95% of the best.",
                svg=mark_safe(charts.sweep_curves(scenario, curves)),
                headers=["server", "knee", "best req/s", "how"],
                rows=[
                    [
                        label_of(p, many),
                        str(p.entry.sweep.knee or ""),
                        number(p.entry.sweep.max_rps),
                        sweep_text(p.entry.sweep),
                    ]
                    for p in pairs
                    if p.entry.sweep is not None
                ],
            )
        )
    return sections
