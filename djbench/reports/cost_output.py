"""A cost probe in words: each page's line as it is counted, the table of a --cost run,
and the comparison of two (benchcompare on cost files)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.words import md_cell, say
from djbench.results.model import (
    CostChange,
    CostComparison,
    CostRecord,
    MatrixCost,
    PageCost,
    RunDocument,
    ServerCost,
)

WHAT_IT_SEES = (
    "Instructions per request count the work of Django and the project's code in one "
    "process (the ORM, templates, middleware, serialisation); they do not see time "
    "spent waiting for the database or the network, the GIL, concurrency, or the "
    "server: the wall clock's rounds measure those."
)


def instructions(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def spread(value: float | None) -> str:
    return "-" if value is None else f"{value:.3%}"


def page_line(page: PageCost) -> str:
    """One page, as soon as it is counted."""
    if page.status != "ok":
        return f"{page.scenario}: failed under the probe: {say(page.reason)}"
    seconds = sum(c.seconds for c in page.counts)
    settled = "" if all(c.settled for c in page.counts) else " (did not settle: see its segments)"
    return (
        f"{page.scenario} ({page.interface.upper()}): {instructions(page.instructions)} "
        f"instructions per request over {len(page.counts)} seed(s), spread "
        f"{spread(page.spread)}{settled}; {page.queries:g} SQL per request; {seconds:.0f}s"
    )


SERVERS_SEE = (
    "A server's cost: its whole process tree's instructions per request of the page (N "
    "and 3N requests on one keep-alive connection, or one connection each where the "
    "server closes them, differenced). A WSGI server's own part is that less Django's "
    "handler for the same request in-process; an ASGI server's is not separable that way "
    "(in-process the handler runs on asyncio's loop, in the server on the server's), so "
    "ASGI servers compare on the whole tree. Valgrind runs one thread at a time (threads "
    "are counted, never overlapped); the kernel's work on the socket is not counted."
)


def server_line(found: ServerCost) -> str:
    """One server, as soon as it is counted."""
    if found.status != "ok":
        return f"{found.server}: its own cost was not counted: {say(found.reason)}"
    head = (
        f"{found.server} ({found.interface.upper()}) on {found.scenario}: "
        f"{instructions(found.per_request)} instructions per request for the whole tree"
        + (", a new connection per request" if _per_request_connections(found) else "")
    )
    if found.own is None:
        return (
            f"{head} (compared whole: an ASGI server's own part is not separable); "
            f"{found.seconds:.0f}s"
        )
    return (
        f"{head}, {instructions(found.own)} its own beyond Django's handler "
        f"({instructions(found.handler)}); {found.seconds:.0f}s"
    )


def _per_request_connections(found: ServerCost) -> bool:
    return bool(found.connections) and found.connections[-1] > 1


def page_row(page: PageCost) -> list[str]:
    """A page's cells in a report's table."""
    if page.status != "ok":
        return [page.scenario, page.interface, "failed", say(page.reason), "", ""]
    return [
        page.scenario,
        page.interface,
        instructions(page.instructions),
        spread(page.spread),
        "-" if page.queries is None else f"{page.queries:g}",
        str(page.response_bytes or "-"),
    ]


def server_row(found: ServerCost) -> list[str]:
    """A server's cells in a report's table."""
    if found.status != "ok":
        return [found.server, found.interface, "failed", say(found.reason), ""]
    return [
        found.server + (" (a connection per request)" if _per_request_connections(found) else ""),
        found.interface,
        instructions(found.per_request),
        instructions(found.handler),
        "whole tree (ASGI)" if found.own is None else instructions(found.own),
    ]


def print_server_costs(console: Console, servers: list[ServerCost]) -> None:
    if not servers:
        return
    table = Table(
        title=f"The servers' own cost per request ({servers[0].scenario}, under Valgrind)"
    )
    for column in ("server", "interface", "whole tree", "Django's handler", "the server's own"):
        table.add_column(column, justify="left" if column in ("server", "interface") else "right")
    for found in servers:
        table.add_row(*[escape(cell) for cell in server_row(found)])
    console.print(table)
    console.print(escape(SERVERS_SEE))


def print_costs(console: Console, document: RunDocument) -> None:
    """A --cost run's table: every page, its figure, its spread over seeds."""
    if document.cost is None:
        return
    table = Table(title="Cost per request (instructions, under Valgrind)")
    for column in ("page", "handler", "instructions", "spread over seeds", "SQL", "bytes"):
        table.add_column(column, justify="left" if column in ("page", "handler") else "right")
    for page in document.cost.pages:
        table.add_row(*[escape(cell) for cell in page_row(page)])
    console.print(table)
    console.print(escape(WHAT_IT_SEES))
    print_server_costs(console, document.cost.servers)


def change_line(change: CostChange) -> str:
    if change.ratio is None:
        return f"{change.scenario}: {change.verdict}"
    text = (
        f"{change.scenario}: {change.verdict}, x{change.ratio:.4f} "
        f"({instructions(change.before)} -> {instructions(change.after)} instructions "
        f"per request; range over seeds {spread(change.noise)})"
    )
    if change.queries_changed:
        text += f"; SQL changed: +{len(change.sql_added)} shape(s), -{len(change.sql_removed)}"
    return text


def print_comparison(console: Console, result: CostComparison) -> None:
    """Each page's change, then what moved: functions, SQL shapes, notes."""
    if result.base:
        console.print(escape(f"Cost: {result.new} against {result.base}"))
    for change in result.pages:
        console.print(escape(change_line(change)))
        for moved in change.functions:
            line = f"    {moved.name}: {moved.before:,.0f} -> {moved.after:,.0f}"
            console.print(escape(line + " opcodes per request"))
        for shape in change.sql_added:
            console.print(escape(f"    + {shape}"))
        for shape in change.sql_removed:
            console.print(escape(f"    - {shape}"))
        for note in change.notes:
            console.print(escape(f"    {say(note)}"))
    for note in result.notes:
        console.print(escape(say(note)))
    console.print(
        escape(
            f"A page is worse or better when its count moved by more than "
            f"{result.threshold:.1%} and beyond the range of its ratios paired by hash seed."
        )
    )


# BMF's measure for a count of instructions (Bencher's built-in slug): value the median
# over seeds, bounds the lowest and highest seed.
INSTRUCTIONS = "instructions"
QUERIES = "sql-queries"  # a measure of djbench's own: SQL statements per request


def cost_bmf(document: RunDocument) -> str:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for page in document.cost.pages if document.cost else []:
        if page.instructions is None:
            continue
        figures = [c.instructions for c in page.counts]
        out[f"{page.scenario} cost"] = {
            INSTRUCTIONS: {
                "value": round(page.instructions, 2),
                "lower_value": round(min(figures), 2),
                "upper_value": round(max(figures), 2),
            }
        }
        if page.queries is not None:
            out[f"{page.scenario} cost"][QUERIES] = {"value": page.queries}
    for found in document.cost.servers if document.cost else []:
        if found.own is not None:
            out[f"{found.server} own cost"] = {INSTRUCTIONS: {"value": round(found.own, 2)}}
    return json.dumps(out, indent=2, sort_keys=True) + "\n"


def cost_summary(document: RunDocument) -> str:
    lines = [
        "### djbench: cost per request (instructions, under Valgrind)",
        "",
        "| page | handler | instructions | spread over seeds | SQL |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for page in document.cost.pages if document.cost else []:
        if page.status != "ok":
            lines.append(
                f"| {page.scenario} | {page.interface} | failed: {md_cell(say(page.reason))} | | |"
            )
            continue
        sql = "-" if page.queries is None else f"{page.queries:g}"
        lines.append(
            f"| {page.scenario} | {page.interface} | {instructions(page.instructions)} "
            f"| {spread(page.spread)} | {sql} |"
        )
    lines += ["", WHAT_IT_SEES]
    if document.cost is not None and document.cost.servers:
        lines += ["", *server_summary(document.cost.servers)]
    return "\n".join([*lines, ""])


def server_summary(servers: list[ServerCost]) -> list[str]:
    """The servers' own cost as a Markdown table (a summary's, a report's)."""
    lines = [
        f"#### The servers' own cost per request ({servers[0].scenario}, instructions)",
        "",
        "| server | interface | whole tree | Django's handler | the server's own |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    lines += ["| " + " | ".join(md_cell(c) for c in server_row(f)) + " |" for f in servers]
    return [*lines, "", SERVERS_SEE]


def cost_junit(document: RunDocument) -> str:
    """A testcase per page: a failure when the page failed under the probe."""
    pages = document.cost.pages if document.cost else []
    failed = [p for p in pages if p.status != "ok"]
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites, "testsuite", name=f"djbench cost {document.run_id}",
        tests=str(len(pages)), failures=str(len(failed)),
    )  # fmt: skip
    for page in pages:
        case = ET.SubElement(suite, "testcase", classname="djbench.cost", name=page.scenario)
        if page.status != "ok":
            ET.SubElement(case, "failure", message=say(page.reason), type="failed")
        else:
            ET.SubElement(case, "system-out").text = page_line(page)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def counts(result: CostComparison) -> str:
    """'1 worse, 2 equal' (and SQL changed), for a line."""
    verdicts: dict[str, int] = {}
    for page in result.pages:
        verdicts[page.verdict] = verdicts.get(page.verdict, 0) + 1
    said = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    changed = sum(p.queries_changed for p in result.pages)
    return said + (f", {changed} with changed SQL" if changed else "")


def matrix_cost_line(found: MatrixCost) -> str:
    """A matrix's cost phase in one line, as soon as it is done."""
    if found.status == "skipped":
        return say(found.reason)
    parts = [f"{c.new} against {c.base}: {counts(c)}" for c in found.comparisons]
    parts += [f"{cell}: {say(why)}" for cell, why in found.failed.items()]
    return f"cost counted in {found.seconds or 0:.0f} s; " + "; ".join(parts or ["no pair"])


def print_matrix_cost(console: Console, found: MatrixCost | None) -> None:
    """A matrix's cost phase at its end: each cell's pages against the base."""
    if found is None:
        return
    if found.status == "skipped":
        console.print(escape(say(found.reason)))
        return
    for cell, why in found.failed.items():
        console.print(f"[red]cost failed[/] {escape(cell)}: {escape(say(why))}")
    for result in found.comparisons:
        print_comparison(console, result)


def matrix_cost_summary(found: MatrixCost | None) -> list[str]:
    """A matrix summary's cost section (Markdown lines)."""
    if found is None:
        return []
    if found.status == "skipped":
        return ["", f"Cost: {md_cell(say(found.reason))}"]
    out = ["", "### Cost per request (instructions, under Valgrind)", ""]
    out += [f"- **{md_cell(cell)}**: {md_cell(say(why))}" for cell, why in found.failed.items()]
    for result in found.comparisons:
        out += [
            "",
            f"#### {md_cell(result.new)} vs {md_cell(result.base)}: {counts(result)}",
            "",
            "| page | verdict | new/base | instructions | range over seeds | SQL | moved most |",
            "| --- | --- | ---: | ---: | ---: | --- | --- |",
        ]
        out += [_summary_row(change) for change in result.pages]
        out += [f"- {md_cell(say(note))}" for note in result.notes]
    return [*out, "", WHAT_IT_SEES]


def _summary_row(change: CostChange) -> str:
    verdict = f"**{change.verdict}**" if change.failing else change.verdict
    ratio = "-" if change.ratio is None else f"x{change.ratio:.4f}"
    counted = f"{instructions(change.before)} -> {instructions(change.after)}"
    sql = f"{change.queries_before or 0:g} -> {change.queries_after or 0:g}"
    if change.queries_changed:
        sql += f" (+{len(change.sql_added)} / -{len(change.sql_removed)} shapes)"
    moved = ", ".join(f"{f.name} {f.before:,.0f} -> {f.after:,.0f}" for f in change.functions[:3])
    cells = (change.scenario, verdict, ratio, counted, spread(change.noise), sql, moved)
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def matrix_cost_junit(parent: ET.Element, found: MatrixCost | None) -> None:
    """A testsuite per compared cell's cost: a page worse, with changed SQL or broken
    under the probe is a failure."""
    if found is None or found.status == "skipped":
        return
    for result in found.comparisons:
        suite = ET.SubElement(
            parent, "testsuite", name=f"cost: {result.new} vs {result.base}",
            tests=str(len(result.pages)), failures=str(len(result.failing)),
        )  # fmt: skip
        for change in result.pages:
            case = ET.SubElement(
                suite, "testcase", classname=f"djbench.cost.{result.new}", name=change.scenario
            )
            said = change_line(change)
            if change.failing:
                ET.SubElement(case, "failure", message=said, type=change.verdict).text = said
            else:
                ET.SubElement(case, "system-out").text = said


def cost_guide_lines(record: CostRecord | None) -> list[str]:
    """The guide's cost section (Markdown): the servers' own cost ranked, each page's
    count, what counting sees; without a cost file, what it would add and how."""
    out = ["## What a request costs, counted", ""]
    if record is None:
        return [
            *out,
            "Not counted for this run. `python manage.py runbench --cost --servers a,b` "
            "counts each page's instructions per request and each server's own "
            "(deterministic, minutes); `benchguide RESULTS.json --cost COST.json` puts "
            "them here. " + WHAT_IT_SEES,
        ]
    if record.servers:
        out += _ranked("WSGI", "their own part", [s for s in record.servers if s.own is not None])
        wholes = [s for s in record.servers if s.own is None and s.per_request is not None]
        out += [*_ranked("ASGI", "the whole tree", wholes), *server_summary(record.servers), ""]
    out += [
        "| page | handler | instructions | spread over seeds | SQL |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    out += ["| " + " | ".join(md_cell(c) for c in page_row(p)[:5]) + " |" for p in record.pages]
    return [*out, "", WHAT_IT_SEES]


def _ranked(interface: str, what: str, servers: list[ServerCost]) -> list[str]:
    """A sentence: the cheapest and the dearest of these servers per request."""
    if not servers:
        return []
    figure = {s.server: (s.own if s.own is not None else s.per_request) or 0.0 for s in servers}
    order = sorted(servers, key=lambda s: figure[s.server])
    cheapest, dearest = order[0], order[-1]
    said = f"{interface} servers, {what} per request of {cheapest.scenario}: "
    if cheapest is dearest:
        said += f"{cheapest.server} spends {instructions(figure[cheapest.server])} instructions."
    else:
        said += (
            f"{cheapest.server} spends the least ({instructions(figure[cheapest.server])} "
            f"instructions), {dearest.server} the most ({instructions(figure[dearest.server])})."
        )
    return [
        said + " Work every request pays for on any machine; whether it shows in req/s "
        "depends on what else a request does (the wall clock's rounds say).",
        "",
    ]
