"""Before/after comparison of two runs (e.g. a Django upgrade): verdicts with statistics.

For each (server, scenario, concurrency, proxy, variant) found on both sides, and each
of req/s, p99 latency and peak PSS, the decision engine (:mod:`djbench.results.decide`)
gives worse / better / equivalent / inconclusive from one interval of the ratio
NEW / BASE: paired by round when both sides ran in one command (``--matrix``), Welch's
t on log values for two separate runs (``benchcompare``). Benjamini-Hochberg over the
pairs, per metric. A pair whose trials were lost to the driver is "not measured",
never a verdict on the server.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from djbench.reports.words import say
from djbench.results import decide
from djbench.results.analysis import FOREIGN_PERCENT, Pair, Run, foreign_percent

# metric -> (label, +1 when higher is better / -1 when lower is better)
METRICS: dict[str, tuple[str, int]] = {
    # Every one compared trial by trial: the ratios are of per-trial figures (medians).
    "rps": ("req/s", +1),
    "p99": ("p99 latency (median of trials)", -1),
    "pss_peak": ("PSS peak (median of trials' peaks)", -1),
}
# The figures other work's CPU moves: set aside when the machine moved between two
# separate runs; memory (and counts) are judged whatever the CPU did (issue 37 item 7).
TIMED_METRICS = frozenset({"rps", "p99"})
# Plan settings that must match for figures to be comparable.
PLAN_KEYS = (
    "driver",
    "workers",
    "threads",
    "server_cpus",
    "driver_cpus",
    "pinning",
    "keep_alive",
    "new_connection_every",
    "loop",
    "rate",
    "duration",
    "warmup",
    "max_error_rate",
    "memory_sampling",
    "recycle",
    "soak_s",
)
# The machine: a different CPU is a different experiment.
ENVIRONMENT_KEYS = ("cpu_model", "cpu_count")

VERDICT_ORDER = ["worse", "better", "equivalent", "inconclusive", "not measured", "not comparable"]


@dataclass
class MetricResult:
    metric: str
    base_median: float | None
    new_median: float | None
    ratio: float | None
    ci: tuple[float, float] | None  # at the level tested (1 - 2 x level: the TOST interval)
    p_value: float | None  # raw
    n_base: int
    n_new: int
    verdict: str
    note: str = ""
    p_adjusted: float | None = None  # Benjamini-Hochberg, over the pairs of this metric
    change: float = 0.0  # signed so that > 0 is better
    method: str = ""
    detectable: float | None = None  # the change found with 80% power at this look
    drifting: bool = False  # its rounds trend: the mean depends on how long the run was


@dataclass
class PairResult:
    server: str
    proxy: str
    scenario: str
    concurrency: int | None
    verdict: str
    reasons: list[str] = field(default_factory=list)
    metrics: list[MetricResult] = field(default_factory=list)
    variant: str = ""  # a settings variant (--axis), as NAME=VALUE,...
    threshold: float | None = None  # the scenario's own max_slowdown, when it has one

    @property
    def label(self) -> str:
        front = self.proxy  # the pair's front: proxy, and /protocol when not HTTP/1.1
        if front == "none":
            base = self.server
        elif front.startswith("none/"):
            base = f"{self.server}/{front.removeprefix('none/')}"
        else:
            base = f"{self.server}+{front}"
        return f"{base}[{self.variant}]" if self.variant else base

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.metric == name), None)


@dataclass
class Comparison:
    base: str
    new: str
    threshold: float
    alpha: float
    pairs: list[PairResult]
    plan_differences: list[str]
    paired: bool = False
    level: float | None = None  # the alpha this look tested at (< alpha after earlier looks)

    @property
    def worse(self) -> list[PairResult]:
        return [p for p in self.pairs if p.verdict == "worse"]

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for p in self.pairs if p.verdict == v) for v in VERDICT_ORDER}

    def decided(self) -> bool:
        """Every measured pair has a verdict on throughput (worse, better, equivalent)."""
        measured = [p for p in self.pairs if p.metric("rps") is not None]
        return bool(measured) and all(
            p.verdict == "worse" or p.metric("rps").verdict in decide.DECIDED  # type: ignore[union-attr]
            for p in measured
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"counts": self.counts()}


def estimate(metric: str, b: Pair, n: Pair, paired: bool) -> decide.Estimate | None:
    """The log-ratio of one metric: per round when both sides ran in the same rounds."""
    if paired:
        bs, ns = b.by_round(metric), n.by_round(metric)
        rounds = sorted(set(bs) & set(ns))
        return decide.paired([bs[r] for r in rounds], [ns[r] for r in rounds])
    return decide.unpaired(b.series(metric), n.series(metric))


def _metric_result(metric: str, b: Pair, n: Pair, d: decide.Decision) -> MetricResult:
    label, direction = METRICS[metric]
    note = d.note
    if d.verdict in ("worse", "better") and d.ratio is not None:
        shown = d.p_adjusted if d.p_adjusted is not None else d.p
        note = f"{label} {(d.ratio - 1) * 100:+.1f}% (p={shown:.3g}, {d.method})" + (
            f"; {d.note}" if d.note else ""
        )
    elif d.note == "too few":
        note = (
            f"too few trials ({len(b.series(metric))} vs {len(n.series(metric))}): the test "
            f"needs {decide.MIN_ROUNDS} paired rounds or {decide.MIN_TRIALS} trials per side"
        )
    return MetricResult(
        metric,
        b.median(metric),
        n.median(metric),
        d.ratio,
        d.ci,
        d.p,
        len(b.series(metric)),
        len(n.series(metric)),
        d.verdict,
        note,
        p_adjusted=d.p_adjusted,
        change=((d.ratio - 1) * direction) if d.ratio is not None else 0.0,
        method=d.method,
        detectable=d.detectable,
        drifting=d.drifting,
    )


def lost_to_driver(pair: Pair) -> bool:
    """Its only problem is trials the load driver lost: the server was not measured
    there, it did not fail (METHODOLOGY 8)."""
    invalid = [t for t in pair.entry.trials if not t.valid]
    return (
        pair.status == "invalid"
        and bool(invalid)
        and all(t.invalid is not None and t.invalid.code == "driver_failed" for t in invalid)
    )


def _measured(pair: Pair) -> bool:
    return pair.ok or (lost_to_driver(pair) and bool(pair.valid_trials))


def _correctness(base: Pair, new: Pair) -> tuple[str, list[str]] | None:
    """A verdict from status and verified answers alone, when they decide it."""
    for side, pair in (("BASE", base), ("NEW", new)):
        if lost_to_driver(pair) and not pair.valid_trials:
            return "not measured", [f"every trial in {side} was lost to the load driver"]
    if _measured(base) and not _measured(new) and new.status != "ok":
        return "worse", [f"was ok, now {new.status}: {say(new.reason)}"]
    if not _measured(base) and _measured(new):
        return "better", [f"was {base.status} ({say(base.reason)}), now ok"]
    if not _measured(base) and not _measured(new):
        return "not comparable", [f"not measured: {base.status} before, {new.status} now"]
    base_shape = base.entry.verify.shape if base.entry.verify else ""
    new_shape = new.entry.verify.shape if new.entry.verify else ""
    if base_shape and new_shape and base_shape != new_shape:
        return "worse", [f"the verified answer changed shape: {base_shape} -> {new_shape}"]
    return None


def plan_differences(base: Run, new: Run) -> list[str]:
    """Every setting that makes the two runs' figures incomparable, by name."""
    found = []
    for key in PLAN_KEYS:
        b, n = getattr(base.plan, key), getattr(new.plan, key)
        if b != n:
            found.append(f"{key}: {b!r} vs {n!r}")
    for key in ENVIRONMENT_KEYS:
        b, n = getattr(base.environment, key), getattr(new.environment, key)
        if b != n:
            found.append(f"{key}: {b!r} vs {n!r}")
    b_set, n_set = sorted(base.plan.scenarios), sorted(new.plan.scenarios)
    if b_set != n_set:
        # One server lifetime runs every scenario: a different set changes what each
        # scenario's memory figure includes.
        found.append(f"scenario set: {', '.join(b_set)} vs {', '.join(n_set)}")
    return found


def _machine_moved(base: Pair, new: Pair) -> str | None:
    """Why two separate runs' figures of one pair are not comparable because other
    processes took CPU during one of them (the median trial above the bound)."""
    shares = {}
    for side, pair in (("BASE", base), ("NEW", new)):
        found = [f for t in pair.valid_trials if (f := foreign_percent(t)) is not None]
        shares[side] = statistics.median(found) if found else 0.0
    busy = {side: v for side, v in shares.items() if v > FOREIGN_PERCENT}
    if not busy:
        return None
    said = ", ".join(f"{side} {v:.0f}%" for side, v in shares.items())
    return (
        f"the machine moved: other processes took CPU on the server's or driver's cores "
        f"during the trials ({said}, median trial); compare in one command with --matrix"
    )


def _pair_verdict(result: PairResult) -> str:
    """worse if any metric is; better if any is (and none worse); equivalent when
    throughput is and no metric moved; else inconclusive."""
    verdicts = {m.verdict for m in result.metrics}
    if "worse" in verdicts:
        return "worse"
    if "better" in verdicts:
        return "better"
    rps = result.metric("rps")
    return "equivalent" if rps is not None and rps.verdict == "equivalent" else "inconclusive"


def _margin(base: Run, scenario: str, threshold: float) -> float:
    """The verdict threshold of a scenario's pairs: its file's max_slowdown as BASE
    declares it (a change under test may not loosen its own gate), else the command's."""
    meta = base.plan.scenarios.get(scenario)
    return (meta.thresholds if meta else {}).get("max_slowdown", threshold)


def _judge(
    measured: list[tuple[PairResult, Pair, Pair]],
    moved: dict[int, str],
    margins: list[float],
    threshold: float,
    level: float,
    paired: bool,
) -> None:
    """Every measured pair's metrics judged, and its verdict from them; a pair whose
    machine moved keeps only the metrics other work's CPU does not change."""
    # Many pairs at once: per metric (each its own question, "did throughput get worse
    # anywhere?"), Benjamini-Hochberg keeps the share of false verdicts among the
    # verdicts given at the look's level.
    for (result, _, _), margin in zip(measured, margins, strict=True):
        result.threshold = margin if margin != threshold else None
    for metric, (_, direction) in METRICS.items():
        aside = [metric in TIMED_METRICS and id(r) in moved for r, _, _ in measured]
        estimates = [
            None if out else estimate(metric, b, n, paired)
            for (_, b, n), out in zip(measured, aside, strict=True)
        ]
        decisions = decide.judge(estimates, direction, level, margins)
        for (result, b, n), d, out in zip(measured, decisions, aside, strict=True):
            if b.series(metric) or n.series(metric):
                found = _metric_result(metric, b, n, d)
                if out:
                    found.verdict, found.note = "not comparable", "set aside: the machine moved"
                result.metrics.append(found)
    for result, _, _ in measured:
        result.verdict = _pair_verdict(result)
        if (busy := moved.get(id(result))) is not None:
            if result.verdict not in ("worse", "better"):
                result.verdict = "not comparable"
            judged = [m.metric for m in result.metrics if m.metric not in TIMED_METRICS]
            result.reasons.append(
                f"{busy}; req/s and p99 set aside, {', '.join(judged) or 'nothing else'} "
                "judged (memory does not depend on the CPU other work took)"
            )
        result.reasons += [m.note for m in result.metrics if m.verdict in ("worse", "better")]


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
    differences = plan_differences(base, new)
    level = alpha if level is None else level
    new_pairs = {p.key: p for p in new.pairs}
    results: list[PairResult] = []
    measured: list[tuple[PairResult, Pair, Pair]] = []
    moved: dict[int, str] = {}  # id(result) -> why its time figures are set aside
    for b in base.pairs:
        n = new_pairs.pop(b.key, None)
        result = PairResult(
            b.server, b.front, b.scenario, b.concurrency, "inconclusive",
            variant=b.entry.variant_label,
        )  # fmt: skip
        results.append(result)
        if n is None:
            result.verdict, result.reasons = "not comparable", ["not in NEW"]
        elif differences:
            result.verdict, result.reasons = "not comparable", ["different run settings"]
        elif b.entry.scenario_fingerprint != n.entry.scenario_fingerprint:
            result.verdict = "not comparable"
            result.reasons = ["the scenario's definition changed"]
        elif (decided := _correctness(b, n)) is not None:
            result.verdict, result.reasons = decided  # a failure or a changed answer, however busy
        else:
            if not paired and (busy := _machine_moved(b, n)) is not None:
                # Two separate runs: other work on the machine during one of them is in
                # the time figures and nothing can take it out again (paired rounds
                # cancel it); memory is still judged.
                moved[id(result)] = busy
            measured.append((result, b, n))
    _judge(
        measured,
        moved,
        [_margin(base, b.scenario, threshold) for _, b, _ in measured],
        threshold,
        level,
        paired,
    )
    for n in new_pairs.values():
        results.append(
            PairResult(
                n.server,
                n.front,
                n.scenario,
                n.concurrency,
                "not comparable",
                ["not in BASE"],
                variant=n.entry.variant_label,
            )
        )
    return Comparison(
        base=base.run_id,
        new=new.run_id,
        threshold=threshold,
        alpha=alpha,
        pairs=results,
        plan_differences=differences,
        paired=paired,
        level=level,
    )


def reachable(base: Run, new: Run) -> str | None:
    """Why no verdict can be reached between two separate runs (None when one can):
    the engine needs decide.MIN_TRIALS valid trials per side."""
    counts = [
        (len(b.valid_trials), len(n.valid_trials))
        for b in base.pairs
        for n in new.pairs
        if n.key == b.key
    ]
    if not counts:
        return "the two runs have no pair (server, scenario, concurrency, proxy) in common"
    if all(min(c) < decide.MIN_TRIALS for c in counts):
        low = min(min(c) for c in counts)
        return (
            f"no verdict is reachable: some side has {low} valid trial(s) per pair and the "
            f"test needs {decide.MIN_TRIALS} per side; rerun with --trials "
            f"{decide.MIN_TRIALS} or more (or compare in one command with --matrix)"
        )
    return None
