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
from djbench.run.modes.base import Context
from djbench.run.runner import run_benchmark
from djbench.run.session import TimedMode


class RoundsMode(TimedMode):
    name = "rounds"

    def budget_line(self, opts: RunOptions) -> str:
        return (
            f"; budget {(opts.budget or 0) / 60:g} min (then rounds for rankings still open, "
            "then the leader's worker/thread layouts)"
        )

    def run(self, ctx: Context) -> None:
        budget_s = ctx.opts.budget
        if budget_s is None or ctx.until_round is not None:
            run_benchmark(
                ctx.project, ctx.plan, ctx.recorder, ctx.run_dir, ctx.progress, ctx.until_round
            )
            return
        began = time.monotonic()
        added, still = budget.spend(
            ctx.project,
            ctx.plan,
            ctx.recorder,
            ctx.run_dir,
            ctx.progress,
            ctx.deadline,
            keep=functools.partial(layouts.reserve, ctx.plan),
        )
        record = ctx.recorder.document.plan
        record.budget_s, record.rounds_added, record.still_open = budget_s, added, still
        starts = len(ctx.recorder.document.deployment_rounds) or 1
        record.layouts = layouts.sweep(
            ctx.project,
            ctx.plan,
            ctx.recorder,
            ctx.run_dir,
            ctx.progress,
            ctx.deadline,
            each_s=(time.monotonic() - began) / starts,
            round_index=ctx.plan.first_round + ctx.plan.trials + added,
        )
        ctx.recorder.save()
