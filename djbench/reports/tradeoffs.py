"""The report's first screen: the run's answer, then per scenario the trade-offs people
weigh (throughput against p99, throughput against peak memory), one point per
deployment, the efficient ones marked and the pairs that may not be ranked drawn apart
(djbench.verdicts.ranking's rule: a deployment unfit on a scenario is drawn apart on
that scenario only). Reads results files only."""

from __future__ import annotations

import statistics

from django.utils.safestring import mark_safe

from djbench.reports import answer_words as answer
from djbench.reports import charts
from djbench.reports.sections import Section
from djbench.verdicts.ranking import efficient, unfit
from djbench.verdicts.runs import Pair, Run, trial_value

# Each trade-off: its title, and the cost axis with the metric it reads (lower is better).
COSTS = (
    ("throughput against p99", "p99 ms (median)", "p99"),
    ("throughput against memory", "peak PSS MiB (median of trials)", "pss_peak"),
)


def _point(pair: Pair, metric: str) -> tuple[float, float] | None:
    """req/s and the cost, medians over the pair's trials (valid or not: a pair drawn
    apart is drawn where it was measured)."""
    trials = pair.valid_trials or pair.entry.trials
    xs = [t.rps for t in trials if t.rps]
    ys = [v for t in trials if (v := trial_value(t, metric)) is not None]
    if not xs or not ys:
        return None
    return statistics.median(xs), statistics.median(ys)


Points = dict[str, tuple[float, float]]


def split(pairs: list[Pair], metric: str, many: bool) -> tuple[Points, Points]:
    """(req/s, cost) of each pair that may be ranked, and of those drawn apart (starved,
    invalid, failed with figures, never marked efficient); an incompatible pair has no
    point."""
    points: Points = {}
    apart: Points = {}
    for pair in pairs:
        if pair.status == "incompatible" or (point := _point(pair, metric)) is None:
            continue
        name = f"{pair.label} [{pair.run_tag}]" if many else pair.label
        if pair.ok and unfit(pair) is None:
            points[name] = point
        else:
            apart[name] = point
    return points, apart


def scatter_svg(pairs: list[Pair], title: str, many: bool) -> str | None:
    """The trade-offs of one scenario side by side; None when fewer than two points could
    be drawn on any of them."""
    panels = []
    for _, axis, metric in COSTS:
        points, apart = split(pairs, metric, many)
        if len(points) + len(apart) >= 2:
            panels.append((points, efficient(points), apart, ("req/s (median)", axis)))
    return charts.scatters(title, panels) if panels else None


def answer_section(runs: list[Run]) -> Section:
    """The answer each run printed at its end, first."""
    lines = [line for run in runs for line in answer.lines(run)]
    return Section(id="answer", title="Answer", preformatted=["\n".join(lines)])


def tradeoff_sections(runs: list[Run]) -> list[Section]:
    many = len(runs) > 1
    sections = []
    for scenario in dict.fromkeys(s for run in runs for s in run.scenarios()):
        pairs = [p for run in runs for p in run.by_scenario(scenario)]
        title = f"{scenario}: throughput against p99 and memory"
        svg = scatter_svg(pairs, title, many)
        if svg is None:
            continue
        sections.append(
            Section(
                id=f"tradeoff-{scenario}",
                title=f"Trade-offs: {scenario}",
                intro="One point per deployment: right is faster, down is cheaper (p99 on "
                "the left, peak memory on the right). Filled points are efficient (no other "
                "is both faster and cheaper); grey crosses were starved or invalid, here or "
                "on another scenario, and are not ranked.",
                svg=mark_safe(svg),
            )
        )
    return sections
