"""The worker count, measured: after a plain run's rounds, the server leading the heaviest
page at every layout of its tuning space, on that page, within the budget: raced in
whole rounds when they fit, else one window each.

The rounds rank deployments at one layout each (the profile's one worker, a project's
own file's). Which worker/thread count to run is a question of its own: the answer
names the layout that served most in this short sweep of the leader's server (the
layouts of djbench.plan.tuning.space, at the server CPUs the run pins it to); the
layout the rounds ran is a row with its rounds' median. When RACE_ROUNDS whole rounds of
every layout fit in the time left, they are raced (the leader's own layout among them,
so every comparison is paired in the sweep's rounds) and judged by the block design as
the deployments are: the layout, its interval and its ties. Otherwise one window a
layout is a screen, not a test (the answer says so); --tune is the search with
confirmation rounds. A project's own deployment that leads is swept as the registry server it runs
(its file's layout is the one in use, measured in the rounds).

The layouts share the leader's verify gate (the same server and application: the
answers' shapes do not depend on the worker count), so each costs one server lifetime,
not two: 14 deployments of a Wagtail site's 107 ms pages took 170 s of a quick run's
screen, which left room for two or three layouts, not for a second start of each.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from djbench.launch.live import Deployment
from djbench.plan.options import cpu_count
from djbench.plan.tuning import Candidate, space
from djbench.results.model import LayoutRow, LayoutSweep, PairResult
from djbench.run.bench import Bench, entry_key
from djbench.run.pilot_fit import WINDOW_OVERHEAD_S
from djbench.run.roundplan import Plan
from djbench.run.runner import run_benchmark
from djbench.run.selection import deployment as at_layout
from djbench.verdicts import rules
from djbench.verdicts.ranking import rank, rps_interval
from djbench.verdicts.runs import Pair
from djbench.verdicts.thresholds import rate_interval

# A layout sweep is raced (every layout, the leader's own included, in whole rounds,
# judged by the block design as the deployments are) when this many rounds of every
# layout fit in the time left; else it is a screen, one window each.
RACE_ROUNDS = rules.MIN_ROUNDS
RACE_LAYOUTS = 3  # the block design's fewest deployments (engine/blocks.py)


def leader(scenarios: list[str], results: list[PairResult], run_id: str) -> Pair | None:
    """The leader of the heaviest page: among the run's HTTP scenarios, the one whose
    fastest deployment serves the fewest req/s (the most work a request, where the
    worker and thread count matter: on a trivial page they say least), at its highest
    concurrency; among measured pairs at a layout of their own (not a tuning candidate).
    """
    leaders = []
    for scenario in scenarios:
        pairs = [
            Pair(run_id, e)
            for e in results
            if e.status == "ok"
            and e.kind == "http"
            and e.scenario == scenario
            and e.config is None
            and e.trials
        ]
        if not pairs:
            continue
        level = max(p.concurrency or 0 for p in pairs)
        at_level = [p for p in pairs if (p.concurrency or 0) == level]
        leaders.append(max(at_level, key=lambda p: p.median("rps") or 0.0))
    return min(leaders, key=lambda p: p.median("rps") or 0.0, default=None)


def template(plan: Plan, top: Pair) -> Deployment | None:
    """The deployment whose layouts are swept: the leader itself, or for a project's own
    command the registry server it runs, as djbench starts it (same front)."""
    for d in plan.deployments:
        if d.label == top.label and d.own is None:
            return d
    return next(
        (
            d
            for d in plan.deployments
            if d.own is None
            and d.server.name == top.server
            and d.proxy == top.proxy
            and d.protocol == top.protocol
            and d.config is None
        ),
        None,
    )


def reserve(plan: Plan, each_s: float) -> float:
    """The seconds to keep for the sweep out of a race: a deployment's time for each
    layout of the largest space (the leader is not known yet), as `sweep` starts them."""
    most = max(
        (len(space(d.server.tuning, cpu_count(d.cpus))) for d in plan.deployments), default=0
    )
    return each_s * most if most > 1 else 0.0


def _layout_s(plan: Plan, each_s: float) -> float:
    """A layout's lifetime: a deployment's in the rounds less the windows of the pages
    it does not run (a layout runs the one page)."""
    settings = plan.settings
    window = settings.duration + settings.warmup + WINDOW_OVERHEAD_S
    others = len(plan.scenarios) * len(plan.concurrency) - 1
    return max(1.0, each_s - others * window)


def _chosen(
    bench: Bench, each_s: float, base: Deployment, top: Pair, cpus: int
) -> tuple[list[Candidate], int, list[str]]:
    """(the layouts to run, the rounds, those left out). Raced when RACE_ROUNDS whole
    rounds of every layout fit (the leader's own layout among them, so each comparison
    is paired in the sweep's own rounds); else a screen, one window each, as many as
    fit."""
    everything = space(base.server.tuning, cpus)
    ran = (top.entry.workers or 1, top.entry.threads)
    others = [c for c in everything if (c.workers, c.threads) != ran or c.knobs]
    # One layout's window is no round to keep paired (budget.ROUND_MARGIN's reason): a layout
    # starts when a deployment's usual time is left, and run_benchmark starts none after
    # the deadline.
    fits = max(0, int((bench.until - time.monotonic()) / _layout_s(bench.plan, each_s)))
    if len(everything) >= RACE_LAYOUTS and fits >= RACE_ROUNDS * len(everything):
        return everything, RACE_ROUNDS, []
    return others[:fits], 1, [c.label for c in others[fits:]]


def sweep(bench: Bench, each_s: float, round_index: int) -> LayoutSweep | None:
    """Sweep the leader's server (None: nothing to sweep, said); `each_s` is the time a
    deployment took in the rounds, `round_index` the round its windows are recorded as."""
    plan, recorder, progress = bench.plan, bench.recorder, bench.progress
    document = recorder.document
    top = leader([s.name for s in plan.scenarios], document.results, document.run_id)
    base = template(plan, top) if top is not None else None
    if top is None or base is None:
        return None
    cpus = cpu_count(base.cpus)
    if len(space(base.server.tuning, cpus)) < 2:
        progress.say(f"layouts: {base.server.name} has one layout at {cpus} CPU(s): no sweep")
        return None
    record = LayoutSweep(
        server=base.server.name,
        leader=top.label,
        scenario=top.scenario,
        page="heaviest",
        server_cpus=cpus,
    )
    chosen, rounds, record.skipped = _chosen(bench, each_s, base, top, cpus)
    if not chosen:
        progress.say(f"layouts: no time left to sweep {base.server.name}'s layouts")
        return record
    progress.say(
        f"layouts: {base.server.name} (the leader, {top.label}) at {len(chosen)} layout(s) "
        f"on the heaviest page, {top.scenario}, "
        + (f"in {rounds} rounds, raced" if rounds > 1 else "one window each")
    )
    layouts = [at_layout(base, c) for c in chosen]
    started = _run(bench, top, layouts, rounds, round_index)
    record.skipped += [d.config or d.label for d in layouts if d not in started]
    _judge(record, top, started, recorder.document.results, document.run_id)
    return record


def _run(
    bench: Bench, top: Pair, layouts: list[Deployment], rounds: int, round_index: int
) -> list[Deployment]:
    """The layouts' windows on the leader's page (its gate shared); those that ran."""
    plan, recorder = bench.plan, bench.recorder
    scenario = next(s for s in plan.scenarios if s.name == top.scenario)
    concurrency = top.concurrency or max(plan.concurrency)
    for layout in layouts:  # the leader's gate, so known_gates does not start it twice
        recorder.entry(layout, scenario, concurrency).verify = top.entry.verify
    swept = dataclasses.replace(
        plan,
        deployments=layouts,
        scenarios=[scenario],
        concurrency=[concurrency],
        trials=rounds,
        first_round=round_index,
        seed=plan.seed + round_index,
    )
    bench.progress.grow(swept.total_trials())
    run_benchmark(bench.with_plan(swept), stop_at=bench.deadline, whole_rounds=rounds > 1)
    started: list[Deployment] = []
    for layout in layouts:  # a layout the deadline left unstarted is no pair of the run
        key = entry_key(layout.label, scenario.name, concurrency)
        if (entry := recorder.entries.get(key)) is not None and not entry.trials:
            del recorder.entries[key]
            recorder.document.results.remove(entry)
        else:
            started.append(layout)
    return started


def _judge(
    record: LayoutSweep,
    top: Pair,
    started: list[Deployment],
    results: list[PairResult],
    run_id: str,
) -> None:
    """The rows, the layout that served most and, raced, those the engine cannot tell
    from it (djbench.verdicts.ranking.rank: the block design over the sweep's rounds)."""
    entries = [e for d in started if (e := next((r for r in results if r.label == d.label), None))]
    pairs = [Pair(run_id, e) for e in entries if e.status == "ok"]
    record.rounds = max((len(p.valid_trials) for p in pairs), default=0)
    record.rows = [_in_rounds(top), *(_row(d, results) for d in started)]
    ranking = rank(pairs) if len(pairs) >= RACE_LAYOUTS else None
    if record.rounds >= rules.MIN_ROUNDS and ranking is not None and ranking.ranked:
        # An unstable layout among the leaders blocks a verdict, as it does a ranking's:
        # the highest so far is said, and which layouts varied too much.
        best = ranking.winners[0] if ranking.winners else ranking.ranked[0]
        record.best = best.label
        record.tied = [p.label for p in ranking.winners[1:]]
        record.unstable = [p.label for p in ranking.blocked]
        return
    measured = [r for r in record.rows if r.rps is not None and r.status == "ok"]
    record.best = max(measured, key=lambda r: r.rps or 0.0).label if measured else None


def _in_rounds(top: Pair) -> LayoutRow:
    """The layout the rounds ran: its rounds' medians and interval."""
    span = rps_interval(top)
    return LayoutRow(
        label=top.label,
        workers=top.entry.workers or 1,
        threads=top.entry.threads,
        rps=top.median("rps"),
        p99_ms=top.median("p99"),
        rounds=len(top.valid_trials),
        rps_low=span[0] if span else None,
        rps_high=span[1] if span else None,
        status=top.status,
    )


def _row(d: Deployment, results: list[PairResult]) -> LayoutRow:
    entry = next((e for e in results if e.label == d.label), None)
    row = LayoutRow(label=d.label, workers=d.workers, threads=d.threads, status="not run")
    if entry is None:
        return row
    row.status = entry.status
    valid = [t for t in entry.trials if t.valid]
    rps = [t.rps for t in valid]
    p99 = [t.latency_ms.p99 for t in valid if t.latency_ms.p99 is not None]
    row.rps = statistics.median(rps) if rps else None
    row.p99_ms = statistics.median(p99) if p99 else None
    row.rounds = len(rps)
    if (span := rate_interval(valid)) is not None:
        row.rps_low, row.rps_high = span
    return row
