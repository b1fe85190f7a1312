"""A scenario file's own shape: every key it may hold, its type, default and meaning.

Validated strictly (an unknown key or a wrong type is refused with the key's path);
djbench.plan.scenarios builds the run's scenarios from it. Each key's `description`
is its documentation: ``python -m djbench.plan.scenario_reference`` writes
docs/reference/scenarios.md from these models (tests/test_docs.py fails when the page
is stale), so a key added here is documented there.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Workload = Literal["trivial", "sync-orm", "async-orm", "sync-io", "async-io", "websocket"]

# One statement of what the query-count middleware does, said wherever it matters
# (this reference, the W001 check's hint, the docs).
QUERY_COUNT = (
    "SQL queries per request, counted by `djbench.middleware.QueryCountMiddleware` on the "
    "verify gate's requests only. A count (`queries = 2`) is pinned: another count fails "
    "the gate, and so does a pinned count when the middleware is not installed (nothing "
    "to compare). A range (`queries = [2, 5]`, what benchinit writes for a count that "
    "varies) is a warning when the count falls outside it, never a failure, and is not "
    "checked without the middleware."
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ExpectKeys(_Strict):
    """`expect`: what a correct answer is; the verify gate checks it on every server
    before anything is timed, and a server that answers otherwise is not measured."""

    status: int = Field(default=200, description="HTTP status", examples=[200])
    content_type: str | None = Field(
        default=None,
        description="the Content-Type's start (a prefix: `text/html` matches "
        "`text/html; charset=utf-8`)",
        examples=["application/json"],
    )
    json_: Literal["object", "list"] | None = Field(
        default=None, alias="json", description="the body is JSON of this kind", examples=["object"]
    )
    keys: list[str] = Field(
        default=[],
        description="keys the JSON object has (of every item, for a list)",
        examples=[["count", "results"]],
    )
    length: int | None = Field(default=None, description="the JSON list's length", examples=[20])
    contains: list[str] = Field(
        default=[],
        description="substrings the body holds (benchinit writes the page's stable `<title>` end)",
        examples=[["<h1>Films</h1>"]],
    )
    not_contains: list[str] = Field(
        default=[], description="substrings the body must not hold", examples=[["Traceback"]]
    )
    queries: (
        int | Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)] | None
    ) = Field(default=None, description=QUERY_COUNT, examples=[2, [2, 5]])


class RequestKeys(_Strict):
    """The keys of one request, shared by a scenario and its checks."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = Field(
        default="GET",
        description="HTTP method; POST, PUT, PATCH and DELETE make the scenario a writer "
        "(`writes`)",
    )
    body: str | dict[str, Any] | list[Any] | None = Field(
        default=None,
        description="the request body: text as given, a table or list sent as compact JSON",
        examples=[{"title": "x"}],
    )
    content_type: str | None = Field(
        default=None,
        description="the body's Content-Type (default `application/json` when a body is given)",
    )
    headers: dict[str, str] = Field(
        default={},
        description="request headers (over the file's `headers`, names compared without case)",
        examples=[{"Accept-Language": "fr"}],
    )
    cookies: dict[str, str] = Field(
        default={}, description="cookies, sent as one Cookie header", examples=[{"theme": "dark"}]
    )
    paths: list[Annotated[str, Field(pattern=r"^/")]] = Field(
        default=[],
        max_length=1000,
        description="requests cycle over these paths (ids, slugs); `path` is verified and "
        "comes first",
        examples=[["/movies/1/", "/movies/2/"]],
    )


class CheckKeys(RequestKeys):
    """`[[scenario.checks]]`: an extra request the verify gate sends (bad input and the
    like) and checks against its own `expect`; never loaded."""

    path: str = Field(pattern=r"^/", description="the URL path, query string included")
    label: str | None = Field(
        default=None, description="its name in the gate's output (default `check N`)"
    )
    expect: ExpectKeys = Field(default=ExpectKeys(), description="what a correct answer is")


class ThresholdKeys(_Strict):
    """`thresholds`: what a team holds a page to, checked on every run; missed only when
    the interval lies beyond it (the file's table is every scenario's, key by key under
    a scenario's own)."""

    p99_ms: float | None = Field(
        default=None, gt=0, description="p99 latency, at most (ms)", examples=[250]
    )
    error_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="share of requests that fail, at most",
        examples=[0.001],
    )
    peak_pss_mib: float | None = Field(
        default=None, gt=0, description="the server's peak PSS, at most (MiB)", examples=[400]
    )
    capacity_per_core: float | None = Field(
        default=None,
        gt=0,
        description="--capacity's req/s per server CPU, at least",
        examples=[150],
    )
    max_slowdown: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="a matrix's (and benchcompare's) threshold for this page: the largest "
        "slowdown accepted before `worse` (a fraction; default --threshold)",
        examples=[0.05],
    )


class ScenarioKeys(RequestKeys):
    """`[[scenario]]`: a page (or a websocket, or a weighted mix of pages) a load driver
    repeats."""

    name: str = Field(min_length=1, description="its name in every table and option")
    path: str | None = Field(
        default=None,
        pattern=r"^/",
        description="the URL path, query string included (required unless `mix`)",
        examples=["/api/movies?page=3"],
    )
    mix: dict[str, Annotated[float, Field(gt=0)]] | None = Field(
        default=None,
        min_length=1,
        description="a weighted mix of the file's plain HTTP scenarios: each request's "
        "page is drawn by weight (seeded); a mix takes its requests from its pages",
        examples=[{"home": 40, "blog": 30}],
    )
    endpoint: str | None = Field(
        default=None,
        description="variants of one endpoint share it, and their answers are compared "
        "(`parity`); default the name",
        examples=["movies"],
    )
    variant: str = Field(
        default="", description="this variant's name (`sync`, `async`)", examples=["async"]
    )
    kind: Literal["http", "websocket"] = Field(default="http", description="what is loaded")
    description: str = Field(default="", description="a sentence shown in `--list` and the guide")
    interfaces: list[Literal["wsgi", "asgi"]] | None = Field(
        default=None,
        description="the servers it runs on (default both; a websocket: `asgi` only)",
        examples=[["asgi"]],
    )
    parity: Literal["body", "shape", "none"] = Field(
        default="body",
        description="how variants of one endpoint must agree: the same JSON less "
        "`parity_ignore`, the same type, keys and length, or not at all",
    )
    parity_ignore: list[str] = Field(
        default=[], description='JSON keys left out of `parity = "body"`', examples=[["now"]]
    )
    checks: list[CheckKeys] = Field(default=[], description="extra requests the gate sends")
    message: str = Field(
        default="djbench", description="websocket: what is sent and must come back"
    )
    ws_mode: Literal["echo", "broadcast"] = Field(
        default="echo",
        description="websocket: each message comes back to its sender, or every member "
        "of the path's room receives it",
    )
    workload: Workload | None = Field(
        default=None,
        description="what the page stands for in the guide (default: inferred from "
        "`kind`, `variant`, the name and path, and `queries`)",
    )
    user: str | None = Field(
        default=None,
        min_length=1,
        description="load it logged in as this user (runbench makes the session)",
        examples=["alice"],
    )
    csrf: bool = Field(
        default=False, description="send a CSRF cookie and the matching X-CSRFToken header"
    )
    writes: bool = Field(
        default=False,
        description="it changes rows (benchinit finds it; POST, PUT, PATCH and DELETE "
        "always do): every server lifetime then starts on a fresh copy of the data",
    )
    expect: ExpectKeys = Field(default=ExpectKeys(), description="what a correct answer is")
    thresholds: ThresholdKeys = Field(
        default=ThresholdKeys(), description="this page's thresholds, key by key over the file's"
    )


class DeploymentKeys(_Strict):
    """`[[deployment]]`: a way the project's site is served today, as its files write it
    (benchinit finds them); runbench starts it as written beside djbench's own."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="its label in tables (`--servers` takes it)",
        examples=["yours-uwsgi"],
    )
    server: str = Field(
        min_length=1,
        description="the registry entry it is measured as (a server `runbench --list` names)",
    )
    command: str = Field(
        min_length=1, description="the command, as written", examples=["uwsgi docker/uwsgi.ini"]
    )
    found_in: str = Field(
        default="", description="where benchinit found it", examples=["Dockerfile CMD"]
    )
    workers: int | None = Field(default=None, ge=1, description="its worker count, where written")
    threads: int | None = Field(
        default=None, ge=1, description="its threads per worker, where written"
    )
    config: str | None = Field(
        default=None, description="the config file it reads, relative to the project"
    )
    changes: list[str] = Field(
        default=[],
        description="what djbench changes to run a file written for a container here, "
        "one line each with its reason",
    )
    keep_alive: bool = Field(
        default=True,
        description="false: it closes every connection after its answer; loaded with a "
        "new connection per request",
    )


class FileKeys(_Strict):
    """The file: TOML, `version = 1`, its scenarios and what they share."""

    version: Literal[1] = Field(description="the file format's version")
    health_path: str = Field(
        default="/",
        pattern=r"^/",
        description="polled until it answers 200 to decide that a server is ready",
        examples=["/health/"],
    )
    profiles: dict[str, list[str]] = Field(
        default={},
        description="the scenarios each profile loads when --scenarios is not given "
        "(`default`, `quick`, `soak`)",
        examples=[{"default": ["home", "blog"], "quick": ["home"]}],
    )
    headers: dict[str, str] = Field(
        default={},
        description="headers every request carries, the readiness probe's too (a "
        "scenario's own win)",
        examples=[{"X-Forwarded-Proto": "https"}],
    )
    thresholds: ThresholdKeys = Field(
        default=ThresholdKeys(), description="every scenario's thresholds, unless it says its own"
    )
    scenario: list[ScenarioKeys] = Field(min_length=1, description="the pages")
    deployment: list[DeploymentKeys] = Field(
        default=[], description="the project's own deployments"
    )
