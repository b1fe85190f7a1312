"""A deployment's verify gate (started, every scenario checked, stopped), and the pair
records a run starts from: new pairs, a server's failure, a run's id."""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from djbench.launch.live import Deployment, deploy
from djbench.launch.process import ServerError
from djbench.measure.verify import GateVerdict, verify
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.results.model import (
    Command,
    Notice,
    PairResult,
)
from djbench.run import dbcheck


@dataclass
class GateResult:
    """The verify gate's outcome for one deployment (server, proxy)."""

    deployment: Deployment
    verdicts: dict[str, GateVerdict] = field(default_factory=dict)
    startup_seconds: float | None = None
    commands: dict[str, Command] = field(default_factory=dict)
    error: str = ""  # the server could not be started, or died

    @property
    def failed(self) -> bool:
        return bool(self.error) or any(v.status == "failed" for v in self.verdicts.values())


def server_failed(message: str) -> Notice:
    return Notice(code="server_failed", params={"message": message.splitlines()[0]})


def new_pair(
    deployment: Deployment, scenario: Scenario, concurrency: int | None, **fields: Any
) -> PairResult:
    """The record of one (deployment, scenario, concurrency); `fields` set the rest."""
    return PairResult(
        server=deployment.server.name,
        proxy=deployment.proxy,
        protocol=deployment.protocol,
        variant=dict(deployment.variant),
        recycle=None if deployment.recycle is None else deployment.recycle.label,
        recycle_ignored=(
            []
            if deployment.recycle is None
            else deployment.server.recycling(deployment.recycle, deployment.workers).ignored
        ),
        config=deployment.config,
        knobs=dict(deployment.knobs),
        own=deployment.own.name if deployment.own else None,
        scenario=scenario.name,
        concurrency=concurrency,
        interface=deployment.server.interface,
        kind=scenario.kind,
        scenario_fingerprint=scenario.fingerprint(),
        workers=deployment.workers,
        **{"status": "ok", **fields},
    )


def gate_entries(result: GateResult, scenarios: list[Scenario]) -> list[PairResult]:
    """The verify-only run's record of one deployment: one entry per scenario."""
    return [
        new_pair(
            result.deployment,
            s,
            None,
            status=result.verdicts[s.name].status,
            reason=result.verdicts[s.name].reason,
            startup_seconds=result.startup_seconds,
            command=result.commands,
            verify=result.verdicts[s.name].record(),
            log_tail=result.error or None,
        )
        for s in scenarios
    ]


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
    """Start one deployment, verify every scenario against it, measure the database
    connections it keeps per request (djbench.run.dbcheck), stop it."""
    result = GateResult(deployment=deployment)
    try:
        with deploy(project, deployment, run_dir, health_path) as live:
            result.startup_seconds = live.startup_seconds
            result.commands = live.commands
            result.verdicts = verify(live.target(), scenarios)
            if (leak := dbcheck.leak(live, scenarios, result.verdicts)) is not None:
                for name, verdict in result.verdicts.items():
                    if verdict.status == "ok":
                        result.verdicts[name] = dataclasses.replace(
                            verdict, warnings=(*verdict.warnings, leak)
                        )
    except ServerError as exc:
        result.error = str(exc)
        reason = server_failed(str(exc))
        result.verdicts = {s.name: GateVerdict("failed", reason) for s in scenarios}
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


# --- the timed run ----------------------------------------------------------------
