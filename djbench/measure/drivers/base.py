"""What every load driver takes and returns."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

# Re-exported: where drivers and trials have always found it.
from djbench.plan.fitting import request_timeout as request_timeout
from djbench.results.driver_model import DriverFigures

BUILTIN_MARKER = "DJBENCH-BUILTIN "  # the builtin driver's result line starts with it
WS_MARKER = "DJBENCH-WS "  # and the WebSocket driver's
MAX_LATENCY_US = 120_000_000  # the drivers' HDR histograms' highest value (2 minutes)
WINDOW_MARKER = "DJBENCH-WINDOW "  # the builtin driver's "window open/closed" lines
SERIES_MARKER = "DJBENCH-SERIES "  # and its time line's slices (--series)


class DriverError(Exception):
    """A driver that cannot run or whose output cannot be read (one sentence)."""


@dataclass(frozen=True)
class Page:
    """One page of a mix as a driver sends it (djbench.plan.scenarios): drawn by weight."""

    name: str
    weight: float
    method: str
    paths: tuple[str, ...]  # cycled, as a plain scenario's
    body: str | None = None
    content_type: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    expect_status: int | None = None

    def as_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


@dataclass(frozen=True)
class LoadSpec:
    host: str
    port: int
    method: str
    path: str
    body: str | None
    content_type: str | None
    connections: int
    duration: float  # seconds
    threads: int = 1  # driver threads (wrk); the builtin driver is one event loop
    rate: float | None = None  # open loop: requests per second in total
    timeout: float = 10.0  # per request
    headers: tuple[tuple[str, str], ...] = ()  # extra request headers (cookies included)
    paths: tuple[str, ...] = ()  # when given, requests cycle over these paths
    # What a correct answer's status is (the scenario's expect.status); None: any 2xx.
    expect_status: int | None = None
    # Drivers that run their own warm-up (the builtin one): load before the window, and
    # the tolerance at which successive slices' throughputs count as settled.
    warmup: float = 0.0
    settle_tolerance: float = 0.05
    series: float | None = None  # the builtin driver's time line (soak): seconds per slice
    workers: int = 1  # driver processes that make the load (Locust's workers)
    master_web: str | None = None  # Locust: a lasting master's web UI (remote workers)
    new_connection_every: int | None = None  # builtin: a new connection after N answers
    protocol: str = "h1"  # h2load: h1 (--h1), h2 (over TLS, by ALPN) or h2c (over http://)
    # https: through a TLS front (--proxy caddy-tls). Drivers do not verify its
    # certificate (wrk and h2load cannot be given a CA): the handshake costs the same.
    scheme: str = "http"
    # A mix: each request's page drawn by weight from a generator seeded with `seed`
    # (method, path, body and headers above are then the heaviest page's).
    pages: tuple[Page, ...] = ()
    seed: int | None = None

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"


@dataclass
class LoadResult:
    requests: int  # completed responses in the window
    duration_s: float
    errors: dict[str, int] = field(default_factory=dict)  # socket errors by kind
    non_2xx: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)  # p50 p90 p99 p999 max mean
    figures: DriverFigures = field(default_factory=DriverFigures)  # the driver's own
    # Responses whose status is not the expected one: the only status "error".
    unexpected: int = 0
    status: dict[str, int] = field(default_factory=dict)  # responses by status code
    in_flight: float | None = None  # measured by the driver over the window, when it can
    served: int | None = None  # connections answered at least once in the window
    warmup: dict[str, Any] | None = None  # the driver's own warm-up, when it ran one
    series: list[dict[str, Any]] = field(default_factory=list)  # --series slices, in order
    pages: list[dict[str, Any]] = field(default_factory=list)  # a mix's figures per page
    # The driver counted completions inside its own window with the load running across
    # both edges (builtin, Locust): nothing is cut at the window's end, unlike wrk's.
    steady_window: bool = False

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def as_dict(self) -> dict[str, Any]:
        """The figures a Trial stores as they are (the rest is placed by the trial)."""
        data = asdict(self)
        for key in (
            "unexpected",
            "status",
            "in_flight",
            "served",
            "warmup",
            "series",
            "pages",
            "steady_window",
        ):
            data.pop(key)
        data["driver_figures"] = data.pop("figures")
        data["rps"] = round(self.rps, 2)
        return data


class Driver(Protocol):
    """A load driver. What it can do is an attribute, read by callers instead of its
    name (which only the registry, djbench.measure.drivers, compares)."""

    name: str
    install_hint: str
    open_loop: bool  # a fixed offered rate, latency from each request's due time
    time_series: bool  # the load in slices through one window (--soak, --churn)
    http2: bool  # speaks HTTP/2 (h2, h2c); the others speak HTTP/1.1
    reconnects: bool  # can close a connection after its Nth answer (--new-connection-every)
    mixes: bool  # draws each request's page of a mix by weight, with figures per page
    worker_processes: bool  # its own worker processes, here or remote (Locust's)
    own_window: bool  # warms up and prints its window's edges in the same run
    # Its timed HTTP/1.1 run never ends against a server that closes every connection.
    needs_keep_alive: bool
    extra: str | None  # the pyproject extra that installs it (None: nothing to add)
    records_version: bool  # an external tool whose version every results file records

    def available(self) -> bool: ...

    def version(self) -> str | None: ...

    def event_loops(self, driver_cpus: int) -> int:
        """How many cores it can use at once, given so many driver CPUs."""
        ...

    def time_limit(self, duration: float, warmup: float, default: float) -> float:
        """How long one run may take before it is stalled."""
        ...

    def stalled(self, log: str, connections: int) -> str | None:
        """Why a run its time limit ended did not end by itself (None: no reading)."""
        ...

    def argv(self, spec: LoadSpec) -> list[str]: ...

    def env(self, spec: LoadSpec) -> dict[str, str]: ...

    def parse(self, stdout: str) -> LoadResult: ...


class Defaults:
    """What most drivers are: closed loop, HTTP/1.1 with keep-alive, one loop per CPU."""

    open_loop = False
    time_series = False
    http2 = False
    reconnects = False
    mixes = False
    worker_processes = False
    own_window = False
    needs_keep_alive = False
    extra: str | None = None
    records_version = False

    def event_loops(self, driver_cpus: int) -> int:
        return max(1, driver_cpus)

    def time_limit(self, duration: float, warmup: float, default: float) -> float:
        return default

    def stalled(self, log: str, connections: int) -> str | None:
        return None


def marked_json(output: str, marker: str, who: str) -> dict[str, Any]:
    """The JSON object on the line of `output` that starts with `marker`."""
    line = next((ln for ln in output.splitlines() if ln.startswith(marker)), None)
    if line is None:
        raise DriverError(f"{who} printed no result line")
    try:
        data = json.loads(line[len(marker) :])
    except json.JSONDecodeError as exc:
        raise DriverError(f"{who}'s result line is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise DriverError(f"{who}'s result line is not a JSON object")
    return data


def marked_lines(output: str, marker: str) -> list[dict[str, Any]]:
    """Every JSON object on a line starting with `marker` (unreadable lines skipped:
    a driver killed mid-line leaves half a line)."""
    found = []
    for line in output.splitlines():
        if line.startswith(marker):
            try:
                data = json.loads(line[len(marker) :])
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                found.append(data)
    return found


def percentiles_ms(histogram: Any) -> dict[str, float]:
    """p50/p90/p99/p99.9/max/mean in ms from an HDR histogram recorded in microseconds."""
    if not histogram.get_total_count():
        return {}
    return {
        "p50": histogram.get_value_at_percentile(50) / 1000,
        "p90": histogram.get_value_at_percentile(90) / 1000,
        "p99": histogram.get_value_at_percentile(99) / 1000,
        "p999": histogram.get_value_at_percentile(99.9) / 1000,
        "max": histogram.get_max_value() / 1000,
        "mean": round(histogram.get_mean_value() / 1000, 3),
    }
