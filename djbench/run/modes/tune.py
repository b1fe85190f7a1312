"""``runbench --tune``: a bounded search for each server's best configuration.

Every candidate (:func:`djbench.plan.tuning.space`) runs under the same pinning and
the same verify gate as any benchmark: a halving round is one ordinary plan (one trial
per candidate and scenario, candidates of every server interleaved in a seeded
order), recorded in the same results file, each candidate a pair of its own
(``uwsgi{workers=1,threads=32}``). After each round every server keeps the better half
of its candidates by the objective (the geometric mean over the scenarios of each
round's req/s; a round whose worst p99 breaks --slo-p99 scores nothing), until one is
left or the budget is spent; no deployment starts past the budget, and what it cut is
said. Each server's best is written as a file to copy (``<run>/tuned/<server>.json``)
and can be rerun exactly with ``--config-from``.
"""

from __future__ import annotations

import dataclasses
import math
import time

from djbench.launch.live import Deployment
from djbench.measure.drivers import Driver
from djbench.plan import tuning
from djbench.plan.jobplans import TunePlan
from djbench.plan.options import cpu_count
from djbench.plan.runplan import RunOptions
from djbench.results.model import PairResult, RunDocument, TuneCandidate, TuneRecord
from djbench.run.bench import Bench
from djbench.run.modes import tune_capacity
from djbench.run.modes.capacity import CapacityMode
from djbench.run.modes.job import Context
from djbench.run.roundplan import Plan
from djbench.run.runner import run_benchmark
from djbench.run.selection import Selection, deployment
from djbench.run.session import TimedMode
from djbench.run.tuned import Fate, write_files
from djbench.verdicts.runs import left_unserved


def _round_figures(
    entries: list[PairResult], round_index: int
) -> tuple[float, float, float] | None:
    """(req/s as the geometric mean over scenarios, worst p99, largest peak PSS) of one
    candidate's trials in one round; None when a scenario has no valid trial there, or
    when the server left connections unserved."""
    rps, p99, pss = [], [], []
    for entry in entries:
        if entry.status == "incompatible":
            # The gate refused this scenario for the server (an async ORM view under
            # gevent): every candidate alike, so it leaves the objective, not the server.
            continue
        trials = [t for t in entry.trials if t.round == round_index and t.valid]
        if not trials or entry.status not in ("ok",):
            return None
        if any(left_unserved(t) for t in trials):
            # Connections left waiting: its req/s may be high, but its latency leaves out
            # their wait (the guide never recommends such a pair; nor does the search).
            return None
        rps.append(trials[0].rps)
        p99.append(trials[0].latency_ms.p99 or 0.0)
        pss.append(trials[0].memory_mb.pss_peak if trials[0].memory_mb else 0.0)
    if not rps or min(rps) <= 0:
        return None
    return math.exp(sum(math.log(r) for r in rps) / len(rps)), max(p99), max(pss)


def search(
    bench: Bench,
    templates: list[Deployment],
    budget_s: float,
    objective: str,
    slo_p99: float | None,
) -> TuneRecord:
    """Successive halving for every server at once (djbench.plan.tuning); each round one
    ordinary plan; the record of what was tried. The search's own budget is its bench's
    deadline."""
    base, recorder, progress = bench.plan, bench.recorder, bench.progress
    cpus = cpu_count(templates[0].cpus) if templates else 1
    record = TuneRecord(
        objective=objective, slo_p99_ms=slo_p99, budget_s=budget_s, server_cpus=cpus
    )
    recorder.document.tuning = record
    started = time.monotonic()
    stop_at = started + budget_s
    bench = dataclasses.replace(bench, deadline=stop_at)
    template_of = {t.server.name: t for t in templates}
    spaces = {name: tuning.space(t.server.tuning, cpus) for name, t in template_of.items()}

    def measure(
        round_index: int, keys: list[tuning.Key]
    ) -> dict[tuning.Key, tuning.Figures | None]:
        chosen = {key: deployment(template_of[key[0]], key[1]) for key in keys}
        progress.say(
            f"tuning round {round_index + 1}: {len(keys)} candidate(s), "
            f"{max(0.0, stop_at - time.monotonic()):.0f} s of budget left"
        )
        plan = dataclasses.replace(
            base,
            deployments=list(chosen.values()),
            trials=1,
            first_round=round_index,
            seed=base.seed + round_index,
        )
        run_benchmark(bench.with_plan(plan), stop_at=stop_at)
        recorder.save()
        answers: dict[tuning.Key, tuning.Figures | None] = {}
        for key, dep in chosen.items():
            entries = [e for e in recorder.document.results if e.label == dep.label]
            ran = any(t.round == round_index for e in entries for t in e.trials)
            if ran or any(e.status in ("failed", "incompatible") for e in entries):
                answers[key] = _round_figures(entries, round_index)
        return answers

    halving = tuning.successive_halving(
        spaces, measure, objective, slo_p99, out_of_time=lambda: time.monotonic() >= stop_at
    )
    record.confirm_rounds = confirm(bench, halving, template_of)
    if not record.confirm_rounds and halving.best:
        record.skipped.append(
            "the bests' confirmation rounds: no budget was left, so the bests are compared "
            "on the trials that chose them (which flatter them: the winner's curse)"
        )
    _record_candidates(record, halving, objective, slo_p99)
    record.skipped = [
        f"the budget ({budget_s:.0f} s) was spent: {c}" for c in halving.cut
    ] + record.skipped
    record.spent_s = round(time.monotonic() - started, 1)
    record.files = write_files(recorder.document, bench.run_dir)
    recorder.save()
    return record


def _record_candidates(
    record: TuneRecord, halving: tuning.Halving, objective: str, slo_p99: float | None
) -> None:
    """Every candidate tried, with its figures and how it ended; each server's best."""
    for name, standings in halving.standings.items():
        for st in standings:
            score = st.score(objective, slo_p99)
            dropped = halving.dropped_after.get((name, st.candidate))
            best = halving.best.get(name) == st.candidate
            record.candidates.append(
                TuneCandidate(
                    server=name,
                    config=st.candidate.label,
                    workers=st.candidate.workers,
                    threads=st.candidate.threads,
                    knobs=dict(st.candidate.knobs),
                    rounds=len(st.rps),
                    rps=[round(v, 1) for v in st.rps],
                    p99_ms=[round(v, 2) for v in st.p99],
                    pss_mb=[round(v, 1) for v in st.pss],
                    score=round(score, 2) if math.isfinite(score) else None,
                    outcome=_outcome(best, bool(st.failed), bool(st.rps), dropped),
                    dropped_after=dropped,
                    why=st.failed and "no valid trial, or connections left unserved",
                )
            )
        if name in halving.best:
            record.best[name] = halving.best[name].label


CONFIRM_ROUNDS = 3  # fresh rounds of each server's best, the paired test's minimum


def confirm(bench: Bench, halving: tuning.Halving, template_of: dict[str, Deployment]) -> list[int]:
    """Fresh rounds of every server's best, the ones the guide compares bests on: the
    trials that selected a best flatter it (the winner's curse), so comparing bests on
    them can never separate them honestly. Run only while the budget lasts; the rounds
    that ran are returned."""
    base, recorder = bench.plan, bench.recorder
    if not halving.best or time.monotonic() >= bench.until:
        return []
    first = halving.rounds
    bests = [deployment(template_of[s], c) for s, c in halving.best.items()]
    bench.progress.say(f"confirming each server's best: {CONFIRM_ROUNDS} fresh round(s)")
    plan = dataclasses.replace(
        base, deployments=bests, trials=CONFIRM_ROUNDS, first_round=first, seed=base.seed + first
    )
    run_benchmark(bench.with_plan(plan), stop_at=bench.deadline)
    recorder.save()
    ran = {t.round for e in recorder.document.results for t in e.trials if t.round >= first}
    return sorted(ran)


def _outcome(best: bool, failed: bool, measured: bool, dropped: int | None) -> Fate:
    """What became of a candidate: never measured (the budget ran out first) is said as
    such, not as "dropped"."""
    if best:
        return "best"
    if failed and not measured:
        return "failed"
    if dropped:
        return "dropped"
    return "undecided" if measured else "unmeasured"


def plan_of(opts: RunOptions) -> TunePlan:
    assert isinstance(opts.job, TunePlan), opts.job
    return opts.job


class TuneMode(TimedMode):
    """--tune: each server's best configuration, by successive halving or (with
    --capacity or --objective capacity) by a capacity search per candidate."""

    name = "tune"

    def says_budget(self, opts: RunOptions) -> bool:
        return not plan_of(opts).by_capacity

    def check(self, opts: RunOptions, selection: Selection, driver: Driver) -> None:
        if plan_of(opts).by_capacity:
            CapacityMode().check(opts, selection, driver)

    def each_pair(self, opts: RunOptions, plan: Plan) -> str:
        if plan_of(opts).by_capacity:
            return "a capacity search per candidate (screening, then finals)"
        return "a trial per halving round"

    def budget_line(self, opts: RunOptions) -> str:
        minutes = f"budget {(opts.budget or 0) / 60:g} min"
        if plan_of(opts).by_capacity:
            return f"; capacity at p99 <= {plan_of(opts).slo_p99:g} ms, {minutes}"
        return f"; {minutes} (then rounds for rankings still open)"

    def _candidates(self, plan: Plan, selection: Selection) -> int:
        cpus = max(1, len(selection.server_cpus))
        return sum(len(tuning.space(d.server.tuning, cpus)) for d in plan.deployments)

    def more(self, opts: RunOptions, plan: Plan, selection: Selection) -> list[str]:
        return [
            f"Tuning: {self._candidates(plan, selection)} candidate configuration(s) over "
            f"{len(plan.deployments)} server(s), objective {plan_of(opts).objective}"
            + (f" with p99 <= {plan_of(opts).slo_p99:g} ms" if plan_of(opts).slo_p99 else "")
            + f", budget {plan_of(opts).budget_s:.0f} s"
        ]

    def ticks(self, opts: RunOptions, plan: Plan, selection: Selection) -> int:
        count = self._candidates(plan, selection)
        if plan_of(
            opts
        ).by_capacity:  # screening: a tick a candidate and scenario; finals: 2 a server
            return (count + 2 * len(plan.deployments)) * len(plan.scenarios)
        return 2 * count * len(plan.scenarios) * len(plan.concurrency)  # halving: < 2n

    def run(self, ctx: Context) -> None:
        bench, job = ctx.bench, plan_of(ctx.opts)
        deployments = bench.plan.deployments
        if job.by_capacity:
            # --capacity's --budget is the whole command's: the search gets what is left
            # of it when that is less than --tune-budget (it said 900 s under --budget 8m).
            left = bench.until - time.monotonic()
            budget = min(job.budget_s, left)
            tune_capacity.search(bench, deployments, budget, job.slo_p99 or 0.0, job.steady_s)
            return
        search(bench, deployments, job.budget_s, job.objective, job.slo_p99)

    def measured(self, document: RunDocument) -> list[PairResult]:
        # A search's losing candidates may be invalid: that is the search working; what
        # it measured is each server's best.
        if document.tuning is None:
            return super().measured(document)
        best = document.tuning.best
        return [e for e in super().measured(document) if best.get(e.server) == e.config]
