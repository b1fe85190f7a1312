"""Whether two sides of a comparison can be judged at all, and what decides a pair
before any statistics: the run settings that must match, a failure or a changed answer,
other work on the machine between two separate runs, and too few trials for a verdict.
djbench.verdicts.compare judges what these let through. Codes only."""

from __future__ import annotations

import statistics
from typing import Literal

from djbench.results.model import Notice
from djbench.verdicts.engine import decide
from djbench.verdicts.runs import FOREIGN_PERCENT, Pair, Run, foreign_percent

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


def lost_to_driver(pair: Pair) -> bool:
    """Its only problem is trials the load driver lost: the server was not measured
    there, it did not fail (METHODOLOGY 8)."""
    invalid = [t for t in pair.entry.trials if not t.valid]
    return (
        pair.status == "invalid"
        and bool(invalid)
        and all(t.invalid is not None and t.invalid.code == "driver_failed" for t in invalid)
    )


def measured(pair: Pair) -> bool:
    return pair.ok or (lost_to_driver(pair) and bool(pair.valid_trials))


PairVerdict = Literal[
    "worse", "better", "equivalent", "inconclusive", "not measured", "not comparable"
]


def correctness(base: Pair, new: Pair) -> tuple[PairVerdict, Notice] | None:
    """A verdict from status and verified answers alone, when they decide it: the
    verdict and its reason (a code)."""
    for side, pair in (("BASE", base), ("NEW", new)):
        if lost_to_driver(pair) and not pair.valid_trials:
            return "not measured", Notice(code="all_lost_to_driver", params={"side": side})
    if measured(base) and not measured(new) and new.status != "ok":
        return "worse", Notice(
            code="now_failing", params={"status": new.status, "reason": new.reason}
        )
    if not measured(base) and measured(new):
        return "better", Notice(
            code="now_ok", params={"status": base.status, "reason": base.reason}
        )
    if not measured(base) and not measured(new):
        return "not comparable", Notice(
            code="measured_neither", params={"base": base.status, "new": new.status}
        )
    base_shape = base.entry.verify.shape if base.entry.verify else ""
    new_shape = new.entry.verify.shape if new.entry.verify else ""
    if base_shape and new_shape and base_shape != new_shape:
        return "worse", Notice(code="shape_changed", params={"base": base_shape, "new": new_shape})
    return None


def plan_differences(base: Run, new: Run) -> list[Notice]:
    """Every setting that makes the two runs' figures incomparable (`plan_differs`: its
    name and both values)."""
    found = []
    for key in PLAN_KEYS:
        b, n = getattr(base.plan, key), getattr(new.plan, key)
        if b != n:
            found.append(_differs(key, b, n))
    for key in ENVIRONMENT_KEYS:
        b, n = getattr(base.environment, key), getattr(new.environment, key)
        if b != n:
            found.append(_differs(key, b, n))
    b_set, n_set = sorted(base.plan.scenarios), sorted(new.plan.scenarios)
    if b_set != n_set:
        # One server lifetime runs every scenario: a different set changes what each
        # scenario's memory figure includes.
        found.append(
            Notice(
                code="plan_differs",
                params={"key": "scenario set", "base": ", ".join(b_set), "new": ", ".join(n_set)},
            )
        )
    return found


def _differs(key: str, base: object, new: object) -> Notice:
    return Notice(code="plan_differs", params={"key": key, "base": repr(base), "new": repr(new)})


def machine_moved(base: Pair, new: Pair) -> Notice | None:
    """Why two separate runs' figures of one pair are not comparable because other
    processes took CPU during one of them (the median trial above the bound)."""
    shares = {}
    for side, pair in (("BASE", base), ("NEW", new)):
        found = [f for t in pair.valid_trials if (f := foreign_percent(t)) is not None]
        shares[side] = statistics.median(found) if found else 0.0
    if not any(v > FOREIGN_PERCENT for v in shares.values()):
        return None
    return Notice(code="machine_moved", params={"shares": shares})


def reachable(base: Run, new: Run) -> Notice | None:
    """Why no verdict can be reached between two separate runs (None when one can):
    the engine needs decide.MIN_TRIALS valid trials per side."""
    counts = [
        (len(b.valid_trials), len(n.valid_trials))
        for b in base.pairs
        for n in new.pairs
        if n.key == b.key
    ]
    if not counts:
        return Notice(code="no_common_pair")
    if all(min(c) < decide.MIN_TRIALS for c in counts):
        low = min(min(c) for c in counts)
        return Notice(code="too_few_trials", params={"low": low, "needed": decide.MIN_TRIALS})
    return None
