"""How a comparison is shown: a rich table for people, Markdown and JSON for CI."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.words import md_cell, md_text, say
from djbench.verdicts.compare import Comparison, MetricChange, PairChange
from djbench.verdicts.rules import MIN_ROUNDS, MIN_TRIALS

# How each compared metric is named.
METRIC_LABELS = {
    "rps": "req/s",
    "p99": "p99 latency (median of trials)",
    "pss_peak": "PSS peak (median of trials' peaks)",
}
METHODS = {
    "paired": "paired t on per-round log-ratios",
    "blocked": "t on the block design's pooled error (rounds x deployments)",
    "unpaired": "Welch t on log values",
    "screened": "a screen on fewer rounds than the paired test needs",
}

STYLE = {
    "worse": "red",
    "better": "green",
    "equivalent": "cyan",
    "inconclusive": "",
    "not measured": "yellow",
    "not comparable": "yellow",
}


def method_text(m: MetricChange) -> str:
    """How the metric was tested: the method, its rounds or trials, any widening."""
    e = m.estimate
    if e is None:
        return METHODS.get(m.method, m.method)
    if e.method == "paired":
        factor = e.rounds.widening if e.rounds is not None else 1.0
        said = f", error widened x{factor:.2f} for autocorrelation" if factor > 1 else ""
        return f"paired t on {e.n_base} per-round log-ratios{said}"
    if e.method == "blocked":
        return f"{METHODS['blocked']}, {e.n_base} rounds, {e.df:.0f} degrees of freedom"
    if e.method == "screened":
        on = "a z test at the screen's sd" if math.isinf(e.df) else f"{e.df:.0f} degrees of freedom"
        return f"{METHODS['screened']}, {e.n_base} round(s), {on}"
    return f"Welch t on log values, {e.n_base} vs {e.n_new} trials"


def changed_text(m: MetricChange) -> str:
    """A metric found worse or better: 'req/s -4.2% (p=0.003, paired t on ...)'."""
    ratio = m.ratio or 1.0
    return f"{METRIC_LABELS[m.metric]} {(ratio - 1) * 100:+.1f}% (p={m.p_shown:.3g}, " + (
        f"{method_text(m)})" + "".join(f"; {say(n)}" for n in m.notes)
    )


def too_few_text(m: MetricChange) -> str:
    return (
        f"too few trials ({m.n_base} vs {m.n_new}): the test needs {MIN_ROUNDS} paired "
        f"rounds or {MIN_TRIALS} trials per side"
    )


def note_text(m: MetricChange) -> str:
    """Why a metric has the verdict it has, in words ('' when nothing to say)."""
    if m.verdict in ("worse", "better") and m.ratio is not None:
        return changed_text(m)
    if m.noted("too_few"):
        return too_few_text(m)
    return "; ".join(say(n) for n in m.notes)


def reasons_text(pair: PairChange) -> list[str]:
    """Why a pair has its verdict: its reasons, then each metric that changed."""
    return [say(r) for r in pair.reasons] + [
        changed_text(m) for m in pair.metrics if m.verdict in ("worse", "better")
    ]


def as_json(c: Comparison) -> dict[str, Any]:
    """The comparison for --json: the figures, each verdict, and its reasons in words."""
    return {
        "base": c.base,
        "new": c.new,
        "threshold": c.threshold,
        "alpha": c.alpha,
        "paired": c.paired,
        "level": c.level,
        "plan_differences": [say(d) for d in c.plan_differences],
        "counts": c.counts(),
        "pairs": [
            {
                "label": p.label,
                "server": p.server,
                "proxy": p.proxy,
                "scenario": p.scenario,
                "concurrency": p.concurrency,
                "variant": p.variant,
                "verdict": p.verdict,
                "threshold": p.threshold,
                "reasons": reasons_text(p),
                "metrics": [
                    {
                        "metric": m.metric,
                        "base_median": m.base_median,
                        "new_median": m.new_median,
                        "ratio": m.ratio,
                        "ci": m.ci,
                        "p_value": m.p_value,
                        "p_adjusted": m.p_adjusted,
                        "n_base": m.n_base,
                        "n_new": m.n_new,
                        "verdict": m.verdict,
                        "method": m.method,
                        "detectable": m.detectable,
                        "drifting": m.drifting,
                        "note": note_text(m),
                    }
                    for m in p.metrics
                ],
            }
            for p in c.pairs
        ],
    }


def _metric(m: MetricChange | None) -> str:
    if m is None or m.ratio is None:
        return ""
    ci = f" [{m.ci[0]:.3f}-{m.ci[1]:.3f}]" if m.ci else ""
    shown = m.p_adjusted if m.p_adjusted is not None else m.p_value
    p = "" if shown is None else f" p={shown:.3g}"
    return f"x{m.ratio:.3f}{ci}{p}"


def _by_metric(pair: PairChange) -> dict[str, MetricChange]:
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
            + escape("; ".join(say(d) for d in c.plan_differences))
        )
    few = next((too_few_text(m) for p in c.pairs for m in p.metrics if m.noted("too_few")), None)
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
                note if x.noted("too_few") else f"{METRIC_LABELS[x.metric]}: {note}"
                for x in pair.metrics
                if x.verdict == "inconclusive" and (note := note_text(x))
            )
        )
        why = "; ".join(reasons_text(pair) + notes)
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
        said = "; ".join(say(d) for d in c.plan_differences)
        lines += ["**Not made the same way:** " + md_text(said), ""]
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
            "; ".join(reasons_text(pair)),
        ]
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
