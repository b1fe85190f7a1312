"""runbench's logic behind the thin management command: options -> plan -> run -> output."""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connections
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from djbench.launch.live import HOST, Deployment
from djbench.launch.process import (
    PortBusy,
    check_port_free,
    pinned_self,
    reap,
    start_watchdog,
    terminate_on_signals,
)
from djbench.launch.proxy import PROXIES, caddy_missing
from djbench.launch.servers import SERVERS, ServerSpec
from djbench.measure import environment, hops, sampler
from djbench.measure.drivers import DRIVERS, Driver, DriverError, pick
from djbench.measure.trial import LoadSettings
from djbench.plan import scenarios, tuning
from djbench.plan.options import OptionError, choose, cpu_count, cpu_split
from djbench.plan.project import Project, current
from djbench.plan.runplan import CHURN_RATE, RunOptions, soak_interval, variant_label
from djbench.reports.console import (
    console_for,
    print_capacity,
    print_churn,
    print_gate,
    print_held,
    print_hops,
    print_list,
    print_matrix,
    print_results,
    print_skipped,
    print_soak,
    print_sweep,
    print_tuning,
)
from djbench.reports.words import budget_text, say
from djbench.results import store
from djbench.results.model import AsgiHops, Notice, PlanRecord, RunDocument, ScenarioMeta
from djbench.run import (
    budget,
    capacity,
    churn,
    remote,
    resume,
    services,
    sessions,
    sweep,
    tune,
    tunecapacity,
    variants,
)
from djbench.run.runner import (
    GateResult,
    Plan,
    Progress,
    Recorder,
    SaveFailed,
    gate_entries,
    new_run_id,
    run_benchmark,
    run_gates,
)


@dataclass(frozen=True)
class Action:
    """What this invocation does with the options (never saved with a run)."""

    list: bool = False
    verify_only: bool = False
    resume: str | None = None
    no_color: bool = False
    # Stop after this many rounds (the file stays resumable): how --matrix interleaves
    # its cells round by round, each round one runbench per cell.
    until_round: int | None = None


@dataclass
class Selection:
    project: Project
    scenario_file: scenarios.ScenarioFile
    scenarios: list[scenarios.Scenario]
    servers: list[ServerSpec]
    skipped: dict[str, Notice]  # server or proxy -> why it is not run
    proxies: list[str]
    server_cpus: tuple[int, ...]
    driver_cpus: tuple[int, ...]


def select(opts: RunOptions) -> Selection:
    project = current()
    if opts.target is not None:
        return select_target(project, opts)
    scenario_file, chosen = scenario_choice(project, opts)
    names = choose("server", ",".join(opts.servers), SERVERS)
    proxies = choose("proxy", ",".join(opts.proxies), PROXIES) or ["none"]
    server_cpus, driver_cpus = cpu_split(opts.cpus)
    skipped: dict[str, Notice] = {}
    servers: list[ServerSpec] = []
    for spec in [SERVERS[n] for n in names] if names else list(SERVERS.values()):
        missing = spec.missing()
        if lacking := spec.lacks_part():
            version = (spec.installed() or ("?", ""))[0]
            skipped[spec.name] = Notice(
                code="lacks_part",
                params={"missing": lacking, "package": spec.executable, "version": version},
            )
        elif missing:
            skipped[spec.name] = Notice(
                code="not_installed", params={"missing": missing, "extra": spec.extra}
            )
        elif opts.workers > 1 and not spec.multi_worker:
            skipped[spec.name] = Notice(code="single_process", params={"workers": opts.workers})
        else:
            servers.append(spec)
    caddies = [p for p in proxies if p != "none"]
    if caddies and caddy_missing():
        if len(caddies) == len(proxies):
            raise OptionError(
                f'--proxy {caddies[0]}: caddy is not installed: pip install "djbench[caddy]"'
            )
        for name in caddies:
            skipped[name] = Notice(code="caddy_missing")
        proxies = ["none"]
    if opts.port is not None:
        try:
            check_port_free(HOST, opts.port)
        except PortBusy as exc:
            raise OptionError(f"--port {opts.port}: {exc}") from None
    return Selection(
        project=project,
        scenario_file=scenario_file,
        scenarios=scenario_file.select(chosen or None),
        servers=servers,
        skipped=skipped,
        proxies=proxies,
        server_cpus=server_cpus,
        driver_cpus=driver_cpus,
    )


def target_announcement(opts: RunOptions, plan: Plan) -> str:
    """Where the load goes, how much and for how long: said before it starts."""
    per_trial = opts.duration + opts.warmup
    total = per_trial * plan.total_trials()
    return (
        f"Sending load to {opts.target} (not started by djbench): {len(plan.scenarios)} "
        f"scenario(s) x {', '.join(str(c) for c in plan.concurrency)} connection(s) x "
        f"{plan.trials} trial(s) of {opts.duration:g} s after {opts.warmup:g} s warm-up: "
        f"about {total:.0f} s of load"
        + (f" at {opts.rate:g} req/s" if opts.rate else " (closed loop: as fast as it answers)")
    )


def scenario_choice(project: Project, opts: RunOptions) -> tuple[scenarios.ScenarioFile, list[str]]:
    """The scenario file (checked) and the scenarios --scenarios names in it."""
    path = opts.scenario_file or project.scenarios
    try:
        scenario_file = scenarios.load(Path(path))
    except scenarios.ScenarioError as exc:
        raise OptionError(str(exc)) from None
    return scenario_file, choose("scenario", ",".join(opts.scenarios), scenario_file.names())


def select_target(project: Project, opts: RunOptions) -> Selection:
    """--target: one stand-in server, the scenarios, nothing started."""
    from urllib.parse import urlsplit

    from djbench.launch.servers import target_spec

    assert opts.target is not None
    if opts.servers or opts.proxies != ["none"]:
        raise OptionError("--target starts no server: leave out --servers and --proxy")
    host = urlsplit(opts.target).hostname or ""
    if not loopback(host) and not opts.allow_remote_target:
        raise OptionError(
            f"--target {opts.target} is outside loopback: add --allow-remote-target to "
            "send load there"
        )
    if opts.target_pid is not None and not loopback(host):
        raise OptionError("--target-pid samples a process on this machine: loopback targets only")
    if opts.soak is not None or opts.recycle or opts.churn:
        raise OptionError("--target: --soak, --recycle and --churn need a server djbench starts")
    # Options that would change nothing for a deployment djbench did not start, and
    # would then label identical pairs as variants the guide might rank (issue 25 item 5)
    unchanged = {
        "--axis": bool(opts.axes),
        "--workers": opts.workers != 1 or opts.workers_auto,
        "--threads": opts.threads is not None,
        "--config-from": bool(opts.config_from),
    }
    if given := [name for name, on in unchanged.items() if on]:
        raise OptionError(
            f"--target: {', '.join(given)} change nothing in a deployment djbench did not "
            "start; set them where it runs"
        )
    scenario_file, chosen = scenario_choice(project, opts)
    _, driver_cpus = cpu_split(opts.cpus)
    return Selection(
        project=project,
        scenario_file=scenario_file,
        scenarios=scenario_file.select(chosen or None),
        servers=[target_spec(opts.target)],
        skipped={},
        proxies=["none"],
        server_cpus=(),
        driver_cpus=driver_cpus,
    )


def deployments(selection: Selection, opts: RunOptions) -> list[Deployment]:
    every = [
        Deployment(
            server=spec,
            proxy=proxy,
            workers=opts.workers,
            threads=opts.threads,
            cpus=selection.server_cpus,
            port=opts.port,
            variant=variant,
            recycle=recycle,
            target=opts.target,
            target_pid=opts.target_pid,
            host=opts.advertise_host or HOST,
            protocol=protocol,
        )
        for spec in selection.servers
        for proxy in selection.proxies
        for protocol in opts.protocols
        for variant in opts.variants()
        for recycle in opts.recycles()
    ]
    if not opts.workers_auto:
        return every
    # --workers auto: each server's documented layout for the CPUs it has, serving the
    # run's highest concurrency.
    cpus, most = cpu_count(selection.server_cpus), max(opts.concurrency)
    return [
        tune.deployment(d, tuning.recommended(d.server.name, cpus, most))
        if d.server.multi_worker
        else d
        for d in every
    ]


def runnable(
    selection: Selection, opts: RunOptions, console: Console, driver: str = "builtin"
) -> tuple[list[Deployment], list[Deployment], dict[variants.Variant, str]]:
    """(deployments to run, deployments not run, why their variant was refused)."""
    every = deployments(selection, opts)
    why = variants.refused(selection.project, opts.variants())
    for variant, message in why.items():
        console.print(
            f"[yellow]incompatible[/] {escape(variant_label(variant))}: {escape(message)}"
        )
    for d in every:
        notice = variants.driver_refused(d, driver)
        refused = variants.recycle_refused(d) or (say(notice) if notice else None)
        if d.variant not in why and refused:
            console.print(f"[yellow]incompatible[/] {escape(d.label)}: {escape(refused)}")
    ok = [
        d
        for d in every
        if d.variant not in why
        and not variants.recycle_refused(d)
        and not variants.driver_refused(d, driver)
    ]
    return ok, [d for d in every if d not in ok], why


def setup_project(command: BaseCommand, project: Project) -> None:
    for argv in project.setup_commands:
        try:
            call_command(*argv, stdout=command.stdout, stderr=command.stderr)
        except (CommandError, DatabaseError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CommandError(f"setup command {' '.join(argv)!r} failed: {first}") from None
    connections.close_all()  # servers open their own; keep no SQLite lock here


def tools() -> dict[str, str | None]:
    from djbench.launch.servers import executable_path

    caddy = executable_path("caddy")
    wrk = executable_path("wrk")
    return {
        "caddy": environment.tool_version([caddy, "version"]) if caddy else None,
        "wrk": environment.tool_version([wrk, "--version"]) if wrk else None,
    }


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


def main(command: BaseCommand, opts: RunOptions, action: Action) -> str | None:
    """Run what the options ask; return a one-line problem when a pair failed, else None."""
    document: RunDocument | None = None
    path: Path | None = None
    if action.resume:
        document, saved, path = resumed(action.resume, Path(opts.output))
        if conflicts := resume.option_conflicts(opts, saved):
            raise OptionError(
                resume.refusal(
                    action.resume,
                    conflicts,
                    "it uses the run's own options, and these differ from them",
                )
            )
        services.required_for_resume(action.resume, saved)
        # Found where it was asked; --no-setup may skip set-up commands run the first time.
        opts = saved.model_copy(update={"output": opts.output, "setup": saved.setup and opts.setup})
    console = console_for(command.stdout, no_color=action.no_color)
    if not action.list and (problem := store.unwritable(Path(opts.output))) is not None:
        raise OptionError(f"--output: {problem}")
    for left in reap(Path(opts.output)):
        console.print(f"[yellow]stopped[/] {escape(left)}: left running by an earlier runbench")
    start_watchdog(Path(opts.output))
    if action.list:
        list_all(console, opts)
        return None
    selection = select(opts)
    print_skipped(console, selection.skipped)
    if not selection.servers:
        raise CommandError(
            "no server to run: " + "; ".join(f"{k} {say(v)}" for k, v in selection.skipped.items())
        )
    if action.verify_only:
        return verify_only(command, console, selection, opts)
    return benchmark(command, console, selection, opts, document, path, action.until_round)


def execute(
    selection: Selection,
    opts: RunOptions,
    plan: Plan,
    recorder: Recorder,
    run_dir: Path,
    progress: Progress,
    until_round: int | None,
    started: float,
) -> None:
    """The plan's rounds: a tuning search, the planned rounds and what --budget adds, or
    the planned rounds (up to --until-round)."""
    if opts.tune and opts.objective == "capacity":
        # --capacity's --budget is the whole command's: the search gets what is left of
        # it when that is less than --tune-budget (it said 900 s under --budget 8m).
        left = (
            opts.tune_budget if opts.budget is None else opts.budget - (time.monotonic() - started)
        )
        tunecapacity.search(
            selection.project, plan.deployments, plan, recorder, run_dir, progress,
            min(opts.tune_budget, left), opts.slo_p99 or 0.0,
        )  # fmt: skip
    elif opts.tune:
        tune.search(
            selection.project, plan.deployments, plan, recorder, run_dir, progress,
            opts.tune_budget, opts.objective, opts.slo_p99,
        )  # fmt: skip
    elif opts.capacity:
        deadline = started + (opts.budget or 0.0)
        capacity.run(
            selection.project, plan, recorder, run_dir, progress, opts.slo_p99 or 0.0, deadline
        )
    elif opts.churn:
        churn.run(
            selection.project, plan, recorder, run_dir, progress, opts.churn,
            opts.rate or CHURN_RATE, opts.duration, started + (opts.budget or 0.0),
        )  # fmt: skip
    elif opts.sweep:
        sweep.run(
            selection.project, plan, recorder, run_dir, progress, started + (opts.budget or 0)
        )
    elif opts.budget is not None and until_round is None:
        added, still = budget.spend(
            selection.project, plan, recorder, run_dir, progress, started + opts.budget
        )
        record = recorder.document.plan
        record.budget_s, record.rounds_added, record.still_open = opts.budget, added, still
    else:
        run_benchmark(selection.project, plan, recorder, run_dir, progress, until_round)


def _what_the_budget_buys(opts: RunOptions, until_round: int | None) -> str:
    if opts.budget is None or until_round is not None:
        return ""
    minutes = f"budget {opts.budget / 60:g} min"
    if opts.capacity:
        return f"; capacity at p99 <= {opts.slo_p99:g} ms, {minutes}"
    if opts.sweep:
        return f"; concurrency doubling from 1 until req/s stops rising, {minutes}"
    if opts.churn:
        return f"; open loop at {opts.rate or CHURN_RATE:g} req/s, {minutes}"
    return f"; {minutes} (then rounds for rankings still open)"


def list_all(console: Console, opts: RunOptions) -> None:
    """Servers always; scenarios when the scenario file loads, else how to make one."""
    path = Path(opts.scenario_file or current().scenarios)
    try:
        file = scenarios.load(path)
    except scenarios.ScenarioError as exc:
        print_list(console, [], str(path), problem=str(exc))
        return
    print_list(console, list(file.scenarios), str(file.path))


def verify_only(
    command: BaseCommand, console: Console, selection: Selection, opts: RunOptions
) -> str | None:
    if opts.setup and opts.target is None:
        setup_project(command, selection.project)
    selection.scenarios = sessions.prepare(selection.scenarios)
    run_id = new_run_id()
    output = Path(opts.output)
    run_dir = output / run_id
    path = output / f"{run_id}.json"
    document = RunDocument(
        run_id=run_id,
        kind="verify",
        started=store.now(),
        environment=environment.collect(selection.project, tools()),
        plan=plan_record(selection, opts, selection.scenarios),
        skipped=selection.skipped,
    )
    plan, not_run, why = runnable(selection, opts, console)
    document.results += variants.refused_entries(not_run, selection.scenarios, [None], why)

    def done(result: GateResult) -> None:
        document.results += gate_entries(result, selection.scenarios)
        store.write_atomic(path, document)
        print_gate(console, result.deployment.label, result.startup_seconds, result.error)

    with terminate_on_signals():
        run_gates(
            selection.project,
            plan,
            selection.scenarios,
            run_dir,
            selection.scenario_file.health_path,
            on_done=done,
        )
    document.status = "complete"
    document.finished = store.now()
    store.write_atomic(path, document)
    print_matrix(console, document)
    print_hops(console, document)
    console.print(escape(f"Results: {path}\nLogs: {run_dir / 'logs'}"))
    failed = sorted({e.label for e in document.results if e.status == "failed"})
    return f"verification failed for {', '.join(failed)} (see above)" if failed else None


def driver_for(opts: RunOptions) -> Driver:
    """--driver, or with auto the builtin driver (h2load when HTTP/2 is asked)."""
    try:
        http2 = opts.driver == "auto" and opts.protocols != ["h1"]
        return pick("h2load" if http2 else opts.driver, needs_rate=opts.rate is not None)
    except KeyError:
        raise OptionError(
            f"unknown driver {opts.driver!r}; valid: auto, {', '.join(DRIVERS)}"
        ) from None
    except DriverError as exc:
        raise OptionError(str(exc)) from None


def load_settings(opts: RunOptions, selection: Selection) -> LoadSettings:
    """How every trial loads its server, from the options."""
    return LoadSettings(
        duration=opts.duration,
        warmup=opts.warmup,
        driver_cpus=selection.driver_cpus,
        rate=opts.rate,
        max_error_rate=opts.max_error_rate,
        series=None if opts.soak is None else soak_interval(opts.soak),
        growth_threshold=opts.soak_threshold,
        driver_workers=remote.driver_workers(opts),
        new_connection_every=opts.new_connection_every,
    )


def benchmark(
    command: BaseCommand,
    console: Console,
    selection: Selection,
    opts: RunOptions,
    document: RunDocument | None,
    path: Path | None,
    until_round: int | None = None,
) -> str | None:
    started = time.monotonic()
    driver = driver_for(opts)
    remote.check(opts, driver.name, loopback)
    chosen = chosen_scenarios(selection, opts, driver.name)
    if opts.seed is None:
        opts = opts.model_copy(update={"seed": secrets.randbelow(2**31)})
    assert opts.seed is not None
    settings = load_settings(opts, selection)
    to_run, not_run, refused_why = runnable(selection, opts, console, driver.name)
    if opts.config_from is not None:
        to_run = from_tuning(opts, to_run, console)
    plan = Plan(
        deployments=to_run,
        scenarios=chosen,
        concurrency=opts.concurrency,
        trials=opts.trials,
        settings=settings,
        driver=driver,
        health_path=selection.scenario_file.health_path,
        ws_idle=opts.ws_idle,
        seed=opts.seed,
    )
    if opts.setup and opts.target is None:  # a target's data is its own
        setup_project(command, selection.project)
    if opts.target is not None:
        console.print(escape(target_announcement(opts, plan)))
    plan = dataclasses.replace(plan, scenarios=sessions.prepare(plan.scenarios))
    output = Path(opts.output)
    document, path = open_document(selection, opts, plan, document, path)
    run_id = document.run_id
    run_dir = output / run_id
    document.status = "running"
    refused = variants.refused_entries(
        not_run, chosen, list(plan.concurrency), refused_why, driver.name
    )
    known = {e.label for e in document.results}  # a resumed run has them already
    document.results += [e for e in refused if e.label not in known]
    recorder = Recorder(path, document)
    recorder.save()
    total = announce(console, opts, selection, plan, run_id, len(chosen), until_round)
    try:
        with (
            terminate_on_signals(),
            pinned_self(selection.driver_cpus),
            progress_bar(console, total) as progress,
            remote.master_for(opts, plan, run_dir, selection.driver_cpus, console) as planned,
        ):
            execute(selection, opts, planned, recorder, run_dir, progress, until_round, started)
            searched = opts.capacity or opts.sweep
            if opts.budget is not None and until_round is None and not searched:
                console.print(escape(budget_text(document.plan)))
    except SaveFailed as exc:
        raise CommandError(
            f"could not save the results ({exc}); every server was stopped; the file "
            f"holds the trials saved before; when there is room again: manage.py runbench "
            f"--resume {run_id} --output {output}",
            returncode=1,
        ) from None
    except KeyboardInterrupt:
        document.status = "interrupted"
        with contextlib.suppress(SaveFailed):  # the last good file stands; say the rest
            recorder.save()
        raise CommandError(
            f"interrupted; every server was stopped; results so far in {path}; "
            f"finish with: manage.py runbench --resume {run_id} --output {output}",
            returncode=130,
        ) from None
    if until_round is not None and until_round < plan.trials:
        pause(console, recorder, until_round, plan.trials, output)
        return None
    return finish(console, document, recorder, path, run_dir)


def chosen_scenarios(
    selection: Selection, opts: RunOptions, driver: str
) -> list[scenarios.Scenario]:
    """The scenarios to run: as given, else the profile's set; a soak's own."""
    chosen = selection.scenarios
    default_set = selection.scenario_file.profiles.get(opts.profile)
    if not opts.scenarios_given and default_set:
        chosen = selection.scenario_file.select(default_set)
    if opts.soak is not None:
        chosen = soak_scenarios(selection, opts, chosen)
        if driver != "builtin":
            raise OptionError(
                f"--soak needs the builtin driver (it reports the load as a time series); "
                f"{driver} reports totals only: leave out --driver or use --driver builtin"
            )
    return chosen


def open_document(
    selection: Selection,
    opts: RunOptions,
    plan: Plan,
    document: RunDocument | None,
    path: Path | None,
) -> tuple[RunDocument, Path]:
    """The results document to record into and its file: a resumed run's (refused when
    its plan changed), or a new one."""
    if document is not None:
        refuse_changed(document, selection, plan)
    if document is None or path is None:
        run_id = new_run_id()
        path = Path(opts.output) / f"{run_id}.json"
        document = new_document(run_id, selection, opts, plan)
    return document, path


def pause(console: Console, recorder: Recorder, at: int, rounds: int, output: Path) -> None:
    """--until-round: the run stops after that round, saved as interrupted."""
    recorder.document.status = "interrupted"
    recorder.save()
    console.print(
        escape(
            f"Paused after round {at} of {rounds}: {recorder.path}; continue with "
            f"manage.py runbench --resume {recorder.document.run_id} --output {output}"
        )
    )


def announce(
    console: Console,
    opts: RunOptions,
    selection: Selection,
    plan: Plan,
    run_id: str,
    scenarios: int,
    until_round: int | None,
) -> int:
    """The run's plan in one line (and tuning's); the progress bar's total."""
    console.print(
        escape(
            f"Run {run_id}: {len(plan.deployments)} deployment(s) x {scenarios} scenario(s) x "
            f"{len(plan.concurrency)} concurrency level(s) x "
            + (
                "a capacity search per candidate (screening, then finals)"
                if opts.tune and opts.capacity
                else "a trial per halving round"
                if opts.tune
                else "a search per pair"
                if opts.capacity or opts.sweep
                else f"a window per event ({', '.join(opts.churn)})"
                if opts.churn
                else f"{plan.trials} trial(s)"
            )
            + f"; driver {plan.driver.name}"
            + (
                f" (a new connection every {opts.new_connection_every} answer(s))"
                if opts.new_connection_every
                else ""
            )
            + f"; {opts.duration:g}s windows after {opts.warmup:g}s "
            f"warm-up; server CPUs {list(selection.server_cpus) or 'unpinned'}, driver CPUs "
            f"{list(selection.driver_cpus) or 'unpinned'}"
            + _what_the_budget_buys(opts, until_round)
        )
    )
    total = plan.total_trials()
    if opts.capacity or opts.sweep or opts.churn:  # one tick a pair
        total = len(plan.deployments) * len(plan.scenarios)
    if opts.tune:
        cpus = max(1, len(selection.server_cpus))
        count = sum(len(tuning.space(d.server.name, cpus)) for d in plan.deployments)
        total = 2 * count * len(plan.scenarios) * len(plan.concurrency)  # halving: < 2n
        if opts.capacity:  # screening: a tick a candidate and scenario; finals: 2 a server
            total = (count + 2 * len(plan.deployments)) * len(plan.scenarios)
        console.print(
            escape(
                f"Tuning: {count} candidate configuration(s) over {len(plan.deployments)} "
                f"server(s), objective {opts.objective}"
                + (f" with p99 <= {opts.slo_p99:g} ms" if opts.slo_p99 else "")
                + f", budget {opts.tune_budget:.0f} s"
            )
        )
    return total


def finish(
    console: Console, document: RunDocument, recorder: Recorder, path: Path, run_dir: Path
) -> str | None:
    """The run complete: saved, every table printed; what failed, in one sentence."""
    document.status = "complete"
    document.finished = store.now()
    recorder.save()
    print_results(console, document)
    print_capacity(console, document)
    print_sweep(console, document)
    print_churn(console, document)
    print_tuning(console, document)
    print_soak(console, document)
    print_held(console, document)
    print_hops(console, document)
    console.print(escape(f"Results: {path}\nLogs: {run_dir / 'logs'}"))
    bad = [e for e in document.results if e.status in ("failed", "invalid")]
    if document.tuning is not None:
        # A search's losing candidates may be invalid (uWSGI with one thread leaves
        # connections hung): that is the search working. A server with no best, or a
        # best that is invalid, is a failure.
        best = document.tuning.best
        bad = [e for e in bad if e.server not in best or best[e.server] == e.config]
    return f"{len(bad)} pair(s) failed or were invalid (see above)" if bad else None


def from_tuning(
    opts: RunOptions, templates: list[Deployment], console: Console
) -> list[Deployment]:
    """--config-from RUN: each server at the configuration that tuning run found best."""
    assert opts.config_from is not None
    raw = Path(opts.config_from)
    path = raw if raw.suffix == ".json" else Path(opts.output) / f"{opts.config_from}.json"
    try:
        document = store.load(path, kind="benchmark")
    except store.ResultsError as exc:
        raise OptionError(f"--config-from: {exc}") from None
    if document.tuning is None or not document.tuning.best:
        raise OptionError(f"--config-from: {path} is not a --tune run with a best configuration")
    found = tune.configured(document, templates)
    for d in templates:
        if d.server.name not in document.tuning.best:
            console.print(f"[yellow]skipped[/] {d.server.name}: not tuned in {path.name}")
    if not found:
        raise OptionError(f"--config-from: {path} tuned none of the servers asked")
    return found


def loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (names are resolved: a name may point anywhere)."""
    import ipaddress
    import socket

    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError):
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses
    )


def soak_scenarios(
    selection: Selection, opts: RunOptions, chosen: list[scenarios.Scenario]
) -> list[scenarios.Scenario]:
    """A soak loads HTTP scenarios: those asked, else the file's `soak` profile, else the
    first HTTP scenario of the default profile (a soak per scenario multiplies its time)."""
    if opts.scenarios_given:
        ws = [s.name for s in chosen if s.kind != "http"]
        if ws:
            raise OptionError(
                f"--soak loads HTTP scenarios only; {', '.join(ws)} "
                f"{'is a WebSocket scenario' if len(ws) == 1 else 'are WebSocket scenarios'}"
            )
        return chosen
    profiles = selection.scenario_file.profiles
    if "soak" in profiles:
        return [s for s in selection.scenario_file.select(profiles["soak"]) if s.kind == "http"]
    default = profiles.get("default")
    pool = selection.scenario_file.select(default) if default else selection.scenarios
    http = [s for s in pool if s.kind == "http"]
    if not http:
        raise OptionError(
            "--soak: the scenario file has no HTTP scenario; name one with --scenarios"
        )
    return http[:1]


def asgi_hops(scenario: scenarios.Scenario) -> AsgiHops:
    """The scenario's thread hops under ASGI, counted in-process (djbench.measure.hops)."""
    try:
        return hops.count(scenario)
    except Exception as exc:  # the project's own code ran: any failure is a sentence
        first = str(exc).splitlines()[0] if str(exc) else ""
        return AsgiHops(
            counted=False, why=f"the request failed in-process: {type(exc).__name__}: {first}"
        )


def scenario_meta(
    chosen: list[scenarios.Scenario], servers: list[ServerSpec]
) -> dict[str, ScenarioMeta]:
    # Hops are counted by running this project's views in-process: for a --target (the
    # stand-in spec "target") they would describe the local code, not the deployment.
    asgi = any(s.interface == "asgi" and s.name != "target" for s in servers)
    return {
        s.name: ScenarioMeta(
            fingerprint=s.fingerprint(),
            method=s.request.method,
            path=s.request.path,
            kind=s.kind,
            endpoint=s.endpoint,
            workload=s.workload,
            queries=s.expect.queries,
            variant=s.variant,
            asgi_hops=asgi_hops(s) if asgi and s.kind == "http" else None,
        )
        for s in chosen
    }


def plan_record(
    selection: Selection, opts: RunOptions, chosen: list[scenarios.Scenario], **fields: Any
) -> PlanRecord:
    """What every run records of its plan; `fields` add what a benchmark adds."""
    return PlanRecord(
        options=opts.model_dump(mode="json"),
        servers=[s.name for s in selection.servers],
        proxies=selection.proxies,
        scenarios=scenario_meta(chosen, selection.servers),
        scenario_file=str(selection.scenario_file.path),
        workers=opts.workers,
        threads=opts.threads,
        server_cpus=list(selection.server_cpus),
        driver_cpus=list(selection.driver_cpus),
        pinning="taskset" if selection.server_cpus else None,
        axes=opts.axes,
        **fields,
    )


def refuse_changed(document: RunDocument, selection: Selection, plan: Plan) -> None:
    """A resumed run must find the set-up it started with (djbench.run.resume)."""
    now = environment.collect(selection.project, {**tools(), "driver": plan.driver.version()})
    problems = resume.environment_changes(document.environment, now)
    problems += resume.scenario_changes(document, {s.name: s.fingerprint() for s in plan.scenarios})
    if problems:
        raise OptionError(resume.refusal(document.run_id, problems, "what it measures changed"))


def new_document(run_id: str, selection: Selection, opts: RunOptions, plan: Plan) -> RunDocument:
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
            # djbench.launch.servers.NO_RECYCLE).
            worker_recycling_by_requests=any(
                r is not None and r.max_requests is not None for r in opts.recycles()
            ),
            soak_s=opts.soak,
            recycle=list(opts.recycle),
            max_error_rate=plan.settings.max_error_rate,
            ws_idle=plan.ws_idle,
            seed=plan.seed,
            order=[[d.label for d in r] for r in plan.rounds()],
        ),
        skipped=selection.skipped,
    )


@contextlib.contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Progress]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import (
        Progress as Bar,
    )

    with Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("starting", total=total)

        def advance(n: int, label: str) -> None:
            bar.update(task, advance=n, description=escape(label) if label else None)

        yield Progress(advance=advance, say=lambda m: bar.console.print(escape(m)))
