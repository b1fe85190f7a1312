"""runbench's logic behind the thin management command: options -> plan -> run -> output."""

from __future__ import annotations

import os
from argparse import ArgumentParser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from rich.markup import escape

from djbench import environment, results, scenarios
from djbench.console import console_for, print_list, print_matrix
from djbench.live import HOST, Deployment
from djbench.options import OptionError, choose, cpu_split
from djbench.process import PortBusy, check_port_free, terminate_on_signals
from djbench.project import Project, current
from djbench.proxy import PROXIES, caddy_missing
from djbench.runner import GateResult, new_run_id, run_gates
from djbench.servers import SERVERS, ServerSpec


def add_load_arguments(parser: ArgumentParser) -> None:
    """Options of the timed part (see issue 4); parsed here so --help lists them."""


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
            skipped[spec.name] = (f"not installed (missing {', '.join(missing)}): "
                                  f'pip install "djbench[{spec.extra}]"')  # fmt: skip
        elif options["workers"] > 1 and not spec.multi_worker:
            skipped[spec.name] = f"runs one process only; --workers {options['workers']} asked"
        else:
            servers.append(spec)
    if "caddy" in proxies and caddy_missing():
        skipped["caddy"] = 'not installed: pip install "djbench[caddy]"'
        proxies = [p for p in proxies if p != "caddy"]
    if options.get("port") is not None:
        try:
            check_port_free(HOST, options["port"])
        except PortBusy as exc:
            raise OptionError(f"--port {options['port']}: {exc}") from None
    return Selection(
        project=project, scenario_file=scenario_file,
        scenarios=scenario_file.select(chosen or None), servers=servers, skipped=skipped,
        proxies=proxies or ["none"], server_cpus=server_cpus, driver_cpus=driver_cpus,
    )  # fmt: skip


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
        except CommandError as exc:
            raise CommandError(f"setup command {' '.join(argv)!r} failed: {exc}") from None
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
        "server": d.server.name, "scenario": scenario.name, "proxy": d.proxy,
        "status": verdict.status, "reason": verdict.reason, "shape": verdict.shape,
        "scenario_fingerprint": scenario.fingerprint(),
        "startup_seconds": result.startup_seconds, "command": result.commands,
    }  # fmt: skip


def main(command: BaseCommand, options: dict[str, Any]) -> int:
    selection = select(options)
    console = console_for(command.stdout, no_color=options.get("no_color", False))
    if options["list"]:
        print_list(
            console, list(selection.scenario_file.scenarios), str(selection.scenario_file.path)
        )
        return 0
    for name, why in selection.skipped.items():
        console.print(f"[yellow]skipped[/] {name}: {escape(why)}")
    if not selection.servers:
        raise CommandError(
            "no server to run: " + "; ".join(f"{k} {v}" for k, v in selection.skipped.items())
        )
    if not options["no_setup"]:
        setup_project(command, selection.project)
    run_id = new_run_id()
    output: Path = options["output"]
    run_dir = output / run_id
    path = output / f"{run_id}.json"
    document: dict[str, Any] = {
        "schema_version": results.SCHEMA_VERSION, "run_id": run_id, "kind": "verify",
        "environment": environment.collect(selection.project.directory, tools()),
        "settings": {"workers": options["workers"], "threads": options.get("threads"),
                     "server_cpus": list(selection.server_cpus),
                     "driver_cpus": list(selection.driver_cpus),
                     "proxies": selection.proxies,
                     "scenario_file": str(selection.scenario_file.path)},
        "skipped": selection.skipped, "results": [],
    }  # fmt: skip
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
        gates = run_gates(selection.project, plan, selection.scenarios, run_dir,
                          selection.scenario_file.health_path, on_done=done)  # fmt: skip
    print_matrix(console, gates, selection.scenarios)
    console.print(escape(f"Results: {path}\nLogs: {run_dir / 'logs'}"))
    return 1 if any(g.failed for g in gates) else 0


os.environ.setdefault("COLUMNS", "160")
