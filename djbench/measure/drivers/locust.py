"""Locust (FastHttpUser, master and workers): the driver for more than one load machine.

The field's Python engine for distributed load; djbench generates nothing by hand but
the scenario's user (``locustfile.py`` beside this module, configured through one
environment variable) and reads the merged result line its master prints.

Facts (Locust 2.47): ``--processes N`` forks N local workers under one master (one
process tree, so djbench stops it like any other); the master listens on every
interface (``*``) unless told otherwise, so djbench always passes
``--master-bind-host``; Locust's own response-time buckets round to
whole milliseconds below 100 ms, 10 ms below 1 s and 100 ms above, so djbench's
locustfile records each request's latency itself (HDR histogram, microseconds);
``--run-time`` takes whole seconds; a headless master tells its workers to quit when
its run ends, so remote workers (``--locust-master-bind``) join a master that lives for
the whole run instead (djbench.measure.drivers.locustmaster), and each trial is driven through
it by ``locustctl``. ``locust --worker -f -`` fetches the locustfile from the master
(README: "Two machines").
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from djbench.measure.drivers.base import Defaults, DriverError, LoadResult, LoadSpec, marked_json
from djbench.results.driver_model import DriverFigures

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
MARKER = "DJBENCH-LOCUST "
VARIABLE = "DJBENCH_LOCUST"
SEND_GRACE_S = 2.0  # the locustfile's: after a window closes, before the tallies are sent
MARGIN_S = 2.0  # run time beyond warm-up + window + grace: the tallies reach the master


RAMP_SHARE = 0.5  # every user is running by this share of the warm-up


def spawn_rate(users: int, warmup: float) -> float:
    """Users a second, so that all of them run by RAMP_SHARE of the warm-up (the window
    then measures the full load, not the ramp; the users running at the window's
    opening are recorded and checked: `ramp_in_window`). With no warm-up, all at once."""
    if warmup <= 0:
        return float(max(1, users)) * 1000
    return max(float(users), users / (RAMP_SHARE * warmup))


class LocustDriver(Defaults):
    name = "locust"
    worker_processes = True
    own_window = True
    mixes = True
    extra: str | None = "locust"
    install_hint = 'pip install "djbench[locust]"'

    def available(self) -> bool:
        from djbench.servers import executable_path

        return importlib.util.find_spec("locust") is not None and bool(executable_path("locust"))

    def version(self) -> str | None:
        from djbench.servers import executable_path

        exe = executable_path("locust")
        if exe is None:
            return None
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
        text = (out.stdout or out.stderr).strip()
        return " ".join(text.split()[:2]) if text else None

    def run_time(self, spec: LoadSpec) -> int:
        return math.ceil(spec.warmup + spec.duration + SEND_GRACE_S + MARGIN_S)

    def argv(self, spec: LoadSpec) -> list[str]:
        from djbench.launch.process import free_port
        from djbench.servers import executable_path

        if spec.master_web is not None:  # a lasting master (remote workers): drive it
            return [sys.executable, "-m", "djbench.measure.drivers.locustctl", spec.master_web]
        port = str(free_port("127.0.0.1"))
        return [
            executable_path("locust") or "locust",
            "-f",
            str(LOCUSTFILE),
            "--headless",
            "--users",
            str(spec.connections),
            "--spawn-rate",
            f"{spawn_rate(spec.connections, spec.warmup):g}",
            "--run-time",
            f"{self.run_time(spec)}s",
            "--stop-timeout",
            "1",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            port,
            "--loglevel",
            "WARNING",
            "--only-summary",
            # djbench counts failures itself; Locust's default exit code 1 on any failed
            # request would read as the driver failing.
            "--exit-code-on-error",
            "0",
            # Local workers, one process tree; the forked workers connect to
            # --master-host/--master-port (not to the bind address: both are given).
            "--processes",
            str(spec.workers),
            "--master-host",
            "127.0.0.1",
            "--master-port",
            port,
        ]

    def env(self, spec: LoadSpec) -> dict[str, str]:
        config: dict[str, Any] = {
            "base_url": spec.url().rsplit(spec.path, 1)[0] if spec.path else spec.url(),
            "method": spec.method,
            "paths": list(spec.paths) or [spec.path],
            "body": spec.body or "",
            "headers": {
                **dict(spec.headers),
                **({"Content-Type": spec.content_type} if spec.content_type else {}),
            },
            "expect_status": spec.expect_status,
            "warmup": spec.warmup,
            "duration": spec.duration,
            "timeout": spec.timeout,
            "workers": spec.workers,
            "users": spec.connections,
            "spawn_rate": spawn_rate(spec.connections, spec.warmup),
        }
        if spec.pages:  # a mix: each request's page drawn by weight (locustpages)
            config["pages"] = [dataclasses.asdict(page) for page in spec.pages]
            config["seed"] = spec.seed
        return {VARIABLE: json.dumps(config), "PYTHONUNBUFFERED": "1"}

    def parse(self, stdout: str) -> LoadResult:
        data = marked_json(stdout, MARKER, "Locust")
        reported, expected = data.get("workers_reported", 0), data.get("workers_expected", 1)
        if reported < expected:
            raise DriverError(
                f"only {reported} of {expected} Locust worker(s) reported their window; "
                "the figures would be partial"
            )
        latency = {k: round(v / 1000, 3) for k, v in (data.get("latency_us") or {}).items()}
        return LoadResult(
            requests=data["requests"],
            duration_s=data["duration_s"],
            errors=data["errors"],
            non_2xx=data["non_2xx"],
            latency_ms=latency,
            unexpected=data["unexpected"],
            status=data["status"],
            warmup={"seconds": data.get("warmup_s", 0.0), "settled": None},
            steady_window=True,
            pages=data.get("pages") or [],
            figures=DriverFigures.of(data),
        )
