"""Words for what the searches and events found: a capacity search's result, a sweep's
knee, a churn event's recovery (codes to sentences, as djbench.reports.words for the
rest)."""

from __future__ import annotations

from djbench.results.model import Capacity, ChurnEvent, Sweep

CAPACITY_STOPS = {
    "ceiling": "it passed at the search's rate ceiling: capacity is at least that",
    "driver_busy": "the load driver saturated before the server did: no capacity claimed",
    "driver_failed": "the load driver failed: no capacity claimed (its log says why)",
    "never_passed": "no rate passed, down to 1 req/s",
    "budget": "the budget ran out before the search ended",
    "unconfirmed": "the confirmation windows failed at every rate tried",
    "unbounded": "every steady window passed: the capacity is above the highest rate tried",
    "never_passed_steady": "no steady window passed: the capacity is below the lowest rate tried",
    "screening": "a tuning candidate's coarse search, not confirmed (not a capacity)",
}
CAPACITY_WHY = {
    "p99_above_slo": "p99 above the target",
    "page_p99_above_slo": "a page of the mix above its own p99 threshold",
    "errors": "errors above --max-error-rate",
    "short": "completed under 99% of the offered rate",
    "late": "sends started late (the server held every connection)",
    "driver_busy": "the driver was saturated",
    "failed": "the driver failed",
    "rising": "latency rose across the window (a queue growing)",
}
SHORT_WINDOWS = "windows under 10 s: a screening-grade estimate, not a steady state"


def span(found: Capacity) -> str:
    """The capacity's 95% interval, an open end said as such."""
    low, high = found.interval or (None, None)
    below = "below" if low is None else f"{low:,.0f}"
    return f"[{below}-{'open' if high is None else f'{high:,.0f}'}]"


def capacity_text(found: Capacity) -> str:
    """A pair's capacity in words: the rate, how sure, per core and per 100 MiB."""
    if found.rps is None:
        why = CAPACITY_STOPS.get(found.stopped or "", found.stopped or "no rate passed")
        passed = [s.offered for s in found.steps if s.passed]
        floor = f"; {max(passed):,.0f} req/s passed in the search" if passed else ""
        failed = [s for s in found.steps if not s.passed and s.why]
        if failed and not passed:  # what the lowest rate tried ran into
            last = failed[-1]
            floor = f" (at {last.offered:,.1f} req/s: {CAPACITY_WHY.get(last.why or '', last.why)})"
        return f"no capacity at p99 <= {found.slo_p99_ms:g} ms: {why}{floor}"
    if found.repeats:  # the staircase's fit (older files: the confirmation windows)
        return _fitted(found)
    text = (
        f"{found.rps:,.0f} req/s at p99 <= {found.slo_p99_ms:g} ms "
        f"({found.confirmed} of {found.confirm_trials} confirmation windows passed"
    )
    if found.bracket is not None:
        text += f"; {found.bracket[1]:,.0f} failed"
        text += (
            ""
            if found.above_failed is None
            else (" and failed again" if found.above_failed else " but passed once more: noisy")
        )
    text += f"; {found.per_core:,.0f} per core" if found.per_core else ""
    text += f", {found.per_100mib:,.0f} per 100 MiB of PSS" if found.per_100mib else ""
    if found.stopped == "ceiling":
        text += f"; {CAPACITY_STOPS['ceiling']}"
    return text + ")"


def capacity_how(found: Capacity) -> str:
    """How a capacity was found, short (the console's column; capacity_text says all)."""
    if not found.repeats or found.rps is None:
        return capacity_text(found)
    text = (
        f"{found.confirmed} of {found.confirm_trials} steady {found.steady_s or 0:g} s windows "
        f"met the target, {found.repeats} repeat(s)"
    )
    if found.stopped == "ceiling":
        text += "; at the rate ceiling"
    return text + (f"; {SHORT_WINDOWS}" if (found.steady_s or 0) < 10 else "")


def _fitted(found: Capacity) -> str:
    assert found.rps is not None
    text = (
        f"{found.rps:,.0f} req/s {span(found)} at p99 <= {found.slo_p99_ms:g} ms (95% interval; "
        f"the rate at which half of the steady windows met the target: plan on the low end; "
        f"{found.confirmed} of {found.confirm_trials} windows of {found.steady_s or 0:g} s "
        f"passed over {found.repeats} repeat(s)"
    )
    text += f"; {found.per_core:,.0f} per core" if found.per_core else ""
    text += f", {found.per_100mib:,.0f} per 100 MiB of PSS" if found.per_100mib else ""
    if found.stopped == "ceiling":
        text += f"; {CAPACITY_STOPS['ceiling']}"
    if (found.steady_s or 0) < 10:
        text += f"; {SHORT_WINDOWS}"
    return text + ")"


SWEEP_STOPS = {
    "flat": "req/s stopped rising",
    "invalid": "a step failed (errors above the limit)",
    "max": "the largest concurrency was reached",
    "budget": "the budget ran out",
}


def sweep_text(found: Sweep) -> str:
    """A sweep in words: the knee, where it stopped, and how well Little's law held."""
    if found.knee is None:
        return "no valid step"
    gaps = [
        abs(s.in_flight / s.littles_in_flight - 1)
        for s in found.steps
        if s.in_flight and s.littles_in_flight
    ]
    littles = (
        f"; Little's law within {max(gaps):.0%} at every step (in flight measured vs "
        "req/s x mean latency)"
        if gaps
        else ""
    )
    stop = SWEEP_STOPS.get(found.stopped or "", found.stopped or "")
    return (
        f"knee at {found.knee} connections ({found.max_rps or 0:,.0f} req/s at best); "
        f"stopped: {stop}{littles}"
    )


CHURN_KINDS = {
    "reload": "graceful reload",
    "kill-worker": "a worker killed",
    "recycle": "a worker recycled",
}


def churn_event_text(event: ChurnEvent) -> str:
    """ "graceful reload (SIGHUP) at 4.0 s: 0 failed; p99 38 ms (steady 2.1), back in
    band after 0.5 s; kept serving" """
    what = CHURN_KINDS.get(event.kind, event.kind)
    sent = f" ({event.signal})" if event.signal else ""
    text = f"{what}{sent} at {event.t:g} s: {event.failed:,} failed"
    if event.worst_p99_ms is not None:
        text += f"; p99 up to {event.worst_p99_ms:,.1f} ms (steady {event.steady_p99_ms or 0:,.1f})"
    text += (
        f", back in band after {event.recovered_after_s:g} s"
        if event.recovered_after_s is not None
        else ", not back in band by the window's end"
    )
    text += "; kept serving" if event.kept_serving else "; stopped serving for a while"
    return text
