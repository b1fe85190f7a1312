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
- Capacity per core (at least): ``--capacity``'s search bracket divided by the server's
  CPUs, the highest offered rate that passed to the lowest that failed. That bracket is
  two single windows, not a confidence interval (the capacity with an interval is issue
  37's): the check's line says "search bracket" so nobody reads it as one.

``max_slowdown`` is not checked here: it is a matrix's verdict threshold for the
scenario's pairs (djbench.reports.compare).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from djbench.results.model import Capacity, Trial
from djbench.verdicts.runs import Pair, Run

CONFIDENCE = 0.95
ThresholdVerdict = Literal["met", "missed", "too close"]
# What a scenario file may hold its pairs to (djbench.reports.threshold_words says them).
METRICS = ("p99_ms", "error_rate", "peak_pss_mib", "capacity_per_core")
AT_LEAST = frozenset({"capacity_per_core"})  # the others are "at most"


@dataclass(frozen=True)
class Check:
    metric: str  # one of METRICS
    limit: float  # at most this
    value: float
    interval: tuple[float, float] | None
    verdict: ThresholdVerdict


def t_interval(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    steps: Sequence[float] | None = None,
) -> tuple[float, float] | None:
    """A t-interval of the typical value (geometric mean, log scale); None below two
    positive values. `steps`: each value's resolution (a windowed rate moves by one
    answer over the window: 1 / its seconds). The spread is never taken below what
    that resolution leaves unknown (a rounding's sd, step / sqrt(12), on the log
    scale): two 1 s windows of a 105 ms page that both counted 12 answers gave an
    interval of no width, [12-12]."""
    kept = [(v, s) for v, s in zip(values, steps or [0.0] * len(values), strict=True) if v > 0]
    logs = [math.log(v) for v, _ in kept]
    n = len(logs)
    if n < 2:
        return None
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    sd = max(sd, math.sqrt(sum((s / v) ** 2 for v, s in kept) / n / 12))
    from scipy import stats as scipy_stats  # here, not at import: runbench --help

    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return math.exp(mean - half), math.exp(mean + half)


def rate_interval(
    trials: Sequence[Trial], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """t_interval of the trials' req/s, each resolved to one answer over its window."""
    return t_interval(
        [t.rps for t in trials],
        confidence,
        [1 / t.duration_s if t.duration_s > 0 else 0.0 for t in trials],
    )


def wilson(failed: int, total: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    from scipy import stats as scipy_stats

    found = scipy_stats.binomtest(failed, total).proportion_ci(confidence, method="wilson")
    return float(found.low), float(found.high)


def _verdict(
    limit: float, interval: tuple[float, float] | None, least: bool = False
) -> ThresholdVerdict:
    if interval is None:
        return "too close"
    low, high = interval
    if (high < limit) if least else (low > limit):
        return "missed"
    return "met" if ((low >= limit) if least else (high <= limit)) else "too close"


def at_most(metric: str, limit: float, values: Sequence[float]) -> Check:
    """p99_ms or peak_pss_mib from per-trial values."""
    interval = t_interval(values)
    value = math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan
    return Check(metric, limit, value, interval, _verdict(limit, interval))


def error_rate_at_most(limit: float, failed: int, total: int) -> Check:
    interval = wilson(failed, total) if total else None
    value = failed / total if total else math.nan
    return Check("error_rate", limit, value, interval, _verdict(limit, interval))


def capacity_at_least(limit: float, capacity: Capacity) -> Check | None:
    """capacity_per_core from a capacity search: met when the confirmed capacity per
    core reaches the limit, missed when even the lowest rate that failed is below it,
    too close otherwise; None when the search was a tuning's screening (no capacity)."""
    if capacity.screening:
        return None
    cores = max(1, capacity.server_cpus)
    if capacity.bracket is not None:
        bounds = (capacity.bracket[0] / cores, capacity.bracket[1] / cores)
    elif capacity.rps is not None:  # it passed up to the driver's ceiling: no upper side
        bounds = (capacity.rps / cores, math.inf)
    else:
        return Check("capacity_per_core", limit, math.nan, None, "too close")
    value = capacity.rps / cores if capacity.rps is not None else bounds[0]
    verdict = _verdict(limit, bounds, least=True)
    if capacity.rps is None and verdict == "met":  # nothing confirmed: not a pass
        verdict = "too close"
    return Check("capacity_per_core", limit, value, bounds, verdict)


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
    capacity = pair.entry.capacity
    limit = declared.get("capacity_per_core")
    if limit is not None and capacity is not None and (c := capacity_at_least(limit, capacity)):
        found.append(c)
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
