"""The report's first screen: the run's answer, then per scenario the trade-offs people
weigh (throughput against p99, throughput against peak memory), one point per
deployment with its intervals, the efficient ones marked, and the pairs that may not be
ranked named under the chart (djbench.verdicts.ranking's rule: a deployment unfit on a
scenario is said under that scenario's chart only). Reads results files only."""

from __future__ import annotations

import statistics

from django.utils.safestring import mark_safe

from djbench.reports import answer_words as answer
from djbench.reports import charts
from djbench.reports.answer_words import finding_text
from djbench.reports.charts import Spot
from djbench.reports.sections import Section
from djbench.verdicts.ranking import CONFIDENCE, efficient, rps_interval, unfit
from djbench.verdicts.runs import Pair, Run
from djbench.verdicts.thresholds import t_interval

# Each trade-off: its title, and the cost axis with the metric it reads (lower is better).
COSTS = (
    ("throughput against p99", "p99 ms (median)", "p99"),
    ("throughput against memory", "peak PSS MiB (median of trials)", "pss_peak"),
)


def _spot(pair: Pair, metric: str) -> Spot | None:
    """req/s and the cost, medians over the pair's valid trials, each with its 95%
    interval over rounds (djbench.verdicts.thresholds.t_interval, as the answer's)."""
    xs, ys = pair.series("rps"), pair.series(metric)
    if not xs or not ys:
        return None
    return Spot(
        statistics.median(xs),
        statistics.median(ys),
        rps_interval(pair, CONFIDENCE),
        t_interval(ys, CONFIDENCE),
    )


def split(pairs: list[Pair], metric: str, many: bool) -> tuple[dict[str, Spot], list[Pair]]:
    """The spot of each pair that may be ranked, and the pairs that may not (starved,
    invalid, failed, incompatible): said under the chart, never drawn among them."""
    spots: dict[str, Spot] = {}
    apart: list[Pair] = []
    for pair in pairs:
        if not pair.ok or unfit(pair) is not None:
            apart.append(pair)
        elif (spot := _spot(pair, metric)) is not None:
            spots[f"{pair.label} [{pair.run_tag}]" if many else pair.label] = spot
    return spots, apart


def scatter_svg(pairs: list[Pair], title: str, many: bool) -> str | None:
    """The trade-offs of one scenario side by side; None when fewer than two points could
    be drawn on any of them."""
    panels = []
    for _, axis, metric in COSTS:
        spots, _ = split(pairs, metric, many)
        if len(spots) >= 2:
            points = {n: (s.x, s.y) for n, s in spots.items()}
            panels.append((spots, efficient(points), ("req/s (median)", axis)))
    return charts.scatters(title, panels) if panels else None


def apart_note(pairs: list[Pair]) -> str | None:
    """The deployments not ranked on this page, a row under its chart."""
    said = dict.fromkeys(f"{p.label} ({finding_text(p)})" for p in pairs)
    return ("Not ranked on this page: " + "; ".join(said)) if said else None


def answer_section(runs: list[Run]) -> Section:
    """The answer each run printed at its end, first."""
    lines = [line for run in runs for line in answer.lines(run)]
    return Section(
        id="answer",
        title="The answer, as the run printed it",
        preformatted=["\n".join(lines)],
    )


def tradeoff_sections(runs: list[Run]) -> list[Section]:
    many = len(runs) > 1
    sections = []
    for scenario in dict.fromkeys(s for run in runs for s in run.scenarios()):
        # The pairs a decision reads: a layout sweep's are drawn in their own chart.
        pairs = [p for run in runs for p in answer.pairs_of(run, scenario)]
        title = f"{scenario}: throughput against p99 and memory"
        svg = scatter_svg(pairs, title, many)
        if svg is None:
            continue
        sections.append(
            Section(
                id=f"tradeoff-{scenario}",
                title=f"Trade-offs: {scenario}",
                intro="One point per deployment: right is faster, down is cheaper (p99 on "
                "the left, peak memory on the right), each figure the median of its rounds "
                "with its 95% interval as a bar (none: one round). Filled points are "
                "efficient (no other is both faster and cheaper).",
                svg=mark_safe(svg),
                notes=[note] if (note := apart_note(split(pairs, "p99", many)[1])) else [],
            )
        )
    return sections
