"""A default or quick run fitted to the project's pages before its first window: one
deployment started, each scenario's service time measured (djbench.measure.pilot), the
connections, window and timeout chosen from them (djbench.plan.fitting), printed and
recorded in the plan. An explicit --concurrency, --duration or --rate keeps the run as
asked (RunOptions.fit is then off), and a resumed run keeps what its pilot chose."""

from __future__ import annotations

import dataclasses
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
    try:
        with (
            terminate_on_signals(),
            deploy(selection.project, chosen, run_dir / "pilot", plan.health_path) as live,
        ):
            times = service_times(live.target(), plan.scenarios)
    except ServerError as exc:
        first = str(exc).splitlines()[0]
        show.line(f"Pilot: {chosen.label} failed ({first}); the profile's values stand")
        return opts, plan, None
    if not times:
        show.line("Pilot: no scenario answered as expected; the profile's values stand")
        return opts, plan, None
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
