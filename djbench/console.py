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
        table.add_row(
            spec.name,
            spec.interface.upper(),
            "yes" if spec.websocket else "no",
            escape(installed),
            escape(spec.summary),
        )
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


def _fmt(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _rps_cell(summary: dict[str, Any]) -> str:
    rps = summary.get("rps", {})
    if not rps.get("n"):
        return ""
    spread = f" ±{rps['iqr'] / 2:,.0f}" if rps["n"] > 1 else ""
    return f"{rps['median']:,.0f}{spread}"


def per_100mb(entry: dict[str, Any]) -> float | None:
    rps = entry.get("summary", {}).get("rps", {}).get("median")
    pss = (entry.get("memory_mb") or {}).get("pss_peak")
    return rps / pss * 100 if rps and pss else None


def print_results(console: Console, document: dict[str, Any]) -> None:
    """One table per scenario, fastest first; then what was not ranked, with reasons."""
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in document["results"]:
        by_scenario[entry["scenario"]].append(entry)
    for scenario, entries in by_scenario.items():
        ranked = sorted(
            (e for e in entries if e["status"] == "ok" and e.get("trials")),
            key=lambda e: -(e["summary"].get("rps", {}).get("median") or 0),
        )
        if not ranked:
            continue
        table = Table(title=f"{scenario}", title_justify="left")
        for column in (
            "server",
            "proxy",
            "conc.",
            "req/s (median ±IQR/2)",
            "p50 ms",
            "p99 ms",
            "errors",
            "PSS idle MB",
            "PSS peak MB",
            "req/s per 100 MB",
        ):
            table.add_column(column, justify="left" if column in ("server", "proxy") else "right")
        for e in ranked:
            s, m = e["summary"], e.get("memory_mb") or {}
            table.add_row(
                e["server"],
                e["proxy"],
                str(e["concurrency"]),
                _rps_cell(s),
                _fmt(s.get("latency_p50_ms", {}).get("median"), 2),
                _fmt(s.get("latency_p99_ms", {}).get("median"), 2),
                str(s.get("errors", 0) + s.get("non_2xx", 0)),
                _fmt(m.get("pss_idle")),
                _fmt(m.get("pss_peak")),
                _fmt(per_100mb(e), 0),
            )
        console.print(table)
        for e in ranked:
            for warning in e["summary"].get("warnings", []):
                console.print(f"[yellow]warning[/] {e['server']}/{e['proxy']}: {escape(warning)}")
    unranked = [e for e in document["results"] if e["status"] != "ok"]
    if unranked:
        console.print("Not ranked:")
        for e in unranked:
            console.print(
                f"  [{'yellow' if e['status'] == 'incompatible' else 'red'}]{e['status']}[/] "
                f"{e['server']}/{e['proxy']} {e['scenario']}: {escape(e['reason'])}"
            )
    idle = [e for e in document["results"] if e.get("ws_idle")]
    for e in idle:
        w = e["ws_idle"]
        console.print(
            f"{e['server']}/{e['proxy']}: {w['opened']} idle WebSocket connections, "
            f"PSS {w['pss_before_mb']} -> {w['pss_with_mb']} MB "
            f"({_fmt(w['per_connection_kb'])} KB per connection)"
        )
