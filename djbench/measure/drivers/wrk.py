"""wrk (closed loop, keep-alive, C): the fast driver where the machine has it.

Facts: wrk counts a response with status > 399 as a "status" error but still counts it
in `requests` (djbench's Lua script counts statuses itself, against the expected
one); its `timeout` errors are requests that took longer than --timeout (2 s by
default, hence the explicit --timeout). Latency is kept in microseconds.
--duration takes whole seconds only ("300ms" and "0.3s" print the usage and exit):
a fractional duration is rounded up, and the real window is what wrk reports.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

from djbench.measure.drivers.base import Defaults, LoadResult, LoadSpec, marked_json
from djbench.results.driver_model import DriverFigures

SCRIPT = Path(__file__).with_name("wrk_report.lua")
MARKER = "DJBENCH-WRK "
STATUS_MARKER = "DJBENCH-WRK-STATUS "


class WrkDriver(Defaults):
    name = "wrk"
    records_version = True
    install_hint = "install wrk (Debian/Ubuntu: apt-get install wrk)"

    def available(self) -> bool:
        return shutil.which("wrk") is not None

    def version(self) -> str | None:
        wrk = shutil.which("wrk")
        if wrk is None:
            return None
        out = subprocess.run([wrk, "--version"], capture_output=True, text=True, timeout=10)
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0] if text else None

    def argv(self, spec: LoadSpec) -> list[str]:
        threads = max(1, min(spec.threads, spec.connections))
        return [
            shutil.which("wrk") or "wrk",
            "--threads",
            str(threads),
            "--connections",
            str(spec.connections),
            "--duration",
            f"{max(1, math.ceil(spec.duration))}s",
            "--timeout",
            f"{max(1, math.ceil(spec.timeout))}s",
            "--script",
            str(SCRIPT),
            spec.url(),
        ]

    def env(self, spec: LoadSpec) -> dict[str, str]:
        return {
            "DJBENCH_METHOD": spec.method,
            "DJBENCH_BODY": spec.body or "",
            "DJBENCH_CONTENT_TYPE": spec.content_type or "",
            # One header ("Name: value") or one path per line; the Lua script reads them.
            "DJBENCH_HEADERS": "\n".join(f"{k}: {v}" for k, v in spec.headers),
            "DJBENCH_PATHS": "\n".join(spec.paths),
            "DJBENCH_EXPECT_STATUS": str(spec.expect_status or ""),
        }

    def parse(self, stdout: str) -> LoadResult:
        return parse_output(stdout)


def parse_output(stdout: str) -> LoadResult:
    """Read the line our Lua done() hook printed (wrk's own text is ignored)."""
    data = marked_json(stdout, MARKER, "wrk")
    # Outputs recorded before the script counted statuses lack this line: then only
    # wrk's own count (status > 399) is known.
    has_status = any(line.startswith(STATUS_MARKER) for line in stdout.splitlines())
    statuses = (
        marked_json(stdout, STATUS_MARKER, "wrk")
        if has_status
        else {"unexpected": data["errors"]["status"], "status": {}}
    )
    errors = data["errors"]
    lat = data["latency_us"]
    return LoadResult(
        requests=int(data["requests"]),
        duration_s=data["duration_us"] / 1e6,
        errors={k: int(errors[k]) for k in ("connect", "read", "write", "timeout")},
        # One definition for every driver: answers outside 200-299 (wrk's own count sees
        # only statuses above 399; the script's per-status count, when there, sees all).
        non_2xx=(
            sum(int(v) for k, v in statuses["status"].items() if not 200 <= int(k) < 300)
            if statuses["status"]
            else int(errors["status"])
        ),
        latency_ms={
            k: round(lat[k] / 1000, 3) for k in ("p50", "p90", "p99", "p999", "max", "mean")
        },
        figures=DriverFigures(
            bytes=int(data["bytes"]), latency_stdev_ms=round(lat["stdev"] / 1000, 3)
        ),
        unexpected=int(statuses["unexpected"]),
        status={k: int(v) for k, v in sorted(statuses["status"].items())},
    )
