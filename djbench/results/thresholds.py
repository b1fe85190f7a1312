"""Thresholds a team declares in its scenario file, judged against a pair's trials.

A threshold is **missed** only when the measurement's whole interval lies beyond it,
**met** when the whole interval lies within it, and **too close to call** otherwise (one
trial has no interval: it is always too close to call). Each check is at 95%
two-sided, so a pair that truly sits at its limit is called "missed" at most 2.5% of
the time; over many checks per run that error rate is per check, not per run (the run
lists every check it made).

- p99 latency and peak PSS: a t-interval over the trials, on the log scale (the figures
  are positive and skewed; the same interval the answer gives req/s).
- Error rate: the Wilson score interval of all the trials' failed requests over all
  their requests (scipy's ``binomtest``), which holds at 0 errors and small counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from scipy import stats as scipy_stats

from djbench.results.analysis import Pair, Run

CONFIDENCE = 0.95
Verdict = Literal["met", "missed", "too close"]
# What each threshold reads, and how it is said.
METRICS = {
    "p99_ms": ("p99", "ms"),
    "error_rate": ("error rate", ""),
    "peak_pss_mib": ("peak PSS", "MiB"),
}


@dataclass(frozen=True)
class Check:
    metric: str  # a key of METRICS
    limit: float  # at most this
    value: float
    interval: tuple[float, float] | None
    verdict: Verdict


def t_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """A t-interval of the typical value (geometric mean, log scale); None below two
    positive values."""
    logs = [math.log(v) for v in values if v > 0]
    n = len(logs)
    if n < 2:
        return None
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return math.exp(mean - half), math.exp(mean + half)


def wilson(failed: int, total: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    found = scipy_stats.binomtest(failed, total).proportion_ci(confidence, method="wilson")
    return float(found.low), float(found.high)


def _verdict(limit: float, interval: tuple[float, float] | None) -> Verdict:
    if interval is None:
        return "too close"
    low, high = interval
    if low > limit:
        return "missed"
    return "met" if high <= limit else "too close"


def at_most(metric: str, limit: float, values: Sequence[float]) -> Check:
    """p99_ms or peak_pss_mib from per-trial values."""
    interval = t_interval(values)
    value = math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan
    return Check(metric, limit, value, interval, _verdict(limit, interval))


def error_rate_at_most(limit: float, failed: int, total: int) -> Check:
    interval = wilson(failed, total) if total else None
    value = failed / total if total else math.nan
    return Check("error_rate", limit, value, interval, _verdict(limit, interval))


def said(check: Check) -> str:
    """'p99 32.1 ms [29.0-35.5] > 1 ms' and the like."""
    name, unit = METRICS[check.metric]

    def shown(value: float) -> str:
        return f"{value:.2%}" if check.metric == "error_rate" else f"{value:,.1f}"

    bounds = (
        ""
        if check.interval is None
        else f" [{shown(check.interval[0])}-{shown(check.interval[1])}]"
    )
    limit = f"{check.limit:.2%}" if check.metric == "error_rate" else f"{check.limit:g} {unit}"
    value = shown(check.value) + (f" {unit}" if unit else "")
    relation = {"met": "<=", "missed": ">", "too close": "too close to call against"}
    return f"{name} {value}{bounds} {relation[check.verdict]} {limit}"


def of_pair(pair: Pair, declared: dict[str, float]) -> list[Check]:
    """The checks of one pair against what its scenario declares: its valid trials'
    p99 and peak PSS, every trial's requests for the error rate."""
    found = []
    for metric, series in (("p99_ms", "p99"), ("peak_pss_mib", "pss_peak")):
        if metric in declared and (values := pair.series(series)):
            found.append(at_most(metric, declared[metric], values))
    if "error_rate" in declared and pair.entry.trials:
        failed = sum(t.error_count for t in pair.entry.trials)
        total = sum(t.requests + t.error_count for t in pair.entry.trials)
        found.append(error_rate_at_most(declared["error_rate"], failed, total))
    return found


def of_run(run: Run) -> list[tuple[Pair, Check]]:
    """Every check the run's scenario file asked for, pair by pair (a pair that did not
    run has none: it is a finding of its own)."""
    found = []
    for pair in run.pairs:
        meta = run.plan.scenarios.get(pair.scenario)
        if meta is None or not meta.thresholds or pair.status not in ("ok", "invalid"):
            continue
        found += [(pair, c) for c in of_pair(pair, meta.thresholds)]
    return found
