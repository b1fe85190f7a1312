"""Before/after comparison of two runs (e.g. a Django upgrade): verdicts with statistics.

For each (server, scenario, concurrency, proxy, variant) found in both runs, and each of
req/s, p99 latency and peak PSS: the ratio of medians (NEW / BASE) with a bootstrap
confidence interval (only from 6 trials per side: fewer cannot give one), a two-sided
exact permutation test of the rank sum over the trials (one trial = one sample; exact
with ties too), Holm's correction over the pairs (per metric), and a verdict. A
change is `worse` or `better` only when it is both significant (Holm-adjusted p < alpha)
and larger than the threshold (asv's rule); otherwise `inconclusive`. With few trials
the test cannot reach a small alpha at all (3 vs 3 trials: p >= 0.1); that is said, not
hidden.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

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
    p_value: float | None  # raw, from the exact permutation test
    n_base: int
    n_new: int
    verdict: str
    note: str = ""
    p_adjusted: float | None = None  # Holm, over every test of this comparison
    change: float = 0.0  # signed so that > 0 is better


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


min_p_value = stats.min_p_value
trials_needed = stats.trials_needed


def compare_metric(
    metric: str,
    base: list[float],
    new: list[float],
    medians: tuple[float | None, float | None] | None = None,
) -> MetricResult:
    """One metric of one pair, before the verdict (which :func:`judge` gives once every
    p-value of the comparison is known). `medians` are the runs' stored summaries (the
    one place medians are computed, djbench.results.analysis)."""
    label, direction = METRICS[metric]
    if not base or not new:
        return MetricResult(
            metric, None, None, None, None, None, len(base), len(new), "inconclusive",
            f"no {label} figures on one side",
        )  # fmt: skip
    b_med, n_med = float(np.median(base)), float(np.median(new))
    if medians is not None and None not in medians:
        b_med, n_med = float(medians[0]), float(medians[1])  # type: ignore[arg-type]
    ratio = n_med / b_med if b_med else None
    enough = min(len(base), len(new)) >= stats.CI_MIN_TRIALS
    ci = stats.ratio_ci(base, new) if enough else None
    p, exact = stats.rank_sum_test(base, new)
    note = "" if enough else f"no interval: it needs {stats.CI_MIN_TRIALS} trials per side"
    if not exact:
        note = "; ".join(x for x in (note, "p from 20,000 random splits") if x)
    return MetricResult(
        metric,
        round(b_med, 4),
        round(n_med, 4),
        None if ratio is None else round(ratio, 4),
        ci,
        round(p, 5),
        len(base),
        len(new),
        "inconclusive",
        note,
        change=(ratio - 1) * direction if ratio is not None else 0.0,
    )


def judge(m: MetricResult, threshold: float, alpha: float) -> None:
    """The verdict of one metric from its Holm-adjusted p and its size (asv's rule)."""
    label = METRICS[m.metric][0]
    floor = min_p_value(m.n_base, m.n_new)
    p = m.p_adjusted if m.p_adjusted is not None else m.p_value
    if m.ratio is None or p is None:
        return
    if floor >= alpha:
        m.verdict = "inconclusive"
        m.note = (
            f"too few trials ({m.n_base} vs {m.n_new}): the exact test cannot reach "
            f"alpha={alpha} (smallest p {floor:.3g}); run {trials_needed(alpha)} per side"
        )
    elif p < alpha and abs(m.change) > threshold:
        m.verdict = "better" if m.change > 0 else "worse"
        sign = "+" if m.ratio > 1 else ""
        m.note = f"{label} {sign}{(m.ratio - 1) * 100:.1f}% (p={p:.3g} after Holm)"
    else:
        m.verdict = "inconclusive"
        m.note = (
            "not significant"
            + (" after Holm's correction" if m.p_value is not None and m.p_value < alpha else "")
            if p >= alpha
            else f"significant but within the {threshold:.0%} threshold"
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
            compare_metric(m, b.series(m), n.series(m), (b.median(m), n.median(m))) for m in METRICS
        ]
    # Many pairs are tested at once: per metric (each its own question: "did throughput
    # get worse anywhere?"), Holm keeps the chance of any false alarm among the pairs at
    # alpha. (Over metrics too, a 5 vs 5 trial comparison could never reach 0.01.)
    for metric in METRICS:
        tested = [m for r in results for m in r.metrics if m.metric == metric and m.p_value]
        adjusted = stats.holm([m.p_value or 1.0 for m in tested])
        for m, p in zip(tested, adjusted, strict=True):
            m.p_adjusted = round(p, 5)
    for result in results:
        for m in result.metrics:
            judge(m, threshold, alpha)
        verdicts = {m.verdict for m in result.metrics}
        if result.metrics and result.verdict != "worse":
            result.verdict = (
                "worse"
                if "worse" in verdicts
                else "better"
                if "better" in verdicts
                else "inconclusive"
            )
        result.reasons += [  # each note starts with its metric's name
            m.note for m in result.metrics if m.verdict in ("worse", "better")
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
