"""The deployment choice guide: server facts, and recommendations drawn from a run.

Nothing here names a winner in advance: every recommendation is computed from the
results file, names the figures that justify it, says "tie" when the decision engine
(paired by round, since the servers of one run share its rounds) does not find the
best better beyond the 5% threshold at 5% (`TIE_ALPHA`), and never recommends a pair on
a scenario where it was not `ok` (incompatible, failed, invalid), served fewer
connections than were offered, or whose trials were too unstable to rank
(djbench.verdicts.ranking decides all of it; this package says it).

    workloads   each scenario's leader, and capacity at a latency target
    operations  tuning, memory, system cost, restarts, recycling, ASGI readiness
    fronts      Caddy, TLS and HTTP/2
    settings    settings axes (--axis)
"""

from __future__ import annotations

from djbench.reports import answer_words as answer
from djbench.reports import cost_output, mix_output
from djbench.reports.guide.operations import (
    asgi_readiness,
    churn_recommendation,
    memory_recommendation,
    recycling_recommendation,
    system_cost_recommendation,
    tuning_recommendation,
)
from djbench.reports.guide.proxies import proxy_recommendation, tls_recommendation
from djbench.reports.guide.recommendation import Recommendation
from djbench.reports.guide.settings import axis_recommendations
from djbench.reports.guide.workloads import capacity_recommendations, throughput_recommendations
from djbench.reports.words import md_cell, md_text
from djbench.servers import SERVERS
from djbench.verdicts.mixes import mix_pairs
from djbench.verdicts.runs import Run

__all__ = [
    "Recommendation",
    "features_markdown",
    "markdown",
    "recommendations",
    "tls_recommendation",
]


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


def cost_markdown(run: Run) -> str:
    """A cost probe's guide (runbench --cost): what each request and each server costs,
    counted, and what each server supports."""
    env = run.environment
    record = run.document.cost
    out = [
        f"# Cost guide for run {run.run_id}",
        "",
        f"Counted on Python {env.python or 'unknown'}, Django {env.django or 'unknown'}, "
        f"{record.valgrind if record else 'Valgrind'}; instructions do not depend on the "
        "machine's load, so these figures repeat on any run of the same code.",
        "",
        *cost_output.cost_guide_lines(record),
        "",
        "## What each server supports",
        "",
        features_markdown(run),
        "",
    ]
    return "\n".join(out)


def own_lines(run: Run) -> list[str]:
    """Each of the project's own deployments as djbench ran it: its command, and what
    was changed to run a file written for a container from the project."""
    if not run.plan.own:
        return []
    out = ["", "## Your deployments, as djbench ran them", ""]
    for own in run.plan.own:
        out.append(f"- **{md_text(own.name)}**: `{own.command}` ({md_text(own.found_in)})")
        out += [f"  - {md_text(change)}" for change in own.changes]
        if not own.changes:
            out.append("  - run as written (only its listening address is djbench's)")
    return out


def markdown(run: Run, cost: Run | None = None) -> str:
    """A run's guide; `cost`: a cost probe's run (benchguide --cost) for its section."""
    if run.document.cost is not None:
        return cost_markdown(run)
    env = run.environment
    db = env.database
    plan = run.plan
    out = [
        f"# Deployment guide for run {run.run_id}",
        "",
        f"Measured on {env.cpu_model or 'an unnamed CPU'} ({env.cpu_count or 'unknown'} "
        f"CPUs), Python {env.python or 'unknown'}, Django {env.django or 'unknown'}, "
        f"database {db.vendor or 'unknown'}, channel layer {env.channel_layer or 'none'}; "
        f"{answer.layouts(run)}, server CPUs "
        f"{plan.server_cpus or 'unpinned'}, "
        f"driver CPUs {plan.driver_cpus or 'unpinned'}; {answer.what_ran(run)}, "
        + (f"{plan.duration:g} s windows" if plan.duration else "windows as each job sets")
        + f" with {plan.driver or 'its driver'}.",
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
    out += own_lines(run)
    out += ["", *cost_output.cost_guide_lines(cost.document.cost if cost else None)]
    out += ["", "## What each server supports", "", features_markdown(run), ""]
    return "\n".join(out)
