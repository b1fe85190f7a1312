"""runbench's logic behind the thin management command: options -> plan -> run -> output."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from argparse import ArgumentParser
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connections
from rich.markup import escape

from djbench import environment, results, scenarios
from djbench.console import console_for, print_list, print_matrix, print_results
from djbench.drivers import DriverError, pick
from djbench.live import HOST, Deployment
from djbench.options import OptionError, choose, cpu_split, positive_ints
from djbench.process import PortBusy, check_port_free, terminate_on_signals
from djbench.project import Project, current
from djbench.proxy import PROXIES, caddy_missing
from djbench.runner import (
    GateResult,
    Plan,
    Progress,
    Recorder,
    new_run_id,
    run_benchmark,
    run_gates,
)
from djbench.servers import SERVERS, ServerSpec
from djbench.trial import LoadSettings

PROFILES: dict[str, dict[str, Any]] = {
    # About ten minutes over the twelve servers on a 2-core machine.
    "default": {"trials": 3, "duration": 3.0, "warmup": 1.0, "concurrency": "32"},
    # About two minutes: a smoke run, too few trials for a verdict.
    "quick": {"trials": 2, "duration": 1.0, "warmup": 0.3, "concurrency": "32"},
}
MAX_DURATION = 600.0  # seconds per timed window: every load loop is bounded


def add_load_arguments(parser: ArgumentParser) -> None:
    a = parser.add_argument
    a("--quick", action="store_true", help="the quick profile (about 2 minutes)")
    a("--concurrency", help="comma-separated connection counts (default 32)")
    a("--duration", type=float, help="seconds per timed window (default 3; quick 1)")
    a("--warmup", type=float, help="seconds of warm-up before each window (default 1)")
    a("--trials", type=int, help="trials per pair, each a fresh window (default 3; quick 2)")
    a("--driver", default="auto", help="auto, wrk or builtin (auto: wrk when on PATH)")
    a("--rate", type=float, help="open loop at this many requests/s (builtin driver)")
    a("--max-error-rate", type=float, default=0.01, help="above it a trial is invalid")
    a("--ws-idle", type=int, default=1000, help="idle WebSocket connections to hold (0: off)")
    a("--seed", type=int, help="seed of the interleaving order (default: random, recorded)")
    a("--resume", metavar="RUN_ID", help="finish an interrupted run from its results file")


@dataclass
class Selection:
    project: Project
    scenario_file: scenarios.ScenarioFile
    scenarios: list[scenarios.Scenario]
    servers: list[ServerSpec]
    skipped: dict[str, str]  # server or proxy -> why it is not run
    proxies: list[str]
    server_cpus: tuple[int, ...]
    driver_cpus: tuple[int, ...]


def select(options: dict[str, Any]) -> Selection:
    project = current()
    path = options.get("scenario_file") or project.scenarios
    try:
        scenario_file = scenarios.load(Path(path))
    except scenarios.ScenarioError as exc:
        raise OptionError(str(exc)) from None
    chosen = choose("scenario", options.get("scenarios"), scenario_file.names())
    names = choose("server", options.get("servers"), SERVERS)
    proxies = choose("proxy", options.get("proxy") or "none", PROXIES) or ["none"]
    if options["workers"] < 1:
        raise OptionError("--workers takes a whole number of at least 1")
    if options.get("threads") is not None and options["threads"] < 1:
        raise OptionError("--threads takes a whole number of at least 1")
    server_cpus, driver_cpus = cpu_split(options["cpus"])
    skipped: dict[str, str] = {}
    servers: list[ServerSpec] = []
    for spec in [SERVERS[n] for n in names] if names else list(SERVERS.values()):
        missing = spec.missing()
        if missing:
            skipped[spec.name] = (
                f'not installed (missing {", ".join(missing)}): pip install "djbench[{spec.extra}]"'
            )
        elif options["workers"] > 1 and not spec.multi_worker:
            skipped[spec.name] = f"runs one process only; --workers {options['workers']} asked"
        else:
            servers.append(spec)
    if "caddy" in proxies and caddy_missing():
        if proxies == ["caddy"]:
            raise OptionError('--proxy caddy: caddy is not installed: pip install "djbench[caddy]"')
        skipped["caddy"] = 'not installed: pip install "djbench[caddy]"'
        proxies = [p for p in proxies if p != "caddy"]
    if options.get("port") is not None:
        try:
            check_port_free(HOST, options["port"])
        except PortBusy as exc:
            raise OptionError(f"--port {options['port']}: {exc}") from None
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


def deployments(selection: Selection, options: dict[str, Any]) -> list[Deployment]:
    return [
        Deployment(
            server=spec,
            proxy=proxy,
            workers=options["workers"],
            threads=options.get("threads"),
            cpus=selection.server_cpus,
            port=options.get("port"),
        )
        for spec in selection.servers
        for proxy in selection.proxies
    ]


def setup_project(command: BaseCommand, project: Project) -> None:
    for argv in project.setup_commands:
        try:
            call_command(*argv, stdout=command.stdout, stderr=command.stderr)
        except (CommandError, DatabaseError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CommandError(f"setup command {' '.join(argv)!r} failed: {first}") from None
    connections.close_all()  # servers open their own; keep no SQLite lock here


def tools() -> dict[str, str | None]:
    from djbench.servers import executable_path

    caddy = executable_path("caddy")
    wrk = executable_path("wrk")
    return {
        "caddy": environment.tool_version([caddy, "version"]) if caddy else None,
        "wrk": environment.tool_version([wrk, "--version"]) if wrk else None,
    }


def gate_entry(result: GateResult, scenario: scenarios.Scenario) -> dict[str, Any]:
    verdict = result.verdicts[scenario.name]
    d = result.deployment
    return {
        "server": d.server.name,
        "scenario": scenario.name,
        "proxy": d.proxy,
        "status": verdict.status,
        "reason": verdict.reason,
        "shape": verdict.shape,
        "scenario_fingerprint": scenario.fingerprint(),
        "startup_seconds": result.startup_seconds,
        "command": result.commands,
    }


# Options that describe a run (saved in its file, reused by --resume).
RUN_OPTIONS = (
    "servers",
    "scenarios",
    "scenario_file",
    "proxy",
    "workers",
    "threads",
    "cpus",
    "port",
    "quick",
    "concurrency",
    "duration",
    "warmup",
    "trials",
    "driver",
    "rate",
    "max_error_rate",
    "ws_idle",
    "seed",
)


def resumed(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """The saved document and options of the run named by --resume."""
    path = Path(options["output"]) / f"{options['resume']}.json"
    try:
        document = results.load(path)
    except results.ResultsError as exc:
        raise OptionError(f"--resume {options['resume']}: {exc}") from None
    if document.get("kind") != "benchmark":
        raise OptionError(f"--resume: {path} is not a benchmark run")
    if document.get("status") == "complete":
        raise OptionError(f"--resume: run {options['resume']} is already complete")
    saved = dict(document["plan"]["options"])
    saved["scenario_file"] = Path(saved["scenario_file"]) if saved.get("scenario_file") else None
    return document, {**options, **saved}, path


def profile_values(options: dict[str, Any], file: scenarios.ScenarioFile) -> dict[str, Any]:
    """Trials, durations, concurrency and scenarios: explicit options over the profile's."""
    profile = "quick" if options.get("quick") else "default"
    values: dict[str, Any] = {
        k: options.get(k) if options.get(k) is not None else v for k, v in PROFILES[profile].items()
    }
    values["profile"] = profile
    values["concurrency"] = positive_ints("--concurrency", str(values["concurrency"]))
    if values["trials"] < 1:
        raise OptionError("--trials takes a whole number of at least 1")
    if not 0 < values["duration"] <= MAX_DURATION:
        raise OptionError(f"--duration takes seconds above 0 and at most {MAX_DURATION:.0f}")
    if not 0 <= values["warmup"] <= MAX_DURATION:
        raise OptionError(f"--warmup takes seconds from 0 to {MAX_DURATION:.0f}")
    if options.get("rate") is not None and options["rate"] <= 0:
        raise OptionError("--rate takes requests per second above 0")
    if not 0 <= options["max_error_rate"] <= 1:
        raise OptionError("--max-error-rate takes a fraction from 0 to 1, e.g. 0.01")
    if options["ws_idle"] < 0 or options["ws_idle"] > 20000:
        raise OptionError("--ws-idle takes a count from 0 to 20000")
    values["default_scenarios"] = file.profiles.get(profile)
    return values


def main(command: BaseCommand, options: dict[str, Any]) -> str | None:
    """Run what the options ask; return a one-line problem when a pair failed, else None."""
    document: dict[str, Any] | None = None
    path: Path | None = None
    if options.get("resume"):
        document, options, path = resumed(options)
    selection = select(options)
    console = console_for(command.stdout, no_color=options.get("no_color", False))
    if options["list"]:
        print_list(
            console, list(selection.scenario_file.scenarios), str(selection.scenario_file.path)
        )
        return None
    for name, why in selection.skipped.items():
        console.print(f"[yellow]skipped[/] {name}: {escape(why)}")
    if not selection.servers:
        raise CommandError(
            "no server to run: " + "; ".join(f"{k} {v}" for k, v in selection.skipped.items())
        )
    if options["verify_only"]:
        return verify_only(command, console, selection, options)
    return benchmark(command, console, selection, options, document, path)


def verify_only(
    command: BaseCommand, console: Any, selection: Selection, options: dict[str, Any]
) -> str | None:
    if not options["no_setup"]:
        setup_project(command, selection.project)
    run_id = new_run_id()
    output: Path = options["output"]
    run_dir = output / run_id
    path = output / f"{run_id}.json"
    document: dict[str, Any] = {
        "schema_version": results.SCHEMA_VERSION,
        "run_id": run_id,
        "kind": "verify",
        "environment": environment.collect(selection.project.directory, tools()),
        "settings": {
            "workers": options["workers"],
            "threads": options.get("threads"),
            "server_cpus": list(selection.server_cpus),
            "driver_cpus": list(selection.driver_cpus),
            "proxies": selection.proxies,
            "scenario_file": str(selection.scenario_file.path),
        },
        "skipped": selection.skipped,
        "results": [],
    }
    plan = deployments(selection, options)

    def done(result: GateResult) -> None:
        document["results"] += [gate_entry(result, s) for s in selection.scenarios]
        results.write_atomic(path, document)
        state = "[red]failed[/]" if result.failed else "[green]verified[/]"
        took = (
            "" if result.startup_seconds is None else f" (ready in {result.startup_seconds:.1f}s)"
        )
        console.print(f"{state} {result.deployment.label}{took}")
        if result.error:
            console.print(f"    {escape(result.error)}")

    with terminate_on_signals():
        gates = run_gates(
            selection.project,
            plan,
            selection.scenarios,
            run_dir,
            selection.scenario_file.health_path,
            on_done=done,
        )
    print_matrix(console, gates, selection.scenarios)
    console.print(escape(f"Results: {path}\nLogs: {run_dir / 'logs'}"))
    failed = [g.deployment.label for g in gates if g.failed]
    return f"verification failed for {', '.join(failed)} (see above)" if failed else None


def benchmark(
    command: BaseCommand,
    console: Any,
    selection: Selection,
    options: dict[str, Any],
    document: dict[str, Any] | None,
    path: Path | None,
) -> str | None:
    values = profile_values(options, selection.scenario_file)
    try:
        driver = pick(options["driver"], needs_rate=options.get("rate") is not None)
    except (DriverError, KeyError) as exc:
        if isinstance(exc, KeyError):
            raise OptionError(
                f"unknown driver {options['driver']!r}; valid: auto, wrk, builtin"
            ) from None
        raise OptionError(str(exc)) from None
    chosen = selection.scenarios
    if not options.get("scenarios") and values["default_scenarios"]:
        chosen = selection.scenario_file.select(values["default_scenarios"])
    seed = options.get("seed")
    if seed is None:
        seed = secrets.randbelow(2**31)
    options = {**options, "seed": seed}
    settings = LoadSettings(
        duration=values["duration"],
        warmup=values["warmup"],
        driver_cpus=selection.driver_cpus,
        rate=options.get("rate"),
        max_error_rate=options["max_error_rate"],
    )
    plan = Plan(
        deployments=deployments(selection, options),
        scenarios=chosen,
        concurrency=values["concurrency"],
        trials=values["trials"],
        settings=settings,
        driver=driver,
        health_path=selection.scenario_file.health_path,
        ws_idle=options["ws_idle"],
        seed=seed,
    )
    if not options["no_setup"]:
        setup_project(command, selection.project)
    output: Path = options["output"]
    if document is None or path is None:
        run_id = new_run_id()
        path = output / f"{run_id}.json"
        document = new_document(run_id, selection, options, values, plan)
    run_id = document["run_id"]
    run_dir = output / run_id
    document["status"] = "running"
    recorder = Recorder(path, document)
    recorder.save()
    console.print(
        escape(
            f"Run {run_id}: {len(plan.deployments)} deployment(s) x {len(chosen)} scenario(s) x "
            f"{len(plan.concurrency)} concurrency level(s) x {plan.trials} trial(s); "
            f"driver {driver.name}; {values['duration']:g}s windows after {values['warmup']:g}s "
            f"warm-up; server CPUs {list(selection.server_cpus) or 'unpinned'}, driver CPUs "
            f"{list(selection.driver_cpus) or 'unpinned'}"
        )
    )
    try:
        with terminate_on_signals(), progress_bar(console, plan.total_trials()) as progress:
            run_benchmark(selection.project, plan, recorder, run_dir, progress)
    except KeyboardInterrupt:
        document["status"] = "interrupted"
        recorder.save()
        raise CommandError(
            f"interrupted; every server was stopped; results so far in {path}; "
            f"finish with: manage.py runbench --resume {run_id}",
            returncode=130,
        ) from None
    document["status"] = "complete"
    document["finished"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    recorder.save()
    print_results(console, document)
    console.print(escape(f"Results: {path}\nLogs: {run_dir / 'logs'}"))
    bad = [e for e in document["results"] if e["status"] in ("failed", "invalid")]
    return f"{len(bad)} pair(s) failed or were invalid (see above)" if bad else None


def new_document(
    run_id: str, selection: Selection, options: dict[str, Any], values: dict[str, Any], plan: Plan
) -> dict[str, Any]:
    saved = {
        k: (str(v) if isinstance(v, Path) else v) for k, v in options.items() if k in RUN_OPTIONS
    }
    saved["scenario_file"] = str(selection.scenario_file.path)
    return {
        "schema_version": results.SCHEMA_VERSION,
        "run_id": run_id,
        "kind": "benchmark",
        "status": "running",
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "environment": environment.collect(
            selection.project.directory, {**tools(), "driver": plan.driver.version()}
        ),
        "plan": {
            "options": saved,
            "profile": values["profile"],
            "servers": [s.name for s in selection.servers],
            "proxies": selection.proxies,
            "scenarios": {
                s.name: {
                    "fingerprint": s.fingerprint(),
                    "method": s.request.method,
                    "path": s.request.path,
                    "kind": s.kind,
                    "endpoint": s.endpoint,
                    "workload": s.workload,
                    "queries": s.expect.queries,
                    "variant": s.variant,
                }
                for s in plan.scenarios
            },
            "concurrency": plan.concurrency,
            "trials": plan.trials,
            "duration": plan.settings.duration,
            "warmup": plan.settings.warmup,
            "driver": plan.driver.name,
            "rate": plan.settings.rate,
            "loop": "open" if plan.settings.rate else "closed",
            "keep_alive": True,
            "workers": options["workers"],
            "threads": options.get("threads"),
            "server_cpus": list(selection.server_cpus),
            "driver_cpus": list(selection.driver_cpus),
            "pinning": "taskset" if selection.server_cpus else None,
            # Off during benchmarks for every server (see djbench.servers.NO_RECYCLE).
            "worker_recycling_by_requests": False,
            "max_error_rate": plan.settings.max_error_rate,
            "ws_idle": plan.ws_idle,
            "seed": plan.seed,
            "order": [[d.label for d in r] for r in plan.rounds()],
        },
        "skipped": selection.skipped,
        "deployment_rounds": [],
        "results": [],
    }


@contextlib.contextmanager
def progress_bar(console: Any, total: int) -> Iterator[Progress]:
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
