"""Orchestration: the only module that wires scenarios, servers, drivers and sampler."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from djbench.live import Deployment, deploy
from djbench.process import ServerError
from djbench.project import Project
from djbench.scenarios import Scenario
from djbench.verify import Verdict, verify


@dataclass
class GateResult:
    """The verify gate's outcome for one deployment (server, proxy)."""

    deployment: Deployment
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    startup_seconds: float | None = None
    commands: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # the server could not be started, or died

    @property
    def failed(self) -> bool:
        return bool(self.error) or any(v.status == "failed" for v in self.verdicts.values())


def new_run_id() -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{now}-{secrets.token_hex(3)}"


def run_gate(
    project: Project,
    deployment: Deployment,
    scenarios: list[Scenario],
    run_dir: Path,
    health_path: str,
) -> GateResult:
    """Start one deployment, verify every scenario against it, stop it."""
    result = GateResult(deployment=deployment)
    try:
        with deploy(project, deployment, run_dir, health_path) as live:
            result.startup_seconds = live.startup_seconds
            result.commands = live.commands
            result.verdicts = verify(live.target(), scenarios)
    except ServerError as exc:
        result.error = str(exc)
        result.verdicts = {s.name: Verdict("failed", str(exc).splitlines()[0]) for s in scenarios}
    return result


def run_gates(
    project: Project,
    deployments: list[Deployment],
    scenarios: list[Scenario],
    run_dir: Path,
    health_path: str,
    on_done: Callable[[GateResult], None] = lambda r: None,
) -> list[GateResult]:
    results = []
    for deployment in deployments:
        result = run_gate(project, deployment, scenarios, run_dir, health_path)
        on_done(result)
        results.append(result)
    return results
