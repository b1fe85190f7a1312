"""Each page's own figures in the report: its throughput (req/s per deployment with its
95% interval over rounds, drawn and tabled) and its latency percentiles (against
concurrency when several levels ran). The pairs a decision reads only: a layout sweep's
are in their own section, and the pairs that may not be ranked are in "Not ranked"."""

from __future__ import annotations

from collections import defaultdict

from django.utils.safestring import mark_safe

from djbench.reports import answer_words as answer
from djbench.reports import charts
from djbench.reports.figures import number
from djbench.reports.sections import Section, label_of, row_name
from djbench.reports.words import broadcast_text, say
from djbench.verdicts.ranking import rps_interval, unfit
from djbench.verdicts.runs import Pair, Run, broadcast_rates, failures
from djbench.verdicts.thresholds import t_interval


def ranked(pair: Pair) -> bool:
    return pair.ok and unfit(pair) is None


def ranked_pages(runs: list[Run]) -> list[tuple[str, list[Pair]]]:
    """Each page of the runs (in their order) with the pairs a decision reads that may
    be ranked there; a page with none is left out. Starved or invalid pairs are never
    drawn or tabled among the valid ones: they are in the trade-offs apart, and in "Not
    ranked"."""
    found = []
    for scenario in dict.fromkeys(s for run in runs for s in run.scenarios()):
        pairs = [p for run in runs for p in answer.pairs_of(run, scenario) if ranked(p)]
        if pairs:
            found.append((scenario, pairs))
    return found


def scenario_sections(runs: list[Run]) -> list[Section]:
    many = len(runs) > 1
    sections = []
    for scenario, pairs in ranked_pages(runs):
        pairs.sort(key=lambda p: -(p.median("rps") or 0))
        labels = [label_of(p, many) for p in pairs]
        rps = [p.median("rps") or 0 for p in pairs]
        spans = [rps_interval(p) for p in pairs]
        section = Section(
            id=f"scenario-{scenario}",
            title=f"Throughput: {scenario}",
            intro="Median req/s over rounds; whiskers are the 95% interval over rounds "
            "(none: one round, no interval).",
            svg=mark_safe(charts.hbar(f"{scenario}: req/s", labels, rps, "req/s", spans)),
            headers=[
                "server",
                "proxy",
                "conc.",
                "trials",
                "req/s median",
                "95% interval",
                "min-max",
                "p50 ms",
                "p99 ms",
                "errors",
                "PSS idle MiB (median)",
                "PSS peak MiB (max of trials)",
                "req/s per 100 MiB (median peak)",
            ],
        )
        for p in pairs:
            s = p.entry.summary
            section.rows.append(
                [
                    row_name(p, many),
                    p.proxy,
                    str(p.concurrency or "-"),
                    str(len(p.valid_trials)),
                    number(p.median("rps")),
                    _span(rps_interval(p)),
                    f"{min(p.series('rps')):,.0f}-{max(p.series('rps')):,.0f}",
                    number(p.median("p50"), 2),
                    number(p.median("p99"), 2),
                    str(failures(s)),
                    number(p.memory("pss_idle"), 1),
                    number(p.memory("pss_peak"), 1),
                    number(p.rps_per_100mb()),
                ]
            )
            if (rates := broadcast_rates(p.entry)) is not None:
                section.notes.append(f"{p.label}: {broadcast_text(rates)}")
            section.notes += [f"{p.label}: {say(w)}" for w in s.warnings]
        sections.append(section)
    return sections


def _span(span: tuple[float, float] | None, digits: int = 0) -> str:
    return "one round" if span is None else f"{span[0]:,.{digits}f}-{span[1]:,.{digits}f}"


def latency_sections(runs: list[Run]) -> list[Section]:
    many = len(runs) > 1
    sections = []
    for scenario, pairs in ranked_pages(runs):
        levels = sorted({p.concurrency or 0 for p in pairs})
        by_server: dict[str, dict[int, Pair]] = defaultdict(dict)
        for p in pairs:
            name = f"{p.label} [{p.run_tag}]" if many else p.label
            by_server[name][p.concurrency or 0] = p
        section = Section(
            id=f"latency-{scenario}",
            title=f"Latency: {scenario}",
            headers=["server", "concurrency", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"],
        )
        if len(levels) > 1:
            series: dict[str, list[float | None]] = {}
            for name, by_level in by_server.items():
                series[f"{name} p50"] = [
                    by_level[c].median("p50") if c in by_level else None for c in levels
                ]
                series[f"{name} p99"] = [
                    by_level[c].median("p99") if c in by_level else None for c in levels
                ]
            section.svg = mark_safe(
                charts.lines(f"{scenario}: p50 and p99 latency", levels, series, "ms")
            )
        else:
            names = list(by_server)
            at = {n: by_server[n][levels[0]] for n in names}
            section.intro = (
                "One concurrency level was run: p50 and p99 side by side, medians over "
                "rounds with their 95% interval (none: one round)."
            )
            section.svg = mark_safe(
                charts.grouped(
                    f"{scenario}: latency at concurrency {levels[0]}",
                    names,
                    {m: [at[n].median(m) or 0 for n in names] for m in ("p50", "p99")},
                    "ms",
                    {m: [t_interval(at[n].series(m)) for n in names] for m in ("p50", "p99")},
                )
            )
        for name, by_level in by_server.items():
            for level, p in sorted(by_level.items()):
                section.rows.append(
                    [name, str(level)]
                    + [number(p.median(m), 2) for m in ("p50", "p90", "p99", "p999", "max")]
                )
        sections.append(section)
    return sections
