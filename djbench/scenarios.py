"""Scenario files: which URLs to load, and what a correct answer is.

A scenario file is TOML (see loadtests/default.toml). It is pure data, parsed and
validated here; a user copies it and points it at their own project's URLs.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

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
    queries: int | None = None


@dataclass(frozen=True)
class Request:
    method: str = "GET"
    path: str = "/"
    body: str | None = None
    content_type: str | None = None


@dataclass(frozen=True)
class Check:
    """An extra request the verify gate sends (bad input and the like); never loaded."""

    label: str
    request: Request
    expect: Expect


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
    workload: str = "trivial"

    def fingerprint(self) -> str:
        """Changes whenever the definition does: results are comparable only when equal."""
        data = json.dumps(asdict(self), sort_keys=True, default=str)
        return hashlib.sha256(data.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ScenarioFile:
    path: Path
    health_path: str
    scenarios: tuple[Scenario, ...] = field(default_factory=tuple)
    # Scenario names each runbench profile loads by default ("default", "quick").
    profiles: dict[str, list[str]] = field(default_factory=dict)

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


def _request(raw: dict[str, Any], where: str) -> Request:
    body = raw.get("body")
    if body is not None and not isinstance(body, str):
        body = json.dumps(body, separators=(",", ":"))
    path = raw.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ScenarioError(f"{where}: 'path' must be a string starting with '/'")
    method = str(raw.get("method", "GET")).upper()
    content_type = raw.get("content_type") or ("application/json" if body is not None else None)
    return Request(method=method, path=path, body=body, content_type=content_type)


_EXPECT_FIELDS = {f for f in Expect.__dataclass_fields__}


def _expect(raw: dict[str, Any] | None, where: str) -> Expect:
    raw = dict(raw or {})
    unknown = set(raw) - _EXPECT_FIELDS
    if unknown:
        raise ScenarioError(f"{where}.expect: unknown field(s) {', '.join(sorted(unknown))}")
    for key in ("keys", "contains", "not_contains"):
        if key in raw:
            raw[key] = tuple(raw[key])
    if raw.get("json") not in (None, "object", "list"):
        raise ScenarioError(f"{where}.expect.json must be 'object' or 'list'")
    return Expect(**raw)


def _scenario(raw: dict[str, Any], index: int, source: Path) -> Scenario:
    where = f"{source}: scenario #{index + 1}"
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}: 'name' is required")
    where = f"{source}: scenario {name!r}"
    kind = raw.get("kind", "http")
    if kind not in ("http", "websocket"):
        raise ScenarioError(f"{where}: 'kind' must be 'http' or 'websocket'")
    parity = raw.get("parity", "body")
    if parity not in ("body", "shape", "none"):
        raise ScenarioError(f"{where}: 'parity' must be 'body', 'shape' or 'none'")
    interfaces = tuple(raw.get("interfaces", ["asgi"] if kind == "websocket" else ["wsgi", "asgi"]))
    checks = tuple(
        Check(
            label=str(c.get("label", f"check {i + 1}")),
            request=_request(c, f"{where}.checks[{i}]"),
            expect=_expect(c.get("expect"), f"{where}.checks[{i}]"),
        )
        for i, c in enumerate(raw.get("checks", []))
    )
    workload = str(raw.get("workload") or _infer_workload(raw, kind))
    if workload not in WORKLOADS:
        raise ScenarioError(f"{where}: 'workload' must be one of {', '.join(WORKLOADS)}")
    try:
        return Scenario(
            name=name,
            endpoint=str(raw.get("endpoint", name)),
            variant=str(raw.get("variant", "")),
            kind=kind,
            request=_request(raw, where),
            expect=_expect(raw.get("expect"), where),
            description=str(raw.get("description", "")),
            interfaces=interfaces,
            parity=parity,
            parity_ignore=tuple(raw.get("parity_ignore", ())),
            checks=checks,
            message=str(raw.get("message", "djbench")),
            workload=workload,
        )
    except TypeError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def _infer_workload(raw: dict[str, Any], kind: str) -> str:
    if kind == "websocket":
        return "websocket"
    variant = "async" if str(raw.get("variant", "")).startswith("async") else "sync"
    text = f"{raw.get('name', '')} {raw.get('path', '')}".lower()
    if "sleep" in text:
        return f"{variant}-io"
    if (raw.get("expect") or {}).get("queries"):
        return f"{variant}-orm"
    return "trivial"


def load(path: Path) -> ScenarioFile:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path} is not valid TOML: {exc}") from None
    version = data.get("version")
    if version != SCHEMA_VERSION:
        raise ScenarioError(f"{path}: version must be {SCHEMA_VERSION}, got {version!r}")
    raw_scenarios = data.get("scenario", [])
    if not raw_scenarios:
        raise ScenarioError(f"{path}: no [[scenario]] defined")
    scenarios = tuple(_scenario(raw, i, path) for i, raw in enumerate(raw_scenarios))
    names = [s.name for s in scenarios]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ScenarioError(f"{path}: duplicate scenario name(s) {', '.join(duplicates)}")
    health = data.get("health_path", "/")
    profiles = {str(k): [str(n) for n in v] for k, v in data.get("profiles", {}).items()}
    for profile, members in profiles.items():
        unknown = [n for n in members if n not in names]
        if unknown:
            raise ScenarioError(f"{path}: profiles.{profile} names unknown {', '.join(unknown)}")
    return ScenarioFile(path=path, health_path=str(health), scenarios=scenarios, profiles=profiles)
