"""A soak's growth verdict: whether memory grows, shrinks or holds over its time line
(the engine's trend, its interval widened for the readings' autocorrelation)."""

from __future__ import annotations

from djbench.plan.runplan import GROWTH_THRESHOLD_MB_H
from djbench.results.model import Growth
from djbench.verdicts.engine import stats

GROWTH_METHOD = (
    "least squares over the readings after the first {skip:.0f} s, its interval widened "
    "for their autocorrelation (lag-1 {lag1:.2f}: worth {n_eff:.0f} independent readings), "
    "t on n_eff - 2 degrees of freedom; grows/shrinks only beyond {threshold:g} MiB/h"
)


def growth(points: list[tuple[float, float]], threshold: float = GROWTH_THRESHOLD_MB_H) -> Growth:
    found = stats.trend(points, threshold)
    if found["verdict"] == "too_short":
        return Growth(verdict="too_short", skipped_s=found["skipped_s"])
    return Growth(
        mb_per_hour=found["per_hour"],
        ci95=found["ci95"],
        verdict=found["verdict"],
        effective_n=found["effective_n"],
        lag1=found["lag1"],
        threshold_mb_per_hour=threshold,
        skipped_s=found["skipped_s"],
        method=GROWTH_METHOD.format(
            skip=found["skipped_s"], lag1=found["lag1"], n_eff=found["effective_n"],
            threshold=threshold,
        ),
    )  # fmt: skip
