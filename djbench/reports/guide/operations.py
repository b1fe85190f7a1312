"""The guide's answers on running a deployment: each server at its best (tuning), memory,
what it costs the rest of the system, deploys and restarts, worker recycling, and the
project's readiness for ASGI."""

from __future__ import annotations

import statistics

from djbench.reports.guide.recommendation import Recommendation
from djbench.reports.held_words import exceptions_text, growth_text, held_text, restarts_text
from djbench.reports.hop_words import hop_advice, hop_causes
from djbench.reports.ranking_words import deploy_file
from djbench.reports.search_words import churn_event_text
from djbench.reports.words import say
from djbench.servers import SERVERS
from djbench.verdicts.held import held
from djbench.verdicts.ranking import flagged
from djbench.verdicts.runs import Pair, Run


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
        f"of one more worker). Start from {deploy_file(lead)}."
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
