"""What runbench prints of the verify gate: each server's start, the matrix of
scenarios (a count per deployment when there are many), what passed with a warning, and
the ASGI thread hops of each scenario."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.hop_words import hop_causes
from djbench.reports.words import say
from djbench.results.model import PairResult, RunDocument

MARKS = {"ok": "[green]✓[/]", "incompatible": "[yellow]-[/]", "failed": "[red]✗[/]"}


def print_gate(console: Console, label: str, startup: float | None, error: str) -> None:
    """One line as each deployment of the verify gate finishes."""
    state = "[red]failed[/]" if error else "[green]verified[/]"
    took = "" if startup is None else f" (ready in {startup:.1f}s)"
    console.print(f"{state} {escape(label)}{took}")
    if error:
        console.print(f"    {escape(error)}")


def print_matrix(console: Console, document: RunDocument) -> None:
    """The verify gate's matrix: a row per deployment, a column per endpoint."""
    endpoints: dict[str, list[str]] = defaultdict(list)
    for name, meta in document.plan.scenarios.items():
        endpoints[meta.endpoint or name].append(name)
    variants = {name: meta.variant for name, meta in document.plan.scenarios.items()}
    rows: dict[str, dict[str, PairResult]] = defaultdict(dict)
    for entry in document.results:
        rows[entry.label][entry.scenario] = entry
    if len(endpoints) > MATRIX_COLUMNS:
        _print_gate_counts(console, rows)
        print_gate_warnings(console, document)
        return
    table = Table(title="Verify gate", title_justify="left")
    table.add_column("server")
    table.add_column("start (s)", justify="right")
    for endpoint, names in endpoints.items():
        label = endpoint + ("\n" + "/".join(variants[n] for n in names if variants[n]) or "")
        table.add_column(escape(label.strip()), justify="center")
    reasons: dict[tuple[str, str], list[str]] = defaultdict(list)
    for label, by_scenario in rows.items():
        startup = next(iter(by_scenario.values())).startup_seconds
        row = [escape(label), "" if startup is None else f"{startup:.1f}"]
        for names in endpoints.values():
            cell = ""
            for name in names:
                found = by_scenario.get(name)
                if found is None:
                    continue
                cell += MARKS.get(found.status, "?")
                if found.status != "ok":
                    reasons[(found.status, say(found.reason))].append(f"{label}:{name}")
            row.append(cell)
        table.add_row(*row)
    console.print(table)
    console.print("✓ ok   - incompatible   ✗ failed")
    _print_reasons(console, reasons)
    print_gate_warnings(console, document)


def _print_reasons(console: Console, reasons: dict[tuple[str, str], list[str]]) -> None:
    """Each reason a pair did not pass, once, with the pairs that gave it."""
    for (status, reason), pairs in sorted(reasons.items()):
        style = "yellow" if status == "incompatible" else "red"
        console.print(f"[{style}]{status}[/]: {escape(reason)}")
        console.print(f"    {escape(_summarise(pairs))}")


MATRIX_COLUMNS = 8  # more scenarios than this: a count per deployment, not a column each


def _print_gate_counts(console: Console, rows: dict[str, dict[str, PairResult]]) -> None:
    """The gate of many scenarios: per deployment how many passed, were incompatible or
    failed, and the scenarios that did not pass with the reason."""
    table = Table(title="Verify gate", title_justify="left")
    for column in ("server", "start (s)", "ok", "incompatible", "failed"):
        table.add_column(column, justify="left" if column == "server" else "right")
    reasons: dict[tuple[str, str], list[str]] = defaultdict(list)
    for label, by_scenario in rows.items():
        startup = next(iter(by_scenario.values())).startup_seconds
        counts = Counter(e.status for e in by_scenario.values())
        table.add_row(
            escape(label),
            "" if startup is None else f"{startup:.1f}",
            *(str(counts.get(s, 0)) for s in ("ok", "incompatible", "failed")),
        )
        for name, e in by_scenario.items():
            if e.status != "ok":
                reasons[(e.status, say(e.reason))].append(f"{label}:{name}")
    console.print(table)
    _print_reasons(console, reasons)


def print_gate_warnings(console: Console, document: RunDocument) -> None:
    """What the gate passed with something to say (a query count outside its steady
    range), a line per kind of warning with the pairs that gave it."""
    said: dict[str, list[str]] = defaultdict(list)
    for entry in document.results:
        for notice in entry.verify.warnings if entry.verify else []:
            said[say(notice)].append(f"{entry.label}:{entry.scenario}")
    for text, pairs in said.items():
        console.print(f"[yellow]warning[/]: {escape(text)}")
        console.print(f"    {escape(_summarise(sorted(set(pairs))))}")


def _summarise(pairs: list[str], pages_shown: int = 2) -> str:
    """Every deployment that gave it, each with its pages (counted beyond a few): a
    count of pairs would hide which servers they are ('and 72 more' was 9 servers)."""
    by_deployment: dict[str, list[str]] = defaultdict(list)
    for pair in pairs:
        label, _, page = pair.rpartition(":")
        by_deployment[label].append(page)
    said = []
    for label, pages in by_deployment.items():
        named = ", ".join(pages) if len(pages) <= pages_shown else f"{len(pages)} pages"
        said.append(f"{label} ({named})")
    return f"{len(by_deployment)} deployment(s): " + "; ".join(said)


def print_hops(console: Console, document: RunDocument) -> None:
    """ASGI readiness: thread hops per request of each scenario, and what forces them."""
    counted = {n: m.asgi_hops for n, m in document.plan.scenarios.items() if m.asgi_hops}
    if not counted:
        return
    table = Table(
        title="ASGI readiness: thread hops per request (Django's ASGIHandler, in-process)",
        title_justify="left",
    )
    for column in ("scenario", "hops", "what forces them"):
        table.add_column(column, justify="right" if column == "hops" else "left")
    # Scenarios whose hops have the same count and causes share a row (a CMS's pages
    # all go through the same middleware: twenty identical rows said nothing more).
    rows: dict[tuple[str, str], list[str]] = {}
    for name, h in counted.items():
        if h is None:
            continue
        key = ("", h.why) if not h.counted else (str(h.hops), hop_causes(h.causes))
        rows.setdefault(key, []).append(name)
    for (hops, why), names in rows.items():
        table.add_row(escape(_names(names)), hops, escape(why))
    console.print(table)


def _names(names: list[str], shown: int = 3) -> str:
    """'home, blog-page, search and 4 more'."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
