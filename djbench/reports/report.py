"""benchreport: an HTML page (self-contained: inline SVG and CSS, no network) and the
same content as Markdown, built from results files only."""

from __future__ import annotations

from collections.abc import Callable

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from djbench.reports import answer_words as answer
from djbench.reports import charts, cost_output
from djbench.reports.decisions import decision_section, not_recommended_section
from djbench.reports.figures import number
from djbench.reports.held_words import exceptions_text
from djbench.reports.hop_words import hop_advice, hop_causes
from djbench.reports.layout_sections import layout_sections
from djbench.reports.lifecycle_sections import churn_section, soak_sections
from djbench.reports.mix_output import mix_sections
from djbench.reports.page_sections import latency_sections, scenario_sections
from djbench.reports.resource_sections import efficiency_section, held_section, memory_section
from djbench.reports.search_sections import capacity_sections, sweep_sections
from djbench.reports.sections import Section
from djbench.reports.tradeoffs import answer_section, tradeoff_sections
from djbench.reports.words import budget_text, md_cell, md_text, say
from djbench.servers import caddy
from djbench.verdicts.held import held
from djbench.verdicts.ranking import cause, rps_interval, unfit
from djbench.verdicts.runs import Run


def version_sections(runs: list[Run]) -> list[Section]:
    """A version matrix (--matrix): per scenario, each server's req/s in every cell side
    by side (the verdicts themselves are in the matrix file and its console output)."""
    if len(runs) < 2 or not all(r.tag for r in runs):
        return []
    sections = []
    scenarios = list(dict.fromkeys(s for run in runs for s in run.scenarios()))
    for scenario in scenarios:
        by_cell = {
            run.tag: {(p.label, p.concurrency): p for p in run.by_scenario(scenario) if p.ok}
            for run in runs
        }
        keys = sorted({k for pairs in by_cell.values() for k in pairs}, key=str)
        if not keys:
            continue
        labels = [f"{label} c{c}" if c is not None else label for label, c in keys]
        series = {
            cell: [(pairs[k].median("rps") or 0) if k in pairs else 0 for k in keys]
            for cell, pairs in by_cell.items()
        }
        sections.append(
            Section(
                id=f"versions-{scenario}",
                title=f"{scenario}: req/s by version (median of each cell's trials)",
                svg=mark_safe(
                    charts.grouped(f"{scenario}: req/s per cell", labels, series, "req/s")
                ),
                headers=["server", *by_cell],
                rows=[
                    [label, *[number(series[cell][i]) for cell in by_cell]]
                    for i, label in enumerate(labels)
                ],
            )
        )
    return sections


def proxy_section(runs: list[Run]) -> Section | None:
    rows = []
    labels: list[str] = []
    direct_rps: list[float] = []
    caddy_rps: list[float] = []
    spans: dict[str, list[tuple[float, float] | None]] = {"direct": [], "behind Caddy": []}
    for run in runs:
        direct = {
            (p.server, p.entry.variant_label, p.scenario, p.concurrency): p
            for p in run.pairs
            if p.front == "none" and p.ok
        }
        for p in run.pairs:
            base = direct.get((p.server, p.entry.variant_label, p.scenario, p.concurrency))
            if p.front == "none" or not p.ok or base is None:
                continue
            ratio = (p.median("rps") or 0) / (base.median("rps") or 1)
            where = "" if p.front == caddy.PLAIN else f" ({p.front})"
            labels.append(f"{p.server}{where} {p.scenario}")
            direct_rps.append(base.median("rps") or 0)
            caddy_rps.append(p.median("rps") or 0)
            spans["direct"].append(rps_interval(base))
            spans["behind Caddy"].append(rps_interval(p))
            caddy_mem = p.entry.proxy_memory_mb.pss_peak if p.entry.proxy_memory_mb else None
            rows.append(
                [
                    p.server + where,
                    p.scenario,
                    str(p.concurrency or "-"),
                    number(base.median("rps")),
                    number(p.median("rps")),
                    f"{ratio:.2f}",
                    number(base.median("p99"), 2),
                    number(p.median("p99"), 2),
                    number(caddy_mem, 1),
                ]
            )
    if not rows:
        return None
    return Section(
        id="proxy",
        title="Direct vs behind Caddy",
        svg=mark_safe(
            charts.grouped(
                "req/s direct and behind Caddy",
                labels,
                {"direct": direct_rps, "behind Caddy": caddy_rps},
                "req/s (median, 95% interval over rounds)",
                spans,
            )
        ),
        headers=[
            "server",
            "scenario",
            "conc.",
            "req/s direct",
            "req/s via Caddy",
            "ratio",
            "p99 direct ms",
            "p99 via Caddy ms",
            "Caddy PSS peak MiB",
        ],
        rows=rows,
    )


def hops_section(runs: list[Run]) -> Section | None:
    """ASGI readiness: thread hops per request, what forces them, what removes them."""
    rows = []
    for run in runs:
        for name, meta in run.plan.scenarios.items():
            h = meta.asgi_hops
            if h is None:
                continue
            label = f"{name} [{run.run_tag}]" if len(runs) > 1 else name
            if not h.counted:
                rows.append([label, "", "", h.why, ""])
                continue
            rows.append(
                [
                    label,
                    str(h.hops),
                    f"{h.sync_to_async} / {h.async_to_sync}",
                    hop_causes(h.causes, limit=20),
                    hop_advice(h.causes),
                ]
            )
    if not rows:
        return None
    return Section(
        id="asgi-readiness",
        title="ASGI readiness: thread hops per request",
        intro="Under an ASGI server every sync piece on a request's path runs in a worker "
        "thread (asgiref's SyncToAsync) and async code called from there comes back "
        "(AsyncToSync); each hop is a thread hand-off per request. Counted by wrapping "
        "asgiref's two adapters while one request of each scenario went through Django's "
        "ASGIHandler in-process; GET scenarios only.",
        headers=[
            "scenario",
            "hops",
            "sync to async / async to sync",
            "what forces them",
            "what removes them",
        ],
        rows=rows,
    )


def unranked_section(runs: list[Run]) -> Section:
    rows = []
    for run in runs:
        for p in run.pairs:
            why = unfit(p)
            if p.status == "ok" and why is None:
                continue
            raised = exceptions_text(h) if (h := held(p.entry)) else ""
            reason = (say(p.reason) if p.status != "ok" else say(why)) + (
                f" (raised: {raised})" if raised else ""
            )
            if p.status != "ok" and (known := say(cause(p))):
                reason += f"; cause: {known}"
            where = [p.server, p.proxy, p.scenario, str(p.concurrency or "-")]
            rows.append([*where, p.status if p.status != "ok" else "starved", reason])
    return Section(
        id="not-ranked",
        title="Failed, invalid, incompatible and starved pairs",
        intro="" if rows else "Every pair answered correctly and was ranked.",
        headers=["server", "proxy", "scenario", "conc.", "status", "reason"] if rows else [],
        rows=rows,
    )


def _loop_and_connections(run: Run) -> str:
    every = run.plan.new_connection_every
    kept = f"a new connection every {every} answer(s)" if every else run.plan.keep_alive
    return f"{run.plan.loop} / {kept}"


def environment_section(runs: list[Run]) -> Section:
    section = Section(
        id="environment", title="Environment and plan", headers=["", *[run.run_id for run in runs]]
    )
    keys: list[tuple[str, Callable[[Run], object]]] = [
        ("date", lambda r: r.environment.date),
        ("status", lambda r: r.document.status),
        ("git SHA", lambda r: r.environment.git_sha),
        ("Python", lambda r: r.environment.python),
        ("Django", lambda r: r.environment.django),
        ("CPU", lambda r: f"{r.environment.cpu_model} x{r.environment.cpu_count}"),
        (
            "database",
            lambda r: f"{r.environment.database.vendor} {r.environment.database.server_version}",
        ),
        ("Redis", lambda r: r.environment.redis or "not used"),
        ("settings axes", lambda r: r.plan.axes or "none"),
        ("memory sampling", lambda r: r.plan.memory_sampling),
        ("channel layer", lambda r: r.environment.channel_layer),
        ("middleware profile", lambda r: r.environment.middleware_profile),
        ("driver", lambda r: f"{r.plan.driver} ({r.environment.tools.get('driver')})"),
        ("loop / keep-alive", _loop_and_connections),
        ("layouts as run (workers x threads)", answer.layouts),
        (
            "server CPUs / driver CPUs",
            lambda r: f"{r.plan.server_cpus} / {r.plan.driver_cpus} ({r.plan.pinning})",
        ),
        (
            "trials x window (warm-up)",
            lambda r: f"{r.plan.trials} x {r.plan.duration} s ({r.plan.warmup} s)",
        ),
        ("concurrency", lambda r: r.plan.concurrency),
        ("budget", lambda r: budget_text(r.plan) if r.plan.budget_s else "none"),
        (caddy.EXECUTABLE, lambda r: r.environment.tools.get(caddy.EXECUTABLE)),
    ]
    for name, get in keys:
        section.rows.append([name, *[str(get(run)) for run in runs]])
    packages = sorted({k for run in runs for k in run.environment.packages})
    for package in packages:
        section.rows.append([package, *[run.environment.packages.get(package, "") for run in runs]])
    return section


def commands_section(runs: list[Run]) -> Section:
    section = Section(
        id="commands",
        title="Exact commands",
        intro="As started by runbench (variables set by runbench shown before the "
        "command; the rest of the environment was inherited).",
    )
    seen = set()
    for run in runs:
        for p in run.pairs:
            for role in ("server", "proxy"):
                command = p.entry.command.get(role)
                if not command or (p.label, role, run.run_id) in seen:
                    continue
                seen.add((p.label, role, run.run_id))
                env = " ".join(f"{k}={v}" for k, v in command.env.items())
                section.preformatted.append(f"# {p.label} ({role})\n{env} {command.shell}".strip())
        driver = next(
            (t.driver_command for p in run.pairs for t in p.entry.trials if t.driver_command),
            None,
        )
        if driver:
            env = " ".join(f"{k}={v}" for k, v in driver.env.items())
            section.preformatted.append(f"# load driver (one trial)\n{env} {driver.shell}".strip())
    return section


def cost_sections(runs: list[Run]) -> list[Section]:
    """A cost probe's pages (instructions per request, spread over seeds, SQL) and the
    servers' own cost, for each cost file among the runs."""
    out: list[Section] = []
    for run in runs:
        record = run.document.cost
        if record is None:
            continue
        out.append(
            Section(
                id=f"cost-{run.run_tag}",
                title=f"Cost per request, counted ({run.run_id})",
                intro=f"Instructions per request under {record.valgrind or 'Valgrind'}, through "
                f"the project's own handler, {len(record.seeds)} hash seed(s) (median; the "
                "spread is the seeds' range over the median).",
                headers=["page", "handler", "instructions", "spread", "SQL", "bytes"],
                rows=[cost_output.page_row(p) for p in record.pages],
                notes=[cost_output.WHAT_IT_SEES],
            )
        )
        if record.servers:
            out.append(
                Section(
                    id=f"server-cost-{run.run_tag}",
                    title=f"The servers' own cost per request ({record.servers[0].scenario})",
                    headers=["server", "interface", "whole tree", "Django's handler", "own"],
                    rows=[cost_output.server_row(s) for s in record.servers],
                    notes=[cost_output.SERVERS_SEE],
                )
            )
    return out


def build(runs: list[Run]) -> list[Section]:
    counted = [r for r in runs if r.document.cost is not None]
    runs = [r for r in runs if r.document.cost is None]
    if not runs:  # cost files alone: their tables, the environment and the commands
        return [*cost_sections(counted), environment_section(counted)]
    sections: list[Section] = [
        *cost_sections(counted),
        decision_section(runs),
        *([bad] if (bad := not_recommended_section(runs)) is not None else []),
        answer_section(runs),
        *tradeoff_sections(runs),
        *layout_sections(runs),
        *version_sections(runs),
        *capacity_sections(runs),
        *sweep_sections(runs),
        *scenario_sections(runs),
        *latency_sections(runs),
        *mix_sections(runs),
        *soak_sections(runs),
    ]
    for extra in (
        memory_section(runs),
        efficiency_section(runs),
        proxy_section(runs),
        held_section(runs),
        churn_section(runs),
        hops_section(runs),
    ):
        if extra is not None:
            sections.append(extra)
    sections += [unranked_section(runs), environment_section(runs), commands_section(runs)]
    return sections


def html(runs: list[Run]) -> str:
    title = "djbench report: " + ", ".join(run.run_id for run in runs)
    return render_to_string("djbench/report.html", {"title": title, "sections": build(runs)})


def markdown(runs: list[Run]) -> str:
    out = ["# djbench report: " + ", ".join(run.run_id for run in runs), ""]
    for s in build(runs):
        out += [f"## {s.title}", ""]
        if s.intro:
            out += [s.intro, ""]
        if s.svg is not None:
            out += ["(Chart in the HTML report; the figures are in the table below.)", ""]
        if s.headers:
            out.append("| " + " | ".join(md_cell(h) for h in s.headers) + " |")
            out.append("|" + " --- |" * len(s.headers))
            out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in s.rows]
            out.append("")
        out += [f"- {md_text(note)}" for note in s.notes]
        if s.notes:
            out.append("")
        for block in s.preformatted:
            out += ["```", block.replace("```", "` ` `"), "```", ""]
    return "\n".join(out)


def markdown_to_html_page(title: str, text: str) -> str:
    """Markdown made by djbench as a page. The text holds no intended HTML, so Markdown's
    raw-HTML rules are switched off: run text (reasons, names) is shown, never markup."""
    import markdown as md
    from markdown.extensions import Extension

    class NoRawHtml(Extension):
        def extendMarkdown(self, m: md.Markdown) -> None:
            m.preprocessors.deregister("html_block")
            m.inlinePatterns.deregister("html")

    body = md.markdown(text, extensions=["tables", "fenced_code", NoRawHtml()])
    return render_to_string("djbench/page.html", {"title": title, "body": mark_safe(body)})
