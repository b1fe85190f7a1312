"""Scenario files: which URLs to load, and what a correct answer is.

A scenario file is TOML (see loadtests/default.toml). It is pure data, parsed and
validated here; a user copies it and points it at their own project's URLs.

A mix is a scenario that is a weighted mix of others (`mix = {home = 40, blog = 30}`).
A team's traffic is a mix, and the mix is where servers differ: a slow page holds a
sync worker while the fast ones queue behind it. A mix's pages are scenarios of the
same file (plain HTTP ones); each is verified as itself, and the load draws every
request's page by weight from a seeded generator (the seed is recorded), so a mix's
realized shares are within sampling error of its weights and a run can be repeated.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from djbench.plan import scenario_errors
from djbench.plan.owncommands import OwnCommand
from djbench.plan.scenario_file import (
    ExpectKeys,
    FileKeys,
    RequestKeys,
    ScenarioKeys,
    ThresholdKeys,
)

SCHEMA_VERSION = 1
Kind = Literal["http", "websocket"]
# What a scenario stands for, for the deployment guide. Given as `workload` in the file,
# or inferred: websocket; sync-orm / async-orm (declares SQL queries); sync-io /
# async-io (path or name mentions sleep); trivial otherwise.
WORKLOADS = ("trivial", "sync-orm", "async-orm", "sync-io", "async-io", "websocket")
Parity = Literal["body", "shape", "none"]


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Expect:
    status: int = 200
    content_type: str | None = None
    json: Literal["object", "list"] | None = None
    keys: tuple[str, ...] = ()  # keys of the object, or of every item of the list
    length: int | None = None  # for a list
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    queries: int | None = None  # pinned: another count fails the gate
    # The steady count's range (benchinit writes it): a count outside is a warning.
    queries_range: tuple[int, int] | None = None

    @property
    def queries_high(self) -> int | None:
        """The most queries the scenario is declared to make (pinned or the range's top)."""
        return self.queries_range[1] if self.queries_range else self.queries


@dataclass(frozen=True)
class Thresholds:
    """What a team holds a pair of this scenario to (None: not held). Checked on every
    run (djbench.verdicts.thresholds): missed only when the interval lies beyond it."""

    p99_ms: float | None = None
    error_rate: float | None = None
    peak_pss_mib: float | None = None
    capacity_per_core: float | None = None  # at least: --capacity's req/s per server CPU
    # A matrix's (and benchcompare's) verdict threshold for this scenario's pairs: the
    # largest change accepted before "worse" (a fraction; default --threshold).
    max_slowdown: float | None = None

    def declared(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Request:
    method: str = "GET"
    path: str = "/"
    body: str | None = None
    content_type: str | None = None
    headers: tuple[tuple[str, str], ...] = ()  # given in the file (cookies folded in)
    paths: tuple[str, ...] = ()  # when given, requests cycle over them (path is the first)
    # Set by runbench for the run (a logged-in session, a CSRF token): not part of the
    # definition, so not in the fingerprint.
    session_headers: tuple[tuple[str, str], ...] = ()

    def all_headers(self) -> tuple[tuple[str, str], ...]:
        """Given and session headers; several Cookie headers joined into one."""
        merged = self.headers + self.session_headers
        cookies = [v for k, v in merged if k.lower() == "cookie"]
        rest = tuple((k, v) for k, v in merged if k.lower() != "cookie")
        return rest + ((("Cookie", "; ".join(cookies)),) if cookies else ())

    def path_list(self) -> tuple[str, ...]:
        return self.paths or (self.path,)


@dataclass(frozen=True)
class Check:
    """An extra request the verify gate sends (bad input and the like); never loaded."""

    label: str
    request: Request
    expect: Expect


# Keys that describe one request: a mix's requests are its pages'.
NOT_FOR_A_MIX = (
    "path", "paths", "method", "body", "content_type", "headers", "cookies", "expect",
    "checks", "user", "csrf", "message", "ws_mode", "parity", "parity_ignore",
)  # fmt: skip
# The seed of a run's page draws when none is given (recorded in every trial's result).
MIX_SEED = 20261204


@dataclass(frozen=True)
class MixPart:
    """One page of a mix: a scenario of the file and its weight."""

    name: str
    weight: float
    scenario: Scenario

    def share(self, parts: tuple[MixPart, ...]) -> float:
        return self.weight / sum(p.weight for p in parts)


@dataclass(frozen=True)
class Scenario:
    name: str
    endpoint: str  # variants of one endpoint share it (parity is checked between them)
    variant: str
    kind: Kind
    request: Request
    expect: Expect
    description: str = ""
    interfaces: tuple[str, ...] = ("wsgi", "asgi")
    parity: Parity = "body"
    parity_ignore: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    message: str = "djbench"  # websocket: what is sent and must come back
    # websocket: "echo" (each message comes back to its sender) or "broadcast" (every
    # member of the path's room receives every message; see drivers/wsload.py)
    ws_mode: str = "echo"
    workload: str = "trivial"
    user: str | None = None  # load it logged in as this user (a session made by runbench)
    csrf: bool = False  # send a CSRF cookie and the matching X-CSRFToken header
    # It changes rows (a POST, or a GET an endpoint's clients call that records them):
    # the run's own load changes the data under every page (djbench.run.datareset).
    writes: bool = False
    # Not part of the definition: a threshold changes what is asked, not what is measured.
    thresholds: Thresholds = Thresholds()
    # A weighted mix of other scenarios (`mix = {home = 40, ...}`, below):
    # each request's page is drawn by weight. `request` and `expect` are then the
    # heaviest page's (what a single-request check such as the pilot reads).
    mix: tuple[MixPart, ...] = ()

    def fingerprint(self) -> str:
        """Changes whenever the definition does: results are comparable only when equal.

        Fields added after the first release are left out while they hold their default,
        so that older scenarios keep their fingerprints.
        """
        data = asdict(self)
        data.pop("thresholds")
        data.pop("mix")
        if self.mix:
            data["mix"] = [[p.name, p.weight, p.scenario.fingerprint()] for p in self.mix]
        if data["expect"]["queries_range"] is None:
            data["expect"].pop("queries_range")
        for request in [data["request"], *(c["request"] for c in data["checks"])]:
            request.pop("session_headers")
            for key in ("headers", "paths"):
                if not request[key]:
                    request.pop(key)
        for key, default in (("user", None), ("csrf", False), ("ws_mode", "echo"),
                             ("writes", False)):  # fmt: skip
            if data[key] == default:
                data.pop(key)
        text = json.dumps(data, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ScenarioFile:
    path: Path
    health_path: str
    scenarios: tuple[Scenario, ...] = field(default_factory=tuple)
    # Scenario names each runbench profile loads by default ("default", "quick").
    profiles: dict[str, list[str]] = field(default_factory=dict)
    # Headers every request of the file carries (a scenario's own win), the readiness
    # probe's too: e.g. the header the settings trust to say a request came over HTTPS.
    headers: tuple[tuple[str, str], ...] = ()
    # The project's own server commands ([[deployment]], djbench.plan.owncommands).
    deployments: tuple[OwnCommand, ...] = ()

    def names(self) -> list[str]:
        return [s.name for s in self.scenarios]

    def select(self, names: list[str] | None) -> list[Scenario]:
        if not names:
            return list(self.scenarios)
        known = {s.name: s for s in self.scenarios}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise KeyError(", ".join(unknown))
        return [known[n] for n in names]


def _request(raw: RequestKeys, path: str, common: dict[str, str] | None = None) -> Request:
    """A request of the file to `path`, the file-wide `headers` under its own (names
    compared without case)."""
    body = raw.body
    if body is not None and not isinstance(body, str):
        body = json.dumps(body, separators=(",", ":"))
    content_type = raw.content_type or ("application/json" if body is not None else None)
    own = {k.lower() for k in raw.headers}
    headers = [(k, v) for k, v in (common or {}).items() if k.lower() not in own]
    headers += list(raw.headers.items())
    if raw.cookies:
        headers.append(("Cookie", "; ".join(f"{k}={v}" for k, v in raw.cookies.items())))
    paths = tuple(dict.fromkeys([path, *raw.paths])) if raw.paths else ()
    return Request(
        method=raw.method,
        path=path,
        body=body,
        content_type=content_type,
        headers=tuple(headers),
        paths=paths,
    )


def _expect(raw: ExpectKeys) -> Expect:
    pinned = raw.queries if isinstance(raw.queries, int) else None
    span = None
    if isinstance(raw.queries, list):
        low, high = sorted(raw.queries)
        span = (low, high)
    return Expect(
        status=raw.status,
        content_type=raw.content_type,
        json=raw.json_,
        keys=tuple(raw.keys),
        length=raw.length,
        contains=tuple(raw.contains),
        not_contains=tuple(raw.not_contains),
        queries=pinned,
        queries_range=span,
    )


def _thresholds(default: ThresholdKeys, own: ThresholdKeys) -> Thresholds:
    """The file's [thresholds], each key overridden by the scenario's own."""
    given = {**default.model_dump(exclude_none=True), **own.model_dump(exclude_none=True)}
    return Thresholds(**given)


def _scenario(
    raw: ScenarioKeys, default: ThresholdKeys, common: dict[str, str] | None = None
) -> Scenario:
    checks = tuple(
        Check(
            label=c.label or f"check {i + 1}",
            request=_request(c, c.path, common),
            expect=_expect(c.expect),
        )
        for i, c in enumerate(raw.checks)
    )
    interfaces = raw.interfaces or (["asgi"] if raw.kind == "websocket" else ["wsgi", "asgi"])
    return Scenario(
        name=raw.name,
        endpoint=raw.endpoint or raw.name,
        variant=raw.variant,
        kind=raw.kind,
        request=_request(raw, raw.path or "/", common),
        expect=_expect(raw.expect),
        description=raw.description,
        interfaces=tuple(interfaces),
        parity=raw.parity,
        parity_ignore=tuple(raw.parity_ignore),
        checks=checks,
        message=raw.message,
        ws_mode=raw.ws_mode,
        workload=raw.workload or _infer_workload(raw),
        user=raw.user,
        csrf=raw.csrf,
        writes=raw.writes or raw.method in ("POST", "PUT", "PATCH", "DELETE"),
        thresholds=_thresholds(default, raw.thresholds),
    )


def _infer_workload(raw: ScenarioKeys) -> str:
    if raw.kind == "websocket":
        return "websocket"
    variant = "async" if raw.variant.startswith("async") else "sync"
    text = f"{raw.name} {raw.path}".lower()
    if "sleep" in text:
        return f"{variant}-io"
    queries = raw.expect.queries
    if queries if isinstance(queries, int) or queries is None else max(queries):
        return f"{variant}-orm"
    return "trivial"


def _scenarios(path: Path, raw: FileKeys) -> tuple[Scenario, ...]:
    """The file's scenarios in its order, mixes built from the others."""
    plain: dict[str, Scenario] = {}
    for index, item in enumerate(raw.scenario):
        where = f"{path}: scenario #{index + 1} ({item.name!r})"
        if item.mix is None and item.path is None:
            raise ScenarioError(f"{where}: path: required key is missing (or a mix = {{...}})")
        if item.mix is None:
            plain.setdefault(item.name, _scenario(item, raw.thresholds, raw.headers))
    built = []
    for index, item in enumerate(raw.scenario):
        if item.mix is None:
            built.append(_scenario(item, raw.thresholds, raw.headers))
            continue
        where = f"{path}: scenario #{index + 1} ({item.name!r})"
        try:
            built.append(_mix(item, plain, _thresholds(raw.thresholds, item.thresholds)))
        except ValueError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
    return tuple(built)


def load(path: Path) -> ScenarioFile:
    """A scenario file, validated; ScenarioError names the file, scenario and key path."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {path} does not exist") from None
    except IsADirectoryError:
        raise ScenarioError(f"scenario file {path} is a folder") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path} is not a text file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path} is not valid TOML: {exc}") from None
    try:
        raw = FileKeys.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ScenarioError(f"{path}: {scenario_errors.problem(errors[0], data)}{more}") from None
    scenarios = _scenarios(path, raw)
    names = [s.name for s in scenarios]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ScenarioError(f"{path}: duplicate scenario name(s) {', '.join(duplicates)}")
    for profile, members in raw.profiles.items():
        unknown = [n for n in members if n not in names]
        if unknown:
            raise ScenarioError(f"{path}: profiles.{profile} names unknown {', '.join(unknown)}")
    return ScenarioFile(
        path=path,
        health_path=raw.health_path,
        scenarios=scenarios,
        profiles=dict(raw.profiles),
        headers=tuple(raw.headers.items()),
        deployments=tuple(
            OwnCommand(**{**d.model_dump(), "changes": tuple(d.changes)}) for d in raw.deployment
        ),
    )


# --- mixes: a scenario that is a weighted mix of others (`mix = {home = 40, blog = 30}`)


def _mix(raw: ScenarioKeys, known: dict[str, Scenario], thresholds: Thresholds) -> Scenario:
    """The mix `raw` declares, its pages taken from `known` (the file's plain scenarios);
    ValueError says what is wrong in one sentence."""
    assert raw.mix is not None
    given = sorted(raw.model_fields_set & set(NOT_FOR_A_MIX))
    if given:
        raise ValueError(
            f"a mix takes its requests from its pages: {', '.join(given)} belong(s) on them"
        )
    if raw.kind != "http":
        raise ValueError("a mix is of HTTP pages (kind = 'http')")
    unknown = [n for n in raw.mix if n not in known]
    if unknown:
        raise ValueError(
            f"mix names {', '.join(unknown)}, which is not a plain HTTP scenario of this "
            "file (a mix's pages are scenarios with a path, not websockets or other mixes)"
        )
    if any(known[n].kind != "http" for n in raw.mix):
        raise ValueError("a mix's pages are HTTP scenarios, not websockets")
    parts = tuple(MixPart(name, float(w), known[name]) for name, w in raw.mix.items())
    interfaces = tuple(
        i for i in ("wsgi", "asgi") if all(i in p.scenario.interfaces for p in parts)
    )
    if raw.interfaces:
        interfaces = tuple(i for i in interfaces if i in raw.interfaces)
    if not interfaces:
        raise ValueError("its pages share no interface (one is WSGI-only, another ASGI-only)")
    heaviest = max(parts, key=lambda p: p.weight).scenario
    return Scenario(
        name=raw.name,
        endpoint=raw.endpoint or raw.name,
        variant=raw.variant,
        kind="http",
        request=heaviest.request,
        expect=heaviest.expect,
        description=raw.description or describe_mix(parts),
        interfaces=interfaces,
        parity="none",
        workload=raw.workload or mix_workload(parts),
        thresholds=thresholds,
        mix=parts,
    )


def mix_workload(parts: tuple[MixPart, ...]) -> str:
    """What the mix mostly is, by weight (for the guide's grouping)."""
    weights: dict[str, float] = {}
    for part in parts:
        weights[part.scenario.workload] = weights.get(part.scenario.workload, 0) + part.weight
    return max(weights, key=lambda w: weights[w])


def describe_mix(parts: tuple[MixPart, ...]) -> str:
    """'home 40%, blog-post 30%, search 30%'."""
    return ", ".join(f"{p.name} {p.share(parts):.0%}" for p in parts)


def mix_weights(scenario: Scenario) -> dict[str, float] | None:
    """The mix's weights as written (None: not a mix)."""
    return {p.name: p.weight for p in scenario.mix} or None
