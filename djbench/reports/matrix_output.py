"""A version matrix said: its cells and verdicts on the console, and the gate's own
lines (thresholds, this runner's noise, the questions left open) for every output."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.cost_output import print_matrix_cost
from djbench.reports.threshold_words import said
from djbench.reports.words import say
from djbench.results.model import (
    MatrixDocument,
    MatrixMetric,
    MatrixNoise,
    MatrixPair,
    ShapeChange,
)
from djbench.verdicts.matrix_verdicts import undecided


def noise_line(found: MatrixNoise) -> str:
    """The pre-run check redone on the runner's measured noise, in one sentence."""
    seen = (
        f"a slowdown of {found.detectable:.0%} or more"
        if found.detectable is not None
        else "not even a halving"
    )
    return (
        f"this runner's noise: sd {found.sd:.2f} per round's log-ratio over {found.rounds} "
        f"round(s); the horizon's {found.horizon} round(s) would flag {seen} on one of "
        f"{found.pairs} pair(s) with 80% power"
    )


def metric_text(m: MatrixMetric) -> str:
    """'x0.944 [0.930-0.958] p=0.012' (NEW/BASE, its interval, BH p), or why none."""
    if m.ratio is None:
        return "; ".join(say(n) for n in m.notes) or "-"
    return (
        f"x{m.ratio:.3f}"
        + (f" [{m.ci[0]:.3f}-{m.ci[1]:.3f}]" if m.ci else "")
        + f" p={'?' if m.p is None else f'{m.p:.3g}'}"
        + (" drifting" if m.drifting else "")
    )


def pair_text(pair: MatrixPair, verdict: str) -> str:
    """A pair with the metrics that gave it `verdict`, each as NEW/BASE - 1 (p99 +23%:
    latency rose), whatever the direction."""
    metrics = [
        f"{name} {(m.ratio or 1) - 1:+.1%} (p={'?' if m.p is None else f'{m.p:.3g}'})"
        for name, m in pair.metrics.items()
        if m.verdict == verdict
    ]
    return f"{pair.label} {pair.scenario} c{pair.concurrency}: {', '.join(metrics)}"


def shape_text(change: ShapeChange) -> str:
    return f"{change.key}: {change.base} -> {change.new}"


def open_questions(document: MatrixDocument) -> list[str]:
    """What the gate left open, a sentence each (none: every question answered): pairs
    neither worse nor equivalent, thresholds too close to call."""
    found = []
    left = undecided(document)
    if left.pairs:
        seen = (
            f"; at this budget only a slowdown of {document.noise.detectable:.0%} or more "
            "would have been flagged"
            if document.noise is not None and document.noise.detectable is not None
            else ""
        )
        found.append(
            f"{left.pairs} of {left.of} pair(s) undecided after {document.rounds} "
            f"round(s): neither worse nor equivalent{seen}"
        )
    if left.checks:
        found.append(f"{left.checks} threshold(s) too close to call")
    return found


def gate_lines(document: MatrixDocument) -> list[str]:
    """Each threshold missed, the runner's noise, and what was left open with what it
    makes of the exit code (--on-inconclusive)."""
    lines = [
        f"threshold missed: {c.cell} {c.label} {c.scenario}: {said(c)}"
        for c in document.checks
        if c.verdict == "missed"
    ]
    if document.noise is not None:
        lines.append(noise_line(document.noise))
    if open_ := open_questions(document):
        makes = (
            "exit 1 (--on-inconclusive fail)"
            if document.on_inconclusive == "fail"
            else "not a pass: exit 0 by --on-inconclusive pass (the default)"
        )
        lines.append(f"Inconclusive: {'; '.join(open_)}; {makes}")
    return lines


def print_matrix_result(console: Console, document: MatrixDocument) -> None:
    """Each cell (environment, build time) and each cell's verdict against the base."""
    table = Table(title="Matrix cells", title_justify="left")
    for column in ("cell", "status", "Python", "Django", "environment", "build s", "run"):
        table.add_column(column)
    for cell in document.cells:
        table.add_row(
            escape(cell.label),
            cell.status,
            cell.python_version or "",
            cell.versions.get("django", ""),
            "cached" if cell.cached else ("built" if cell.environment else ""),
            "" if cell.build_seconds is None else f"{cell.build_seconds:.1f}",
            escape(cell.run_file or ""),
        )
    console.print(table)
    for cell in document.cells:
        if cell.reason:
            console.print(f"[red]failed[/] {escape(cell.label)}: {escape(cell.reason)}")
    print_matrix_cost(console, document.cost)
    for v in document.verdicts:
        counts = ", ".join(f"{n} {k}" for k, n in v.counts.items() if n)
        console.print(
            f"{escape(v.cell)} against {escape(v.base)}: {escape(counts or 'nothing compared')}"
        )
        if v.pairs:
            metrics = list(dict.fromkeys(m for p in v.pairs for m in p.metrics))
            pairs = Table(title_justify="left")
            for column in ("server", "scenario", "conc.", "verdict", *metrics):
                pairs.add_column(column)
            for p in v.pairs:
                colour = {"worse": "red", "better": "green"}.get(p.verdict, "")
                verdict = f"[{colour}]{p.verdict}[/]" if colour else p.verdict
                pairs.add_row(
                    escape(p.label),
                    escape(p.scenario),
                    str(p.concurrency or "-"),
                    verdict,
                    *[escape(metric_text(p.metrics[m])) if m in p.metrics else "" for m in metrics],
                )
            console.print(pairs)
        for pair in v.worse:
            console.print(f"  [red]worse[/] {escape(pair_text(pair, 'worse'))}")
        for pair in v.better:
            console.print(f"  [green]better[/] {escape(pair_text(pair, 'better'))}")
        for change in v.shape_changes:
            console.print(f"  [red]answer changed[/] {escape(shape_text(change))}")
        for difference in v.plan_differences:
            console.print(f"  [yellow]plans differ[/] {escape(say(difference))}")
    for line in gate_lines(document):
        console.print(escape(line))
