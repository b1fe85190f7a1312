"""A threshold check in words: 'p99 32.1 ms [29.0-35.5] > 1 ms' and the like, for a
run's checks (djbench.verdicts.thresholds.Check) and a matrix's (MatrixCheck) alike."""

from __future__ import annotations

import math
from typing import Protocol

from djbench.verdicts.thresholds import AT_LEAST

# How each threshold is named, and its unit.
NAMES = {
    "p99_ms": ("p99", "ms"),
    "error_rate": ("error rate", ""),
    "peak_pss_mib": ("peak PSS", "MiB"),
    "capacity_per_core": ("capacity per core", "req/s"),
}


class Checked(Protocol):
    @property
    def metric(self) -> str: ...
    @property
    def limit(self) -> float | None: ...
    @property
    def value(self) -> float | None: ...
    @property
    def interval(self) -> tuple[float, float] | None: ...
    @property
    def verdict(self) -> str: ...


def said(check: Checked) -> str:
    """'p99 32.1 ms [29.0-35.5] > 1 ms' and the like."""
    name, unit = NAMES.get(check.metric, (check.metric, ""))

    def shown(value: float | None) -> str:
        if value is None or math.isnan(value):
            return "?"
        return f"{value:.2%}" if check.metric == "error_rate" else f"{value:,.1f}"

    bounds = ""
    if check.interval is not None:
        low, high = check.interval
        bounds = f" [{shown(low)}-{'no failure' if math.isinf(high) else shown(high)}]"
        if check.metric in AT_LEAST:
            bounds = f" (search bracket{bounds})"
    if check.limit is None:
        limit = "its limit"
    elif check.metric == "error_rate":
        limit = f"{check.limit:.2%}"
    else:
        limit = f"{check.limit:g} {unit}"
    value = shown(check.value) + (f" {unit}" if unit else "")
    least = check.metric in AT_LEAST
    relation = {
        "met": ">=" if least else "<=",
        "missed": "<" if least else ">",
        "too close": "too close to call against",
    }
    return f"{name} {value}{bounds} {relation.get(check.verdict, check.verdict)} {limit}"
