"""Each job's own resolved options, one model per job, told apart by ``job``.

:class:`~djbench.plan.runplan.RunOptions` holds what every job shares and one of these
as ``job``: a plain run's plan holds nothing more, a soak's its length and growth
threshold, a tuning its budget and objective, and so on. A job reads its own fields
only, and the resolved options name their job (``opts.job.job``): nothing tests a
switch to find out what a run is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# A soak's memory "grows" only when its trend is significant and above this (MiB/h):
# below it, an allocator's drift over minutes (djbench.verdicts.engine.stats.trend).
GROWTH_THRESHOLD_MB_H = 10.0
# --capacity without --slo-p99: 100 ms, the response time users start to notice (the
# usual web performance budget); --tune keeps no target unless one is given.
CAPACITY_SLO_MS = 100.0
TUNE_BUDGET_S = 900.0  # --tune without --tune-budget
# A capacity's steady windows (--capacity-window): 10 s after 5 s of warm-up, long enough
# that a queue growing by a few percent of the rate shows in the window's p99 and slices.
STEADY_S = 10.0


class _Job(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RoundsPlan(_Job):
    """The plain run: interleaved rounds (its --budget and --trials are shared)."""

    job: Literal["rounds"] = "rounds"


class SoakPlan(_Job):
    """--soak: one long window per pair, sampled as a time series."""

    job: Literal["soak"] = "soak"
    seconds: float
    growth_threshold: float = GROWTH_THRESHOLD_MB_H  # --soak-threshold, MiB/h


class TunePlan(_Job):
    """--tune: a bounded search for each server's best configuration."""

    job: Literal["tune"] = "tune"
    budget_s: float = TUNE_BUDGET_S  # --tune-budget
    objective: str = "rps"  # rps, rps-per-100mb or capacity (--capacity --tune)
    slo_p99: float | None = None  # a capacity tuning's target is CAPACITY_SLO_MS
    steady_s: float = STEADY_S  # a capacity tuning's finals: their steady windows

    @property
    def by_capacity(self) -> bool:
        return self.objective == "capacity"


class CapacityPlan(_Job):
    """--capacity: every pair's highest offered rate within the p99 target."""

    job: Literal["capacity"] = "capacity"
    slo_p99: float = CAPACITY_SLO_MS
    steady_s: float = STEADY_S  # --capacity-window: each steady window's length


def steady_window(options: dict[str, Any]) -> float:
    """--capacity-window, at least a second (below 10 s the answer says so)."""
    from djbench.plan.options import OptionError

    raw = options.get("capacity_window")
    if raw is None:
        return STEADY_S
    if raw < 1:
        raise OptionError(f"--capacity-window takes seconds, at least 1, got {raw:g}")
    return float(raw)


class SweepPlan(_Job):
    """--sweep: every pair's closed-loop req/s against concurrency, to the knee."""

    job: Literal["sweep"] = "sweep"


class ChurnPlan(_Job):
    """--churn: events under a steady open-loop load."""

    job: Literal["churn"] = "churn"
    kinds: list[str]  # reload, kill-worker, recycle


# --cost: hash seeds each page is counted under (their spread is the count's noise).
COST_SEEDS = 3


class CostPlan(_Job):
    """--cost: instructions per request of every page, counted under Valgrind."""

    job: Literal["cost"] = "cost"
    seeds: int = COST_SEEDS  # --cost-seeds


JobPlan = Annotated[
    RoundsPlan | SoakPlan | TunePlan | CapacityPlan | SweepPlan | ChurnPlan | CostPlan,
    Field(discriminator="job"),
]
