"""The verify gate: check every scenario against a live server before anything is timed.

Each (server, scenario) pair ends as ``ok``, ``incompatible`` (a documented reason why
this server cannot serve this scenario) or ``failed`` (a wrong answer). Only ``ok``
pairs are ever loaded and ranked.
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from typing import Any

from djbench.launch.live import Target
from djbench.measure.h2probe import spoken
from djbench.plan.scenarios import Expect, Request, Scenario
from djbench.querycount import RESPONSE_HEADER
from djbench.results.model import Notice, Verification, VerifyStatus

TIMEOUT = 30.0

# Known ways a server cannot run a scenario, recognised in the server's log (or the
# body) when a check fails: text to look for -> the reason's code (words in
# djbench.reports.words). Each is a fact about the server, not a bug in the app.
SIGNATURES: dict[str, str] = {"SynchronousOnlyOperation": "sync_only_operation"}


def _n(code: str, **params: Any) -> Notice:
    return Notice(code=code, params=params)


@dataclass
class GateVerdict:
    status: VerifyStatus
    reason: Notice | None = None
    shape: str = ""  # a summary of the verified answer, for before/after comparisons
    warnings: tuple[Notice, ...] = ()  # right, with something to say (a query count)

    def record(self) -> Verification:
        return Verification(
            status=self.status, reason=self.reason, shape=self.shape, warnings=list(self.warnings)
        )


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes
    queries: int | None
    error: str = ""

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def connection(target: Target) -> http.client.HTTPConnection:
    """Plain, or TLS checked against the proxy's own CA (--proxy caddy-tls)."""
    if target.scheme == "https":
        context = ssl.create_default_context(cafile=str(target.cafile) if target.cafile else None)
        return http.client.HTTPSConnection(
            target.host, target.port, timeout=TIMEOUT, context=context
        )
    return http.client.HTTPConnection(target.host, target.port, timeout=TIMEOUT)


def send(
    target: Target, request: Request, count_queries: bool = True, path: str | None = None
) -> Answer:
    conn = connection(target)
    headers = {"Connection": "close"}
    if count_queries:
        headers["X-Djbench-Count-Queries"] = "1"
    if request.content_type:
        headers["Content-Type"] = request.content_type
    headers.update(request.all_headers())
    try:
        conn.request(request.method, path or request.path, body=request.body, headers=headers)
        response = conn.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException) as exc:
        return Answer(0, "", b"", None, error=f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
    counted = response.getheader(RESPONSE_HEADER)
    return Answer(
        status=response.status,
        content_type=response.getheader("Content-Type", ""),
        body=body,
        queries=int(counted) if counted is not None and counted.isdigit() else None,
    )


def problems(expect: Expect, answer: Answer) -> list[Notice]:
    """Everything wrong with an answer, as notices (empty when it is right)."""
    if answer.error:
        return [_n("transport", error=answer.error)]
    found: list[Notice] = []
    if answer.status != expect.status:
        found.append(_n("status", got=answer.status, expected=expect.status))
        return found  # the rest would only repeat it
    if not answer.body and expect.status != 204:
        found.append(_n("empty_body"))
    if expect.content_type and not answer.content_type.startswith(expect.content_type):
        found.append(_n("content_type", got=answer.content_type, expected=expect.content_type))
    text = answer.text()
    found += [_n("body_lacks", text=s) for s in expect.contains if s not in text]
    found += [_n("body_contains", text=s) for s in expect.not_contains if s in text]
    if expect.json:
        found += _json_problems(expect, answer.body)
    if expect.queries is not None:
        if answer.queries is None:
            found.append(_n("no_query_count"))
        elif answer.queries != expect.queries:
            found.append(_n("query_count", got=answer.queries, expected=expect.queries))
    return found


def query_warning(expect: Expect, answer: Answer, path: str) -> Notice | None:
    """A count outside the steady range benchinit measured: said, never failed (warm
    caches and what ran before move it: 43 or 52 queries on one Wagtail page)."""
    if expect.queries_range is None or answer.queries is None:
        return None
    low, high = expect.queries_range
    if low <= answer.queries <= high:
        return None
    return _n("query_range", got=answer.queries, low=low, high=high, path=path)


def _json_problems(expect: Expect, body: bytes) -> list[Notice]:
    try:
        data = json.loads(body)
    except ValueError:
        return [_n("not_json")]
    if expect.json == "object":
        if not isinstance(data, dict):
            return [_n("json_type", got=type(data).__name__, expected="an object")]
        missing = [k for k in expect.keys if k not in data]
        return [_n("json_lacks", keys=missing)] if missing else []
    if not isinstance(data, list):
        return [_n("json_type", got=type(data).__name__, expected="a list")]
    found = []
    if expect.length is not None and len(data) != expect.length:
        found.append(_n("list_length", got=len(data), expected=expect.length))
    bad = [
        i
        for i, item in enumerate(data)
        if not isinstance(item, dict) or any(k not in item for k in expect.keys)
    ]
    if expect.keys and bad:
        found.append(_n("item_lacks", index=bad[0], keys=list(expect.keys)))
    return found


def shape_of(answer: Answer) -> str:
    """Status, media type and JSON structure (keys, not values) of an answer."""
    media = answer.content_type.split(";")[0].strip()
    try:
        data = json.loads(answer.body) if media == "application/json" else None
    except ValueError:
        data = None
    return f"{answer.status} {media} {_structure(data)}".strip()


def _structure(data: Any) -> str:
    if isinstance(data, dict):
        return "{" + ",".join(f"{k}:{_structure(v)}" for k, v in sorted(data.items())) + "}"
    if isinstance(data, list):
        return "[" + (_structure(data[0]) if data else "") + "]"
    return "" if data is None else type(data).__name__


def _strip(data: Any, ignore: tuple[str, ...]) -> Any:
    if isinstance(data, dict):
        return {k: _strip(v, ignore) for k, v in data.items() if k not in ignore}
    if isinstance(data, list):
        return [_strip(v, ignore) for v in data]
    return data


def _incompatibility(text: str) -> Notice | None:
    for needle, code in SIGNATURES.items():
        if needle in text:
            return _n(code)
    return None


def verify_scenario(target: Target, scenario: Scenario) -> tuple[GateVerdict, Answer | None]:
    if target.interface not in scenario.interfaces:
        return GateVerdict(
            "incompatible",
            _n(
                "needs_interface",
                needs=list(scenario.interfaces),
                has=target.interface,
                websocket=scenario.kind == "websocket",
            ),
        ), None
    refused = protocol_refusal(target, scenario)
    if refused is not None:
        return GateVerdict("incompatible", refused), None
    if scenario.kind == "websocket":
        if not target.websocket:
            return GateVerdict("incompatible", _n("no_websocket")), None
        return _verify_websocket(target, scenario), None

    if scenario.mix:
        return _verify_mix(target, scenario)
    mark = target.log_size()
    if not target.alive():
        # An orphaned worker may still answer after its master died: the deployment is
        # broken all the same, and an answer from it proves nothing.
        gone = _n("transport", error="the server's main process has exited")
        return GateVerdict("failed", _n("died_during_verify", problems=[gone])), None
    answer = send(target, scenario.request)
    issues = problems(scenario.expect, answer)
    warned = [query_warning(scenario.expect, answer, scenario.request.path)]
    # Every path a load cycles over must answer correctly too (the first is `answer`).
    for path in scenario.request.path_list()[1:] if not issues else ():
        other = send(target, scenario.request, path=path)
        warned.append(query_warning(scenario.expect, other, path))
        issues += [
            p.model_copy(update={"params": {**p.params, "check": path}})
            for p in problems(scenario.expect, other)
        ]
    for check in scenario.checks if not issues else ():
        check_answer = send(target, check.request)
        issues += [
            p.model_copy(update={"params": {**p.params, "check": check.label}})
            for p in problems(check.expect, check_answer)
        ]
    if not issues:
        notes = tuple(n for n in warned if n is not None)
        return GateVerdict("ok", shape=shape_of(answer), warnings=notes), answer
    if not target.alive():
        return GateVerdict("failed", _n("died_during_verify", problems=issues)), None
    known = _incompatibility(target.log_since(mark) + answer.text())
    if known:
        return GateVerdict("incompatible", known), None
    return GateVerdict("failed", _n("wrong_answer", problems=issues)), None


def _verify_mix(target: Target, scenario: Scenario) -> tuple[GateVerdict, Answer | None]:
    """A mix answers correctly when every one of its pages does (each verified as its
    own scenario); the first that does not is the mix's verdict, named."""
    first: Answer | None = None
    warnings: list[Notice] = []
    for part in scenario.mix:
        verdict, answer = verify_scenario(target, part.scenario)
        if verdict.status != "ok":
            assert verdict.reason is not None
            reason = verdict.reason.model_copy(
                update={"params": {**verdict.reason.params, "page": part.name}}
            )
            return GateVerdict(verdict.status, reason), None
        warnings += verdict.warnings
        first = first or answer
    shape = f"a mix of {len(scenario.mix)} pages"
    return GateVerdict("ok", shape=shape, warnings=tuple(warnings)), first


def protocol_refusal(target: Target, scenario: Scenario) -> Notice | None:
    """What the load cannot speak to this front end for this scenario, said before any
    load (h2 without TLS and h2c over it are refused before the server starts:
    run.variants.driver_refused); and HTTP/2 that the server does not answer."""
    if scenario.kind == "websocket" and (target.scheme == "https" or target.protocol != "h1"):
        return _n("websocket_tls_h2")
    if target.protocol in ("h2", "h2c"):
        # Judged by what the server answers, not by its flags (h2probe).
        cafile = target.cafile if target.scheme == "https" else None
        try:
            got = spoken(target.host, target.port, cafile)
        except OSError as exc:
            got = f"no connection ({exc})"
        if got != target.protocol:
            hint = target.http2_hint
            return _n("protocol_refused", asked="HTTP/2", got=got, by=_PROBE, hint=hint)
    return None


_PROBE = "judged before any load"


def _verify_websocket(target: Target, scenario: Scenario) -> GateVerdict:
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    host = f"[{target.host}]" if ":" in target.host else target.host
    url = f"ws://{host}:{target.port}{scenario.request.path}"
    try:
        with connect(url, open_timeout=10, close_timeout=5) as ws:
            ws.send(scenario.message)
            reply = ws.recv(timeout=10)
    except (OSError, TimeoutError, WebSocketException) as exc:
        return GateVerdict("failed", _n("ws_failed", url=url, error=f"{type(exc).__name__}: {exc}"))
    if reply != scenario.message:
        return GateVerdict("failed", _n("ws_echo", got=str(reply), expected=scenario.message))
    return GateVerdict("ok", shape="websocket echo")


def verify(target: Target, scenarios: list[Scenario]) -> dict[str, GateVerdict]:
    """Verdicts for every scenario, then parity between the variants of each endpoint."""
    verdicts: dict[str, GateVerdict] = {}
    answers: dict[str, Answer] = {}
    for scenario in scenarios:
        verdict, answer = verify_scenario(target, scenario)
        verdicts[scenario.name] = verdict
        if answer is not None:
            answers[scenario.name] = answer
    _check_parity(scenarios, verdicts, answers)
    return verdicts


def _check_parity(
    scenarios: list[Scenario], verdicts: dict[str, GateVerdict], answers: dict[str, Answer]
) -> None:
    reference: dict[str, Scenario] = {}
    for scenario in scenarios:
        if scenario.name not in answers or scenario.parity == "none":
            continue
        first = reference.setdefault(scenario.endpoint, scenario)
        if first is scenario:
            continue
        mismatch = _parity_mismatch(scenario, answers[first.name], answers[scenario.name])
        if mismatch:
            verdicts[scenario.name] = GateVerdict(
                "failed", _n("parity", reference=first.name, problems=[mismatch])
            )


def _parity_mismatch(scenario: Scenario, ref: Answer, other: Answer) -> Notice | None:
    if scenario.parity == "shape":
        a, b = shape_of(ref), shape_of(other)
        return None if a == b else _n("shape_differs", got=b, expected=a)
    try:
        a_data, b_data = json.loads(ref.body), json.loads(other.body)
    except ValueError:
        return None if ref.body == other.body else _n("bodies_differ")
    ignore = scenario.parity_ignore
    return None if _strip(a_data, ignore) == _strip(b_data, ignore) else _n("json_differs")
