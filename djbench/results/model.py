"""The results model: the only way a results file is built, written and read.

One versioned JSON document per run. pydantic v2 was chosen over dataclasses and
msgspec because django-ninja (which djbench's sample project uses) already brings it,
its validation errors carry the path of the offending key (the same machinery
validates scenario files), and it generates the JSON Schema that is published in
``djbench/results/results.schema.json`` (``python -m djbench.results.schema`` writes
it; the suite checks that the committed file is current and that a real run's file
validates against it with a standard validator).

Import every class from here: the base (``modelbase``), the searches' results
(``search_model``), the matrix document (``matrix_model``), how a run was made
(``plan_model``) and its worker-count sweep (``layout_model``) live in their own modules
and are re-exported, so there is still one model and one way in.

Warnings and reasons are :class:`Notice` objects, a code with parameters; only the
presenters (:mod:`djbench.reports.words`) turn them into sentences.

Schema history:
- 1: nested dicts, warnings and reasons as prose (read through
  :mod:`djbench.results.migrate`).
- 2: this model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from djbench.results.cost_model import CostChange as CostChange
from djbench.results.cost_model import CostComparison as CostComparison
from djbench.results.cost_model import CostRecord as CostRecord
from djbench.results.cost_model import CostVerdict as CostVerdict
from djbench.results.cost_model import FunctionChange as FunctionChange
from djbench.results.cost_model import MatrixCost as MatrixCost
from djbench.results.cost_model import PageCost as PageCost
from djbench.results.cost_model import SeedCount as SeedCount
from djbench.results.cost_model import ServerCost as ServerCost
from djbench.results.driver_model import DriverFigures as DriverFigures
from djbench.results.layout_model import LayoutRow as LayoutRow
from djbench.results.layout_model import LayoutSweep as LayoutSweep
from djbench.results.matrix_model import MatrixCell as MatrixCell
from djbench.results.matrix_model import MatrixCheck as MatrixCheck
from djbench.results.matrix_model import MatrixDocument as MatrixDocument
from djbench.results.matrix_model import MatrixMetric as MatrixMetric
from djbench.results.matrix_model import MatrixNoise as MatrixNoise
from djbench.results.matrix_model import MatrixPair as MatrixPair
from djbench.results.matrix_model import MatrixVerdict as MatrixVerdict
from djbench.results.matrix_model import ShapeChange as ShapeChange
from djbench.results.modelbase import Command as Command
from djbench.results.modelbase import Model as Model
from djbench.results.modelbase import Notice as Notice
from djbench.results.plan_model import AsgiHops as AsgiHops
from djbench.results.plan_model import OwnDeployment as OwnDeployment
from djbench.results.plan_model import PlanRecord as PlanRecord
from djbench.results.plan_model import ScenarioMeta as ScenarioMeta
from djbench.results.search_model import Capacity as Capacity
from djbench.results.search_model import CapacityStep as CapacityStep
from djbench.results.search_model import Churn as Churn
from djbench.results.search_model import ChurnEvent as ChurnEvent
from djbench.results.search_model import Sweep as Sweep
from djbench.results.search_model import SweepStep as SweepStep

SCHEMA_VERSION = 3
Status = Literal["ok", "incompatible", "failed", "invalid"]
VerifyStatus = Literal["ok", "incompatible", "failed"]


class Latency(Model):
    """Milliseconds; every key present when the window completed a request."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None
    mean: float | None = None


class PageFigures(Model):
    """One page of a mix over one window: its share of the window's figures (the pages'
    requests and errors sum to the trial's, save open loop's unsent)."""

    name: str
    weight: float = Field(description="as written in the mix")
    requests: int
    rps: float
    errors: int = 0
    unexpected: int = 0
    latency_ms: Latency = Field(default_factory=Latency)


class WindowMemory(Model):
    """Memory (MB) and CPU of a process tree over one timed window."""

    pss_peak: float
    pss_mean: float
    uss_peak: float
    rss_peak: float
    uss_worker_peak: float
    processes: int
    cpu_percent: float
    samples: int = 0
    opened_late_s: float | None = Field(
        default=None, description="how long after the load window opened the first reading was"
    )
    closed_late_s: float | None = Field(
        default=None, description="how long after the load window closed the last reading was"
    )


class ExceptionCount(Model):
    """Exceptions of one type and message raised by the server during a window
    (Django's got_request_exception, in the server's processes: djbench.exceptions)."""

    type: str
    message: str
    count: int


class DbConnections(Model):
    """The server's PostgreSQL connections over a window (pg_stat_activity, matched by
    the application_name runbench gives the server's processes: PGAPPNAME)."""

    application_name: str
    peak: int = Field(description="the most connections seen at one reading in the window")
    states_at_peak: dict[str, int] = Field(
        default_factory=dict, description="active / idle / idle in transaction / ..."
    )
    after: int | None = Field(default=None, description="connections just after the window")
    states_after: dict[str, int] = Field(default_factory=dict)
    readings: int = 0
    max_connections: int | None = Field(default=None, description="the database's setting")
    others_peak: int | None = Field(
        default=None, description="every other client's connections at that reading"
    )
    conn_max_age: float | None = Field(
        default=None, description="the server's CONN_MAX_AGE, as its processes reported it"
    )
    pool_max: int | None = Field(
        default=None, description="the server's pool max_size per process (None: no pool)"
    )


class Resources(Model):
    """What the server's process tree held over one window besides memory (issue 24):
    threads and open descriptors (/proc) at its start, peak and end, its database
    connections, and the exceptions it raised."""

    threads: tuple[int, int, int] = Field(description="start, peak, end (over the tree)")
    fds: tuple[int, int, int] = Field(description="start, peak, end (over the tree)")
    db: DbConnections | None = None
    exceptions: list[ExceptionCount] = Field(
        default_factory=list, description="the commonest, most first"
    )
    exceptions_total: int = 0


class MachineLoad(Model):
    """The machine over one timed window (/proc/stat): steal and how busy CPUs were."""

    steal_percent: float = Field(description="CPU time the hypervisor took, % of all CPUs")
    busy_percent: float | None = None
    server_cpus_busy_percent: float | None = None
    driver_cpus_busy_percent: float | None = None
    server_cpus_foreign_percent: float | None = Field(
        default=None,
        description="the server's CPUs' busy time not spent by the server tree: other work",
    )
    driver_cpus_foreign_percent: float | None = Field(
        default=None, description="the driver's CPUs' busy time not spent by the driver"
    )
    mhz: float | None = Field(default=None, description="mean CPU clock, where shown")


class Warmup(Model):
    """The warm-up a trial actually had before its window."""

    seconds: float
    settled: bool | None = Field(
        default=None, description="throughput settled within tolerance (None: not checked)"
    )
    slices_rps: list[float] = Field(default_factory=list)
    tolerance: float | None = None
    requests: int = 0
    errors: int = 0
    same_process: bool = Field(
        default=True, description="the window followed without a pause in the same driver"
    )


class LoadPoint(Model):
    """One slice of a soak's load (the builtin driver's --series): seconds from the
    window's opening."""

    t: float
    seconds: float
    requests: int
    errors: int = Field(description="socket errors and unexpected statuses")
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None


class MemoryPoint(Model):
    """One full reading of the server tree during a soak (MB; seconds from the opening)."""

    t: float
    pss: float
    uss_worker_max: float
    processes: int
    threads: int | None = Field(default=None, description="over the tree")
    fds: int | None = Field(default=None, description="open descriptors over the tree")


class Restart(Model):
    """A process of the server tree born during the soak: a worker recycled or respawned."""

    t: float = Field(description="its start time, seconds from the window's opening")
    pid: int
    replaced: list[int] = Field(
        default_factory=list, description="processes of the tree gone since the last birth"
    )
    errors_around: int = Field(
        default=0, description="errors in the load slices within one slice of it"
    )
    p99_around_ms: float | None = Field(default=None, description="the worst p99 of those slices")


class Growth(Model):
    """A memory trend over a soak: least squares, its interval widened for the readings'
    autocorrelation; "grows" only when significant and above a threshold."""

    mb_per_hour: float | None = None
    ci95: tuple[float, float] | None = None
    verdict: Literal["grows", "flat", "shrinks", "too_short"] = "too_short"
    blocks: int = Field(default=0, description="older files: the block means fitted (0 now)")
    effective_n: float | None = Field(
        default=None, description="the readings' worth in independent ones (lag-1 corrected)"
    )
    lag1: float | None = Field(default=None, description="lag-1 autocorrelation of residuals")
    threshold_mb_per_hour: float | None = Field(
        default=None, description='"grows"/"shrinks" only beyond it (--soak-threshold)'
    )
    skipped_s: float = Field(default=0.0, description="the opening seconds left out")
    method: str = ""


class Timeline(Model):
    """A soak (--soak): the window as a time series, worker restarts and memory trends."""

    interval_s: float
    poll_s: float = Field(description="how often the tree's processes were listed")
    load: list[LoadPoint] = Field(default_factory=list)
    memory: list[MemoryPoint] = Field(default_factory=list)
    workers_at_start: list[int] = Field(default_factory=list)
    restarts: list[Restart] = Field(default_factory=list)
    pss_growth: Growth = Field(default_factory=Growth)
    uss_worker_growth: Growth = Field(default_factory=Growth)
    p99_median_ms: float | None = Field(
        default=None, description="the median of the slices' p99, for comparison with restarts"
    )


class Trial(Model):
    """One timed window: one sample of every figure."""

    round: int
    position: int | None = Field(
        default=None,
        description="its place in the server's lifetime this round (0: first after start): "
        "the scenarios run in a shuffled order each round, so what one leaves in memory "
        "spreads over the others instead of always landing on the same one",
    )
    valid: bool
    invalid: Notice | None = None
    requests: int
    duration_s: float
    rps: float
    errors: dict[str, int] = Field(default_factory=dict)
    error_count: int = 0
    non_2xx: int = 0
    unexpected_status: int = Field(
        default=0, description="responses whose status is not the scenario's expect.status"
    )
    status: dict[str, int] = Field(default_factory=dict, description="responses by status")
    error_rate: float = 0.0
    latency_ms: Latency = Field(default_factory=Latency)
    driver_figures: DriverFigures = Field(
        default_factory=DriverFigures, description="what its load driver reported beyond the rest"
    )
    in_flight_mean: float | None = None
    in_flight_source: Literal["driver", "littles_law"] | None = None
    window_edge_bound: float | None = Field(
        default=None,
        description="wrk: the largest share of completions its window's end can have cut",
    )
    warmup: Warmup | None = None
    driver_cpu_percent: float | None = None
    driver_cpu_seconds: float | None = None
    driver_wall_seconds: float | None = None
    memory_mb: WindowMemory | None = None
    proxy_memory_mb: WindowMemory | None = None
    warnings: list[Notice] = Field(default_factory=list)
    driver_command: Command | None = None
    machine: MachineLoad | None = None
    timeline: Timeline | None = None
    resources: Resources | None = None
    pages: list[PageFigures] | None = Field(
        default=None, description="a mix: each page's figures (its seed is driver_figures.seed)"
    )


class Describe(Model):
    """Median and spread of one figure across trials (stats.describe)."""

    n: int = 0
    median: float | None = None
    min: float | None = None
    max: float | None = None
    iqr: float | None = None
    cv: float | None = None
    ci95: tuple[float, float] | None = None


class Summary(Model):
    rps: Describe = Field(default_factory=Describe)
    latency_p50_ms: Describe = Field(default_factory=Describe)
    latency_p90_ms: Describe = Field(default_factory=Describe)
    latency_p99_ms: Describe = Field(default_factory=Describe)
    latency_p999_ms: Describe = Field(default_factory=Describe)
    latency_max_ms: Describe = Field(default_factory=Describe)
    latency_mean_ms: Describe = Field(default_factory=Describe)
    pss_peak_mb: Describe = Field(
        default_factory=Describe, description="each trial's peak PSS of the server tree"
    )
    errors: int = 0
    non_2xx: int = 0
    unexpected_status: int | None = Field(
        default=None, description="responses whose status was not expected (None: older file)"
    )
    warnings: list[Notice] = Field(default_factory=list)


class PairMemory(Model):
    """Memory of a pair across its trials and rounds (MB)."""

    pss_idle: float | None = None
    pss_peak: float | None = None
    pss_mean: float | None = None
    uss_peak: float | None = None
    uss_worker_peak: float | None = None
    rss_peak: float | None = None
    pss_after: float | None = None
    processes: int | None = None
    server_cpu_percent: Describe | None = None


class ProxyMemory(Model):
    pss_peak: float
    rss_peak: float
    cpu_percent: Describe


class Verification(Model):
    status: VerifyStatus
    reason: Notice | None = None
    shape: str = ""
    warnings: list[Notice] = Field(
        default_factory=list,
        description="a right answer with something to say: a query count outside the "
        "scenario's steady range",
    )


class WsIdle(Model):
    requested: int
    opened: int
    pss_before_mb: float
    pss_with_mb: float
    per_connection_kb: float | None
    open_seconds: float | None = Field(default=None, description="time taken to open them")
    closed_in_time: bool = True
    command: str = ""


class PairResult(Model):
    """One (server, proxy, scenario, concurrency) of a run."""

    server: str
    proxy: str = "none"
    protocol: str = Field(
        default="h1",
        description="what the load spoke to the front end (--protocol): h1, h2 (over TLS), h2c",
    )
    variant: dict[str, str] = Field(
        default_factory=dict, description="settings variant (--axis): environment variables"
    )
    recycle: str | None = Field(
        default=None, description="worker recycling asked (--recycle); None: not asked (off)"
    )
    recycle_ignored: list[str] = Field(
        default_factory=list, description="parts of --recycle this server has no option for"
    )
    config: str | None = Field(
        default=None, description="a tuned candidate's layout and knobs (--tune, --config-from)"
    )
    knobs: dict[str, str] = Field(default_factory=dict, description="its server-specific knobs")
    own: str | None = Field(
        default=None,
        description="the project's own deployment this is (PlanRecord.own's name): its "
        "label; `server` is the registry entry it was measured as",
    )
    scenario: str
    concurrency: int | None = None
    interface: str | None = None
    kind: str = "http"
    status: Status
    reason: Notice | None = None
    scenario_fingerprint: str = ""
    workers: int | None = None
    threads: int | None = None
    driver: str | None = None
    startup_seconds: float | None = None
    command: dict[str, Command] = Field(default_factory=dict)
    verify: Verification | None = None
    trials: list[Trial] = Field(default_factory=list)
    summary: Summary = Field(default_factory=Summary)
    memory_mb: PairMemory = Field(default_factory=PairMemory)
    proxy_memory_mb: ProxyMemory | None = None
    ws_idle: WsIdle | None = None
    capacity: Capacity | None = Field(default=None, description="--capacity: the search")
    sweep: Sweep | None = Field(default=None, description="--sweep: req/s against concurrency")
    churn: Churn | None = Field(default=None, description="--churn: requests lost per event")
    log_tail: str | None = None

    @property
    def variant_label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.variant.items())

    @property
    def label(self) -> str:
        return deployment_label(
            self.own or self.server,
            self.proxy,
            self.protocol,
            self.variant.items(),
            self.config,
            self.recycle,
        )


class RestMemory(Model):
    """A tree at rest (MB): median PSS over a short settle, and the last sample."""

    pss: float
    uss: float
    rss: float
    processes: int


class DeploymentRound(Model):
    deployment: str
    server: str
    proxy: str
    round: int
    startup_seconds: float
    idle: RestMemory | None = None
    proxy_idle: RestMemory | None = None
    after: RestMemory | None = None
    beside: list[str] = Field(
        default_factory=list,
        description="the deployments alive beside this one through its windows, theirs "
        "taking turns with its own (--pairing alternate's group); empty: back to back",
    )
    beside_cpu_percent: float | None = Field(
        default=None,
        description="the server tree's CPU (percent of one core) while it waited idle "
        "through the others' windows: what it cost them (side by side only)",
    )


class Database(Model):
    vendor: str | None = None
    engine: str | None = None
    name: str | None = None
    host: str | None = None
    conn_max_age: int | None = None
    pool: bool = False
    server_version: str | None = None
    persistent: bool | None = Field(
        default=None,
        description="connections persist (CONN_MAX_AGE > 0, or None: for ever) with no pool",
    )
    conn_max_age_set: str | None = Field(
        default=None, description="where the project's settings set CONN_MAX_AGE (file:line)"
    )


class Environment(Model):
    date: str | None = None
    wsgi_app: str | None = None
    asgi_app: str | None = None
    asgi_app_source: str | None = Field(
        default=None, description="where the ASGI app came from (djbench.asgi: a fallback)"
    )
    python: str | None = None
    python_implementation: str | None = None
    django: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    tools: dict[str, str | None] = Field(default_factory=dict)
    platform: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    cpus_available: list[int] = Field(default_factory=list)
    memory_total_mb: int | None = None
    git_sha: str | None = None
    git_dirty: bool | None = None
    settings_module: str | None = None
    middleware_profile: str | None = None
    database: Database = Field(default_factory=Database)
    channel_layer: str | None = None
    cache: str | None = None
    redis: str | None = Field(default=None, description="Redis server version (REDIS_URL)")


class TuneCandidate(Model):
    """One configuration a --tune search tried, and how far it went."""

    server: str
    config: str
    workers: int
    threads: int | None = None
    knobs: dict[str, str] = Field(default_factory=dict)
    rounds: int = 0
    rps: list[float] = Field(default_factory=list, description="per round, over scenarios")
    p99_ms: list[float] = Field(default_factory=list, description="per round, the worst")
    pss_mb: list[float] = Field(default_factory=list)
    score: float | None = None
    outcome: Literal["best", "dropped", "undecided", "failed", "unmeasured"] = "undecided"
    dropped_after: int | None = Field(default=None, description="the round it lost in")
    why: str = ""


class TuneRecord(Model):
    """A --tune search: its objective, budget, every candidate, each server's best."""

    objective: str
    slo_p99_ms: float | None = None
    budget_s: float
    spent_s: float = 0.0
    server_cpus: int = 1
    method: str = "successive halving: one more trial per surviving candidate a round"
    candidates: list[TuneCandidate] = Field(default_factory=list)
    best: dict[str, str] = Field(default_factory=dict, description="server -> config")
    files: dict[str, str] = Field(default_factory=dict, description="server -> tuned file")
    skipped: list[str] = Field(default_factory=list, description="what the budget cut")
    confirm_rounds: list[int] = Field(
        default_factory=list,
        description="fresh rounds of each server's best: what the guide compares bests on",
    )


def deployment_label(
    name: str,
    proxy: str = "none",
    protocol: str = "h1",
    variant: Iterable[tuple[str, str]] = (),
    config: str | None = None,
    recycle: str | None = None,
) -> str:
    """The one way a deployment is named ('uvicorn+caddy-tls/h2[DB_POOL=1]{workers=2}
    recycle=max-requests=100'): its server (or the project's own deployment's name), the
    proxy before it, the protocol when not HTTP/1.1, its settings variant, a tuned
    layout, its recycling. A results file's entries are found by it."""
    base = name if proxy == "none" else f"{name}+{proxy}"
    base = f"{base}/{protocol}" if protocol != "h1" else base
    said = ",".join(f"{k}={v}" for k, v in variant)
    base = f"{base}[{said}]" if said else base
    base = f"{base}{{{config}}}" if config is not None else base
    return f"{base} recycle={recycle}" if recycle is not None else base


class RunDocument(Model):
    """A results file: a benchmark run or a verify-only run."""

    schema_version: Literal[3] = 3
    run_id: str
    kind: Literal["benchmark", "verify", "cost"]
    status: Literal["running", "interrupted", "complete"] = "running"
    started: str | None = None
    finished: str | None = None
    environment: Environment = Field(default_factory=Environment)
    plan: PlanRecord = Field(default_factory=PlanRecord)
    skipped: dict[str, Notice] = Field(
        default_factory=dict, description="server or proxy -> why it was not run"
    )
    deployment_rounds: list[DeploymentRound] = Field(default_factory=list)
    results: list[PairResult] = Field(default_factory=list)
    tuning: TuneRecord | None = Field(default=None, description="--tune: the search")
    cost: CostRecord | None = Field(default=None, description="--cost: instructions per request")
