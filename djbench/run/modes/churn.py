"""``runbench --churn reload,kill-worker,recycle``: requests lost when a server's
workers are replaced under a steady load (issue 24 item 3).

For every pair, one open-loop window of the builtin driver per kind of event (default
CHURN_RATE req/s, CHURN_WINDOW_S long, in SLICE_S slices), in one server lifetime:

- ``reload``: the server's own graceful reload signal (the registry's
  `Features.reload_signal`: SIGHUP for Gunicorn, Uvicorn's supervisor, Hypercorn,
  Granian and uWSGI) sent to the tree's leader a third of the way in; a server without
  one (Daphne) is `incompatible`, with the reason;
- ``kill-worker``: SIGKILL to the busiest worker (the child with the most CPU) at the same
  point; a one-process server has no worker to lose (`incompatible`);
- ``recycle``: the server runs with max-requests set so that each worker is replaced
  about every third of the window (its own recycling, `--recycle`'s flags); every
  worker born in the window is an event.

Servers run with at least MIN_WORKERS workers (a single-process Uvicorn has no
supervisor: SIGHUP would end it). Each event is judged on the load's slices
(djbench.verdicts.churn_events): requests failed after it, the worst p99 against the steady
p99, the time until latency is back in the steady band, whether every slice still
completed requests. Processes are signalled by PID, only those of the tree runbench
started. Behind Caddy (`--proxy caddy`) the event hits the server, the load goes
through the proxy.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import time
from pathlib import Path

import psutil

from djbench.launch.live import Deployment, LiveServer
from djbench.measure.drivers import Driver, having
from djbench.measure.trial import TimedEvent
from djbench.plan.jobplans import ChurnPlan
from djbench.plan.options import OptionError
from djbench.plan.recycle import Recycle
from djbench.plan.runplan import RunOptions
from djbench.plan.scenarios import Scenario
from djbench.results.model import Churn, ChurnEvent, Notice, PairResult, Trial
from djbench.run.bench import Bench
from djbench.run.modes.job import Context
from djbench.run.perpair import one_window, run_each_pair
from djbench.run.roundplan import Plan
from djbench.run.selection import Selection
from djbench.run.session import PerPairMode
from djbench.verdicts import churn_events as churn_stats
from djbench.verdicts.runs import summarise

KINDS = ("reload", "kill-worker", "recycle")
CHURN_RATE = 100.0  # req/s: under every server's capacity measured here on health-sync
CHURN_WINDOW_S = 12.0
EVENT_AT = 1 / 3  # of the window: a steady third before it, two thirds to recover
SLICE_S = 0.5
MIN_WORKERS = 2


def deployments(plan: Plan, kinds: list[str], rate: float, window_s: float) -> list[Deployment]:
    """Each deployment with MIN_WORKERS at least; a recycling twin for `recycle`."""
    found = []
    for dep in plan.deployments:
        workers = max(MIN_WORKERS, dep.workers) if dep.server.multi_worker else dep.workers
        base = dataclasses.replace(dep, workers=workers)
        if any(k != "recycle" for k in kinds):
            found.append(base)
        if "recycle" in kinds:
            per_worker = rate * window_s * EVENT_AT / max(1, workers)
            found.append(
                dataclasses.replace(base, recycle=Recycle(max_requests=math.ceil(per_worker)))
            )
    return found


def refusal(deployment: Deployment, kind: str) -> str | None:
    """Why this deployment cannot take this event (None: it can)."""
    spec = deployment.server
    if kind == "reload" and spec.features.reload_signal is None:
        return f"{spec.name} has no graceful reload signal ({spec.features.reload})"
    if kind == "kill-worker" and not spec.multi_worker:
        return f"{spec.name} is one process: killing its worker ends the server"
    return None  # recycle: the server's own recycling flags refuse what it cannot do


def _kinds_for(deployment: Deployment, kinds: list[str]) -> list[str]:
    recycling = deployment.recycle is not None and not deployment.recycle.off
    return [k for k in kinds if (k == "recycle") == recycling]


def _busiest_worker(leader: int) -> int | None:
    """The leader's child that has used the most CPU: a worker serving the load, never a
    helper (Uvicorn's spawned workers come with multiprocessing's resource tracker, the
    oldest child, which a first version killed instead of a worker)."""
    best: tuple[float, int] | None = None
    for child in psutil.Process(leader).children():
        try:
            cpu = child.cpu_times()
        except psutil.Error:
            continue
        if best is None or cpu.user + cpu.system > best[0]:
            best = (cpu.user + cpu.system, child.pid)
    return None if best is None else best[1]


def _fire(live: LiveServer, kind: str, fired: dict[str, object]) -> None:
    """Send the event's signal to a process of the tree runbench started (by PID)."""
    leader = live.server.pid
    target: int | None = leader
    name = live.deployment.server.features.reload_signal or "SIGHUP"
    if kind != "reload":
        name, target = "SIGKILL", _busiest_worker(leader)
    if target is None:
        fired["error"] = "no worker process to kill"
        return
    fired.update(at=time.monotonic(), signal=name, pid=target)
    os.kill(target, getattr(signal, name))


def run(bench: Bench, kinds: list[str], rate: float, window_s: float) -> None:
    plan = dataclasses.replace(
        bench.plan, deployments=deployments(bench.plan, kinds, rate, window_s)
    )
    bench, run_dir, progress = bench.with_plan(plan), bench.run_dir, bench.progress

    def search(live: LiveServer, scenario: Scenario, entry: PairResult) -> None:
        wanted = _kinds_for(live.deployment, kinds)
        refused = [r for k in wanted if (r := refusal(live.deployment, k))]
        if refused:
            entry.status = "incompatible"
            entry.reason = Notice(code="churn_unsupported", params={"why": refused[0]})
            return
        record = Churn(
            rate=rate, workers=live.deployment.workers, window_s=window_s, slice_s=SLICE_S
        )
        trials: list[Trial] = []
        label = f"{live.deployment.label} {scenario.name}"
        for kind in wanted:
            progress.advance(0, f"{label}: {kind} at {rate:g} req/s")
            trial, events = _window(plan, live, scenario, run_dir, kind, rate, window_s)
            trial.round = len(trials)
            trials.append(trial)
            tally(record, trial, events)
        entry.churn, entry.trials = record, trials
        summarise(entry, [])
        # The errors around an event are the figure here, not a reason to discard it.
        if entry.status == "invalid" and all(t.requests for t in trials):
            entry.status, entry.reason = "ok", None
        progress.say(f"{label}: {_said(record)}")

    run_each_pair(bench, search)


def tally(record: Churn, trial: Trial, events: list[ChurnEvent]) -> None:
    """One window's events and losses added to the pair's record: the requests due and
    never sent (the driver counts them among the window's errors, as `unsent`) and the
    slices that completed nothing."""
    record.events += events
    record.unsent += trial.errors.get("unsent", 0)
    line = trial.timeline
    record.silent_slices += sum(1 for p in (line.load if line else []) if not p.requests)


def _window(
    plan: Plan,
    live: LiveServer,
    scenario: Scenario,
    run_dir: Path,
    kind: str,
    rate: float,
    window_s: float,
) -> tuple[Trial, list[ChurnEvent]]:
    fired: dict[str, object] = {}
    event = None
    if kind != "recycle":
        event = TimedEvent(window_s * EVENT_AT, lambda: _fire(live, kind, fired))
    settings = dataclasses.replace(
        plan.settings, rate=rate, duration=window_s, series=SLICE_S, event=event
    )
    connections = max(32, int(rate * 0.5))
    trial = one_window(plan, live, scenario, connections, settings, run_dir)
    timeline = trial.timeline
    if timeline is None:
        return trial, []
    if kind == "recycle":
        return trial, [
            churn_stats.analyse("recycle", timeline.load, r.t, 1, target_pid=r.pid)
            for r in timeline.restarts
        ]
    if "at" not in fired:
        return trial, []
    t = window_s * EVENT_AT  # the timer starts as the window opens: its time line's 0
    births = sum(1 for r in timeline.restarts if r.t >= t - SLICE_S)
    pid = fired.get("pid")
    return trial, [
        churn_stats.analyse(
            "reload" if kind == "reload" else "kill-worker",
            timeline.load,
            t,
            births,
            signal=str(fired.get("signal")),
            target_pid=pid if isinstance(pid, int) else None,
        )
    ]


def _said(record: Churn) -> str:
    if not record.events:
        return "no event happened in the window"
    return "; ".join(
        f"{e.kind}: {e.failed} failed, p99 {e.worst_p99_ms or 0:,.0f} ms "
        f"(steady {e.steady_p99_ms or 0:,.1f})"
        for e in record.events
    )


def kinds_of(opts: RunOptions) -> list[str]:
    assert isinstance(opts.job, ChurnPlan), opts.job
    return opts.job.kinds


class ChurnMode(PerPairMode):
    """--churn: events under a steady open-loop load, one window per event."""

    name = "churn"

    def check(self, opts: RunOptions, selection: Selection, driver: Driver) -> None:
        if not (driver.open_loop and driver.time_series):
            raise OptionError(
                f"--churn needs the {having('time_series')} driver (open loop, in slices)"
            )

    def each_pair(self, opts: RunOptions, plan: Plan) -> str:
        return f"a window per event ({', '.join(kinds_of(opts))})"

    def budget_line(self, opts: RunOptions) -> str:
        minutes = (opts.budget or 0) / 60
        return f"; open loop at {opts.rate or CHURN_RATE:g} req/s, budget {minutes:g} min"

    def run(self, ctx: Context) -> None:
        o = ctx.opts
        run(ctx.bench, kinds_of(o), o.rate or CHURN_RATE, o.duration)
