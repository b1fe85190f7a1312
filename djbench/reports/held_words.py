"""What a long run leaves behind, in words: a soak's memory trend and worker restarts,
the threads, descriptors and connections a server held, and the exceptions it logged."""

from __future__ import annotations

from djbench.results.model import Growth, Timeline
from djbench.verdicts.held import Held

SOAK_TREND_MIN_S = 600  # below it, a memory trend per hour is an extrapolation


def growth_text(growth: Growth, window_s: float) -> str:
    """A memory trend in words: MB per hour with its interval, and how far to trust it."""
    if growth.verdict == "too_short" or growth.mb_per_hour is None or growth.ci95 is None:
        return "too few readings for a trend"
    low, high = growth.ci95
    what = {
        "grows": "grows",
        "shrinks": "shrinks",
        "flat": "no trend detected",
    }[growth.verdict]
    limit = growth.threshold_mb_per_hour
    if growth.verdict == "flat" and limit is not None and (low > 0 or high < 0):
        what = f"a trend within +/-{limit:g} MiB/h (the --soak-threshold), not called growth"
    text = f"{what}: {growth.mb_per_hour:+,.1f} MiB/h (95% {low:+,.1f} to {high:+,.1f})"
    if window_s < SOAK_TREND_MIN_S - 1:  # a 10-minute soak measures 599.99 s
        text += (
            f"; extrapolated from {window_s:,.0f} s: below {SOAK_TREND_MIN_S // 60} minutes "
            "a warming cache reads as growth"
        )
    return text


def restarts_text(timeline: Timeline) -> str:
    """Worker restarts during a soak, and what they cost the load around them."""
    count = len(timeline.restarts)
    if not count:
        return f"no worker restart (process list read every {timeline.poll_s:g} s)"
    errors = sum(r.errors_around for r in timeline.restarts)
    worst = [r.p99_around_ms for r in timeline.restarts if r.p99_around_ms is not None]
    text = f"{count} worker restart(s), {errors} error(s) within {timeline.interval_s:g} s of them"
    if worst and timeline.p99_median_ms:
        text += (
            f"; p99 near them up to {max(worst):,.1f} ms against {timeline.p99_median_ms:,.1f} "
            "ms over the soak"
        )
    return text


def exceptions_text(held: Held, limit: int = 2) -> str:
    """ "209 x OperationalError: sorry, too many clients already" (the commonest)."""
    if not held.exceptions_total:
        return ""
    said = [
        f"{count:,} x {kind.rsplit('.', 1)[-1]}: {_short(message)}"
        for kind, message, count in held.exceptions[:limit]
    ]
    rest = held.exceptions_total - sum(c for _, _, c in held.exceptions[:limit])
    return "; ".join(said) + (f"; {rest:,} more" if rest else "")


def _short(message: str, chars: int = 90) -> str:
    """The message's telling end: libpq's start with where it connected ("connection
    failed: connection to server at ... failed: FATAL:  sorry, ...")."""
    text = " ".join(message.split())
    if "FATAL:" in text:
        text = text.split("FATAL:", 1)[1].strip()
    return text if len(text) <= chars else text[: chars - 1] + "…"


def held_text(held: Held) -> str:
    """Threads, descriptors, connections in one phrase."""
    text = f"{held.threads_peak} threads, {held.fds_peak} descriptors"
    if held.db_peak is not None:
        text += f", {held.db_peak} DB connection(s) at most ({held.db_after} after)"
    return text
