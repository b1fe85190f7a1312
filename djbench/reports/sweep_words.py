"""The worker-count sweep in words (djbench.run.layouts measured it): the leader's
server at each of its layouts, raced in rounds (its interval and ties) when the time
allowed, else a screen of one window each, said as such. The answer prints these lines,
the HTML report's layout section repeats them."""

from __future__ import annotations

from djbench.reports.figures import rate
from djbench.verdicts import rules
from djbench.verdicts.runs import Run


def workers_text(workers: int, threads: int | None) -> str:
    return f"{workers} worker(s)" + (f" x {threads} thread(s)" if threads and threads > 1 else "")


def sweep_lines(run: Run) -> list[str]:
    """The worker count, measured (djbench.run.layouts): the leader's server at each of
    its layouts; raced in rounds (its interval and ties) when the time left allowed,
    else one window each, said as a screen."""
    swept = run.plan.layouts
    if swept is None:
        return []
    measured = [r for r in swept.rows if r.rps is not None and r.status == "ok"]
    if not [r for r in measured if r.label != swept.leader]:
        why = "no layout was measured" if swept.rows[1:] else "no time was left"
        return [f"  workers: {why} to sweep {swept.server}'s layouts (give --budget more)"]
    best = next(r for r in measured if r.label == swept.best)
    where = "the heaviest page, " if swept.page == "heaviest" else ""
    # An unstable layout among the leaders: the highest so far, no verdict (as a ranking).
    verb = "highest so far, no verdict" if swept.unstable else "served most"
    chosen = workers_text(best.workers, best.threads)
    head = (
        f"  workers, measured on {where}{swept.scenario}: {chosen} "
        f"{verb} ({best.label}, {swept.server} on {swept.server_cpus} CPU(s)"
    )
    if swept.rounds >= rules.MIN_ROUNDS:
        by_label = {r.label: r for r in swept.rows}
        tied = [by_label[t] for t in swept.tied if t in by_label]
        low, high = best.rps_low, best.rps_high
        span = f" [{rate(low)}-{rate(high)}]" if low and high else ""
        figure = (
            f"{rate(best.rps or 0)} req/s{span}"
            + (f", p99 {best.p99_ms:,.0f} ms" if best.p99_ms is not None else "")
            + f", raced over {swept.rounds} rounds"
        )
        if swept.unstable:
            varied = [by_label[u] for u in swept.unstable if u in by_label]
            return [
                head
                + f"): {figure}; the windows of "
                + ", ".join(workers_text(v.workers, v.threads) for v in varied)
                + " varied too much to rank them"
            ]
        return [
            head
            + f"): {figure}; cannot be told from it: "
            + (", ".join(workers_text(t.workers, t.threads) for t in tied) or "none")
        ]
    tried = "; ".join(
        f"{workers_text(r.workers, r.threads)} {rate(r.rps)} req/s"
        + (f" p99 {r.p99_ms:,.0f} ms" if r.p99_ms is not None else "")
        for r in sorted(swept.rows, key=lambda r: (r.workers, r.threads or 0))
        if r.rps is not None
    )
    return [
        head + f"; {tried}); {windows_each(swept.rounds)}: a screen, not a test (time for "
        f"{rules.MIN_ROUNDS} rounds of every layout races them; --tune confirms)"
    ]


def windows_each(rounds: int) -> str:
    """A sweep short of a race: one window per layout, or the rounds a budget let a race
    run before it ended (medians of fewer rounds than the test needs)."""
    if rounds <= 1:
        return "one window each"
    return f"{rounds} windows each (the budget ended its race before {rules.MIN_ROUNDS} rounds)"
