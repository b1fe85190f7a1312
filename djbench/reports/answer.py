"""The answer a run ends with, before any table: per scenario the deployment to use with
its figure and interval, the deployments the run cannot tell from it, and what is not
recommended with the reason in a few words; at most about fifteen lines
(:data:`MAX_LINES`). It reads a results file's :class:`Run` only, as every report does:
the run prints it, the HTML report opens with it, the guide repeats it.

The figure is capacity within the latency target where the run searched for it
(its range: the confirmed rate up to the lowest that failed), otherwise the typical
req/s with a 95% t-interval over the pair's rounds and its median p99. Who leads and who
ties is djbench.reports.ranking's rule, the guide's own.
"""

from __future__ import annotations

from djbench.reports.ranking import (
    CONFIDENCE,
    against,
    beats,
    best_by_throughput,
    cause,
    compared,
    confirmed,
    flagged,
    gate_leak,
    rps_interval,
    tie_level,
    unfit,
)
from djbench.reports.search_words import span
from djbench.reports.words import say
from djbench.verdicts import thresholds
from djbench.verdicts.capacity import tied
from djbench.verdicts.runs import UNDERSERVED, Pair, Run

MAX_LINES = 15
REASON_CHARS = 70  # a reason in a few words: the detail is in the tables below


def _short(text: str, chars: int = REASON_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _layout(run: Run) -> str:
    """The layout every pair had, or that each had its own (--workers auto, --tune,
    a project's own deployment): then each recommendation says its own."""
    layouts = {layout(p) for p in _pairs(run)}
    levels = ",".join(str(c) for c in run.plan.concurrency) or "?"
    if len(layouts) != 1:
        return f"each deployment's own layout, c={levels}"
    return f"{layouts.pop()} each, c={levels}"


def layouts(run: Run) -> str:
    """Each deployment's layout as it ran ('uvicorn 1 worker(s); yours-uwsgi 2 worker(s)
    x 4 thread(s)'), or the one they all had."""
    each = {p.label: layout(p) for p in run.pairs}
    if len(set(each.values())) <= 1:
        return f"{next(iter(each.values()), '?')} per deployment"
    return "; ".join(f"{label} {said}" for label, said in each.items())


def layout(pair: Pair) -> str:
    """'2 worker(s) x 4 thread(s)': what the deployment really ran (threads as the
    server started with them; an async server's one event loop per worker)."""
    return _workers(pair.entry.workers or 1, pair.entry.threads)


def _yours(winner: Pair, pairs: list[Pair], unfit_here: dict[str, str]) -> list[str]:
    """How the recommended deployment compares with each of the project's own (its
    [[deployment]]s: what the team runs now), paired by round."""
    out = []
    for own in [p for p in pairs if p.entry.own and p.label != winner.label]:
        head = f"    vs yours, {own.label} ({layout(own)}): "
        if own.label in unfit_here:
            out.append(head + f"not usable here: {_short(unfit_here[own.label], 50)}")
            continue
        [estimate] = against(winner, [own])
        if estimate is None:
            mine, theirs = winner.median("rps"), own.median("rps")
            ratio = f"; {winner.label} {mine / theirs:.2f}x," if mine and theirs else ""
            out.append(head + f"{_throughput(own)}{ratio} too few paired rounds to test")
            continue
        decision = beats(estimate)
        low, high = estimate.interval(1 - CONFIDENCE)
        said = {"better": "more than yours", "equivalent": "the same as yours"}.get(
            decision.verdict, "not distinguishable from yours"
        )
        out.append(
            head + f"{_throughput(own)}; {winner.label} serves {estimate.ratio:.2f}x "
            f"[{low:.2f}-{high:.2f}]: {said}"
        )
    return out


def _workers(workers: int, threads: int | None) -> str:
    return f"{workers} worker(s)" + (f" x {threads} thread(s)" if threads and threads > 1 else "")


def sweep_lines(run: Run) -> list[str]:
    """The worker count, measured (djbench.run.layouts): the leader's server at each of
    its layouts, one window each; said as a screen."""
    swept = run.plan.layouts
    if swept is None:
        return []
    measured = [r for r in swept.rows if r.rps is not None and r.status == "ok"]
    if not [r for r in measured if r.label != swept.leader]:
        why = "no layout was measured" if swept.rows[1:] else "no time was left"
        return [f"  workers: {why} to sweep {swept.server}'s layouts (give --budget more)"]
    best = next(r for r in measured if r.label == swept.best)
    tried = "; ".join(
        f"{_workers(r.workers, r.threads)} {r.rps:,.0f} req/s"
        + (f" p99 {r.p99_ms:,.0f} ms" if r.p99_ms is not None else "")
        for r in sorted(swept.rows, key=lambda r: (r.workers, r.threads or 0))
        if r.rps is not None
    )
    return [
        f"  workers, measured: {_workers(best.workers, best.threads)} served most "
        f"({best.label}, {swept.server} on {swept.server_cpus} CPU(s); {swept.scenario}: "
        f"{tried}); one window each: a screen, not a test (--tune confirms)"
    ]


def _throughput(pair: Pair) -> str:
    rps = pair.median("rps") or 0.0
    interval = rps_interval(pair)
    said = f"{rps:,.0f} req/s"
    if interval is not None:
        said += f" [{interval[0]:,.0f}-{interval[1]:,.0f}]"
    else:
        said += " (one trial: no interval)"
    if (p99 := pair.median("p99")) is not None:
        said += f", p99 {p99:,.1f} ms"
    return said


def _capacity_line(scenario: str, pairs: list[Pair], unfit_here: dict[str, str]) -> str | None:
    found = [
        p
        for p in pairs
        if p.entry.capacity is not None
        and p.entry.capacity.rps
        and not p.entry.capacity.screening
        and p.label not in unfit_here
    ]
    if not found:
        return None
    found.sort(key=lambda p: -(p.entry.capacity.rps or 0) if p.entry.capacity else 0)
    lead = found[0].entry.capacity
    assert lead is not None and lead.rps is not None
    ties = [p.label for p in found[1:] if p.entry.capacity and tied(lead, p.entry.capacity)]
    if lead.repeats:
        line = (
            f"{scenario}: use {found[0].label}: {lead.rps:,.0f} req/s {span(lead)} within p99 "
            f"{lead.slo_p99_ms:g} ms (95% interval; plan on the low end)"
        )
        said = f"; not distinguishable from it (likelihood-ratio test): {', '.join(ties)}"
    else:
        high = lead.bracket[1] if lead.bracket else lead.rps
        line = (
            f"{scenario}: use {found[0].label}: {lead.rps:,.0f} req/s within p99 "
            f"{lead.slo_p99_ms:g} ms (search range {lead.rps:,.0f}-{high:,.0f})"
        )
        said = f"; ranges overlap: {', '.join(ties)}"
    return line + (said if ties else "")


def _pairs(run: Run, scenario: str | None = None) -> list[Pair]:
    """The pairs a decision reads: all of them, or in a --tune run each server's best on
    its confirmation rounds (a losing candidate is the search working, not a finding)."""
    pairs = run.pairs if scenario is None else run.by_scenario(scenario)
    return confirmed(run, [p for p in pairs if compared(run, p)])


def _scenario_line(run: Run, scenario: str, unfit_here: dict[str, str]) -> str:
    pairs = _pairs(run, scenario)
    if (line := _capacity_line(scenario, pairs, unfit_here)) is not None:
        return line
    level = max((p.concurrency or 0 for p in pairs), default=0)
    at_level = [p for p in pairs if (p.concurrency or 0) == level]
    winners, _, blocked = best_by_throughput(at_level, unfit_here, tie_level(run))
    if blocked:
        top = max(blocked, key=lambda p: p.median("rps") or 0.0)
        return (
            f"{scenario}: no verdict: the leaders' trials vary too much to rank "
            f"({', '.join(p.label for p in blocked)}); run more rounds (--budget). "
            f"Highest so far, not a verdict: {top.label} ({layout(top)}) {_throughput(top)}"
        )
    if not winners:
        return f"{scenario}: no deployment served it correctly: nothing to recommend"
    line = f"{scenario}: use {winners[0].label} ({layout(winners[0])}): {_throughput(winners[0])}"
    if len(winners) > 1:
        line += f"; cannot be told from it: {', '.join(w.label for w in winners[1:])}"
    return line


def _yours_lines(run: Run, scenario: str, unfit_here: dict[str, str]) -> list[str]:
    """The comparison with the project's own deployments, under the scenario's line."""
    pairs = _pairs(run, scenario)
    if not any(p.entry.own for p in pairs) or _capacity_line(scenario, pairs, unfit_here):
        return []
    level = max((p.concurrency or 0 for p in pairs), default=0)
    at_level = [p for p in pairs if (p.concurrency or 0) == level]
    winners, _, blocked = best_by_throughput(at_level, unfit_here, tie_level(run))
    if blocked:  # beside the highest so far, said as not a verdict on its line
        winners = [max(blocked, key=lambda p: p.median("rps") or 0.0)]
    return _yours(winners[0], at_level, unfit_here) if winners else []


def finding(pair: Pair) -> str | None:
    """What rules a pair out, in a few words (None: nothing does)."""
    reason = pair.reason
    if pair.status == "invalid" and reason is not None and reason.code == "too_many_errors":
        timeouts = reason.params.get("errors", {}).get("timeout", 0)
        kind = "timed out" if timeouts else "failed"
        return f"invalid: {reason.params.get('rate', 0):.1%} of requests {kind}"
    if pair.status == "ok" and (w := pair.warning(UNDERSERVED)) is not None:
        served, offered = w.params.get("in_flight", 0), w.params.get("concurrency", 0)
        return f"served {served:.0f} of {offered} connections"
    if pair.status == "ok" and gate_leak(pair) is not None:
        return "leaks a database connection per request (verify gate)"
    if pair.status in ("invalid", "failed", "incompatible") or unfit(pair) is not None:
        return _short(f"{pair.status}: {say(reason) if reason else unfit(pair)}")
    return None


def _not_recommended(run: Run) -> list[str]:
    """One line per deployment that may not be used, its first finding, and the
    server's known cause on the next line."""
    said: dict[str, list[str]] = {}
    causes: set[str] = set()
    for pair in _pairs(run):
        if pair.label in said or (why := finding(pair)) is None:
            continue
        said[pair.label] = [f"  {pair.label}: {pair.scenario} {why}"]
        if (known := cause(pair)) is not None:
            first = known.split(";")[0]
            said[pair.label].append(
                "    cause: as above" if first in causes else f"    cause: {first}"
            )
            causes.add(first)
    return [line for found in said.values() for line in found]


MISSES_SHOWN = 4  # the rest are counted; the summary and JUnit list every one


def threshold_lines(run: Run) -> list[str]:
    """The scenario file's thresholds: how many met, missed, too close to call; a line
    per miss (its figure, interval and limit)."""
    checks = thresholds.of_run(run)
    if not checks:
        return []
    counts = {v: sum(c.verdict == v for _, c in checks) for v in ("met", "missed", "too close")}
    out = [
        f"Thresholds (95% intervals): {counts['met']} met, {counts['missed']} missed, "
        f"{counts['too close']} too close to call"
    ]
    missed = [(p, c) for p, c in checks if c.verdict == "missed"]
    out += [
        f"  missed: {p.label} {p.scenario}: {thresholds.said(c)}" for p, c in missed[:MISSES_SHOWN]
    ]
    if len(missed) > MISSES_SHOWN:
        out.append(f"  ... and {len(missed) - MISSES_SHOWN} more missed")
    return out


def lines(run: Run) -> list[str]:
    """The answer: a line per scenario (never dropped: each is a workload's decision),
    then what is not recommended, cut to MAX_LINES in all (the guide lists the rest)."""
    plan = run.plan
    rounds = (plan.trials or 0) + plan.rounds_added
    head = (
        f"Answer: {len({p.label for p in _pairs(run)})} deployment(s), {_layout(run)}, "
        f"{rounds} round(s); req/s [{CONFIDENCE:.0%} interval over rounds]"
    )
    if plan.budget_s is not None and plan.budget_level is not None:
        head += f"; {len(plan.still_open)} comparison(s) with a leader still open"
    unfit_here = flagged(run)
    out = [head]
    for s in run.scenarios():
        out += [f"  {_scenario_line(run, s, unfit_here)}", *_yours_lines(run, s, unfit_here)]
    out += sweep_lines(run)
    out += threshold_lines(run)
    bad = _not_recommended(run)
    if bad:
        room = max(1, MAX_LINES - len(out) - 1)
        out.append("Not recommended:")
        if len(bad) > room:
            bad = [*bad[: room - 1], f"  ... and {len(bad) - room + 1} more (see the guide)"]
        out += bad
    return out
