"""A mix's per-page figures in words and tables: the console, the report and the guide
(the figures from djbench.verdicts.mixes)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.figures import number
from djbench.reports.sections import Section
from djbench.reports.words import pair_name
from djbench.results.model import RunDocument
from djbench.verdicts.mixes import MixPair, best_p99, mix_pairs
from djbench.verdicts.runs import Run

CONSOLE_ROWS = 24  # more per-page rows than this: the report's table, the console's words
HEADERS = [
    *("mix", "server", "page", "weight", "answered", "req/s", "p50 ms", "p99 ms"),
    *("p99 alone ms", "errors"),
]


def _cells(m: MixPair) -> list[list[str]]:
    return [
        [
            m.entry.scenario, pair_name(m.entry), r.page, f"{r.weight_share:.0%}", f"{r.share:.1%}",
            number(r.rps, 1), number(r.p50_ms, 1), number(r.p99_ms, 1),
            number(r.alone_p99_ms, 1) + (" (waits)" if r.blocked else ""), f"{r.errors:,}",
        ]
        for r in m.rows
    ]  # fmt: skip


def sentences(pairs: list[MixPair]) -> list[str]:
    """Per mix: which deployment holds its p99 best, which page limits each deployment's,
    and every page that waits behind the others (its p99 in the mix against alone)."""
    out = []
    for scenario in dict.fromkeys(m.entry.scenario for m in pairs):
        mine = [m for m in pairs if m.entry.scenario == scenario]
        best = best_p99(mine, scenario)
        if best is not None:
            out.append(
                f"{scenario}: the lowest p99 is {pair_name(best.entry)}'s "
                f"({number(best.p99_ms, 1)} ms; medians over trials, not a test)."
            )
        out += _slowest(scenario, mine)
        for m in mine:
            for r in m.rows:
                if r.blocked:
                    out.append(
                        f"{scenario} on {pair_name(m.entry)}: {r.page} waits behind the "
                        f"slower pages: p99 {number(r.p99_ms, 1)} ms in the mix, "
                        f"{number(r.alone_p99_ms, 1)} ms alone (head-of-line blocking)."
                    )
    return out


def _slowest(scenario: str, mine: list[MixPair]) -> list[str]:
    """Each deployment's slowest page; once when it is the same page on every one."""
    tops = [(m, top) for m in mine if (top := m.limiting) is not None and len(m.rows) > 1]
    pages = {top.page for _, top in tops}
    if len(tops) > 2 and len(pages) == 1:
        p99s = [top.p99_ms or 0.0 for _, top in tops]
        return [
            f"{scenario}: the slowest page is {pages.pop()} on every deployment (p99 "
            f"{number(min(p99s), 1)}-{number(max(p99s), 1)} ms)."
        ]
    return [
        f"{scenario} on {pair_name(m.entry)}: its slowest page is {top.page} "
        f"(p99 {number(top.p99_ms, 1)} ms)."
        for m, top in tops
    ]


def print_mixes(console: Console, document: RunDocument) -> None:
    pairs = mix_pairs(document)
    if not pairs:
        return
    rows = sum(len(m.rows) for m in pairs)
    if rows > CONSOLE_ROWS:
        console.print(
            f"Mixes per page: {rows} rows ({len(pairs)} pairs), in the report's \"Mixes: "
            'figures per page"'
        )
        for line in sentences(pairs):
            console.print(escape(line))
        return
    table = Table(
        title="Mixes per page (medians over trials; answered: share of the mix's answers)",
        title_justify="left",
    )
    for column in HEADERS:
        table.add_column(column, justify="left" if column in ("mix", "server", "page") else "right")
    for m in pairs:
        for row in _cells(m):
            table.add_row(*(escape(c) for c in row))
    console.print(table)
    for line in sentences(pairs):
        console.print(escape(line))


def mix_sections(runs: list[Run]) -> list[Section]:
    sections: list[Section] = []
    for run in runs:
        pairs = mix_pairs(run.document)
        if not pairs:
            continue
        sections.append(
            Section(
                id=f"mix-{len(sections)}",
                title="Mixes: figures per page" + (f" [{run.run_tag}]" if len(runs) > 1 else ""),
                intro="Each request's page drawn by weight from a generator seeded with "
                f"the run's seed plus the round ({_seed(run.document)} in round 0: every "
                "deployment of a round draws the same pages); answered: the page's share "
                "of the mix's answers (a short window holds few: it strays from the "
                "weight by chance); p99 alone: the page as its own scenario on the same "
                "deployment, when the run loaded it; (waits): at least twice that in the mix.",
                headers=HEADERS,
                rows=[row for m in pairs for row in _cells(m)],
                notes=sentences(pairs),
            )
        )
    return sections


def _seed(document: RunDocument) -> str:
    for e in document.results:
        for t in e.trials:
            if t.pages and t.driver_figures.seed is not None:
                return str(t.driver_figures.seed - t.round)
    return "unknown"
