"""The sample project's settings, with every request doing a fixed amount of extra work:
the deterministic regression for the cost probe (runbench --cost).

SpinMiddleware (loadtests/regressions/middleware.py) burns a share of the CPU *time*, so
the work it adds moves with the machine; this one adds the same instructions on every
request: FIXED_WORK_LOOPS turns of a Python loop (default 35: +22,797 instructions per
request, x1.0248 on health-sync's 917,830 and x1.0026 on movies-sync's 6,719,438, as
loadtests/cost_check.sh measured them)."""

from __future__ import annotations

import os

from sampleproject.settings import *  # noqa: F403
from sampleproject.settings import MIDDLEWARE

MIDDLEWARE = ["loadtests.regressions.middleware.FixedWorkMiddleware", *MIDDLEWARE]
FIXED_WORK_LOOPS = int(os.environ.get("FIXED_WORK_LOOPS", "35"))
