"""benchcalibrate's verdicts: each check's ratio with its interval, from the series
djbench.measure.calibrate measured (a ratio of medians between two separate series, or
the median of round-by-round ratios when both sides ran in every round)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from djbench.verdicts.engine.stats import median_ci, ratio_ci


@dataclass(frozen=True)
class Figures:
    name: str
    rps: list[float]
    driver_cpu: list[float] = field(default_factory=list)  # % of the driver's CPUs
    server_cpu: list[float] = field(default_factory=list)  # the server tree's, % of a CPU

    @property
    def median(self) -> float:
        return statistics.median(self.rps)


# The fewest rounds whose order statistics give the median a 95% interval (6).
MIN_ROUNDS = next(n for n in range(1, 64) if median_ci(range(n)) is not None)


def paired_line(name: str, new: Figures, base: Figures) -> dict[str, Any]:
    """Round by round: new / base req/s, and new / base requests per server CPU-second
    (what a side asked of the server, with the CPU the machine gave it divided out); the
    median of each over the rounds with its distribution-free 95% interval."""
    rps = [n / b for n, b in zip(new.rps, base.rps, strict=True) if b > 0]
    per_cpu = [
        (n / nc) / (b / bc)
        for n, nc, b, bc in zip(new.rps, new.server_cpu, base.rps, base.server_cpu, strict=True)
        if all(math.isfinite(x) and x > 0 for x in (n, nc, b, bc))
    ]
    ci, ci_cpu = median_ci(rps), median_ci(per_cpu)
    return {
        "name": name,
        "ratio": round(statistics.median(rps), 4) if rps else None,
        "ci95": [round(x, 4) for x in ci] if ci else None,
        "per_cpu_ratio": round(statistics.median(per_cpu), 4) if per_cpu else None,
        "per_cpu_ci95": [round(x, 4) for x in ci_cpu] if ci_cpu else None,
        "base_median": round(base.median, 1),
        "new_median": round(new.median, 1),
        "base_server_cpu": _median_or_none(base.server_cpu),
        "new_server_cpu": _median_or_none(new.server_cpu),
        "rounds": len(rps),
    }


def _median_or_none(values: list[float]) -> float | None:
    clean = [v for v in values if not math.isnan(v)]
    return round(statistics.median(clean), 1) if clean else None


def ratio_line(name: str, new: Figures, base: Figures) -> dict[str, Any]:
    ci = ratio_ci(base.rps, new.rps)
    return {
        "name": name,
        "ratio": round(new.median / base.median, 4),
        "ci95": ci,
        "base_median": round(base.median, 1),
        "new_median": round(new.median, 1),
        "n": [len(base.rps), len(new.rps)],
    }
