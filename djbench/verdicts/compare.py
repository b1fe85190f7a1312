"""Before/after comparison of two runs (e.g. a Django upgrade): verdicts with statistics.

For each (server, scenario, concurrency, proxy, variant) found on both sides, and each
of req/s, p99 latency and peak PSS, the decision engine (:mod:`djbench.verdicts.engine.decide`)
gives worse / better / equivalent / inconclusive from one interval of the ratio
NEW / BASE: paired by round when both sides ran in one command (``--matrix``), Welch's
t on log values for two separate runs (``benchcompare``). Benjamini-Hochberg over one
family, every pair x metric (x cell: compare_many); "equivalent" only when every judged
metric is, each within its own margin (MARGIN_FACTOR). A pair whose trials were lost to
the driver is "not measured", never a verdict on the server (djbench.verdicts.comparable:
what decides a pair before the statistics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

from djbench.results.model import Notice
from djbench.verdicts.comparable import (
    PairVerdict,
    correctness,
    machine_moved,
    plan_differences,
)
from djbench.verdicts.engine import decide
from djbench.verdicts.runs import Pair, Run

# metric -> +1 when higher is better, -1 when lower is better. Every one compared trial
# by trial: the ratios are of per-trial figures (medians).
DIRECTIONS: dict[str, int] = {"rps": +1, "p99": -1, "pss_peak": -1}
METRICS = tuple(DIRECTIONS)
# Each metric's margin (the smallest change that counts, and its equivalence margin) as a
# multiple of the pair's (--threshold, or the scenario's max_slowdown). p99 gets twice:
# a tail percentile rests on the slowest 1% of a window's requests, and its per-round
# log-ratio sd was 0.8-2.1 times req/s's on six of eight pairs of two 5-round matrices
# here (gunicorn-sync and uvicorn x health-sync and movies-sync, 2026-12-03), 9-16 times
# on gunicorn-sync health-sync (a new connection per request: its tail is the accept
# queue's). With req/s's margin nearly every pair would stay inconclusive on p99 alone.
MARGIN_FACTOR = {"rps": 1.0, "p99": 2.0, "pss_peak": 1.0}
# The figures other work's CPU moves: set aside when the machine moved between two
# separate runs; memory (and counts) are judged whatever the CPU did (issue 37 item 7).
TIMED_METRICS = frozenset({"rps", "p99"})
VERDICT_ORDER: tuple[PairVerdict, ...] = get_args(PairVerdict)


@dataclass
class MetricChange:
    """One metric of one pair, NEW against BASE: the engine's decision and the figures it
    read (codes in `notes`: too_few, detectable, correlated_rounds, drifting,
    set_aside)."""

    metric: str
    base_median: float | None
    new_median: float | None
    ratio: float | None
    ci: tuple[float, float] | None  # at the level tested (1 - 2 x level: the TOST interval)
    p_value: float | None  # raw
    n_base: int
    n_new: int
    verdict: PairVerdict
    notes: tuple[Notice, ...] = ()
    p_adjusted: float | None = None  # Benjamini-Hochberg, over the family (judge_family)
    change: float = 0.0  # signed so that > 0 is better
    method: str = ""  # paired, unpaired or blocked
    detectable: float | None = None  # the change found with 80% power at this look
    drifting: bool = False  # its rounds trend: the mean depends on how long the run was
    estimate: decide.Estimate | None = None  # what was tested (its rounds and error)

    @property
    def p_shown(self) -> float | None:
        return self.p_adjusted if self.p_adjusted is not None else self.p_value

    def noted(self, code: str) -> bool:
        return any(n.code == code for n in self.notes)


@dataclass
class PairChange:
    """One pair (server, front, scenario, concurrency, variant) NEW against BASE: its
    verdict, why (codes) and each metric's change."""

    server: str
    proxy: str
    scenario: str
    concurrency: int | None
    verdict: PairVerdict
    reasons: list[Notice] = field(default_factory=list)
    metrics: list[MetricChange] = field(default_factory=list)
    variant: str = ""  # a settings variant (--axis), as NAME=VALUE,...
    threshold: float | None = None  # the scenario's own max_slowdown, when it has one
    label: str = ""  # the deployment's label (PairResult.label, the one way it is built)

    def metric(self, name: str) -> MetricChange | None:
        return next((m for m in self.metrics if m.metric == name), None)


@dataclass
class Comparison:
    base: str
    new: str
    threshold: float
    alpha: float
    pairs: list[PairChange]
    plan_differences: list[Notice]
    paired: bool = False
    level: float | None = None  # the alpha this look tested at (< alpha after earlier looks)

    @property
    def worse(self) -> list[PairChange]:
        return [p for p in self.pairs if p.verdict == "worse"]

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for p in self.pairs if p.verdict == v) for v in VERDICT_ORDER}

    def decided(self) -> bool:
        """Every measured pair is worse, or has a verdict on every metric it judged
        (equivalence needs them all, so stopping on req/s alone would stop early)."""
        measured = [p for p in self.pairs if p.metric("rps") is not None]
        return bool(measured) and all(
            p.verdict == "worse"
            or all(m.verdict in decide.DECIDED for m in p.metrics if m.verdict != "not comparable")
            for p in measured
        )


def estimate(metric: str, b: Pair, n: Pair, paired: bool) -> decide.Estimate | None:
    """The log-ratio of one metric: per round when both sides ran in the same rounds."""
    if paired:
        bs, ns = b.by_round(metric), n.by_round(metric)
        rounds = sorted(set(bs) & set(ns))
        return decide.paired([bs[r] for r in rounds], [ns[r] for r in rounds])
    return decide.unpaired(b.series(metric), n.series(metric))


def _metric_change(metric: str, b: Pair, n: Pair, d: decide.Decision) -> MetricChange:
    return MetricChange(
        metric,
        b.median(metric),
        n.median(metric),
        d.ratio,
        d.ci,
        d.p,
        len(b.series(metric)),
        len(n.series(metric)),
        d.verdict,
        d.notes,
        p_adjusted=d.p_adjusted,
        change=((d.ratio - 1) * DIRECTIONS[metric]) if d.ratio is not None else 0.0,
        method=d.method,
        detectable=d.detectable,
        drifting=d.drifting,
        estimate=d.estimate,
    )


def _pair_verdict(result: PairChange) -> PairVerdict:
    """worse if any metric is; better if any is (and none worse); equivalent only when
    every judged metric is, each within its own margin; else inconclusive."""
    verdicts = {m.verdict for m in result.metrics}
    if "worse" in verdicts:
        return "worse"
    if "better" in verdicts:
        return "better"
    judged = [m for m in result.metrics if m.verdict != "not comparable"]
    rps = result.metric("rps")
    if rps is None or not judged or any(m.verdict != "equivalent" for m in judged):
        return "inconclusive"
    return "equivalent"


def _margin(base: Run, scenario: str, threshold: float) -> float:
    """The verdict threshold of a scenario's pairs: its file's max_slowdown as BASE
    declares it (a change under test may not loosen its own gate), else the command's."""
    meta = base.plan.scenarios.get(scenario)
    return (meta.thresholds if meta else {}).get("max_slowdown", threshold)


def _judge(
    measured: list[tuple[PairChange, Pair, Pair]],
    moved: dict[int, Notice],
    margins: list[float],
    threshold: float,
    level: float,
    paired: bool,
) -> None:
    """Every measured pair's metrics judged, and its verdict from them; a pair whose
    machine moved keeps only the metrics other work's CPU does not change."""
    for (result, _, _), margin in zip(measured, margins, strict=True):
        result.threshold = margin if margin != threshold else None
    # One family (decide.judge_family): every pair x metric of the comparison (and of
    # every cell, from compare_many) under one Benjamini-Hochberg at the look's level.
    questions, asides = [], []
    for metric, direction in DIRECTIONS.items():
        aside = [metric in TIMED_METRICS and id(r) in moved for r, _, _ in measured]
        estimates = [
            None if out else estimate(metric, b, n, paired)
            for (_, b, n), out in zip(measured, aside, strict=True)
        ]
        factor = MARGIN_FACTOR[metric]
        questions.append(decide.Question(estimates, direction, [m * factor for m in margins]))
        asides.append(aside)
    by_metric = decide.judge_family(questions, level)
    for metric, decisions, aside in zip(METRICS, by_metric, asides, strict=True):
        for (result, b, n), d, out in zip(measured, decisions, aside, strict=True):
            if b.series(metric) or n.series(metric):
                found = _metric_change(metric, b, n, d)
                if out:
                    found.verdict, found.notes = "not comparable", (Notice(code="set_aside"),)
                result.metrics.append(found)
    for result, _, _ in measured:
        result.verdict = _pair_verdict(result)
        if (busy := moved.get(id(result))) is not None:
            if result.verdict not in ("worse", "better"):
                result.verdict = "not comparable"
            judged = [m.metric for m in result.metrics if m.metric not in TIMED_METRICS]
            result.reasons.append(
                Notice(code="timed_set_aside", params={"why": busy, "judged": judged})
            )


def compare(
    base: Run,
    new: Run,
    threshold: float = decide.THRESHOLD,
    alpha: float = decide.ALPHA,
    paired: bool = False,
    level: float | None = None,
) -> Comparison:
    """Every pair of BASE against NEW. `paired`: both ran in the same rounds of one
    command; `level`: the alpha this look may spend (default: all of it, one look)."""
    return compare_many(base, [new], threshold, alpha, paired, level)[0]


def compare_many(
    base: Run,
    news: list[Run],
    threshold: float = decide.THRESHOLD,
    alpha: float = decide.ALPHA,
    paired: bool = False,
    level: float | None = None,
) -> list[Comparison]:
    """Each NEW against BASE, every pair x metric of them all one family (a matrix's
    cells: the exit code ORs them, so their multiplicity is corrected together)."""
    level = alpha if level is None else level
    sides = [_Side.of(base, new, paired) for new in news]
    measured = [m for side in sides for m in side.measured]
    moved = {k: v for side in sides for k, v in side.moved.items()}
    margins = [_margin(base, b.scenario, threshold) for _, b, _ in measured]
    _judge(measured, moved, margins, threshold, level, paired)
    found = []
    for new, side in zip(news, sides, strict=True):
        found.append(
            Comparison(
                base=base.run_id,
                new=new.run_id,
                threshold=threshold,
                alpha=alpha,
                pairs=side.results,
                plan_differences=side.differences,
                paired=paired,
                level=level,
            )
        )
    return found


@dataclass
class _Side:
    """One NEW run's pairs against BASE, before judging: every result, the measured ones
    with both sides, and those whose time figures the machine's other work voids."""

    results: list[PairChange]
    measured: list[tuple[PairChange, Pair, Pair]]
    moved: dict[int, Notice]  # id(result) -> why its time figures are set aside
    differences: list[Notice]

    @classmethod
    def of(cls, base: Run, new: Run, paired: bool) -> _Side:
        side = cls([], [], {}, plan_differences(base, new))
        new_pairs = {p.key: p for p in new.pairs}
        for b in base.pairs:
            n = new_pairs.pop(b.key, None)
            result = _change(b, "inconclusive")
            side.results.append(result)
            if n is None:
                result.verdict, result.reasons = "not comparable", [Notice(code="not_in_new")]
            elif side.differences:
                result.verdict = "not comparable"
                result.reasons = [Notice(code="different_settings")]
            elif b.entry.scenario_fingerprint != n.entry.scenario_fingerprint:
                result.verdict = "not comparable"
                result.reasons = [Notice(code="scenario_changed")]
            elif (decided := correctness(b, n)) is not None:
                verdict, why = decided  # a failure or a changed answer
                result.verdict, result.reasons = verdict, [why]
            else:
                if not paired and (busy := machine_moved(b, n)) is not None:
                    # Two separate runs: other work on the machine during one of them is
                    # in the time figures and nothing can take it out again (paired
                    # rounds cancel it); memory is still judged.
                    side.moved[id(result)] = busy
                side.measured.append((result, b, n))
        for n in new_pairs.values():
            side.results.append(_change(n, "not comparable", Notice(code="not_in_base")))
        return side


def _change(pair: Pair, verdict: PairVerdict, *reasons: Notice) -> PairChange:
    return PairChange(
        pair.server,
        pair.front,
        pair.scenario,
        pair.concurrency,
        verdict,
        list(reasons),
        variant=pair.entry.variant_label,
        label=pair.label,
    )
