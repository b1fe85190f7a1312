"""The plain run: every deployment in interleaved rounds of timed windows, ranked
(djbench.run.runner). With --budget, the planned rounds, then more for the rankings
still open while the budget lasts (djbench.run.budget), then the leading server's
worker/thread layouts (djbench.run.layouts); with --until-round, the rounds up to it
(how --matrix interleaves its cells)."""

from __future__ import annotations

import functools
import time

from djbench.plan.runplan import RunOptions
from djbench.run import budget, layouts
from djbench.run.modes.job import Context
from djbench.run.runner import run_benchmark
from djbench.run.session import TimedMode


class RoundsMode(TimedMode):
    name = "rounds"

    def budget_line(self, opts: RunOptions) -> str:
        return (
            f"; budget {(opts.budget or 0) / 60:g} min (then rounds for rankings still open, "
            "then the leader's worker/thread layouts)"
        )

    budgets_rounds = True

    def run(self, ctx: Context) -> None:
        bench = ctx.bench
        if bench.deadline is None or ctx.until_round is not None:
            run_benchmark(bench, ctx.until_round)
            return
        began = time.monotonic()
        added, still = budget.spend(bench, keep=functools.partial(layouts.reserve, bench.plan))
        record = bench.recorder.document.plan
        record.budget_s, record.rounds_added, record.still_open = ctx.opts.budget, added, still
        starts = len(bench.recorder.document.deployment_rounds) or 1
        record.layouts = layouts.sweep(
            bench,
            each_s=(time.monotonic() - began) / starts,
            # After the rounds run (a planned round that would not fit is not run).
            round_index=bench.plan.first_round + (record.trials or bench.plan.trials) + added,
        )
        bench.recorder.save()
