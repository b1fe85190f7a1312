"""How a comparison is shown: a rich table for people, Markdown and JSON for CI."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.compare import METRICS, Comparison, MetricResult, PairResult
from djbench.reports.words import md_cell, md_text

STYLE = {
    "worse": "red",
    "better": "green",
    "equivalent": "cyan",
    "inconclusive": "",
    "not measured": "yellow",
    "not comparable": "yellow",
}


def _metric(m: MetricResult | None) -> str:
    if m is None or m.ratio is None:
        return ""
    ci = f" [{m.ci[0]:.3f}-{m.ci[1]:.3f}]" if m.ci else ""
    shown = m.p_adjusted if m.p_adjusted is not None else m.p_value
    p = "" if shown is None else f" p={shown:.3g}"
    return f"x{m.ratio:.3f}{ci}{p}"


def _by_metric(pair: PairResult) -> dict[str, MetricResult]:
    return {m.metric: m for m in pair.metrics}


def _headline(c: Comparison) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in c.counts().items() if n)
    level = c.alpha if c.level is None else c.level
    method = (
        "paired t on per-round log-ratios (both sides in every round)"
        if c.paired
        else "Welch t on log trial values (two separate runs)"
    )
    return (
        f"{c.base} -> {c.new}: {counts} (threshold and equivalence margin "
        f"{c.threshold:.0%}, twice it for p99; ratios NEW/BASE with their "
        f"{1 - 2 * level:.1%} interval; {method}; p Benjamini-Hochberg-adjusted over every "
        f"pair x metric, tested at {level:.3g})"
    )


def print_table(console: Console, c: Comparison) -> None:
    if c.plan_differences:
        console.print(
            "[yellow]The runs were not made the same way:[/] "
            + escape("; ".join(c.plan_differences))
        )
    few = next((m.note for p in c.pairs for m in p.metrics if m.note.startswith("too few")), None)
    if few:
        console.print(f"[yellow]Some pairs cannot reach a verdict:[/] {escape(few)}")
    table = Table(title=escape(_headline(c)), title_justify="left")
    columns = ("server", "scenario", "conc.", "verdict", "req/s", "p99", "PSS peak (median)", "why")
    for column in columns:
        table.add_column(column)
    for pair in c.pairs:
        m = _by_metric(pair)
        style = STYLE[pair.verdict]
        verdict = f"[{style}]{pair.verdict}[/]" if style else pair.verdict
        # Why an inconclusive metric is not a verdict: too few trials, or the smallest
        # change this run could have seen.
        notes = list(
            dict.fromkeys(
                x.note if x.note.startswith("too few") else f"{METRICS[x.metric][0]}: {x.note}"
                for x in pair.metrics
                if x.verdict == "inconclusive" and x.note
            )
        )
        why = "; ".join(pair.reasons + notes)
        table.add_row(
            pair.label,
            pair.scenario,
            str(pair.concurrency),
            verdict,
            _metric(m.get("rps")),
            _metric(m.get("p99")),
            _metric(m.get("pss_peak")),
            escape(why),
        )
    console.print(table)


def markdown(c: Comparison) -> str:
    lines = [f"# benchcompare: {c.base} -> {c.new}", "", _headline(c), ""]
    if c.plan_differences:
        lines += ["**Not made the same way:** " + md_text("; ".join(c.plan_differences)), ""]
    lines += [
        "| server | scenario | conc. | verdict | req/s | p99 | PSS peak (median of trials) | why |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pair in c.pairs:
        m = _by_metric(pair)
        cells = [
            pair.label,
            pair.scenario,
            str(pair.concurrency),
            f"**{pair.verdict}**",
            _metric(m.get("rps")),
            _metric(m.get("p99")),
            _metric(m.get("pss_peak")),
            "; ".join(pair.reasons),
        ]
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
