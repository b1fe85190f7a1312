"""A default or quick run fitted to the project's pages before its first window: one
deployment started, each scenario's service time measured (djbench.measure.pilot), the
connections, window and timeout chosen from them (djbench.plan.fitting), printed and
recorded in the plan. An explicit --concurrency, --duration or --rate keeps the run as
asked (RunOptions.fit is then off), and a resumed run keeps what its pilot chose."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from djbench.launch.live import Deployment, deploy
from djbench.launch.process import ServerError, terminate_on_signals
from djbench.measure.pilot import service_times
from djbench.plan.fitting import Fit, fit
from djbench.plan.options import cpu_count
from djbench.plan.runplan import RunOptions
from djbench.run.roundplan import Plan
from djbench.run.selection import Selection
from djbench.run.show import Show


def pilot_deployment(plan: Plan) -> Deployment:
    """A WSGI server without a proxy when there is one: the page's own cost, with no
    thread hop or proxy in it."""
    return min(plan.deployments, key=lambda d: (d.server.interface != "wsgi", d.proxy != "none"))


def fitted(
    show: Show, selection: Selection, opts: RunOptions, plan: Plan, run_dir: Path
) -> tuple[RunOptions, Plan, Fit | None]:
    """The options and plan fitted to the pages (unchanged when the pilot could not
    time any scenario: said), and what decided them."""
    if not plan.deployments or not plan.scenarios:
        return opts, plan, None
    chosen = pilot_deployment(plan)
    show.line(f"Pilot: each scenario's service time on {chosen.label}, one at a time")
    began = time.monotonic()
    try:
        with (
            terminate_on_signals(),
            deploy(selection.project, chosen, run_dir / "pilot", plan.health_path) as live,
        ):
            up = time.monotonic()
            times = service_times(live.target(), plan.scenarios)
            loaded = time.monotonic()
    except ServerError as exc:
        first = str(exc).splitlines()[0]
        show.line(f"Pilot: {chosen.label} failed ({first}); the profile's values stand")
        return opts, plan, None
    if not times:
        show.line("Pilot: no scenario answered as expected; the profile's values stand")
        return opts, plan, None
    lifetime = (up - began) + (time.monotonic() - loaded) + IDLE_READINGS_S
    slo = getattr(opts.job, "slo_p99", None)
    found = fit(
        times,
        cpu_count(selection.server_cpus),
        opts.profile,
        max(plan.concurrency),
        opts.duration,
        target_ms=slo,
        server=chosen.label,
    )
    found.lifetime_s = round(lifetime, 2)
    for s in times:
        show.line(
            f"  {s.scenario}: {s.median_ms:,.1f} ms (slowest {s.slowest_ms:,.1f}) "
            f"over {s.requests} request(s)"
        )
    show.line(
        f"Fitted to these pages: {found.concurrency} connection(s) (profile "
        f"{found.profile_concurrency}), {found.duration:g} s windows, a "
        f"{found.request_timeout:g} s request timeout: {found.why}"
    )
    opts = opts.model_copy(
        update={
            "concurrency": [found.concurrency],
            "duration": found.duration,
            "request_timeout": found.request_timeout,
        }
    )
    settings = dataclasses.replace(
        plan.settings, duration=found.duration, request_timeout=found.request_timeout
    )
    plan = dataclasses.replace(plan, concurrency=[found.concurrency], settings=settings)
    return opts, plan, found


# A server lifetime's time beyond its windows (start, readiness, idle memory, stop): the
# pilot's start and stop as measured, with the idle readings (0.3 s before and after,
# 0.2 s of a proxy's) and a margin; without a pilot, LIFETIME_S (a default run here:
# 14 s per lifetime, of which 6 s windows and 3 s warm-ups). The verify gate's lifetime
# adds about half a second per scenario.
# A window takes longer than its seconds: its warm-up runs until two slices agree and
# the driver starts and reports. Measured per window beyond duration + warm-up asked:
# 0.2 s on the sample's 1-4 ms pages (a round of 13 deployments x 3 windows: 156 s),
# 0.9 s on a real site's 10 ms pages (driver wall 4.1 s median for 2.2 + 1 s asked).
IDLE_READINGS_S = 1.0
LIFETIME_S = 5.0
GATE_S_PER_SCENARIO = 0.5
WINDOW_OVERHEAD_S = 0.5


def round_seconds(plan: Plan, lifetime_s: float = LIFETIME_S) -> float:
    """About how long one round of the plan takes: every deployment's lifetime."""
    return len(plan.deployments) * lifetime_seconds(plan, lifetime_s)


def lifetime_seconds(plan: Plan, lifetime_s: float = LIFETIME_S) -> float:
    """A deployment's lifetime in a round: its start and stop, and its windows."""
    settings = plan.settings
    per_window = settings.duration + settings.warmup + WINDOW_OVERHEAD_S
    return lifetime_s + len(plan.scenarios) * len(plan.concurrency) * per_window


# The fewest rounds that give an interval (the race's first look): when the fitted
# windows buy fewer, they are shortened (with their warm-ups) in steps of a tenth, down
# to half the fitted window (100 answers where the fit asked 200); when even that buys
# fewer, on down to **screen windows** (a tenth of the fitted window, never below 1 s):
# two rounds of every deployment tell 2x apart and give the leader an interval, where
# one round of fitted windows gave neither (a startproject site of six 60-100 ms pages,
# 13 deployments: 927 s a round of 10 s windows against a 594 s budget, one trial each).
MIN_ROUNDS = 2
SHORTEST_SHARE = 0.5
SCREEN_SHARE = 0.1
SHORTEST_WINDOW_S = 1.0
SHORTEST_WARMUP_S = 0.5


def _rounds_that_fit(plan: Plan, seconds_left: float, start: float) -> int:
    """The planned rounds first (the race and the layout sweep get what they leave)."""
    gates = len(plan.deployments) * (start + GATE_S_PER_SCENARIO * len(plan.scenarios))
    return max(1, int((seconds_left - gates) // round_seconds(plan, start)))


def _shortened(plan: Plan, seconds_left: float, start: float) -> Plan | None:
    """The plan with windows short enough for MIN_ROUNDS rounds (None: none is), the
    longest that fit: tenths of the fitted window down to SCREEN_SHARE of it."""
    fitted = plan.settings
    for step in range(1, round((1 - SCREEN_SHARE) * 10) + 1):
        share = 1 - step / 10
        settings = dataclasses.replace(
            fitted,
            duration=round(max(SHORTEST_WINDOW_S, fitted.duration * share), 2),
            warmup=round(max(SHORTEST_WARMUP_S, fitted.warmup * share), 2),
        )
        candidate = dataclasses.replace(plan, settings=settings)
        if _rounds_that_fit(candidate, seconds_left, start) >= MIN_ROUNDS:
            return candidate
        if settings.duration == SHORTEST_WINDOW_S and settings.warmup == SHORTEST_WARMUP_S:
            return None
    return None


def _coarser(shorter: Plan, plan: Plan) -> str:
    """What the shortened windows cost the figures, said beside them."""
    if shorter.settings.duration >= plan.settings.duration * SHORTEST_SHARE:
        return "fewer answers per window, so p99 reads coarser"
    share = shorter.settings.duration / plan.settings.duration
    return (
        f"screen windows, {share:.0%} of the answers the fit asked for: throughput and the "
        "median hold, a window's p99 is among its slowest few answers"
    )


def reshaped(
    show: Show, plan: Plan, seconds_left: float, lifetime_s: float | None = None
) -> tuple[Plan, int | None]:
    """The plan with as many rounds as the budget buys (at least one), said before the
    first window: at the fitted windows, else at windows shortened for MIN_ROUNDS;
    (plan, the rounds asked when fewer fit). `lifetime_s`: a lifetime's start and stop
    as the pilot measured them."""
    start = LIFETIME_S if lifetime_s is None else lifetime_s
    fit_rounds = _rounds_that_fit(plan, seconds_left, start)
    shape = (
        f"{len(plan.deployments)} deployment(s) x {len(plan.scenarios) * len(plan.concurrency)} "
        "window(s)"
    )
    if fit_rounds >= plan.trials:
        show.line(
            f"Budget: {plan.trials} planned round(s), about {round_seconds(plan, start):.0f} s "
            f"a round ({shape} of {plan.settings.duration:g} s), {seconds_left:.0f} s left; "
            "what is left goes to the comparisons still open"
        )
        return plan, None
    if fit_rounds < MIN_ROUNDS <= plan.trials:
        shorter = _shortened(plan, seconds_left, start)
        if shorter is not None:
            rounds = min(plan.trials, _rounds_that_fit(shorter, seconds_left, start))
            show.line(
                f"Budget: {rounds} round(s) fit, not the planned {plan.trials}, at windows "
                f"shortened to {shorter.settings.duration:g} s after {shorter.settings.warmup:g} s "
                f"warm-up (fitted: {plan.settings.duration:g} s after {plan.settings.warmup:g} s; "
                f"about {round_seconds(shorter, start):.0f} s a round of {shape}, "
                f"{seconds_left:.0f} s left): {_coarser(shorter, plan)}; "
                "what is left goes to the comparisons still open"
            )
            return dataclasses.replace(shorter, trials=rounds), plan.trials
    each = round_seconds(plan, start)
    show.line(
        f"Budget: {fit_rounds} round(s) fit, not the planned {plan.trials} (about {each:.0f} s "
        f"a round of {shape} of {plan.settings.duration:g} s, {seconds_left:.0f} s left)"
        + (
            ": one trial each is a screen, not a ranking (no interval); fewer deployments "
            "(--servers) or pages (--scenarios), or a longer --budget, buy rounds"
            if fit_rounds < MIN_ROUNDS
            else "; what is left goes to the comparisons still open"
        )
    )
    return dataclasses.replace(plan, trials=fit_rounds), plan.trials
