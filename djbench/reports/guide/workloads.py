"""The guide's answers per workload: each scenario's leader at each concurrency (or the
tie, and why), and the capacity each server serves within a latency target; the
rankings are djbench.verdicts.ranking's, computed once."""

from __future__ import annotations

from djbench.reports.guide.recommendation import Recommendation
from djbench.reports.ranking_words import deploy_file, figures, tie_reason
from djbench.reports.search_words import capacity_text, span
from djbench.reports.words import say, ws_short
from djbench.verdicts.capacity_search import tied
from djbench.verdicts.ranking import (
    Ranking,
    compared,
    confirmed,
    raced_out,
    rank,
    tie_level,
    underserved,
)
from djbench.verdicts.runs import Pair, Run

WORKLOAD_TITLES = {
    "sync-orm": "Sync ORM API (plain Django views reading and writing through the ORM)",
    "async-orm": "Async views with the async ORM",
    "async-io": "Async I/O-bound views (awaiting slow I/O)",
    "sync-io": "Sync views that block on slow I/O",
    "trivial": "Trivial responses (the server's own cost per request)",
    "websocket": "WebSockets (Channels)",
}


def _file_of(run: Run) -> str:
    return f"`{run.plan.scenario_file}`" if run.plan.scenario_file else "your scenario file"


def workload_of(run: Run, scenario: str) -> str:
    meta = run.plan.scenarios.get(scenario)
    return meta.workload if meta is not None else "trivial"


def _throughput_text(scenario: str, ranking: Ranking) -> str:
    """The scenario's answer from its ranking (the winners among every eligible pair)."""
    winners = ranking.winners
    lead = winners[0]
    if len(winners) > 1:
        names = ", ".join(f"{w.label} ({figures(w)})" for w in winners)
        return (
            f"On `{scenario}`: a tie between {names}: {tie_reason(ranking)}; choose on the "
            "other criteria below. Start from " + ", ".join(deploy_file(w) for w in winners) + "."
        )
    text = f"On `{scenario}`: **{lead.label}**, {figures(lead)}"
    if (runner_up := ranking.runner_up) is not None:
        ratio = (lead.median("rps") or 0) / (runner_up.median("rps") or 1)
        text += f"; next {runner_up.label}, {figures(runner_up)} ({ratio:.2f}x)"
    return text + f". Start from {deploy_file(lead)}."


def throughput_recommendations(run: Run) -> list[Recommendation]:
    found = []
    by_workload: dict[str, list[str]] = {}
    for scenario in run.scenarios():
        by_workload.setdefault(workload_of(run, scenario), []).append(scenario)
    for workload, title in WORKLOAD_TITLES.items():
        lines: list[str] = []
        winners_all: list[str] = []
        excluded_all: list[str] = []
        for scenario in by_workload.get(workload, []):
            direct = confirmed(
                run,
                [p for p in run.by_scenario(scenario) if p.front == "none" and compared(run, p)],
            )
            levels = sorted({p.concurrency or 0 for p in direct})
            for level in levels:
                pairs = [p for p in direct if (p.concurrency or 0) == level]
                ranking = rank(pairs, tie_level(run), raced_out(run))
                name = f"{scenario} at concurrency {level}"
                if ranking.blocked:
                    names = ", ".join(f"{p.label} ({figures(p)})" for p in ranking.blocked)
                    lines.append(
                        f"On `{name}`: no verdict: the leaders' trials vary too much to rank "
                        f"them ({names}); run more or longer trials on a quieter machine."
                    )
                elif not ranking.winners:
                    lines.append(
                        f"On `{name}`: no server answered correctly; nothing to recommend."
                    )
                else:
                    lines.append(_throughput_text(name, ranking))
                    winners_all += [w.label for w in ranking.winners]
                excluded_all += [
                    f"{p.label} on {scenario}: {say(why)}" for p, why in ranking.excluded
                ]
        if not lines:
            text = (
                f"Not measured in this run: no page of workload `{workload}` ran. A "
                f'scenario with `workload = "{workload}"` in '
                f"{_file_of(run)} measures it (`runbench --list` shows each scenario's)."
            )
        else:
            text = "\n".join(f"- {line}" for line in lines)
        if workload == "websocket":
            text += _ws_idle_text(run)
        found.append(
            Recommendation(
                workload, f"{title}: {_basis(run)}", text, sorted(set(winners_all)), excluded_all
            )
        )
    return found


def _basis(run: Run) -> str:
    """Which comparison a throughput verdict is: equal configurations, or tuned bests."""
    tuned = run.document.tuning is not None
    return "each at its best (tuned)" if tuned else "equal configuration"


def _ws_idle_text(run: Run) -> str:
    idle = [
        (p, w, kb)
        for p in run.pairs
        if (w := p.entry.ws_idle) is not None and (kb := w.per_connection_kb)
    ]
    if not idle:
        return ""
    idle.sort(key=lambda pwk: pwk[2])
    best, w, kb = idle[0]
    rest = "; ".join(f"{p.label} {k:,.1f} KB" for p, _, k in idle[1:])
    short = [f"{p.label} {text}" for p, x, _ in idle if (text := ws_short(x))]
    return (
        f"\n- Idle connections: **{best.label}** held {w.opened:,} idle connections for "
        f"{kb:,.1f} KB of PSS each"
        + (f" (others: {rest})" if rest else "")
        + "."
        + (f" Warning: {'; '.join(short)}." if short else "")
    )


def _capacity_line(scenario: str, ranked: list[Pair]) -> str:
    """ "For p99 <= 100 ms on one core, X serves N req/s [interval], Y serves M": a tie
    with the leader by the likelihood-ratio test over both pairs' steady windows
    (capacity_stats.tied; older files: brackets that overlap)."""
    lead = ranked[0].entry.capacity
    assert lead is not None and lead.rps is not None
    cores = lead.server_cpus
    said = []
    for pair in ranked:
        c = pair.entry.capacity
        assert c is not None and c.rps is not None
        # The fit's 95% interval (older files: the confirmed rate to the search's fail)
        where = span(c) if c.repeats else f"{c.rps:,.0f}-{(c.bracket or (0, c.rps))[1]:,.0f}"
        tie = pair is not ranked[0] and tied(lead, c)
        said.append(
            f"**{pair.label}** {c.rps:,.0f} req/s ({where.strip('[]')}"
            + (", a tie with the first" if tie else "")
            + (f", {c.per_100mib:,.0f} per 100 MiB" if c.per_100mib else "")
            + (", connections left unserved" if underserved(pair) is not None else "")
            + ")"
        )
    where = "one core" if cores == 1 else f"{cores} cores"
    return f"- `{scenario}`, p99 <= {lead.slo_p99_ms:g} ms on {where}: " + ", ".join(said) + "."


def capacity_recommendations(run: Run) -> list[Recommendation]:
    """The first answer when --capacity ran: what each server serves within the target."""
    found = [
        p for p in run.pairs if p.entry.capacity is not None and not p.entry.capacity.screening
    ]
    if not found:
        return []
    lines = []
    for scenario in sorted({p.scenario for p in found}):
        pairs = [p for p in found if p.scenario == scenario]
        ranked = sorted(
            (p for p in pairs if p.entry.capacity and p.entry.capacity.rps),
            key=lambda p: -(p.entry.capacity.rps or 0) if p.entry.capacity else 0,
        )
        if ranked:
            lines.append(_capacity_line(scenario, ranked))
        lines += [
            f"- `{scenario}`: {p.label}: {capacity_text(p.entry.capacity)}"
            for p in pairs
            if p.entry.capacity is not None and not p.entry.capacity.rps
        ]
    text = "\n".join(lines) + (
        "\n\nCapacity is the highest offered rate (open loop, latency from each request's "
        "due time) served within the p99 target, errors within the limit and 99% completed, "
        "confirmed by fresh windows; the range runs from that confirmed rate to the lowest "
        "rate that failed in the search, and a server whose range reaches the first's is "
        "a tie. Size deployments by this, not by closed-loop req/s."
    )
    winners = [p.label for p in found if p.entry.capacity and p.entry.capacity.rps][:1]
    return [Recommendation("capacity", "Capacity at a latency target", text, winners)]
