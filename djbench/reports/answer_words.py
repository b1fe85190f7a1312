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

from djbench.reports import threshold_words
from djbench.reports.figures import rate
from djbench.reports.search_words import span
from djbench.reports.sweep_words import sweep_lines, workers_text
from djbench.reports.words import say
from djbench.results.model import Notice
from djbench.results.plan_model import PlanRecord
from djbench.verdicts import rules, thresholds
from djbench.verdicts.answer import Answer, PageAnswer, Versus, answer, pairs_of, rounds_of
from djbench.verdicts.ranking import CONFIDENCE, gate_leak, rps_interval, unfit
from djbench.verdicts.runs import UNDERSERVED, Pair, Run

MAX_LINES = 15
REASON_CHARS = 70  # a reason in a few words: the detail is in the tables below


def _short(text: str, chars: int = REASON_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _layout(run: Run) -> str:
    """The layout every pair had, or that each had its own (--workers auto, --tune,
    a project's own deployment): then each recommendation says its own."""
    layouts = {layout(p) for p in pairs_of(run)}
    if len(layouts) != 1:
        return "each deployment's own layout"
    return f"{layouts.pop()} each"


def what_ran(run: Run) -> str:
    """What was run, as it ran: an open-loop capacity search and its repeats, or the
    closed-loop connections and the rounds completed (never what was planned)."""
    searches = [p.entry.capacity for p in run.pairs if p.entry.capacity is not None]
    if searches:
        repeats = max(c.repeats for c in searches)
        slo = searches[0].slo_p99_ms
        said = f"{repeats} repeat(s)" if repeats else "one search, no repeat"
        return f"open-loop capacity search within p99 {slo:g} ms, {said}"
    levels = ",".join(str(c) for c in run.plan.concurrency)
    loop = "open-loop, " if run.plan.loop == "open" else ""
    return f"{loop}c={levels or 'none'}, {rounds_done(run)}"


def layouts(run: Run) -> str:
    """Each deployment's layout as it ran ('uvicorn 1 worker(s); yours-uwsgi 2 worker(s)
    x 4 thread(s)'), or the one they all had."""
    each = {p.label: layout(p) for p in run.pairs}
    if len(set(each.values())) <= 1:
        return f"{next(iter(each.values()), 'no deployment')} per deployment"
    return "; ".join(f"{label} {said}" for label, said in each.items())


def layout(pair: Pair) -> str:
    """'2 worker(s) x 4 thread(s)': what the deployment really ran (threads as the
    server started with them; an async server's one event loop per worker)."""
    return workers_text(pair.entry.workers or 1, pair.entry.threads)


def own_notes(pair: Pair, run: Run) -> str:
    """What a project's own deployment was measured with, said beside its figures: a
    new connection per request (it closes each), the changes made to run it here."""
    record = next((o for o in run.plan.own if o.name == pair.entry.own), None)
    if record is None:
        return ""
    said = ""
    if not record.keep_alive:
        said += "; closes every connection: measured with a new connection per request"
    if changed := len(record.changes) - (0 if record.keep_alive else 1):
        said += f"; {changed} change(s) to run it here, listed in the guide"
    return said


def _yours(found: list[Versus], winner: Pair, run: Run) -> list[str]:
    """How the recommended deployment compares with each of the project's own
    deployments (what the team runs now), paired by round; what djbench changed to run
    it, and a connection per request, said beside it."""
    out = []
    for v in found:
        head = f"    vs yours, {v.own.label} ({layout(v.own)}{own_notes(v.own, run)}"
        head += "): "
        if v.unfit is not None:
            out.append(head + f"not usable here: {_short(say(v.unfit), 50)}")
        elif v.verdict is None:
            ratio = f"; {winner.label} {v.ratio:.2f}x," if v.ratio else ""
            out.append(head + f"{throughput(v.own)}{ratio} too few paired rounds to test")
        else:
            low, high = v.interval or (float("nan"), float("nan"))
            said = {"better": "more than yours", "equivalent": "the same as yours"}.get(
                v.verdict, "not distinguishable from yours"
            )
            out.append(
                head + f"{throughput(v.own)}; {winner.label} serves {v.ratio:.2f}x "
                f"[{low:.2f}-{high:.2f}]: {said}"
            )
    return out


def throughput(pair: Pair) -> str:
    rps = pair.median("rps") or 0.0
    interval = rps_interval(pair)
    said = f"{rate(rps)} req/s"
    if interval is not None:
        said += f" [{rate(interval[0])}-{rate(interval[1])}]"
    else:
        said += " (one round: no interval)"
    if (p99 := pair.median("p99")) is not None:
        said += f", p99 {p99:,.1f} ms"
    return said


def _capacity_line(found: PageAnswer) -> str:
    assert found.capacity is not None
    leader, ties = found.capacity.leader, [p.label for p in found.capacity.tied]
    lead = leader.entry.capacity
    assert lead is not None and lead.rps is not None
    if lead.repeats:
        line = (
            f"{found.scenario}: use {leader.label}: {lead.rps:,.0f} req/s {span(lead)} within "
            f"p99 {lead.slo_p99_ms:g} ms (95% interval; plan on the low end)"
        )
        said = f"; not distinguishable from it (likelihood-ratio test): {', '.join(ties)}"
    else:
        high = lead.bracket[1] if lead.bracket else lead.rps
        line = (
            f"{found.scenario}: use {leader.label}: {lead.rps:,.0f} req/s within p99 "
            f"{lead.slo_p99_ms:g} ms (search range {lead.rps:,.0f}-{high:,.0f})"
        )
        said = f"; ranges overlap: {', '.join(ties)}"
    return line + (said if ties else "")


def _page_lines(found: PageAnswer, run: Run) -> list[str]:
    """The scenario's line, and the project's own deployments against its leader."""
    if found.kind == "capacity":
        return [f"  {_capacity_line(found)}"]
    assert found.ranking is not None
    scenario, top = found.scenario, found.leader
    if found.kind == "none_served" or top is None:
        return [f"  {scenario}: no deployment served it correctly: nothing to recommend"]
    if found.kind == "screen":
        line = (
            f"{scenario}: a screen, not a verdict: highest so far {top.label} ({layout(top)}"
            f"{own_notes(top, run)}) {throughput(top)}; {screen_reason(found)}"
        )
    elif found.kind == "no_verdict":
        line = (
            f"{scenario}: no verdict: the leaders' trials vary too much to rank "
            f"({', '.join(p.label for p in found.ranking.blocked)}); run more rounds "
            f"(--budget). Highest so far, not a verdict: {top.label} ({layout(top)}"
            f"{own_notes(top, run)}) "
            f"{throughput(top)}"
        )
    else:
        line = (
            f"{scenario}: use {top.label} ({layout(top)}{own_notes(top, run)}): {throughput(top)}"
        )
        if len(found.ranking.winners) > 1:
            line += "; cannot be told from it: " + ", ".join(
                w.label for w in found.ranking.winners[1:]
            )
    return [f"  {line}", *_yours(found.yours, top, run)]


def screen_reason(found: PageAnswer) -> str:
    """Why a screen ranks nobody, in the rounds it had."""
    assert found.ranking is not None
    rounds = rounds_of(found.ranking)
    return (
        f"{rounds} round(s) rank nobody (the paired test needs {rules.MIN_ROUNDS}): more "
        "rounds decide (a default run, or more --budget)"
    )


def race_lines(found: Answer) -> list[str]:
    """The deployments the race stopped measuring, when, and how far behind (one line)."""
    if not found.out:
        return []
    said = "; ".join(
        f"{o.label} after round {o.last_round} ({_ratios(o.ratios)} the leader)"
        for o in sorted(found.out, key=lambda o: (o.last_round, o.ratios[-1]))
    )
    return [f"  Out of the race, shown slower than the leader on every page: {said}"]


def _ratios(ratios: list[float]) -> str:
    low, high = ratios[0], ratios[-1]
    return f"{low:.2f}x" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}x-{high:.2f}x"


def finding_text(pair: Pair) -> str:
    """What rules a pair out, in a few words (its finding is djbench.verdicts.answer's)."""
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
    return _short(f"{pair.status}: {say(reason)}" if reason else say(unfit(pair)))


def _not_recommended(found: Answer) -> list[list[str]]:
    """Per deployment that may not be used: its line (its first finding), and the known
    cause on the next line."""
    out: list[list[str]] = []
    causes: set[str] = set()
    for pair, why in found.not_recommended:
        said = [f"  {pair.label}: {pair.scenario} {finding_text(pair)}"]
        cause = why.params.get("cause")
        if isinstance(cause, Notice) and (known := say(cause)):
            first = known.split(";")[0]
            said.append("    cause: as above" if first in causes else f"    cause: {first}")
            causes.add(first)
        out.append(said)
    return out


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
        f"  missed: {p.label} {p.scenario}: {threshold_words.said(c)}"
        for p, c in missed[:MISSES_SHOWN]
    ]
    if len(missed) > MISSES_SHOWN:
        out.append(f"  ... and {len(missed) - MISSES_SHOWN} more missed")
    return out


def rounds_done(run: Run) -> str:
    """The rounds the ranked pairs really got ('2 round(s)', '1-3 round(s)'), never
    the rounds planned."""
    counts = [len(p.entry.trials) for p in run.pairs if p.entry.trials and not p.entry.config]
    if not counts:
        return "no round"
    low, high = min(counts), max(counts)
    if low == high:
        return f"{high} round(s)"
    why = "the budget cut some" if run.plan.budget_cut else "the race ran the contenders only"
    return f"{low}-{high} round(s) ({why})"


def more_time(plan: PlanRecord) -> str:
    """What a further round of the deployments still open would take."""
    if not plan.still_open or not plan.open_deployments or not plan.lifetime_s:
        return ""
    seconds = len(plan.open_deployments) * plan.lifetime_s
    return (
        f" (a further round of the {len(plan.open_deployments)} deployment(s) in them: "
        f"about {seconds:.0f} s; --budget buys rounds)"
    )


def data_lines(run: Run) -> list[str]:
    """What the database pays (a connection per request, measured) and how each
    lifetime's data was made the same, when the run writes."""
    out = []
    if (cost := run.plan.connections) is not None and cost.pages:
        pages = ", ".join(cost.pages[:4]) + (" ..." if len(cost.pages) > 4 else "")
        where = f" ({cost.where.split(': ', 1)[0]})" if cost.where else ""
        axis = f'; measure it: --axis "{cost.variable}=0,60"' if cost.variable else ""
        out.append(
            f"  Database: CONN_MAX_AGE {cost.conn_max_age}{where} opens a new {cost.vendor} "
            f"connection for every request that queries ({pages}): {cost.median_ms:.2f} ms "
            f"[{cost.low_ms:.2f}-{cost.high_ms:.2f}] each here ({cost.samples} connects). "
            "To save it: CONN_MAX_AGE 60 for WSGI servers; a pool (Django >= 5.1, psycopg 3: "
            f'OPTIONS = {{"pool": True}}) under ASGI{axis}'
        )
    data = run.plan.data
    if data is not None and data.method == "copied":
        out.append(
            f"  Data: {', '.join(data.writes)} write(s); every server lifetime started on "
            f"the same data ({data.how}; {data.lifetimes} copies)"
        )
    elif data is not None and data.method == "shared":
        out.append(
            f"  Data: {', '.join(data.writes)} write(s) and no copy could be made "
            f"({_short(data.why, 80)}): each deployment met the rows those before it wrote; "
            "figures of pages that read them may drift with the order"
        )
    return out


def lines(run: Run) -> list[str]:
    """The answer: a line per scenario (never dropped: each is a workload's decision),
    then what is not recommended, cut to MAX_LINES in all (the guide lists the rest)."""
    found = answer(run)
    plan = run.plan
    figure = (
        "capacity within the target (each line says its interval)"
        if any(p.entry.capacity is not None for p in run.pairs)
        else f"req/s [{CONFIDENCE:.0%} interval over rounds]"
    )
    head = f"Answer: {found.deployments} deployment(s), {_layout(run)}, {what_ran(run)}; {figure}"
    if plan.budget_s is not None and plan.budget_level is not None:
        head += f"; {len(plan.still_open)} comparison(s) with a leader still open"
        head += more_time(plan)
    out = [head]
    for page in found.pages:
        out += _page_lines(page, run)
    out += race_lines(found)
    out += sweep_lines(run)
    out += threshold_lines(run)
    out += data_lines(run)
    bad = _not_recommended(found)
    if bad:
        room = max(2, MAX_LINES - len(out) - 1)
        out.append("Not recommended:")
        shown: list[str] = []
        for i, said in enumerate(bad):
            left = len(bad) - i  # deployments not yet shown, this one included
            if len(shown) + len(said) > room - (1 if left > 1 else 0) and shown:
                out += [*shown, f"  ... and {left} more deployment(s) (see the guide)"]
                return out
            shown += said
        out += shown
    return out
