"""Whether two sides of a comparison can be judged at all, and what decides a pair
before any statistics: the run settings that must match, a failure or a changed answer,
other work on the machine between two separate runs, and too few trials for a verdict.
Split from djbench.reports.compare, which judges what these let through."""

from __future__ import annotations

import statistics

from djbench.reports.words import say
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


def correctness(base: Pair, new: Pair) -> tuple[str, list[str]] | None:
    """A verdict from status and verified answers alone, when they decide it."""
    for side, pair in (("BASE", base), ("NEW", new)):
        if lost_to_driver(pair) and not pair.valid_trials:
            return "not measured", [f"every trial in {side} was lost to the load driver"]
    if measured(base) and not measured(new) and new.status != "ok":
        return "worse", [f"was ok, now {new.status}: {say(new.reason)}"]
    if not measured(base) and measured(new):
        return "better", [f"was {base.status} ({say(base.reason)}), now ok"]
    if not measured(base) and not measured(new):
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


def machine_moved(base: Pair, new: Pair) -> str | None:
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
