"""Before/after comparison of two runs (e.g. a Django upgrade): verdicts with statistics.

For each (server, scenario, concurrency, proxy) found in both runs, and each of req/s,
p99 latency and peak PSS: the ratio of medians (NEW / BASE) with a bootstrap confidence
interval, a two-sided Mann-Whitney U test over the trials (one trial = one sample), and
a verdict. A change is `worse` or `better` only when it is both significant (p < alpha)
and larger than the threshold (asv's rule); otherwise `inconclusive`. With few trials
the exact test cannot reach a small alpha at all (3 vs 3 trials: p >= 0.1); that is
said, not hidden.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sstats

from djbench.reports.words import say
from djbench.results import stats
from djbench.results.analysis import Pair, Run

# metric -> (label, +1 when higher is better / -1 when lower is better)
METRICS: dict[str, tuple[str, int]] = {
    "rps": ("req/s", +1),
    "p99": ("p99 latency", -1),
    "pss_peak": ("peak PSS", -1),
}
# Plan settings that must match for figures to be comparable.
PLAN_KEYS = (
    "driver",
    "workers",
    "threads",
    "server_cpus",
    "driver_cpus",
    "keep_alive",
    "loop",
    "rate",
    "duration",
)

VERDICT_ORDER = ["worse", "better", "inconclusive", "not comparable"]


@dataclass
class MetricResult:
    metric: str
    base_median: float | None
    new_median: float | None
    ratio: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    n_base: int
    n_new: int
    verdict: str
    note: str = ""


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

    @property
    def label(self) -> str:
        base = self.server if self.proxy == "none" else f"{self.server}+{self.proxy}"
        return f"{base}[{self.variant}]" if self.variant else base


@dataclass
class Comparison:
    base: str
    new: str
    threshold: float
    alpha: float
    pairs: list[PairResult]
    plan_differences: list[str]

    @property
    def worse(self) -> list[PairResult]:
        return [p for p in self.pairs if p.verdict == "worse"]

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for p in self.pairs if p.verdict == v) for v in VERDICT_ORDER}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"counts": self.counts()}


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney U test can give for n1 vs n2."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def trials_needed(alpha: float) -> int:
    """Trials per side (equal sides) for the exact test to be able to reach alpha."""
    n = 1
    while min_p_value(n, n) >= alpha:
        n += 1
    return n


def compare_metric(
    metric: str,
    base: list[float],
    new: list[float],
    threshold: float,
    alpha: float,
    medians: tuple[float | None, float | None] | None = None,
) -> MetricResult:
    """One metric of one pair. `medians` are the runs' stored summaries (the one place
    medians are computed, djbench.results.analysis); without them, the series' own."""
    label, direction = METRICS[metric]
    if not base or not new:
        return MetricResult(
            metric,
            None,
            None,
            None,
            None,
            None,
            len(base),
            len(new),
            "inconclusive",
            f"no {label} figures on one side",
        )
    b_med, n_med = float(np.median(base)), float(np.median(new))
    if medians is not None and None not in medians:
        b_med, n_med = float(medians[0]), float(medians[1])  # type: ignore[arg-type]
    ratio = n_med / b_med if b_med else None
    ci = stats.ratio_ci(base, new)
    floor = min_p_value(len(base), len(new))
    if base == new or len(set(base + new)) == 1:
        p = 1.0
    else:
        p = float(sstats.mannwhitneyu(new, base, alternative="two-sided", method="auto").pvalue)
    change = (ratio - 1) * direction if ratio is not None else 0.0
    if floor >= alpha:
        verdict = "inconclusive"
        note = (
            f"too few trials ({len(base)} vs {len(new)}): the test cannot reach "
            f"alpha={alpha} (smallest p {floor:.3g}); run {trials_needed(alpha)} per side"
        )
    elif p < alpha and abs(change) > threshold:
        verdict = "better" if change > 0 else "worse"
        note = (
            f"{label} {'+' if ratio and ratio > 1 else ''}{(ratio - 1) * 100:.1f}%" if ratio else ""
        )
    else:
        verdict = "inconclusive"
        note = (
            "not significant"
            if p >= alpha
            else f"significant but within the {threshold:.0%} threshold"
        )
    return MetricResult(
        metric,
        round(b_med, 4),
        round(n_med, 4),
        None if ratio is None else round(ratio, 4),
        ci,
        round(p, 5),
        len(base),
        len(new),
        verdict,
        note,
    )


def _correctness(base: Pair, new: Pair) -> tuple[str, list[str]] | None:
    """A verdict from status and verified answers alone, when they decide it."""
    if base.ok and new.status in ("incompatible", "failed", "invalid"):
        return "worse", [f"was ok, now {new.status}: {say(new.reason)}"]
    if not base.ok and new.ok:
        return "better", [f"was {base.status} ({say(base.reason)}), now ok"]
    if not base.ok and not new.ok:
        return "not comparable", [f"not measured: {base.status} before, {new.status} now"]
    base_shape = base.entry.verify.shape if base.entry.verify else ""
    new_shape = new.entry.verify.shape if new.entry.verify else ""
    if base_shape and new_shape and base_shape != new_shape:
        return "worse", [f"the verified answer changed shape: {base_shape} -> {new_shape}"]
    return None


def plan_differences(base: Run, new: Run) -> list[str]:
    found = []
    for key in PLAN_KEYS:
        b, n = getattr(base.plan, key), getattr(new.plan, key)
        if b != n:
            found.append(f"{key}: {b!r} vs {n!r}")
    return found


def compare(base: Run, new: Run, threshold: float = 0.10, alpha: float = 0.01) -> Comparison:
    differences = plan_differences(base, new)
    new_pairs = {p.key: p for p in new.pairs}
    results: list[PairResult] = []
    for b in base.pairs:
        n = new_pairs.pop(b.key, None)
        result = PairResult(
            b.server,
            b.proxy,
            b.scenario,
            b.concurrency,
            "inconclusive",
            variant=b.entry.variant_label,
        )
        results.append(result)
        if n is None:
            result.verdict, result.reasons = "not comparable", ["not in NEW"]
            continue
        if differences:
            result.verdict, result.reasons = "not comparable", ["different run settings"]
            continue
        if b.entry.scenario_fingerprint != n.entry.scenario_fingerprint:
            result.verdict = "not comparable"
            result.reasons = ["the scenario's definition changed"]
            continue
        decided = _correctness(b, n)
        if decided:
            result.verdict, result.reasons = decided
            if result.verdict != "worse" or not (b.ok and n.ok):
                continue
        result.metrics = [
            compare_metric(
                m, b.series(m), n.series(m), threshold, alpha, (b.median(m), n.median(m))
            )
            for m in METRICS
        ]
        verdicts = {m.verdict for m in result.metrics}
        if result.verdict != "worse":
            result.verdict = (
                "worse"
                if "worse" in verdicts
                else "better"
                if "better" in verdicts
                else "inconclusive"
            )
        result.reasons += [
            f"{METRICS[m.metric][0]}: {m.note}"
            for m in result.metrics
            if m.verdict in ("worse", "better")
        ]
    for n in new_pairs.values():
        results.append(
            PairResult(
                n.server,
                n.proxy,
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
    )
