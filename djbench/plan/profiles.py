"""runbench's profiles (what a run loads when no option says otherwise) and the wall-time
budgets of the jobs that run until they decide; re-exported by djbench.plan.runplan."""

from __future__ import annotations

from typing import Any

CAPACITY_BUDGET_S = 900.0  # --capacity or --sweep without --budget: the command's wall time
QUICK_BUDGET_S = 120.0  # --quick: the wall time of a job that runs until it decides
QUICK_RUN_BUDGET_S = 210.0  # --quick, a plain run: the screen, then its leaders
PROFILES: dict[str, dict[str, Any]] = {
    # Three rounds of 2 s windows, the fewest with which the decision engine pairs rounds
    # (decide.MIN_ROUNDS), then --budget: the whole command's wall time, ten minutes by
    # default, whatever is left going to the rankings still open (djbench.run.budget).
    # Thirteen servers x three scenarios take about nine minutes of planned rounds here.
    "default": {
        "trials": 3,
        "duration": 2.0,
        "warmup": 1.0,
        "concurrency": [32],
        "budget": 600.0,
    },
    # At most 3.5 minutes, a screen: every deployment once (one round: too few for a
    # verdict, the answer says so), then, with the time left, rounds for the leaders'
    # open rankings and the leader's worker/thread layouts (djbench.run.layouts). A
    # site's slow pages get longer windows from the pilot (djbench.plan.fitting), so two
    # rounds of 14 deployments took 8.5 min on a Wagtail site's 60-90 ms pages.
    # A job that runs until it decides (--matrix, --capacity, --sweep, --churn, --tune)
    # gets QUICK_BUDGET_S of wall time instead of its own default, and says what it could
    # not decide in that time.
    "quick": {
        "trials": 1,
        "duration": 1.0,
        "warmup": 0.3,
        "concurrency": [32],
        "budget": QUICK_RUN_BUDGET_S,
    },
}
