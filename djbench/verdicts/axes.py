"""Settings axes (--axis): each value against the first, same everything else (server,
front, scenario, concurrency, the other axes' values), judged by the decision engine per
group, paired by round (the values ran in the same rounds), Benjamini-Hochberg over the
groups. Typed values; djbench.reports.guide says them."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Literal

from djbench.verdicts.compare import estimate
from djbench.verdicts.engine import decide
from djbench.verdicts.runs import Pair, Run

INTERFACES = ("wsgi", "asgi")


@dataclass(frozen=True)
class AxisValue:
    """One value against the axis's first over every group that ran both."""

    value: str
    verdict: decide.Change
    ratios: list[float]  # each group's req/s, this value over the first, sorted
    counts: dict[str, int]  # the groups' verdicts: better, worse, equivalent, inconclusive

    @property
    def median_ratio(self) -> float:
        return statistics.median(self.ratios)


@dataclass(frozen=True)
class AxisVerdict:
    """One axis on one interface: each value against the first, and what to do."""

    axis: str
    interface: str
    base: str
    values: list[AxisValue]

    @property
    def decision(self) -> tuple[Literal["use", "keep", "either", "undecided"], str]:
        """use a value better on some group and worse on none; keep the first when every
        other is worse; either when all are equivalent; else undecided."""
        better = [v.value for v in self.values if v.verdict == "better"]
        if better:
            return "use", better[0]
        if all(v.verdict == "worse" for v in self.values):
            return "keep", self.base
        if all(v.verdict == "equivalent" for v in self.values):
            return "either", ""
        return "undecided", ""


def _groups(run: Run, axis: str, interface: str) -> list[dict[str, Pair]]:
    """The pairs that differ only in `axis`: per (server, proxy, scenario, concurrency,
    other axes' values), each value's pair."""
    groups: dict[tuple[object, ...], dict[str, Pair]] = {}
    for p in run.pairs:
        if not p.ok or p.entry.interface != interface or axis not in p.variant:
            continue
        others = tuple(sorted((k, v) for k, v in p.variant.items() if k != axis))
        key = (p.server, p.proxy, p.scenario, p.concurrency, others)
        groups.setdefault(key, {})[p.variant[axis]] = p
    return list(groups.values())


def _value(groups: list[dict[str, Pair]], base: str, value: str) -> AxisValue | None:
    both = [(g[base], g[value]) for g in groups if base in g and value in g]
    both = [(b, o) for b, o in both if b.median("rps") and o.median("rps")]
    if not both:
        return None
    decisions = decide.judge(
        [estimate("rps", b, o, paired=True) for b, o in both], +1, decide.ALPHA
    )
    ratios = sorted((o.median("rps") or 0) / (b.median("rps") or 1) for b, o in both)
    counts = {v: sum(d.verdict == v for d in decisions) for v in decide.DECIDED}
    counts["inconclusive"] = len(decisions) - sum(counts.values())
    verdict: decide.Change = "inconclusive"
    if counts["better"] and not counts["worse"]:
        verdict = "better"
    elif counts["worse"] and not counts["better"]:
        verdict = "worse"
    elif counts["equivalent"] == len(decisions):
        verdict = "equivalent"
    return AxisValue(value, verdict, ratios, counts)


def axis_verdicts(run: Run, axis: str) -> list[AxisVerdict]:
    """Per interface, each value of `axis` against its first value (none when the run
    did not vary it)."""
    values = run.plan.axes.get(axis, [])
    if len(values) < 2:
        return []
    found = []
    for interface in INTERFACES:
        groups = _groups(run, axis, interface)
        judged = [j for v in values[1:] if (j := _value(groups, values[0], v)) is not None]
        if judged:
            found.append(AxisVerdict(axis, interface, values[0], judged))
    return found
