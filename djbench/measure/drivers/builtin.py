"""The builtin driver: runs :mod:`djbench.measure.drivers.loadgen` as its own process."""

from __future__ import annotations

import sys

from djbench.measure.drivers.base import BUILTIN_MARKER as MARKER
from djbench.measure.drivers.base import (
    SERIES_MARKER,
    Defaults,
    LoadResult,
    LoadSpec,
    marked_json,
    marked_lines,
)
from djbench.results.driver_model import DriverFigures


class BuiltinDriver(Defaults):
    name = "builtin"
    open_loop = True
    time_series = True
    reconnects = True
    mixes = True
    own_window = True
    install_hint = "it ships with djbench (needs uvloop, httptools, hdrhistogram)"

    def event_loops(self, driver_cpus: int) -> int:
        return 1  # one event loop

    def available(self) -> bool:
        return True

    def version(self) -> str | None:
        from djbench import __version__

        return f"djbench-loadgen {__version__}"

    def argv(self, spec: LoadSpec) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "djbench.measure.drivers.loadgen",
            "--host",
            spec.host,
            "--port",
            str(spec.port),
            "--method",
            spec.method,
            "--path",
            spec.paths[0] if spec.paths else spec.path,
            "--connections",
            str(spec.connections),
            "--duration",
            str(spec.duration),
            "--timeout",
            str(spec.timeout),
        ]
        if spec.body:
            argv += ["--body", spec.body]
        if spec.content_type:
            argv += ["--content-type", spec.content_type]
        if spec.rate:
            argv += ["--rate", str(spec.rate)]
        if spec.warmup:
            argv += ["--warmup", str(spec.warmup), "--settle-tolerance", str(spec.settle_tolerance)]
        if spec.series:
            argv += ["--series", str(spec.series)]
        if spec.expect_status is not None:
            argv += ["--expect-status", str(spec.expect_status)]
        for name, value in spec.headers:
            argv += ["--header", f"{name}: {value}"]
        for path in spec.paths[1:]:  # --path above is the first
            argv += ["--path", path]
        if spec.scheme == "https":
            argv.append("--tls")
        for page in spec.pages:
            argv += ["--page", page.as_json()]
        if spec.pages and spec.seed is not None:
            argv += ["--seed", str(spec.seed)]
        if spec.new_connection_every:
            argv += ["--new-connection-every", str(spec.new_connection_every)]
        return argv

    def env(self, spec: LoadSpec) -> dict[str, str]:
        return {}

    def parse(self, stdout: str) -> LoadResult:
        data = marked_json(stdout, MARKER, "the builtin driver")
        return LoadResult(
            requests=data["requests"],
            duration_s=data["duration_s"],
            errors=data["errors"],
            non_2xx=data["non_2xx"],
            latency_ms=data["latency_ms"],
            figures=DriverFigures.of(data),
            unexpected=data["unexpected_status"],
            status=data["status"],
            in_flight=data["in_flight_mean"],
            served=data.get("connections_served"),
            warmup=data["warmup"],
            series=marked_lines(stdout, SERIES_MARKER),
            steady_window=True,
            pages=data.get("pages") or [],
        )
