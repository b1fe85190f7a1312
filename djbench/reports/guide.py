"""The deployment choice guide: server facts, and recommendations drawn from a run.

Nothing here names a winner in advance: every recommendation is computed from the
results file, names the figures that justify it, says "tie" when the decision engine
(djbench.verdicts.engine.decide: paired by round, since the servers of one run share its
rounds) does not find the best better beyond the 5% threshold at 5% (`TIE_ALPHA`), and
never recommends a pair that
was not `ok` (incompatible, failed, invalid), that served fewer connections than were
offered, or whose trials were too unstable to rank.
"""

from __future__ import annotations

import statistics

from djbench.launch.servers import SERVERS
from djbench.reports import answer, mix_output
from djbench.reports.guide_axes import axis_recommendations
from djbench.reports.guide_fronts import proxy_recommendation, tls_recommendation
from djbench.reports.hop_words import hop_advice, hop_causes
from djbench.reports.lasting_words import exceptions_text, growth_text, held_text, restarts_text
from djbench.reports.ranking import (
    best_by_throughput,
    compared,
    confirmed,
    deploy_file,
    eligible,
    figures,
    flagged,
    tie_level,
    tie_reason,
    underserved,
)
from djbench.reports.recommendation import Recommendation
from djbench.reports.search_words import capacity_text, churn_event_text, span
from djbench.reports.words import md_cell, md_text, say, ws_short
from djbench.verdicts.capacity import tied
from djbench.verdicts.held import held
from djbench.verdicts.mixes import mix_pairs
from djbench.verdicts.runs import Pair, Run

WORKLOAD_TITLES = {
    "sync-orm": "Sync ORM API (plain Django views reading and writing through the ORM)",
    "async-orm": "Async views with the async ORM",
    "async-io": "Async I/O-bound views (awaiting slow I/O)",
    "sync-io": "Sync views that block on slow I/O",
    "trivial": "Trivial responses (the server's own cost per request)",
    "websocket": "WebSockets (Channels)",
}
# A scenario of each workload in the sample project's loadtests/default.toml.
EXAMPLES = {
    "sync-orm": "movies-sync",
    "async-orm": "movies-async",
    "async-io": "sleep-async",
    "sync-io": "sleep-sync",
    "trivial": "health-sync",
    "websocket": "ws-echo",
}


def workload_of(run: Run, scenario: str) -> str:
    meta = run.plan.scenarios.get(scenario)
    return meta.workload if meta is not None else "trivial"


def _throughput_text(scenario: str, winners: list[Pair], ranking: list[Pair], level: float) -> str:
    """The scenario's answer; `ranking`: every eligible pair, fastest first (the
    winners among them)."""
    lead = winners[0]
    runner_up = next((p for p in ranking if all(p is not w for w in winners)), None)
    if len(winners) > 1:
        names = ", ".join(f"{w.label} ({figures(w)})" for w in winners)
        reason = tie_reason(winners, ranking, level)
        return (
            f"On `{scenario}`: a tie between {names}: {reason}; choose on the "
            "other criteria below. Start from "
            + ", ".join(f"`{deploy_file(w.server)}`" for w in winners)
            + "."
        )
    text = f"On `{scenario}`: **{lead.label}**, {figures(lead)}"
    if runner_up is not None:
        ratio = (lead.median("rps") or 0) / (runner_up.median("rps") or 1)
        text += f"; next {runner_up.label}, {figures(runner_up)} ({ratio:.2f}x)"
    return text + f". Start from `{deploy_file(lead.server)}`."


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
                winners, excluded, blocked = best_by_throughput(pairs, flagged(run), tie_level(run))
                name = f"{scenario} at concurrency {level}"
                if blocked:
                    names = ", ".join(f"{p.label} ({figures(p)})" for p in blocked)
                    lines.append(
                        f"On `{name}`: no verdict: the leaders' trials vary too much to rank "
                        f"them ({names}); run more or longer trials on a quieter machine."
                    )
                elif not winners:
                    lines.append(
                        f"On `{name}`: no server answered correctly; nothing to recommend."
                    )
                else:
                    ranking, _ = eligible(pairs, flagged(run))
                    lines.append(_throughput_text(name, winners, ranking, tie_level(run)))
                    winners_all += [w.label for w in winners]
                excluded_all += [f"{p.label} on {scenario}: {why}" for p, why in excluded]
        if not lines:
            example = EXAMPLES.get(workload)
            hint = f" (in loadtests/default.toml: `{example}`)" if example else ""
            text = (
                f"Not measured in this run: add a scenario of workload `{workload}` "
                f"to --scenarios{hint}."
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


def tuning_recommendation(run: Run) -> Recommendation:
    """What --tune found for each server, what it tried, and what the budget cut."""
    title = "Each server at its best (tuning)"
    record = run.document.tuning
    if record is None:
        return Recommendation(
            "tuning",
            title,
            "Not measured in this run: this run compares every server at the same "
            "configuration (`--workers`, `--threads`). Run `--tune` to search each "
            "server's best on this machine, or `--workers auto` for the layout each "
            "server's documentation recommends.",
        )
    lines = [
        f"Objective: {record.objective}"
        + (f" with p99 <= {record.slo_p99_ms:g} ms" if record.slo_p99_ms else "")
        + f"; {record.method}; {record.server_cpus} server CPU(s); "
        f"{record.spent_s:.0f} s of a {record.budget_s:.0f} s budget.",
        "",
    ]
    for server in sorted({c.server for c in record.candidates}):
        tried = [c for c in record.candidates if c.server == server]
        best = next((c for c in tried if c.outcome == "best"), None)
        if best is None:
            unmeasured = all(c.outcome == "unmeasured" for c in tried)
            lines.append(
                f"- **{server}**: "
                + (
                    f"not measured: the budget ran out before any of its {len(tried)} "
                    "configurations ran"
                    if unmeasured
                    else f"no configuration answered correctly ({len(tried)} tried)"
                )
                + "."
            )
            continue
        rps = ", ".join(f"{r:,.0f}" for r in best.rps)
        if record.objective == "capacity":  # the screening's passed rate, then the capacity
            rps = f"screened {best.rps[0]:,.0f}, confirmed capacity {best.rps[-1]:,.0f}"
        others = "; ".join(
            f"{c.config} ({c.outcome}"
            + (f" after round {c.dropped_after}" if c.dropped_after else "")
            + (f", {statistics.median(c.rps):,.0f} req/s" if c.rps else "")
            + ")"
            for c in tried
            if c is not best
        )
        where = record.files.get(server, "")
        lines.append(
            f"- **{server}**: `{best.config}` ({best.rounds} round(s): {rps} req/s"
            + (f"; file `{where}`" if where else "")
            + ")"
            + (f". Also tried: {others}" if others else ". Nothing else to try at this budget")
            + "."
        )
    if record.skipped:
        lines += ["", "Cut by the budget: " + "; ".join(record.skipped)]
    return Recommendation("tuning", title, "\n".join(lines))


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


def memory_recommendation(run: Run) -> Recommendation:
    unfit = flagged(run)  # a footprint of a deployment that failed elsewhere means nothing
    ok = [
        p
        for p in run.pairs
        if p.ok and p.front == "none" and p.memory("pss_peak") and p.label not in unfit
    ]
    if not ok:
        return Recommendation("memory", "Memory-constrained hosts", "Not measured in this run.")
    per_server: dict[str, Pair] = {}
    for pair in ok:  # each server's worst (largest) peak over every scenario
        current = per_server.get(pair.label)
        if current is None or (pair.memory("pss_peak") or 0) > (current.memory("pss_peak") or 0):
            per_server[pair.label] = pair
    ranked = sorted(per_server.values(), key=lambda p: p.memory("pss_peak") or 0)
    lead = ranked[0]
    lines = [
        f"- Smallest footprint: **{lead.label}**, peak PSS {lead.memory('pss_peak'):,.1f} MiB "
        f"under load (idle {lead.memory('pss_idle') or 0:,.1f} MiB; largest worker USS "
        f"{lead.memory('uss_worker_peak') or lead.memory('uss_peak') or 0:,.1f} MiB, the cost "
        f"of one more worker). Start from `{deploy_file(lead.server)}`."
    ]
    if len(ranked) > 1:
        lines.append(
            "- Then: "
            + ", ".join(f"{p.label} {p.memory('pss_peak'):,.1f} MiB" for p in ranked[1:6])
            + "."
        )
    efficient = sorted(ok, key=lambda p: -(p.rps_per_100mb() or 0))
    if efficient:
        e = efficient[0]
        lines.append(
            f"- Most requests per MiB: **{e.label}** on `{e.scenario}`, "
            f"{e.rps_per_100mb() or 0:,.0f} req/s per 100 MiB of peak PSS."
        )
    return Recommendation("memory", "Memory-constrained hosts", "\n".join(lines), [lead.label])


def asgi_readiness(run: Run) -> Recommendation:
    """How many thread hops each page makes under ASGI, what forces them, what removes them."""
    title = "ASGI readiness of this project"
    counted = [(n, m.asgi_hops) for n, m in run.plan.scenarios.items() if m.asgi_hops]
    lines = []
    for name, h in counted:
        if h is None:
            continue
        if not h.counted:
            lines.append(f"- `{name}`: not counted ({h.why}).")
            continue
        advice = hop_advice(h.causes)
        lines.append(
            f"- `{name}`: under ASGI this page makes **{h.hops} thread hops** per request "
            f"({hop_causes(h.causes)}), so expect it to be slower under an ASGI server "
            "than under a WSGI one unless the page awaits slow I/O."
            + (f" To remove them: {advice}." if advice else "")
        )
    if not lines:
        return Recommendation(
            "asgi", title, "Not measured in this run: include an ASGI server in --servers."
        )
    return Recommendation("asgi", title, "\n".join(lines))


def recycling_recommendation(run: Run) -> Recommendation:
    """Which servers recycle workers by what, and what recycling cost in this run's soaks."""
    title = "Worker recycling and memory over time (soak)"
    by_what = [
        f"{name}: {SERVERS[name].features.recycle}" for name in run.plan.servers if name in SERVERS
    ]
    lines = ["Recycling each server offers: " + "; ".join(by_what) + "."] if by_what else []
    soaked = [(p, t) for p in run.pairs if p.ok for t in p.entry.trials if t.timeline is not None]
    if not soaked:
        lines.append(
            "Not measured in this run: run with `--soak 10m --recycle "
            '"off;max-requests=5000,jitter=500"` (add `max-rss=MB` or `lifetime=S` for the '
            "servers that recycle by memory or age)."
        )
        return Recommendation("recycling", title, "\n".join(lines))
    lines.append(
        "Each line is one soak (a single long window): restarts and memory trends are "
        "measured, but a req/s difference between two soaks is one sample each, not a "
        "comparison the statistics can back.\n"
    )
    for p, t in soaked:
        line = t.timeline
        assert line is not None
        recycle = p.entry.recycle or "off"
        lines.append(
            f"- **{p.server}** ({p.scenario}, recycle {recycle}): {t.rps:,.0f} req/s; "
            f"{restarts_text(line)}; PSS {growth_text(line.pss_growth, t.duration_s)}."
        )
    excluded = [
        f"{p.label} {p.scenario}: {say(p.reason)}"
        for p in run.pairs
        if p.entry.recycle is not None and not p.ok
    ]
    return Recommendation("recycling", title, "\n".join(lines), excluded=excluded)


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
            + (", connections left unserved" if underserved(pair) else "")
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


def system_cost_recommendation(run: Run) -> Recommendation:
    """What each server costs the rest of the system: threads, descriptors, database
    connections against what its layout explains, leaks, and the exceptions raised."""
    title = "What it costs the rest of your system"
    rows = [(p, h) for p in run.pairs if (h := held(p.entry)) is not None]
    if not rows:
        return Recommendation("system", title, "Not measured in this run.")
    lines = []
    for label in dict.fromkeys(p.label for p, _ in rows):
        mine = [(p, h) for p, h in rows if p.label == label]
        worst = max(mine, key=lambda ph: (ph[1].db_peak or 0, ph[1].threads_peak))[1]
        said = [f"**{label}**: {held_text(worst)}"]
        if worst.explained is not None:
            said[0] += f", its layout explains {worst.explained}"
        for pair, h in mine:
            found = [say(v) for v in h.verdicts if v.code != "db_exhausted" or not h.exceptions]
            raised = exceptions_text(h)
            if found or raised:
                said.append(
                    f"`{pair.scenario}`: "
                    + "; ".join([*found, *([f"raised {raised}"] if raised else [])])
                )
        lines.append("- " + ". ".join(said) + ".")
    if not any(h.db_peak is not None for _, h in rows):
        lines.append(
            "\nDatabase connections are counted on PostgreSQL only (pg_stat_activity, by "
            "the application_name runbench gives each server); run with `--database "
            "postgres` to see them. A project whose settings set their own "
            "application_name is not matched."
        )
    lines.append(
        "\nThreads and descriptors are summed over the server's processes (peak over the "
        "trials); a connection count is the most seen at one reading (every 0.25 s) and "
        '"after" 0.2 s after the load stopped. Under ASGI, Django runs each request\'s '
        "sync code in a thread of its own: persistent connections (`CONN_MAX_AGE` > 0) "
        "then stay open in threads nobody reuses; Django's docs advise turning them off "
        'under ASGI and using a pool (Django >= 5.1: `OPTIONS["pool"]`).'
    )
    return Recommendation("system", title, "\n".join(lines))


def churn_recommendation(run: Run) -> Recommendation | None:
    """--churn: requests lost per reload, killed worker or recycling, per server, direct
    and behind the proxy."""
    found = [p for p in run.pairs if p.entry.churn is not None or (
        p.entry.reason is not None and p.entry.reason.code == "churn_unsupported")]  # fmt: skip
    if not found:
        return None
    lines = []
    for pair in found:
        c = pair.entry.churn
        where = "behind " + pair.proxy if pair.proxy != "none" else "direct"
        if c is None:
            lines.append(f"- **{pair.label}** ({where}): {say(pair.entry.reason)}.")
            continue
        said = [churn_event_text(e) for e in c.events] or [
            "no event happened in the window"
            + (f"; {c.silent_slices} slice(s) completed nothing" if c.silent_slices else "")
        ]
        lines.append(
            f"- **{pair.label}** ({where}, {c.workers} workers, `{pair.scenario}`): "
            + "; ".join(said)
            + "."
        )
    first = next(p.entry.churn for p in found if p.entry.churn is not None)
    if first is not None:
        lines.append(
            f"\nEach event ran under a steady open-loop load of {first.rate:g} req/s "
            f"(latency from each request's due time, in {first.slice_s:g} s slices), a "
            'third of the way into its window; "failed" counts errors and wrong statuses '
            'from the event to the window\'s end, "back in band" is when every later slice '
            "had p99 within twice the steady p99 (or 5 ms above it) and no error. A reload "
            "that loses no request but stalls for a second still breaks a p99 target."
        )
    return Recommendation("churn", "Deploys and restarts", "\n".join(lines))


def recommendations(run: Run) -> list[Recommendation]:
    return [
        *capacity_recommendations(run),
        *throughput_recommendations(run),
        tuning_recommendation(run),
        memory_recommendation(run),
        system_cost_recommendation(run),
        *[r for r in [churn_recommendation(run)] if r is not None],
        proxy_recommendation(run),
        *[r for r in [tls_recommendation(run)] if r is not None],
        *axis_recommendations(run),
        recycling_recommendation(run),
        asgi_readiness(run),
    ]


def features_markdown(run: Run) -> str:
    packages = run.environment.packages
    lines = [
        "| server | interface | WebSocket | HTTP/2 | HTTP/3 | graceful reload | "
        "worker recycling | process model | facts checked with | in this run |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for spec in SERVERS.values():
        f = spec.features
        version = packages.get(spec.executable) or packages.get(spec.extra) or "not installed"
        cells = [
            spec.name,
            spec.interface.upper(),
            "yes" if spec.websocket else "no",
            f.http2,
            f.http3,
            f.reload,
            f.recycle,
            f.process_model,
            f.checked_with,
            version,
        ]
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def markdown(run: Run) -> str:
    env = run.environment
    db = env.database
    plan = run.plan
    out = [
        f"# Deployment guide for run {run.run_id}",
        "",
        f"Measured on {env.cpu_model or '?'} ({env.cpu_count or '?'} CPUs), "
        f"Python {env.python or '?'}, Django {env.django or '?'}, database "
        f"{db.vendor or '?'}, channel layer {env.channel_layer or '?'}; "
        f"{answer.layouts(run)}, server CPUs "
        f"{plan.server_cpus or 'unpinned'}, "
        f"driver CPUs {plan.driver_cpus or 'unpinned'}, {plan.trials or '?'} "
        f"trials of {plan.duration or '?'} s with {plan.driver or '?'}.",
        "These recommendations hold for this project on this machine with these settings; "
        "measure yours with `python manage.py runbench`.",
        "",
        "## Answer",
        "",
        "```text",
        *answer.lines(run),
        "```",
        "",
        "## Recommendations by workload",
    ]
    for rec in recommendations(run):
        out += ["", f"### {rec.title}", "", rec.text]
        if rec.excluded:
            out += ["", "Not recommended here:"] + [f"- {md_text(e)}" for e in rec.excluded]
    if mixed := mix_output.sentences(mix_pairs(run.document)):
        out += ["", "## Mixes: which page limits the p99", ""] + [f"- {md_text(s)}" for s in mixed]
    out += ["", "## What each server supports", "", features_markdown(run), ""]
    return "\n".join(out)
