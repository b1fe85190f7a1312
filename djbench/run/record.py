"""What a run records of itself before its first trial: the results document (new, or a
resumed run's with its set-up checked), its plan and environment."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from djbench.measure import environment, hops, sampler
from djbench.measure.dbconnect import connect_cost
from djbench.measure.drivers import DRIVERS
from djbench.plan import scenarios
from djbench.plan.fitting import Fit
from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.results.model import (
    AsgiHops,
    CostRecord,
    OwnDeployment,
    PlanRecord,
    RunDocument,
    ScenarioMeta,
)
from djbench.run import resume
from djbench.run.roundplan import Plan
from djbench.run.selection import Selection
from djbench.servers import ServerSpec, caddy


def tools() -> dict[str, str | None]:
    """The versions of the external tools a run may use: Caddy, and the load drivers
    whose registry entry says so (records_version)."""
    where = caddy.path()
    found = {caddy.EXECUTABLE: environment.tool_version([where, "version"]) if where else None}
    found |= {name: d.version() for name, d in DRIVERS.items() if d.records_version}
    return found


def resumed(run_id: str, output: Path) -> tuple[RunDocument, RunOptions, Path]:
    """The saved document and options of the run named by --resume."""
    path = output / f"{run_id}.json"
    try:
        document = store.load(path)
    except store.ResultsError as exc:
        raise OptionError(f"--resume {run_id}: {exc}") from None
    if document.kind != "benchmark":
        raise OptionError(f"--resume: {path} is not a benchmark run")
    if document.status == "complete":
        raise OptionError(f"--resume: run {run_id} is already complete")
    try:
        opts = RunOptions.model_validate(document.plan.options)
    except ValidationError:
        raise OptionError(
            f"--resume: {path} was written by an older djbench whose options cannot be "
            "resumed; start a new run"
        ) from None
    return document, opts, path


def open_document(
    selection: Selection,
    opts: RunOptions,
    plan: Plan,
    resumed: tuple[RunDocument, Path] | None,
    run_id: str,
    fit: Fit | None = None,
) -> tuple[RunDocument, Path]:
    """The results document to record into and its file: a resumed run's (refused when
    its plan changed), or a new one, built once with the plan as it will run (a pilot's
    fit already in `opts` and `plan`)."""
    if resumed is not None:
        document, path = resumed
        refuse_changed(document, selection, plan)
        return document, path
    document = new_document(run_id, selection, opts, plan)
    document.plan.fit = fit
    return document, Path(opts.output) / f"{run_id}.json"


def refuse_changed(document: RunDocument, selection: Selection, plan: Plan) -> None:
    """A resumed run must find the set-up it started with (djbench.run.resume)."""
    now = environment.collect(selection.project, {**tools(), "driver": plan.driver.version()})
    problems = resume.environment_changes(document.environment, now)
    problems += resume.scenario_changes(document, {s.name: s.fingerprint() for s in plan.scenarios})
    if problems:
        raise OptionError(resume.refusal(document.run_id, problems, "what it measures changed"))


def new_document(
    run_id: str, selection: Selection, opts: RunOptions, plan: Plan | None = None
) -> RunDocument:
    """The one way a results document is built: a benchmark's from its plan, the verify
    gate's (nothing timed: no plan) from the selection alone."""
    if plan is None:
        return RunDocument(
            run_id=run_id,
            kind="verify",
            started=store.now(),
            environment=environment.collect(selection.project, tools()),
            plan=plan_record(selection, opts, selection.scenarios),
            skipped=selection.skipped,
        )
    return RunDocument(
        run_id=run_id,
        kind="benchmark",
        status="running",
        started=store.now(),
        environment=environment.collect(
            selection.project, {**tools(), "driver": plan.driver.version()}
        ),
        plan=plan_record(
            selection,
            opts,
            plan.scenarios,
            profile=opts.profile,
            concurrency=plan.concurrency,
            trials=plan.trials,
            duration=plan.settings.duration,
            warmup=plan.settings.warmup,
            driver=plan.driver.name,
            rate=plan.settings.rate,
            loop="open" if plan.settings.rate else "closed",
            keep_alive=True,
            new_connection_every=plan.settings.new_connection_every,
            observer_cpus=list(selection.driver_cpus),
            memory_sampling=sampler.METHOD.format(interval=plan.settings.sample_interval),
            # Off during benchmarks for every server unless --recycle asks (see
            # djbench.servers.entry.NO_RECYCLE).
            worker_recycling_by_requests=any(
                r is not None and r.max_requests is not None for r in opts.recycles()
            ),
            soak_s=opts.soak_s,
            recycle=list(opts.recycle),
            max_error_rate=plan.settings.max_error_rate,
            ws_idle=plan.ws_idle,
            seed=plan.seed,
            order=[[d.label for d in r] for r in plan.rounds()],
        ),
        skipped=selection.skipped,
    )


def cost_document(
    run_id: str, selection: Selection, opts: RunOptions, record: CostRecord
) -> RunDocument:
    """A cost probe's document (runbench --cost): no server, its pages' counts."""
    return RunDocument(
        run_id=run_id,
        kind="cost",
        started=store.now(),
        environment=environment.collect(selection.project, {"valgrind": record.valgrind}),
        plan=plan_record(selection, opts, selection.scenarios),
        cost=record,
    )


def plan_record(
    selection: Selection, opts: RunOptions, chosen: list[scenarios.Scenario], **fields: Any
) -> PlanRecord:
    """What every run records of its plan; `fields` add what a benchmark adds."""
    return PlanRecord(
        options=opts.model_dump(mode="json"),
        servers=[s.name for s in selection.servers],
        own=[OwnDeployment(**dataclasses.asdict(c)) for c in selection.own],
        proxies=selection.proxies,
        scenarios=scenario_meta(chosen, [*selection.servers, *own_specs(selection)]),
        scenario_file=str(selection.scenario_file.path),
        workers=opts.workers,
        threads=opts.threads,
        server_cpus=list(selection.server_cpus),
        driver_cpus=list(selection.driver_cpus),
        pinning="taskset" if selection.server_cpus else None,
        axes=opts.axes,
        connections=None if opts.target is not None else connect_cost(querying(chosen)),
        **fields,
    )


def querying(chosen: list[scenarios.Scenario]) -> list[str]:
    """The scenarios that query the database (declared or recorded by benchinit)."""
    return [s.name for s in chosen if (s.expect.queries_high or 0) > 0]


def own_specs(selection: Selection) -> list[ServerSpec]:
    from djbench.servers import SERVERS

    return [SERVERS[c.server] for c in selection.own]


def scenario_meta(
    chosen: list[scenarios.Scenario], servers: list[ServerSpec]
) -> dict[str, ScenarioMeta]:
    # Hops are counted by running this project's views in-process: for a --target (the
    # stand-in spec) they would describe the local code, not the deployment.
    asgi = any(s.interface == "asgi" and s.started_here for s in servers)
    return {
        s.name: ScenarioMeta(
            fingerprint=s.fingerprint(),
            method=s.request.method,
            path=s.request.path,
            kind=s.kind,
            endpoint=s.endpoint,
            workload=s.workload,
            queries=s.expect.queries_high,
            queries_range=list(s.expect.queries_range) if s.expect.queries_range else None,
            variant=s.variant,
            # A mix's hops are its pages' (each counted where it runs as itself).
            asgi_hops=asgi_hops(s) if asgi and s.kind == "http" and not s.mix else None,
            thresholds=s.thresholds.declared(),
            mix=scenarios.mix_weights(s),
        )
        for s in chosen
    }


def asgi_hops(scenario: scenarios.Scenario) -> AsgiHops:
    """The scenario's thread hops under ASGI, counted in-process (djbench.measure.hops);
    not for a page that writes: in this process it would write to the project's own
    database, which the run leaves as found (djbench.launch.datastate)."""
    if scenario.writes and scenario.request.method in ("GET", "HEAD"):
        return AsgiHops(
            counted=False, why="it writes: not requested in-process (the data stays as found)"
        )
    try:
        return hops.count(scenario)
    except Exception as exc:  # the project's own code ran: any failure is a sentence
        first = str(exc).splitlines()[0] if str(exc) else ""
        return AsgiHops(
            counted=False, why=f"the request failed in-process: {type(exc).__name__}: {first}"
        )
