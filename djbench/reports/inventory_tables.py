"""runbench --list: the servers and what installs them, the proxies, the load drivers,
the scenarios (tables within 100 columns)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.plan.owncommands import OwnCommand
from djbench.plan.scenarios import Scenario
from djbench.servers import SERVERS, ServerSpec, caddy


def can_run(spec: ServerSpec) -> str:
    """'yes', or what is missing and how to get it without touching a pinned version."""
    if not spec.missing():
        return "yes"
    if lacking := spec.lacks_part():
        # The package is there but lacks a part (Gunicorn without its ASGI worker): an
        # extra would not add it; only another release of the package would.
        version = (spec.installed() or ("?", ""))[0]
        return f"no: {spec.executable} {version} has no {', '.join(lacking)}"
    return f'no: pip install "djbench[{spec.extra}]"'


def print_list(
    console: Console,
    scenarios: list[Scenario],
    scenario_file: str,
    drivers: dict[str, str],
    problem: str | None = None,
    profiles: dict[str, list[str]] | None = None,
    own: tuple[OwnCommand, ...] = (),
) -> None:
    """The servers and what installs them, the proxies, the load drivers (name ->
    whether it is available, in words), the scenarios, the project's own deployments."""
    # Two tables, each within 100 columns: install state, then what each server is.
    table = Table(title="Servers", title_justify="left")
    for column in ("name", "interface", "WS", "version", "installed"):
        # Keep the install command on one line, ready to copy.
        table.add_column(column, no_wrap=True)
    about = Table(title="What each server is", title_justify="left")
    about.add_column("name", no_wrap=True)
    about.add_column("what it is")
    for spec in SERVERS.values():
        found = spec.installed()
        table.add_row(
            spec.name,
            spec.interface.upper(),
            "yes" if spec.websocket else "no",
            escape(found[0] if found else ""),
            escape(can_run(spec)),
        )
        about.add_row(spec.name, escape(spec.summary))
    console.print(table)
    console.print(about)
    proxy = f'no: pip install "djbench[{caddy.EXTRA}]"' if caddy.missing() else "yes"
    console.print(f"Proxies: {', '.join(caddy.PROXIES)} (caddy installed: {escape(proxy)})")
    listed = ", ".join(f"{name} ({state})" for name, state in drivers.items())
    console.print(f"Load drivers: {escape(listed)}\n")
    if problem is not None:
        console.print(f"[yellow]No scenarios:[/] {escape(problem)}")
        console.print(
            "Create a scenario file from your URLconf with: python manage.py benchinit "
            "(it probes each page once and writes what a correct answer is)."
        )
        return
    scen = Table(title=f"Scenarios ({scenario_file})", title_justify="left")
    for column in ("name", "kind", "request", "SQL", "what it measures"):
        scen.add_column(column, no_wrap=column != "what it measures")
    for s in scenarios:
        queries = "" if s.expect.queries is None else str(s.expect.queries)
        if s.expect.queries_range is not None:
            queries = "-".join(str(n) for n in s.expect.queries_range)
        request = f"{s.request.method} {s.request.path}"
        if s.mix:  # its pages are listed with their own requests
            request, queries = f"mix of {len(s.mix)} pages", ""
        scen.add_row(escape(s.name), s.kind, escape(request), queries, escape(s.description))
    console.print(scen)
    if profiles:
        console.print("Profiles (what runbench loads without --scenarios; --quick: quick):")
        for name, members in profiles.items():
            console.print(f"  {escape(name)}: {escape(', '.join(members))}")
    if own:
        console.print("Your own deployments (measured beside djbench's; --servers takes them):")
        for c in own:
            said = f"{c.name}: {c.command} (as {c.server}; {c.found_in}; {c.layout()})"
            console.print(f"  {escape(said)}")
            for change in c.changes:
                console.print(f"    {escape(change)}")
