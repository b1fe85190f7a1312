"""The plain run: every deployment in interleaved rounds of timed windows, ranked
(djbench.run.runner). With --budget, the planned rounds, then more for the rankings
still open while the budget lasts (djbench.run.budget); with --until-round, the rounds
up to it (how --matrix interleaves its cells)."""

from __future__ import annotations

from djbench.plan.runplan import RunOptions
from djbench.run import budget
from djbench.run.modes.base import Context
from djbench.run.runner import run_benchmark
from djbench.run.session import TimedMode


class RoundsMode(TimedMode):
    name = "rounds"

    def budget_line(self, opts: RunOptions) -> str:
        return f"; budget {(opts.budget or 0) / 60:g} min (then rounds for rankings still open)"

    def run(self, ctx: Context) -> None:
        budget_s = ctx.opts.budget
        if budget_s is None or ctx.until_round is not None:
            run_benchmark(
                ctx.project, ctx.plan, ctx.recorder, ctx.run_dir, ctx.progress, ctx.until_round
            )
            return
        added, still = budget.spend(
            ctx.project, ctx.plan, ctx.recorder, ctx.run_dir, ctx.progress, ctx.deadline
        )
        record = ctx.recorder.document.plan
        record.budget_s, record.rounds_added, record.still_open = budget_s, added, still
