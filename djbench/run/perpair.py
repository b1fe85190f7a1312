"""Searches that run per pair in one server lifetime (``--capacity``, ``--sweep``).

Each deployment is started once (none past the deadline), its verify gate run, and every
HTTP scenario that passed it handed to the search, which records into the pair's entry.
A server that fails is recorded as failed and the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from djbench.launch.live import Deployment, LiveServer, deploy
from djbench.launch.process import ServerError
from djbench.measure.drivers import DriverError
from djbench.measure.trial import LoadSettings, run_trial
from djbench.measure.verify import verify
from djbench.plan.scenarios import Scenario
from djbench.results.model import Notice, PairResult, Trial
from djbench.run.bench import Bench
from djbench.run.gates import server_failed
from djbench.run.roundplan import Plan

# What a search does for one pair: fill in the entry (its trials and its own record).
PairSearch = Callable[[LiveServer, Scenario, PairResult], None]


def one_window(
    plan: Plan,
    live: LiveServer,
    scenario: Scenario,
    connections: int,
    settings: LoadSettings,
    run_dir: Path,
) -> Trial:
    """One trial of a search: a driver that fails gives an invalid trial (driver_failed,
    which stops the search: not the server's doing); a server that died raises
    ServerError (the pair is failed, never given a capacity from its corpse)."""
    try:
        trial = run_trial(plan.driver, live, scenario, connections, settings, run_dir / "logs")
    except DriverError as exc:
        trial = Trial(
            round=0, valid=False, requests=0, duration_s=0.0, rps=0.0,
            invalid=Notice(code="driver_failed", params={"message": str(exc)}),
        )  # fmt: skip
    if not live.target().alive():
        raise ServerError(
            f"{live.deployment.label} died during the load of {scenario.name} (exit code "
            f"{live.server.exited()}); last lines of {live.server.log_path}:\n"
            f"{live.server.log_tail()}"
        )
    return trial


def run_each_pair(bench: Bench, search: PairSearch) -> None:
    """Every deployment of the plan started once (none past the deadline), gated, and
    each of its scenarios searched by `search`; a server that dies fails its pairs."""
    plan, recorder, progress = bench.plan, bench.recorder, bench.progress
    for deployment in plan.deployments:
        if time.monotonic() >= bench.until:
            progress.say(f"the budget is spent: {deployment.label} not started")
            continue
        try:
            _deployment(bench, deployment, search)
        except ServerError as exc:
            for scenario in plan.scenarios:
                entry = recorder.entry(deployment, scenario, None)
                entry.status, entry.reason = "failed", server_failed(str(exc))
                entry.log_tail = str(exc)
            progress.say(f"{deployment.label} failed: {exc}")
        recorder.save()


def _deployment(bench: Bench, deployment: Deployment, search: PairSearch) -> None:
    plan, recorder = bench.plan, bench.recorder
    with deploy(bench.project, deployment, bench.run_dir, plan.health_path) as live:
        verdicts = verify(live.target(), plan.scenarios)
        for scenario in plan.scenarios:
            entry = recorder.entry(deployment, scenario, None)
            verdict = verdicts[scenario.name]
            entry.verify, entry.command = verdict.record(), live.commands
            entry.threads, entry.driver = live.threads, plan.driver.name
            if verdict.status != "ok":
                entry.status, entry.reason = verdict.status, verdict.reason
            elif scenario.kind != "http":
                entry.status = "incompatible"
                entry.reason = Notice(code="search_http_only", params={})
            else:
                search(live, scenario, entry)
            bench.progress.advance(1, "")
            recorder.save()
