"""Codes to words: the only place where a warning or a reason becomes a sentence.

Results files hold :class:`~djbench.results.model.Notice` objects (a code and its
parameters); console, report, guide and comparison call :func:`say`. A code this
djbench does not know (a file from a newer one) is shown as its code and parameters.

Escaping for the output format is the caller's business: :func:`md_cell` for Markdown
tables, Django's autoescape for HTML (never ``mark_safe`` on run text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from djbench.reports.threshold_words import said as threshold_said
from djbench.results.model import Notice, PairResult, PlanRecord, WsIdle, deployment_label
from djbench.servers import SERVERS


def _list(values: Any) -> str:
    return ", ".join(str(v) for v in values) if isinstance(values, list) else str(values)


def _problems(p: dict[str, Any]) -> str:
    return "; ".join(say(n) for n in p.get("problems") or [])


def _errors(p: dict[str, Any]) -> str:
    errors = p.get("errors") or {}
    return ", ".join(f"{k} {v}" for k, v in errors.items() if v) or "none"


def _span(interval: list[float]) -> str:
    return f"{interval[0]:.2%}-{interval[1]:.2%}"


def _how(p: dict[str, Any]) -> str:
    """How a Little's-law in-flight figure was read (the driver's own count is worded
    by the phrases themselves)."""
    if p.get("source") == "littles_law":
        return "Little's law, allowing for the requests the driver's window end cuts"
    return "Little's law"  # files written before the source was recorded


def _matrix_failed(p: dict[str, Any]) -> str:
    """Why a matrix fails its gate or is incomplete (djbench.verdicts.matrix_verdicts.Failing)."""
    parts = []
    if p["worse"]:
        parts.append(f"{p['worse']} pair(s) got worse")
    if p["shapes_changed"]:
        parts.append(f"{p['shapes_changed']} answer(s) changed shape")
    if p.get("cost_failing"):
        parts.append(
            f"{p['cost_failing']} page(s) costlier, with changed SQL or broken under the cost probe"
        )
    if missed := p["missed"]:
        first = SimpleNamespace(**missed[0])
        parts.append(
            f"{len(missed)} threshold(s) missed ({first.cell} {first.label} "
            f"{first.scenario}: {threshold_said(first)})"
        )
    if (left := p.get("undecided")) is not None:
        said = [f"{left['pairs']} of {left['of']} pair(s) undecided"] if left["pairs"] else []
        said += [f"{left['checks']} threshold(s) too close to call"] if left["checks"] else []
        parts.append(f"{'; '.join(said)} (--on-inconclusive fail)")
    if p["failed_cells"]:
        parts.append(f"cell(s) {', '.join(p['failed_cells'])} could not run")
    if p.get("base_failed"):
        parts.append(f"the base cell {p['base_failed']} did not run: nothing was compared")
    return "; ".join(parts)


def _cause(p: dict[str, Any]) -> str:
    cause = p.get("cause")
    return f"; cause: {say(cause)}" if cause is not None and say(cause) else ""


def _starves(server: str) -> str | None:
    """The server's known reason a view that blocks starves its connections (its
    registry entry's `starves_when_blocked`), or None."""
    spec = SERVERS.get(server)
    return spec.starves_when_blocked if spec is not None else None


def _queued(p: dict[str, Any]) -> str:
    """Why requests time out when nothing is known against the server: the queue."""
    timeout = p.get("timeout_s")
    limit = f"the {timeout:g} s timeout" if timeout else "the request timeout"
    return (
        f"requests waited longer than {limit}: {p['concurrency']} connections queue on a "
        f"layout that serves about {p['layout']} at a time (and no faster than its CPUs); "
        "leave out --concurrency and --duration to have a pilot fit them to the pages, or "
        "give fewer connections"
    )


def _max_connections(p: dict[str, Any]) -> str:
    found = p.get("max_connections")
    if not found:
        return ""
    return (
        f" (this database allows {found}" + ("" if found == 100 else "; the default is 100") + ")"
    )


PHRASES: dict[str, Callable[[dict[str, Any]], str | None]] = {
    # --- warnings on a trial or a pair
    "driver_busy": lambda p: (
        f"load driver used {p['cpu_percent']:.0f}% of "
        + ("its one event loop's core" if p.get("loops", 1) == 1 else f"its {p['loops']} cores")
        + ": the client may be the bottleneck"
    ),
    "late_starts": lambda p: (
        f"{p['share']:.1%} of the requests were sent after their due time (the "
        f"{p['driver']} driver, open loop): the offered rate was not held; give more "
        "connections, or the driver more CPU"
    ),
    "search_http_only": lambda p: "--capacity, --sweep and --churn load HTTP scenarios only",
    "churn_unsupported": lambda p: p["why"],
    "protocol_refused": lambda p: (
        f"asked for {p['asked']}: {p['got']} "
        f"({p.get('by', 'the protocol h2load negotiated')}): it does not serve HTTP/2 this way"
        + (f"; {p['hint']}" if p.get("hint") else "")
    ),
    "locust_worker_busy": lambda p: (
        f"a Locust worker used {p['cpu_percent']:.0f}% of its core (of {p['workers']} "
        f"worker(s)): the client may be the bottleneck; this rate needs about "
        f"{p['needed']} (--locust-workers)"
    ),
    "ramp_in_window": lambda p: (
        f"only {p['running']} of {p['users']} Locust users were running when the window "
        "opened: it measured part of the ramp (give a longer --warmup)"
    ),
    "hung": lambda p: (
        f"{p['count']} request(s) had no answer by the window's close + 2 s (the "
        f"{p['driver']} driver): counted as errors, their age as a latency (a lower bound)"
    ),
    "resent": lambda p: (
        f"the server closed {p['count']} kept connection(s) without saying so (no "
        "`Connection: close`) as a request was sent on them: each was resent on a new "
        f"connection, as browsers do ({p['count']} of {p['requests']} answers paid a "
        "reconnect, counted in their latency)"
    ),
    "client_short": lambda p: (
        f"only {p['in_flight']:.0f} of {p['concurrency']} connections answered during the "
        "window while the load driver was busy (counted by the driver): the client did not "
        "keep the concurrency"
        if p.get("source") == "driver"
        else f"only {p['in_flight']:.1f} of {p['concurrency']} requests in flight on average "
        f"({_how(p)}): the client did not keep the concurrency"
    ),
    "underserved": lambda p: (
        f"the server answered only {p['in_flight']:.0f} of {p['concurrency']} connections "
        "during the window (counted by the load driver); the others waited unserved, and "
        "their waiting is not in the latency percentiles"
        if p.get("source") == "driver"
        else f"the server served about {p['in_flight']:.1f} of {p['concurrency']} connections "
        f"at a time ({_how(p)}); the others waited unserved, and their waiting is not in "
        "the latency percentiles"
    ),
    "window_edge": lambda p: (
        "the driver's window (wrk, h2load) is short for this latency: its end may have "
        f"cut up to "
        f"{p['bound_percent']:.1f}% of the completions (one request per connection); "
        f"--duration {p['duration_s']:g} or --driver builtin (steady-state window) avoid it"
    ),
    "unsettled": lambda p: (
        f"the warm-up's throughput had not settled after {p['seconds']:g} s (last slices: "
        f"{_list(p['slices_rps'])} req/s): the window may still include warm-up effects"
    ),
    "unstable": lambda p: (
        f"unstable: the trials' req/s vary by {p['cv']:.0%} (coefficient of variation over "
        f"{p['n']} trials, above {p['limit']:.0%}): too noisy to rank; run more or longer trials"
    ),
    "steal": lambda p: (
        f"the hypervisor took up to {p['max_percent']:.1f}% of the CPU time during "
        f"{p['trials']} trial(s) (steal): those figures read low"
    ),
    "foreign_cpu": lambda p: (
        f"other processes took up to {p['max_percent']:.0f}% of the server's or the "
        f"driver's CPUs during {p['trials']} trial(s): those figures read low, and another "
        "run's are not comparable with them (compare in one command: --matrix)"
    ),
    # --- why a server or a pair was not run, or not ranked
    "not_installed": lambda p: (
        f'not installed (missing {_list(p["missing"])}): pip install "djbench[{p["extra"]}]"'
    ),
    "lacks_part": lambda p: (
        f"the installed {p['package']} {p['version']} has no {_list(p['missing'])}: it needs "
        f"a {p['package']} release that ships it (djbench does not change a pinned version)"
    ),
    "single_process": lambda p: f"runs one process only; --workers {p['workers']} asked",
    "caddy_missing": lambda p: 'not installed: pip install "djbench[caddy]"',
    "needs_interface": lambda p: (
        f"{'WebSocket' if p.get('websocket') else 'this scenario'} needs an "
        f"{'/'.join(p['needs']).upper()} server; this one is {str(p['has']).upper()}"
    ),
    "no_websocket": lambda p: "the server does not serve WebSocket",
    "driver_refused": lambda p: p["message"],
    "websocket_tls_h2": lambda p: (
        "WebSocket load speaks ws:// over HTTP/1.1 only (no wss://, no HTTP/2 here)"
    ),
    "h2_needs_tls": lambda p: (
        "h2 is HTTP/2 over TLS (by ALPN) and this Caddy has no TLS: ask for --proxy "
        "caddy-tls, or none (the server's own TLS, where it has one)"
    ),
    "no_own_tls": lambda p: f"h2 direct needs the server's own TLS: {p['why']}",
    "no_own_h2c": lambda p: f"h2c direct needs the server's own HTTP/2 in clear: {p['why']}",
    "h2c_is_cleartext": lambda p: (
        "h2c is HTTP/2 in clear; over TLS ask for h2 (Caddy offers HTTP/2 by ALPN only)"
    ),
    "sync_only_operation": lambda p: (
        "Django refused to run the ORM here (SynchronousOnlyOperation): under gevent's "
        "monkey-patching an async view's ORM call runs in an event loop that Django "
        "treats as async context; async ORM views need an ASGI server"
    ),
    "wrong_answer": _problems,
    "died_during_verify": lambda p: "the server died during verification: " + _problems(p),
    "parity": lambda p: f"answers differently from {p['reference']}: {_problems(p)}",
    "server_failed": lambda p: str(p["message"]),
    "settings_refused": lambda p: f"the project's settings refuse {p['variant']}: {p['message']}",
    "recycle_unsupported": lambda p: f"--recycle {p['recycle']}: {p['message']}",
    "server_died": lambda p: (
        f"{p['deployment']} died during the load of {p['scenario']} "
        f"(exit code {p['exit_code']}); see {p['log']}"
    ),
    "too_many_errors": lambda p: (
        f"{p['rate']:.1%} of requests failed ({p['socket_errors']} socket errors: "
        f"{_errors(p)}; {p.get('unexpected_status', p['non_2xx'])} answered with a status "
        f"other than {p.get('expect_status') or '2xx'}) > {p['limit']:.1%}"
        + (f", beyond it (95% interval {_span(p['interval'])})" if p.get("interval") else "")
    ),
    "errors_too_few": lambda p: (
        f"{p['failed']} of {p['attempts']} requests failed: too few requests to judge a "
        f"{p['limit']:.1%} error limit ({p['needed']:,} needed), so the window stands"
    ),
    "errors_close": lambda p: (
        f"{p['rate']:.2%} of {p['attempts']:,} requests failed: above the {p['limit']:.1%} "
        f"limit but not beyond its uncertainty (95% interval {_span(p['interval'])}), so "
        "the window stands"
    ),
    "no_requests": lambda p: "no request completed",
    "driver_failed": lambda p: str(p["message"]),
    "ws_failed": lambda p: f"WebSocket {p['url']}: {p['error']}",
    "ws_echo": lambda p: f"WebSocket echoed {p['got']!r}, expected {p['expected']!r}",
    # --- what was wrong with one answer (inside wrong_answer / parity)
    "transport": lambda p: str(p["error"]),
    "status": lambda p: f"status {p['got']}, expected {p['expected']}",
    "empty_body": lambda p: "empty body",
    "content_type": lambda p: f"content type {p['got']!r}, expected {p['expected']}",
    "body_lacks": lambda p: f"body lacks {p['text']!r}",
    "body_contains": lambda p: f"body contains {p['text']!r}",
    "not_json": lambda p: "body is not JSON",
    "json_type": lambda p: f"JSON {p['got']}, expected {p['expected']}",
    "json_lacks": lambda p: f"JSON object lacks {_list(p['keys'])}",
    "list_length": lambda p: f"list of {p['got']}, expected {p['expected']}",
    "item_lacks": lambda p: f"item {p['index']} lacks {_list(p['keys'])}",
    "no_query_count": lambda p: (
        "no query count (is djbench.middleware.QueryCountMiddleware installed?)"
    ),
    "query_count": lambda p: f"{p['got']} SQL queries, expected {p['expected']}",
    "query_range": lambda p: (
        f"{p['path']}: {p['got']} SQL queries, outside the steady {p['low']}-{p['high']} "
        "benchinit measured (a warning: caches and what ran before move it)"
    ),
    "shape_differs": lambda p: f"shape {p['got']} vs {p['expected']}",
    "bodies_differ": lambda p: "bodies differ",
    "json_differs": lambda p: "JSON bodies differ",
    # --- what the engine says beside a decision (djbench.verdicts.engine)
    "too_few": lambda p: "too few rounds or trials to test",
    "no_alpha_left": lambda p: "no alpha left at this look",
    "detectable": lambda p: (
        f"a change of about ±{p['change']:.0%} would have been found with 80% power"
    ),
    "correlated_rounds": lambda p: (
        f"rounds may be correlated (lag-1 up to {p['lag1']:+.2f}): interval widened "
        f"x{p['widening']:.2f}"
    ),
    "drifting": lambda p: (
        f"drifting: the ratio is {'rising' if p['rising'] else 'falling'} over the rounds "
        f"(Mann-Kendall p={p['p']:.2g})"
    ),
    # --- why a pair of a comparison has its verdict (djbench.verdicts.compare, comparable)
    "not_in_new": lambda p: "not in NEW",
    "not_in_base": lambda p: "not in BASE",
    "different_settings": lambda p: "different run settings",
    "scenario_changed": lambda p: "the scenario's definition changed",
    "all_lost_to_driver": lambda p: f"every trial in {p['side']} was lost to the load driver",
    "now_failing": lambda p: f"was ok, now {p['status']}: {say(p.get('reason'))}",
    "now_ok": lambda p: f"was {p['status']} ({say(p.get('reason'))}), now ok",
    "measured_neither": lambda p: f"not measured: {p['base']} before, {p['new']} now",
    "shape_changed": lambda p: f"the verified answer changed shape: {p['base']} -> {p['new']}",
    "plan_differs": lambda p: f"{p['key']}: {p['base']} vs {p['new']}",
    "machine_moved": lambda p: (
        "the machine moved: other processes took CPU on the server's or driver's cores "
        "during the trials ("
        + ", ".join(f"{side} {v:.0f}%" for side, v in p["shares"].items())
        + ", median trial); compare in one command with --matrix"
    ),
    "set_aside": lambda p: "set aside: the machine moved",
    "timed_set_aside": lambda p: (
        f"{say(p['why'])}; req/s and p99 set aside, "
        f"{', '.join(p['judged']) or 'nothing else'} judged (memory does not depend on the "
        "CPU other work took)"
    ),
    "no_common_pair": lambda p: (
        "the two runs have no pair (server, scenario, concurrency, proxy) in common"
    ),
    "too_few_trials": lambda p: (
        f"no verdict is reachable: some side has {p['low']} valid trial(s) per pair and the "
        f"test needs {p['needed']} per side; rerun with --trials {p['needed']} or more (or "
        "compare in one command with --matrix)"
    ),
    # --- why a job's exit is not 0 (djbench.run.exits)
    "cost_status": lambda p: (
        f"{p['path']} answered {p['got']}, expected {p['expected']} (the probe's log has "
        "the traceback)"
    ),
    "cost_crashed": lambda p: f"the probe ended without an answer; its last lines:\n{p['log']}",
    "cost_timeout": lambda p: f"a segment took more than {p['seconds']:.0f}s under Valgrind",
    "cost_error": lambda p: f"the probe could not be run: {p['error']}",
    "cost_no_dump": lambda p: f"callgrind wrote no count for segment {p['number']}",
    "cost_unsettled": lambda p: (
        f"the {p['side']} count did not settle (consecutive segments differed by more "
        "than the rule): read its segments"
    ),
    "cost_path_length": lambda p: (
        f"the two projects' paths differ in length ({p['base']} and {p['new']} "
        "characters): string sizes, and so a few instructions, follow it"
    ),
    "cost_valgrind": lambda p: f"counted under different Valgrinds: {p['base']} and {p['new']}",
    "cost_failing": lambda p: f"{p['count']} page(s) got costlier or changed their SQL",
    "cost_no_valgrind": lambda p: (
        f"cost not counted: Valgrind is not installed (Debian: apt-get install {p['package']})"
    ),
    "cost_cell_failed": lambda p: f"its cost probe {p['why']}",
    "cost_server_failed": lambda p: f"it did not serve under Valgrind: {p['error']}",
    "cost_mixed": lambda p: (
        "one file is a cost probe (--cost), the other is not: compare like with like"
    ),
    "nothing_measured": lambda p: "nothing was measured: every pair failed or was refused",
    "thresholds": lambda p: (
        f"{p['count']} threshold(s) "
        + ("missed" if p["verdict"] == "missed" else "too close to call (--on-inconclusive fail)")
        + f": {p['first']['label']} {p['first']['scenario']}: "
        + threshold_said(SimpleNamespace(**p["first"]))
    ),
    "gate_failed": lambda p: f"verification failed for {', '.join(p['labels'])} (see above)",
    "matrix_failed": lambda p: _matrix_failed(p),
    # --- why a pair may not be ranked on its scenario (djbench.verdicts.ranking)
    "unfit_status": lambda p: f"{p['status']}: {say(p.get('reason'))}" + _cause(p),
    "unfit_no_valid_trial": lambda p: "no valid trial" + _cause(p),
    "unfit_underserved": lambda p: say(p["warning"]) + _cause(p),
    "unfit_leak": lambda p: f"leaks database connections: {say(p['leak'])}",
    "unfit_on": lambda p: f"on {p['scenario']}: {say(p['why'])}",
    # --- the known cause behind timeouts or connections left waiting
    "cause_remedy": lambda p: str(p["remedy"]),
    "cause_starves": lambda p: _starves(p["server"]),  # None: nothing known to say
    "cause_queued": lambda p: _starves(p["server"]) or _queued(p),
    # --- files written before codes existed (schema 1)
    "legacy": lambda p: str(p["text"]),
    # --- what a pair held (djbench.verdicts.held)
    "db_kept_after": lambda p: (
        f"kept {p['after']} database connection(s) after the load stopped (up to "
        f"{p['peak']} during it) where its layout explains {p['explained']}: connections "
        f"of threads nobody reuses; at {p['production_workers']} workers that is about "
        f"{p['projected']}" + _max_connections(p)
    ),
    "db_over_layout": lambda p: (
        f"opened up to {p['peak']} database connection(s) under load (one per request in "
        f"flight; {p['after']} left after it) where its layout explains {p['explained']}; "
        f"at {p['production_workers']} workers with as many requests in flight each, about "
        f"{p['projected']}" + _max_connections(p)
    ),
    "own_unknown": lambda p: (
        f"its [[deployment]] names server {p['server']!r}, not one djbench knows "
        f"(valid: {', '.join(p['valid'])})"
    ),
    "db_leak": lambda p: (
        f"kept {p['kept']} database connection(s) once {p['requests']} requests "
        f"({p['burst']} at a time, {p['scenario']}) had ended, where its layout explains "
        f"{p.get('explained', 1)}: about one per request's thread"
        + (f" (CONN_MAX_AGE={p['conn_max_age']})" if p.get("conn_max_age") else "")
        + f"; this role may open {p['limit']} ({p['open']} open now), so under load it "
        "would run out within seconds" + (f"; remedy: {p['remedy']}" if p.get("remedy") else "")
    ),
    "db_exhausted": lambda p: (
        f"the database refused {p['count']} connection(s): too many clients (its "
        "max_connections was reached)"
    ),
    "threads_grow": lambda p: (
        f"threads rose by {p['least']}-{p['most']} within every one of {p['trials']} "
        "windows (after the warm-up): a thread pool that keeps growing"
    ),
    "threads_grow_soak": lambda p: (
        f"threads grew {p['per_hour']:+,.1f} an hour over the soak (95% "
        f"{p['ci95'][0]:+,.1f} to {p['ci95'][1]:+,.1f})"
    ),
    "fds_grow_soak": lambda p: (
        f"open descriptors grew {p['per_hour']:+,.1f} an hour over the soak (95% "
        f"{p['ci95'][0]:+,.1f} to {p['ci95'][1]:+,.1f})"
    ),
    "fds_grow": lambda p: (
        f"open descriptors rose by {p['least']}-{p['most']} within every one of "
        f"{p['trials']} windows: descriptors that are not closed"
    ),
}


def broadcast_text(rates: tuple[float, float, int]) -> str:
    messages_in, deliveries, members = rates
    return (
        f"broadcast to {members} members: {messages_in:,.0f} messages/s in, "
        f"{deliveries:,.0f} deliveries/s out (the req/s column counts deliveries; latency "
        "is each delivery's fan-out time)"
    )


def pair_name(entry: PairResult) -> str:
    """A pair's server as tables show it: its settings variant (--axis), tuned layout
    (--tune) and recycling (--recycle) included; the proxy has a column of its own. The
    project's own deployment goes by its own name (yours-uwsgi), never its server's."""
    return deployment_label(
        entry.own or entry.server,
        variant=entry.variant.items(),
        config=entry.config,
        recycle=entry.recycle,
    )


def ws_short(idle: WsIdle) -> str | None:
    """The warning for an idle-WebSocket test that opened fewer connections than asked."""
    if idle.opened >= idle.requested:
        return None
    took = f" in {idle.open_seconds:g} s" if idle.open_seconds is not None else ""
    return (
        f"opened {idle.opened:,} of {idle.requested:,} idle WebSocket connections{took}: "
        f"the per-connection memory is over {idle.opened:,}, not the number asked"
    )


def say(notice: Notice | None) -> str:
    """One sentence (or phrase) for a notice; '' for None."""
    if notice is None:
        return ""
    phrase = PHRASES.get(notice.code)
    text: str | None = ""
    if phrase is not None:
        try:
            text = phrase(notice.params)
        except (KeyError, TypeError, ValueError):
            text = ""
        if text is None:  # the phrase knows there is nothing to say
            return ""
    if not text:
        text = f"{notice.code} {notice.params}" if notice.params else notice.code
    check = notice.params.get("check")
    text = f"{check}: {text}" if check else text
    page = notice.params.get("page")  # a mix's page that answered wrong
    return f"page {page}: {text}" if page else text


# What Markdown would take for raw HTML: "<" starting a tag, comment or declaration.
_TAG = re.compile(r"</?[A-Za-z!?][^<>\n]*>?")


def _code_tags(text: str) -> str:
    """Each tag-like run shown as code, never as an HTML entity: a guide read as plain
    text says `<h1>` as the server wrote it, and no renderer takes it for HTML."""
    return _TAG.sub(lambda m: "`" + m.group(0).replace("`", "'") + "`", text)


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell: no row break, no column break, no HTML."""
    flat = text.replace("\r", " ").replace("\n", " ")
    return _code_tags(flat.replace("\\", "\\\\").replace("|", "\\|"))


def md_text(text: str) -> str:
    """Run text inside Markdown prose (not a table): raw HTML shown as code."""
    return _code_tags(text)


def budget_text(plan: PlanRecord) -> str:
    """What --budget bought: rounds added for open rankings, what stayed open, and what
    it cut when it ran out before the planned rounds were done."""
    added, still = plan.rounds_added, plan.still_open
    head = f"budget {plan.budget_s or 0:.0f} s: {added} round(s) added for rankings still open"
    if plan.budget_cut:
        head = (
            f"budget {plan.budget_s or 0:.0f} s spent before the planned rounds were done "
            f"(fewer trials for {', '.join(plan.budget_cut[:5])}"
            + (f" and {len(plan.budget_cut) - 5} more" if len(plan.budget_cut) > 5 else "")
            + "): give --budget more time or run fewer servers"
        )
    if not still:
        return head + "; every neighbour in every ranking is decided"
    shown = "; ".join(still[:5]) + (f"; and {len(still) - 5} more" if len(still) > 5 else "")
    level = f" (at {plan.budget_level:.2g})" if plan.budget_level is not None else ""
    return f"{head}; {len(still)} comparison(s) with a leader still open{level}: {shown}"


# A warning many pairs share, said once: its sentence, and each pair's own figure.
GROUPED: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "unstable": (
        "unstable (trials' req/s vary by more than 10%): too noisy to rank; run more rounds",
        lambda p: f"{p['cv']:.0%}",
    ),
    "foreign_cpu": (
        "other processes took CPU from the server or the driver: those figures read low; "
        "compare in one command (--matrix)",
        lambda p: f"up to {p['max_percent']:.0f}%",
    ),
    "unsettled": (
        "the warm-up's throughput had not settled: the window may still include warm-up effects",
        lambda p: f"after {p['seconds']:.1f} s",
    ),
    "steal": (
        "the hypervisor took CPU time (steal): those figures read low",
        lambda p: f"up to {p['max_percent']:.1f}%",
    ),
}


def grouped_warnings(found: list[tuple[str, Notice]]) -> list[str]:
    """One line per kind of warning: "(who, figure), ..." after its sentence; a warning
    of one pair, or of no known kind, in its own words."""
    by_code: dict[str, list[tuple[str, Notice]]] = {}
    for who, notice in found:
        by_code.setdefault(notice.code, []).append((who, notice))
    lines = []
    for code, items in by_code.items():
        if code in GROUPED and len(items) > 1:
            sentence, figure = GROUPED[code]
            who = ", ".join(f"{name} {figure(n.params)}" for name, n in items)
            lines.append(f"{sentence}: {who}")
        else:
            lines += [f"{name}: {say(n)}" for name, n in items]
    return lines
