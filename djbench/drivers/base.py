"""What every load driver takes and returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

BUILTIN_MARKER = "DJBENCH-BUILTIN "  # the builtin driver's result line starts with it
WS_MARKER = "DJBENCH-WS "  # and the WebSocket driver's


class DriverError(Exception):
    """A driver that cannot run or whose output cannot be read (one sentence)."""


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

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"


@dataclass
class LoadResult:
    requests: int  # completed responses in the window
    duration_s: float
    errors: dict[str, int] = field(default_factory=dict)  # socket errors by kind
    non_2xx: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)  # p50 p90 p99 p999 max mean
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["rps"] = round(self.rps, 2)
        return data


class Driver(Protocol):
    name: str
    open_loop: bool
    install_hint: str

    def available(self) -> bool: ...

    def version(self) -> str | None: ...

    def argv(self, spec: LoadSpec) -> list[str]: ...

    def env(self, spec: LoadSpec) -> dict[str, str]: ...

    def parse(self, stdout: str) -> LoadResult: ...
