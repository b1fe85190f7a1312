"""``runbench --budget``: a plain run's wall time, spent where it decides something.

The race starts at the first round: the planned rounds run one at a time (no
deployment starts past the budget), and after each but the last a look drops every
deployment out of contention on every page it runs (`planned_rounds`; the comparisons
on fewer rounds than the paired test needs are the engine's screens, blocks.py). A
default run of 13 deployments on 2026-12-07 dropped 9 after round 2 (0.11x-0.80x the
leader), so its third round ran 4 and the time went to the open comparisons and a
raced worker count. With time left after the planned rounds, each further round goes
to a race (best-arm identification by successive elimination, as
racing algorithms tune configurations: irace, F-Race): for every scenario and
concurrency the eligible pairs (ok, every connection served) are ranked by median req/s;
the leader is compared with each other pair by the test the answer itself uses
(verdicts/engine/blocks.py's leader_decisions on the block design's error: rounds are blocks;
Benjamini-Hochberg over every pair of the ranking the leader was picked from), and a
pair is **open** while that test calls the leader neither better (the pair is out of the race)
nor equivalent (it shares the lead). A round adds one trial to each open pair and to its
leader, in that scenario only (a deployment's lifetime runs the items it is open in:
after a default run's planned rounds 22 comparisons were open in two of three
scenarios, 24 windows instead of 39); the ranking below the leader is not bought (the
answer is the deployment to use and the set it cannot be told from). The run stops
when nothing is open, the budget is spent, or EXTRA_ROUNDS_MAX rounds were added.

Looking after every round is a sequential design: each look is one of the engine's
group-sequential looks over the horizon (planned rounds + EXTRA_ROUNDS_MAX, fixed
before the first look; the screens' looks spend a fifth of alpha between them,
spending.race_spent), and a deployment dropped at a look stays dropped (`raced_out`),
so the chance that any look calls two identical deployments apart is alpha over the
whole run, not alpha per look (re-judging at the full alpha after every round called
identical deployments "better" 18-21% of the time). The answer judges at the last
look's level (ranking.tie_level), so what the race left open is exactly what the answer
calls tied and undecided. Which look is the last is set by the time left against the
next round's size (its open items): a look whose round would not fit spends what the
looks before it left.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Iterable

from djbench.launch.live import Deployment
from djbench.results.model import RunDocument
from djbench.run import side_by_side
from djbench.run.bench import Bench, Recorder
from djbench.run.roundplan import Plan
from djbench.run.runner import run_benchmark
from djbench.verdicts.open_questions import (
    EXTRA_ROUNDS_MAX,
    Open,
    beaten,
    look_level,
    open_questions,
    out_of_contention,
)

# A round is added only when this many times its expected length is left: a deployment's
# time varies 20-30% here, and a round cut by the deadline is unpaired (CI once ran one
# server's added round and not the other's with no margin).
ROUND_MARGIN = 1.5


def open_items(
    questions: list[Open], concurrency: list[int]
) -> dict[str, frozenset[tuple[str, int]]]:
    """Deployment label -> the (scenario, concurrency) items a race round runs for it:
    only those whose ranking it is open in (the leader's and the other's), so a round
    costs the open comparisons, not every scenario of every deployment in one."""
    found: dict[str, set[tuple[str, int]]] = {}
    for q in questions:
        levels = concurrency if q.concurrency is None else [q.concurrency]
        for label in (q.leader, q.other):
            found.setdefault(label, set()).update((q.scenario, c) for c in levels)
    return {label: frozenset(items) for label, items in found.items()}


def short_of_plan(plan: Plan, recorder: Recorder, dropped: Iterable[str] = ()) -> list[str]:
    """Deployments with a measured pair (ok or invalid) short of the planned trials, or
    never started: what a budget spent before the plan was done cut (the race's
    `dropped` were stopped on purpose, not cut)."""
    short = []
    for deployment in plan.deployments:
        if deployment.label in dropped:
            continue
        entries = [e for e in recorder.entries.values() if e.label == deployment.label]
        measured = [e for e in entries if e.status in ("ok", "invalid")]
        if not entries or any(len(e.trials) < plan.trials for e in measured):
            short.append(deployment.label)
    return short


@dataclasses.dataclass
class Planned:
    """What the planned rounds did: the bench of the rounds that ran, the deployments
    the race dropped (label -> the rounds they ran), the lifetimes and windows run."""

    bench: Bench
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    lifetimes: int = 0
    windows: int = 0


def planned_rounds(bench: Bench, made: list[int]) -> Planned:
    """The planned rounds, one at a time, each run whole or not at all before the bench's
    deadline, raced from the first: after each round but the last, a look of the
    sequential design (its round appended to `made`) stops measuring every deployment
    out of contention on every page it runs (open_questions.out_of_contention: the
    leader shown better than it at the look's level); the rest run the next round."""
    plan, recorder, progress = bench.plan, bench.recorder, bench.progress
    done = Planned(bench)
    alive = list(plan.deployments)
    each: list[float] = []  # a deployment's lifetime, round by round
    started = time.monotonic()
    for r in range(plan.trials):
        if r and time.monotonic() + len(alive) * statistics.median(each) >= bench.until:
            _cut(done, r, time.monotonic() - started)
            break
        one = dataclasses.replace(
            plan, deployments=alive, trials=1, first_round=plan.first_round + r
        )
        progress.say(
            f"round {plan.first_round + r + 1} of {plan.first_round + plan.trials}: "
            f"{len(alive)} deployment(s), in a fresh order"
            + (", side by side" if side_by_side.possible(one, one.first_round) else "")
            + (f" ({len(done.dropped)} out of the race)" if done.dropped else "")
        )
        began = time.monotonic()
        if not run_benchmark(bench.with_plan(one), stop_at=bench.until):
            _cut(done, r, time.monotonic() - started)
            break
        recorder.save()
        each.append((time.monotonic() - began) / len(alive))
        done.lifetimes, done.windows = (
            done.lifetimes + len(alive),
            done.windows + one.total_trials(),
        )
        if r + 1 < plan.trials:
            made.append(r + 1)
            alive = _look(bench, alive, done, r + 1, look_level(plan.trials, made, False))
    return done


def _look(
    bench: Bench, alive: list[Deployment], done: Planned, rounds: int, level: float
) -> list[Deployment]:
    """A planned round's look: the deployments out of contention leave the race (said,
    and their slots of the rounds left counted done); the others, in plan order."""
    plan = bench.plan
    document = bench.recorder.document
    out = out_of_contention(document.results, document.run_id, level, [d.label for d in alive])
    if not out:
        return alive
    for found in out:
        done.dropped[found.label] = rounds
        why = (
            "every pair failed"
            if found.failed
            else "the leader faster on every page it was ranked on, "
            + ", ".join(f"{r:.2f}x" for r in found.ratios)
        )
        bench.progress.say(
            f"race: {found.label} out after round {rounds} ({why}; look at {level:.3g})"
        )
    gone = {f.label for f in out}
    skipped = sum(
        len(plan.items({s.name for s in plan.scenarios})) for d in alive if d.label in gone
    )
    bench.progress.advance(skipped * (plan.trials - rounds), "")
    return [d for d in alive if d.label not in gone]


def _cut(done: Planned, begun: int, took: float) -> None:
    """The budget ends the planned rounds after `begun`: said and recorded; the bench
    keeps the rounds that ran."""
    bench = done.bench
    plan, recorder = bench.plan, bench.recorder
    if not 0 < begun < plan.trials:
        return
    bench.progress.say(
        f"budget: {begun} of the {plan.trials} planned round(s) run; the next would "
        f"not end within the budget at this run's pace ({took:.0f} s for {begun}): the "
        "race spends what is left"
    )
    record = recorder.document.plan
    record.trials_asked, record.trials = record.trials_asked or plan.trials, begun
    done.bench = bench.with_plan(dataclasses.replace(plan, trials=begun))


def _still_open(
    document: RunDocument,
    level: float,
    out: frozenset[str],
    closed: set[tuple[str, str, int | None]],
) -> list[Open]:
    """This look's open comparisons, less those a look before it decided (`closed`, to
    which this look's "better" calls are added): a comparison the leader won stays won."""
    closed.update(q.key() for q in beaten(document.results, document.run_id, level))
    found = open_questions(document.results, document.run_id, level, out)
    return [q for q in found if q.key() not in closed]


def spend(bench: Bench, keep: Callable[[float], float] = lambda each: 0.0) -> tuple[int, list[str]]:
    """The planned rounds, then rounds for open questions until the bench's deadline
    (time.monotonic()); (rounds added, questions still open). An added round starts only
    when the whole of it fits before the deadline (judged by the rounds before it), so
    every deployment of a round has its trial and the round stays paired. `keep(each)`:
    seconds left out of the race for what follows it (each: a deployment's time)."""
    started = time.monotonic()
    made: list[int] = []
    done = planned_rounds(bench, made)
    bench = done.bench
    plan, recorder, progress, deadline = bench.plan, bench.recorder, bench.progress, bench.until
    took = time.monotonic() - started
    each = took / max(1, done.lifetimes)
    # A round's cost in units: one per window and one per server lifetime (its start,
    # idle memory and stop are about a window's time here).
    unit = took / max(1, done.windows + done.lifetimes)
    recorder.document.plan.budget_cut = short_of_plan(plan, recorder, done.dropped)
    recorder.document.plan.raced_out = dict(done.dropped)
    out = frozenset(done.dropped)
    if recorder.document.plan.budget_cut:
        progress.say(
            f"the budget was spent before the planned {plan.trials} round(s) were done: "
            f"{len(recorder.document.plan.budget_cut)} deployment(s) have fewer trials"
        )
    added = 0
    still: list[str] = []
    closed: set[tuple[str, str, int | None]] = set()  # decided at a look: never reopened
    while True:  # bounded: at most EXTRA_ROUNDS_MAX rounds, each before the deadline
        document = recorder.document
        if not made or made[-1] < plan.trials + added:  # a budget cut after a screen's look
            made.append(plan.trials + added)  # ... makes that look this one
        final = added == EXTRA_ROUNDS_MAX
        level = look_level(plan.trials, made, final)
        questions = _still_open(document, level, out, closed)
        items = open_items(questions, plan.concurrency)
        chosen = [d for d in plan.deployments if d.label in items]
        extra = dataclasses.replace(
            plan,
            deployments=chosen,
            trials=1,
            first_round=plan.first_round + plan.trials + added,
            only=items,
        )
        left = deadline - keep(each) - time.monotonic()
        if (
            chosen
            and not final
            and left < ROUND_MARGIN * unit * (extra.total_trials() + len(chosen))
        ):
            # No time for the round these questions need: this look is the last, and
            # spends what the looks before it left (the answer judges at its level).
            final = True
            level = look_level(plan.trials, made, final)
            questions = _still_open(document, level, out, closed)
        still = sorted({q.question() for q in questions})
        if not chosen or final:
            break
        round_index = extra.first_round
        progress.say(
            f"budget: round {round_index + 1} for {len(still)} open comparison(s) "
            f"({len(chosen)} deployment(s), {extra.total_trials()} window(s)), "
            f"{deadline - time.monotonic():.0f} s left; this look tested at {level:.3g}"
        )
        progress.grow(extra.total_trials())
        round_began = time.monotonic()
        run_benchmark(bench.with_plan(extra), stop_at=deadline)
        units = extra.total_trials() + len(chosen)
        unit = max(unit, (time.monotonic() - round_began) / units)
        recorder.save()
        added += 1
    record = recorder.document.plan
    record.budget_level = round(level, 6)
    # What more time would buy: a round of the deployments still open, at a lifetime's
    # measured length (djbench.reports.answer_words says it in the answer's head).
    record.open_deployments = sorted({label for q in questions for label in (q.leader, q.other)})
    starts = len(recorder.document.deployment_rounds)
    record.lifetime_s = round((time.monotonic() - started) / starts, 1) if starts else None
    return added, still
