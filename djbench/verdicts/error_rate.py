"""A window's error limit (--max-error-rate) judged like any figure (issue 37 item 6).

A window is invalid for its errors only when its error rate is above the limit beyond
its own uncertainty: the lower end of the 95% Wilson score interval of its failed over
attempted requests (djbench.verdicts.thresholds.wilson) lies above the limit, or most of
its requests failed (a broken server, whatever the count).

A window too small to judge the limit says so instead of being called invalid: below
3/limit requests (300 for 1%), even a window with none failed could not show its rate
within the limit (the rule of three: 0 failed of n gives a 95% upper bound of about
3/n), and one failure is already several times the limit. A rate above the limit but
not beyond its uncertainty also stands. Both carry a warning with the counts. A limit
of 0 keeps its plain meaning: any failure is beyond it.

The requests of one window are not independent (one stall times out several at once),
so the binomial interval is if anything too narrow: "beyond" is the claim it supports
best, and the claim that invalidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from djbench.results.model import Notice
from djbench.verdicts.thresholds import wilson

ErrorRateVerdict = Literal["within", "beyond", "close", "too few"]
RULE_OF_THREE = 3.0


@dataclass(frozen=True)
class Judged:
    verdict: ErrorRateVerdict
    rate: float
    interval: tuple[float, float] | None = None
    needed: int | None = None  # the requests a window needs to judge this limit


def needed(limit: float) -> int:
    """Requests below which a window cannot show its error rate within `limit`."""
    return math.ceil(RULE_OF_THREE / limit)


def judge(failed: int, attempts: int, limit: float) -> Judged:
    rate = failed / attempts if attempts else 1.0
    if rate <= limit:
        return Judged("within", rate)
    if limit <= 0 or 2 * failed > attempts:
        return Judged("beyond", rate)
    interval = wilson(failed, attempts)
    if attempts < needed(limit):
        return Judged("too few", rate, interval, needed(limit))
    return Judged("beyond" if interval[0] > limit else "close", rate, interval)


def warning(failed: int, attempts: int, limit: float) -> Notice | None:
    """The warning of a window that stands although its rate is above the limit."""
    judged = judge(failed, attempts, limit)
    if judged.verdict not in ("too few", "close") or judged.interval is None:
        return None
    params: dict[str, float | int | list[float]] = {
        "failed": failed,
        "attempts": attempts,
        "rate": round(judged.rate, 5),
        "limit": limit,
        "interval": [round(v, 5) for v in judged.interval],
    }
    if judged.needed is not None:
        params["needed"] = judged.needed
    code = "errors_too_few" if judged.verdict == "too few" else "errors_close"
    return Notice(code=code, params=params)
