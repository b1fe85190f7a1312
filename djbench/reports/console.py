"""What runbench prints: the server list and the results (rich tables); the verify
gate's matrix and ASGI hops are djbench.reports.gate_output's."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from djbench.reports.gate_output import print_gate_warnings
from djbench.reports.held_words import exceptions_text, growth_text, restarts_text
from djbench.reports.search_words import capacity_how, span, sweep_text
from djbench.reports.words import broadcast_text, grouped_warnings, pair_name, say, ws_short
from djbench.results.model import Notice, PairResult, RunDocument, Trial
from djbench.verdicts.held import held
from djbench.verdicts.runs import UNDERSERVED, broadcast_rates, failures, per_100mb

# Without a terminal (a log, CI) a table is drawn at its own width: a log has no width,
# and a table squeezed to one cuts its figures ("371…") and empties its columns.
LOG_WIDTH = 1000


def console_for(stream: Any, no_color: bool = False) -> Console:
    # soft_wrap: a line of text is never broken (a command printed to copy stays whole);
    # tables are drawn to the width.
    console = Console(file=stream, no_color=no_color, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = LOG_WIDTH
    return console


def trial_line(done: int, total: int, label: str, trial: Trial) -> str:
    """One finished trial, for a log without a terminal (a CI log, a file)."""
    p99 = trial.latency_ms.p99
    shown = "p99 -" if p99 is None else f"p99 {p99:.1f} ms"
    why = say(trial.invalid) if trial.invalid else ""
    if len(why) > 60:
        why = why[:59].rstrip() + "…"
    state = "ok" if trial.valid else f"invalid: {why}" if why else "invalid"
    return f"[{done}/{total}] {label}: {trial.rps:,.0f} req/s, {shown}, {state}"


def print_skipped(console: Console, skipped: dict[str, Notice]) -> None:
    for name, why in skipped.items():
        console.print(f"[yellow]skipped[/] {escape(name)}: {escape(say(why))}")


def _fmt(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _rps_cell(entry: PairResult) -> str:
    rps = entry.summary.rps
    if not rps.n or rps.median is None:
        return ""
    spread = f" ±{(rps.iqr or 0) / 2:,.0f}" if rps.n > 1 else ""
    return f"{rps.median:,.0f}{spread}"


def _server(entry: PairResult) -> str:
    return pair_name(entry)


def _front(entry: PairResult) -> str:
    """The proxy, and the protocol when it is not HTTP/1.1 (caddy-tls/h2, none/h2c)."""
    return entry.proxy if entry.protocol == "h1" else f"{entry.proxy}/{entry.protocol}"


def print_capacity(console: Console, document: RunDocument) -> None:
    """--capacity: each pair's rate within the target, most first, and how it was found."""
    found = [e for e in document.results if e.capacity is not None and not e.capacity.screening]
    if not found:
        return
    found.sort(key=lambda e: -(e.capacity.rps or 0) if e.capacity else 0)
    slo = document.plan.capacity_slo_ms
    table = Table(title=f"Capacity at p99 <= {slo:g} ms (open loop)", title_justify="left")
    for column in ("server", "scenario", "req/s", "95% interval", "per core", "windows", "how"):
        left = column in ("server", "scenario", "how")
        table.add_column(column, justify="left" if left else "right")
    for e in found:
        c = e.capacity
        assert c is not None
        table.add_row(
            escape(_server(e)),
            escape(e.scenario),
            _fmt(c.rps, 0),
            span(c) if c.interval else "-",
            _fmt(c.per_core, 0),
            str(len(c.steps)),
            escape(capacity_how(c)),
        )
    console.print(table)
    console.print(
        "capacity: the rate at which half of the steady windows met the target (a "
        "logistic fit over every window); plan on the interval's low end"
    )


def print_churn(console: Console, document: RunDocument) -> None:
    """--churn: per pair and event, requests lost and the time to recover."""
    found = [e for e in document.results if e.churn is not None]
    if not found:
        return
    first = found[0].churn
    assert first is not None
    table = Table(
        title=f"Churn: events under {first.rate:g} req/s open loop "
        f"({first.slice_s:g} s slices; steady band: 2x the p99 before, or +5 ms)",
        title_justify="left",
    )
    for column in ("server", "proxy", "scenario", "workers", "event", "failed", "p99 ms",
                   "steady", "back after s", "serving"):  # fmt: skip
        left = column in ("server", "proxy", "scenario", "event")
        table.add_column(column, justify="left" if left else "right")
    for e in found:
        c = e.churn
        assert c is not None
        for ev in c.events or []:
            table.add_row(
                escape(_server(e)), e.proxy, escape(e.scenario), str(c.workers),
                f"{ev.kind} ({ev.signal})" if ev.signal else ev.kind, f"{ev.failed:,}",
                _fmt(ev.worst_p99_ms), _fmt(ev.steady_p99_ms),
                _fmt(ev.recovered_after_s) if ev.recovered_after_s is not None else "never",
                "yes" if ev.kept_serving else "no",
            )  # fmt: skip
        if not c.events:
            table.add_row(
                escape(_server(e)), e.proxy, escape(e.scenario), str(c.workers), "none seen",
                "", "", "", "",
                "yes" if not c.silent_slices else f"no ({c.silent_slices} silent slices)",
            )  # fmt: skip
    console.print(table)


def print_sweep(console: Console, document: RunDocument) -> None:
    """--sweep: req/s at each concurrency, the knee and Little's law, per pair."""
    found = [e for e in document.results if e.sweep is not None]
    if not found:
        return
    table = Table(title="Concurrency sweep (closed loop)", title_justify="left")
    for column in ("server", "scenario", "req/s by concurrency", "knee"):
        table.add_column(column)
    for e in found:
        s = e.sweep
        assert s is not None
        steps = ", ".join(f"{x.concurrency}: {x.rps:,.0f}" for x in s.steps)
        table.add_row(escape(_server(e)), escape(e.scenario), steps, escape(sweep_text(s)))
    console.print(table)


def print_soak(console: Console, document: RunDocument) -> None:
    """--soak only: a churn's windows have their own table (print_churn)."""
    document = document.model_copy(
        update={"results": [e for e in document.results if e.churn is None]}
    )
    _print_soak(console, document)


def _print_soak(console: Console, document: RunDocument) -> None:
    """A soak's time line per pair: restarts, their cost, memory from start to end, trend."""
    soaked = [(e, t) for e in document.results for t in e.trials if t.timeline is not None]
    if not soaked:
        return
    table = Table(title="Soak: over the whole window", title_justify="left")
    for column in ("server", "proxy", "scenario", "req/s", "restarts", "PSS MiB start -> end"):
        table.add_column(
            column, justify="left" if column in ("server", "proxy", "scenario") else "right"
        )
    for e, t in soaked:
        line = t.timeline
        assert line is not None
        memory = line.memory
        table.add_row(
            escape(_server(e)),
            e.proxy,
            escape(e.scenario),
            f"{t.rps:,.0f}",
            str(len(line.restarts)),
            f"{memory[0].pss:,.1f} -> {memory[-1].pss:,.1f}" if memory else "",
        )
    console.print(table)
    for e, t in soaked:
        line = t.timeline
        assert line is not None
        who = f"{escape(_server(e))}/{_front(e)} {escape(e.scenario)}"
        console.print(f"{who}: {escape(restarts_text(line))}")
        console.print(f"  PSS of the tree {escape(growth_text(line.pss_growth, t.duration_s))}")
        console.print(
            f"  largest worker's USS {escape(growth_text(line.uss_worker_growth, t.duration_s))}"
        )
        if e.recycle_ignored:
            console.print(
                f"  [yellow]note[/] {e.server} has no option for "
                f"{escape(', '.join(e.recycle_ignored))}: not applied"
            )


# Short headers keep a table within 100 columns; the units are said once, below it.
RESULT_COLUMNS = ("server", "front", "c", "req/s", "p50", "p99", "err", "idle", "peak", "/100M")
RESULT_LEGEND = (
    "req/s: median ±IQR/2 over trials; p50, p99: ms (median); err: failed requests; "
    "idle, peak: PSS MiB; /100M: req/s per 100 MiB of peak PSS"
)


def _starved(entry: PairResult) -> bool:
    """Left connections unserved: never tabled among the valid pairs."""
    return any(w.code == UNDERSERVED for w in entry.summary.warnings)


def _result_table(scenario: str, ranked: list[PairResult]) -> Table:
    table = Table(title=escape(scenario), title_justify="left")
    for column in RESULT_COLUMNS:
        # The server's label (variant included) is never broken across lines.
        table.add_column(
            column,
            justify="left" if column in ("server", "front") else "right",
            no_wrap=column == "server",
        )
    for e in ranked:
        s, m = e.summary, e.memory_mb
        table.add_row(
            escape(_server(e)),
            _front(e),
            str(e.concurrency or "-"),
            _rps_cell(e),
            _fmt(s.latency_p50_ms.median, 2),
            _fmt(s.latency_p99_ms.median, 2),
            str(failures(s)),
            _fmt(m.pss_idle),
            _fmt(m.pss_peak),
            _fmt(per_100mb(e), 0),
        )
    return table


def print_results(console: Console, document: RunDocument) -> None:
    """One table per scenario, fastest first; the warnings, a line per kind; then what
    was not ranked (failed, invalid, incompatible, starved), with reasons."""
    by_scenario: dict[str, list[PairResult]] = defaultdict(list)
    for entry in document.results:
        by_scenario[entry.scenario].append(entry)
    warned: list[tuple[str, Notice]] = []
    tabled = False
    for scenario, entries in by_scenario.items():
        ranked = sorted(
            (e for e in entries if e.status == "ok" and e.trials and not _starved(e)),
            key=lambda e: -(e.summary.rps.median or 0),
        )
        if not ranked:
            continue
        console.print(_result_table(scenario, ranked))
        tabled = True
        for e in ranked:
            who = f"{_server(e)}/{_front(e)} {e.scenario}"
            if (rates := broadcast_rates(e)) is not None:
                console.print(f"{escape(who)}: {escape(broadcast_text(rates))}")
            warned += [(who, w) for w in e.summary.warnings]
    if tabled:
        console.print(escape(RESULT_LEGEND))
    for line in grouped_warnings(warned):
        console.print(f"[yellow]warning[/] {escape(line)}")
    print_gate_warnings(console, document)
    _print_unranked(console, document)
    _print_ws_idle(console, document)


def _print_unranked(console: Console, document: RunDocument) -> None:
    unranked = [e for e in document.results if e.status != "ok" or _starved(e)]
    if not unranked:
        return
    console.print("Not ranked:")
    for e in unranked:
        figures = held(e)
        because = exceptions_text(figures) if figures else ""
        status = e.status if e.status != "ok" else "starved"
        why = say(e.reason) if e.status != "ok" else say(_underserved_notice(e))
        console.print(
            f"  [{'yellow' if e.status == 'incompatible' else 'red'}]{status}[/] "
            f"{escape(_server(e))}/{_front(e)} {escape(e.scenario)}: {escape(why)}"
            + (f" (raised: {escape(because)})" if because else "")
        )


def _underserved_notice(entry: PairResult) -> Notice | None:
    return next((w for w in entry.summary.warnings if w.code == UNDERSERVED), None)


def _print_ws_idle(console: Console, document: RunDocument) -> None:
    for e in document.results:
        w = e.ws_idle
        if w is None:
            continue
        console.print(
            f"{escape(_server(e))}/{_front(e)}: {w.opened} idle WebSocket connections, "
            f"PSS {w.pss_before_mb} -> {w.pss_with_mb} MiB "
            f"({_fmt(w.per_connection_kb)} KiB per connection)"
        )
        if (short := ws_short(w)) is not None:
            console.print(f"[yellow]warning[/] {escape(_server(e))}/{_front(e)}: {escape(short)}")


def print_held(console: Console, document: RunDocument) -> None:
    """What each server held besides memory, when there is something to say: database
    connections (PostgreSQL), exceptions, leak verdicts (djbench.verdicts.held)."""
    rows = [(e, h) for e in document.results if (h := held(e)) is not None]
    if not any(h.db_peak is not None or h.exceptions_total or h.verdicts for _, h in rows):
        return
    table = Table(
        title="What each server held (max over trials; DB: connections at one reading)",
        title_justify="left",
    )
    for column in ("server", "scenario", "threads", "fds", "DB conns", "after", "layout"):
        table.add_column(column, justify="left" if column in ("server", "scenario") else "right")
    table.add_column("raised / found", justify="left")
    for e, h in rows:
        raised = exceptions_text(h, limit=1)
        # db_exhausted repeats what the exception (PostgreSQL's own words) says
        verdicts = [say(v) for v in h.verdicts if not (raised and v.code == "db_exhausted")]
        found = "; ".join([raised, *verdicts])
        table.add_row(
            escape(_server(e)), escape(e.scenario), str(h.threads_peak), str(h.fds_peak),
            _fmt(h.db_peak, 0), _fmt(h.db_after, 0), _fmt(h.explained, 0),
            escape(found.strip("; ")),
        )  # fmt: skip
    console.print(table)


def print_tuning(console: Console, document: RunDocument) -> None:
    """--tune: each server's best configuration, what else was tried, what was cut."""
    record = document.tuning
    if record is None:
        return
    table = Table(
        title=f"Tuning: each server at its best ({record.objective}; "
        f"{record.spent_s:.0f} s of {record.budget_s:.0f} s)",
        title_justify="left",
    )
    for column in ("server", "best configuration", "rounds", "req/s per round", "tried"):
        table.add_column(column)
    for server in dict.fromkeys(c.server for c in record.candidates):
        tried = [c for c in record.candidates if c.server == server]
        best = next((c for c in tried if c.outcome == "best"), None)
        table.add_row(
            escape(server),
            escape(best.config) if best else "[red]none scored[/]",
            str(best.rounds) if best else "",
            ", ".join(f"{r:,.0f}" for r in best.rps) if best else "",
            str(len(tried)),
        )
    console.print(table)
    for line in record.skipped:
        console.print(f"[yellow]cut[/] {escape(line)}")
    for server, path in record.files.items():
        console.print(f"{escape(server)}: {escape(path)}")
