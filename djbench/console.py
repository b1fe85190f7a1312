"""What runbench prints: the server list and the verify matrix (rich tables)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.proxy import caddy_missing
from djbench.runner import GateResult
from djbench.scenarios import Scenario
from djbench.servers import SERVERS

MARKS = {"ok": "[green]✓[/]", "incompatible": "[yellow]-[/]", "failed": "[red]✗[/]"}


def console_for(stream: Any, no_color: bool = False) -> Console:
    return Console(file=stream, no_color=no_color, highlight=False, soft_wrap=False, width=160)


def print_list(console: Console, scenarios: list[Scenario], scenario_file: str) -> None:
    table = Table(title="Servers", title_justify="left")
    for column in ("name", "interface", "WebSocket", "installed", "what it is"):
        # Keep the install command on one line, ready to copy.
        table.add_column(column, no_wrap=column != "what it is")
    for spec in SERVERS.values():
        missing = spec.missing()
        installed = "yes" if not missing else f'no: pip install "djbench[{spec.extra}]"'
        table.add_row(spec.name, spec.interface.upper(), "yes" if spec.websocket else "no",
                      escape(installed), escape(spec.summary))  # fmt: skip
    console.print(table)
    caddy = 'no: pip install "djbench[caddy]"' if caddy_missing() else "yes"
    console.print(f"Proxies: none, caddy (installed: {escape(caddy)})\n")
    scen = Table(title=f"Scenarios ({scenario_file})", title_justify="left")
    for column in ("name", "kind", "request", "SQL queries", "what it measures"):
        scen.add_column(column)
    for s in scenarios:
        queries = "" if s.expect.queries is None else str(s.expect.queries)
        scen.add_row(
            escape(s.name),
            s.kind,
            escape(f"{s.request.method} {s.request.path}"),
            queries,
            escape(s.description),
        )
    console.print(scen)


def print_matrix(console: Console, results: list[GateResult], scenarios: list[Scenario]) -> None:
    endpoints: dict[str, list[Scenario]] = defaultdict(list)
    for s in scenarios:
        endpoints[s.endpoint].append(s)
    table = Table(title="Verify gate", title_justify="left")
    table.add_column("server")
    table.add_column("start (s)", justify="right")
    for endpoint, variants in endpoints.items():
        label = endpoint + ("\n" + "/".join(v.variant for v in variants if v.variant) or "")
        table.add_column(label.strip(), justify="center")
    reasons: dict[tuple[str, str], list[str]] = defaultdict(list)
    for result in results:
        row = [
            result.deployment.label,
            "" if result.startup_seconds is None else f"{result.startup_seconds:.1f}",
        ]
        for variants in endpoints.values():
            cell = ""
            for s in variants:
                verdict = result.verdicts.get(s.name)
                if verdict is None:
                    continue
                cell += MARKS[verdict.status]
                if verdict.status != "ok":
                    reasons[(verdict.status, verdict.reason)].append(
                        f"{result.deployment.label}:{s.name}"
                    )
            row.append(cell)
        table.add_row(*row)
    console.print(table)
    console.print("✓ ok   - incompatible   ✗ failed")
    for (status, reason), pairs in sorted(reasons.items()):
        style = "yellow" if status == "incompatible" else "red"
        console.print(f"[{style}]{status}[/]: {escape(reason)}")
        console.print(f"    {escape(_summarise(pairs))}")


def _summarise(pairs: list[str], limit: int = 8) -> str:
    shown = ", ".join(pairs[:limit])
    return shown + (f" and {len(pairs) - limit} more" if len(pairs) > limit else "")
