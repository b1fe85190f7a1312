"""How a run was made (its plan record, each scenario's facts, the project's own
deployments): re-exported by :mod:`djbench.results.model` (import from there)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from djbench.plan.fitting import Fit
from djbench.results.layout_model import LayoutSweep
from djbench.results.modelbase import Model


class AsgiHops(Model):
    """Thread hops of one request under ASGI (djbench.measure.hops), and their causes."""

    counted: bool
    why: str = ""
    status: int | None = None
    hops: int = 0
    sync_to_async: int = 0
    async_to_sync: int = 0
    causes: dict[str, int] = Field(default_factory=dict, description="what each hop ran")


class ScenarioMeta(Model):
    fingerprint: str
    method: str = "GET"
    path: str = "/"
    kind: str = "http"
    endpoint: str = ""
    workload: str = "trivial"
    queries: int | None = None
    queries_range: list[int] | None = Field(
        default=None, description="the steady [low, high] range benchinit measured"
    )
    variant: str = ""
    asgi_hops: AsgiHops | None = None
    thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="what the scenario file holds its pairs to: p99_ms, error_rate, "
        "peak_pss_mib, capacity_per_core (djbench.verdicts.thresholds), max_slowdown (a "
        "matrix's verdict threshold for its pairs)",
    )
    mix: dict[str, float] | None = Field(
        default=None,
        description="a mix: its pages (scenarios of the file) and their weights; method, "
        "path and queries are then its heaviest page's",
    )


class OwnDeployment(Model):
    """A server command of the project's own files, measured as written (its label is
    `name`; `server` the registry entry it is measured as)."""

    name: str
    server: str
    command: str
    found_in: str = ""
    workers: int | None = None
    threads: int | None = None
    config: str | None = None
    changes: list[str] = Field(
        default_factory=list,
        description="what djbench changed to run a file written for a container from the "
        "project, each with its reason",
    )
    keep_alive: bool = Field(
        default=True,
        description="False: it closes every connection after its answer; loaded with a "
        "new connection per request, as the proxy in front of it does",
    )


class DataRecord(Model):
    """How each server lifetime's data was made the same (djbench.launch.datastate)."""

    method: Literal["unchanged", "copied", "shared"] = Field(
        description="unchanged: no scenario writes; copied: every lifetime started on a "
        "fresh copy of a snapshot of the project's database; shared: no copy could be "
        "made, every deployment met the rows the ones before it wrote"
    )
    vendor: str = ""
    writes: list[str] = Field(default_factory=list, description="the scenarios that write")
    how: str = ""
    why: str = Field(default="", description="shared: why no copy could be made")
    lifetimes: int = Field(default=0, description="copies made: server lifetimes started")


class ConnectCost(Model):
    """A new database connection per request (CONN_MAX_AGE 0, no pool): what one costs
    here, measured as Django opens it (djbench.measure.dbconnect)."""

    vendor: str
    conn_max_age: str = Field(description="as the settings set it")
    median_ms: float
    low_ms: float = Field(description="the median's 95% interval (order statistics)")
    high_ms: float
    samples: int
    where: str | None = Field(default=None, description="the settings line that sets it")
    variable: str | None = Field(
        default=None, description="the environment variable the settings read it from"
    )
    pages: list[str] = Field(
        default_factory=list, description="the scenarios that query: one connect per request"
    )


class PlanRecord(Model):
    """How the run was made: everything a comparison must find equal."""

    options: dict[str, Any] = Field(
        default_factory=dict, description="the run's options, as given (used by --resume)"
    )
    profile: str | None = None
    servers: list[str] = Field(default_factory=list)
    connections: ConnectCost | None = Field(
        default=None, description="the database connection each request opens, measured"
    )
    data: DataRecord | None = Field(
        default=None, description="how every server lifetime's data was made the same"
    )
    own: list[OwnDeployment] = Field(
        default_factory=list,
        description="the project's own server commands measured beside djbench's layouts",
    )
    proxies: list[str] = Field(default_factory=lambda: ["none"])
    scenarios: dict[str, ScenarioMeta] = Field(default_factory=dict)
    scenario_file: str | None = None
    concurrency: list[int] = Field(default_factory=list)
    trials: int | None = None
    duration: float | None = None
    warmup: float | None = None
    driver: str | None = None
    rate: float | None = None
    loop: Literal["open", "closed"] | None = None
    keep_alive: bool = True
    new_connection_every: int | None = Field(
        default=None,
        description="--new-connection-every: the builtin driver opened a new connection "
        "after each connection's this many answers (None: connections kept)",
    )
    workers: int = 1
    threads: int | None = None
    server_cpus: list[int] = Field(default_factory=list)
    driver_cpus: list[int] = Field(default_factory=list)
    pinning: str | None = None
    axes: dict[str, list[str]] = Field(
        default_factory=dict, description="settings axes (--axis): variable -> values"
    )
    observer_cpus: list[int] = Field(
        default_factory=list, description="where runbench itself (sampler, display) ran"
    )
    memory_sampling: str | None = Field(default=None, description="how memory was read")
    worker_recycling_by_requests: bool = False
    max_error_rate: float | None = None
    ws_idle: int = 0
    seed: int | None = None
    order: list[list[str]] = Field(default_factory=list)
    soak_s: float | None = Field(default=None, description="--soak: one window this long")
    recycle: list[str] = Field(default_factory=list, description="--recycle settings")
    budget_s: float | None = Field(default=None, description="--budget: the run's wall time")
    rounds_added: int = Field(default=0, description="--budget: rounds for open rankings")
    still_open: list[str] = Field(
        default_factory=list, description="--budget: rankings no round could decide"
    )
    budget_level: float | None = Field(
        default=None, description="--budget: the nominal level of its last sequential look"
    )
    capacity_slo_ms: float | None = Field(
        default=None, description="--capacity: the p99 target searched for"
    )
    open_deployments: list[str] = Field(
        default_factory=list,
        description="--budget: the deployments in the comparisons still open at the end",
    )
    lifetime_s: float | None = Field(
        default=None,
        description="--budget: a deployment's lifetime in the rounds, measured (seconds)",
    )
    trials_asked: int | None = Field(
        default=None,
        description="--budget: the profile's rounds, when the budget bought fewer at the "
        "fitted windows (the plan reshaped before its first window)",
    )
    budget_cut: list[str] = Field(
        default_factory=list,
        description="--budget: deployments it stopped before their planned rounds",
    )
    raced_out: dict[str, int] = Field(
        default_factory=dict,
        description="--budget: deployments the race stopped measuring after a look within "
        "the planned rounds (the leader shown faster on every page they were ranked on, or "
        "every pair failed), with the rounds they ran; decided at that look, not reopened",
    )
    fit: Fit | None = Field(
        default=None,
        description="the pilot's service times and the connections, window and timeout "
        "the run was fitted to (djbench.plan.fitting); None: the profile's as they are",
    )
    layouts: LayoutSweep | None = Field(
        default=None,
        description="the leading server's worker/thread layouts, one window each after "
        "the rounds (djbench.run.layouts); None: not swept",
    )
