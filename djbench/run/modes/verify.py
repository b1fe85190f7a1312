"""--verify-only: the verify gate on every deployment (status, content type, query
count, WebSocket echo and broadcast), recorded; nothing timed."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand
from rich.console import Console
from rich.markup import escape

from djbench.launch.process import terminate_on_signals
from djbench.measure import environment
from djbench.plan.runplan import RunOptions
from djbench.reports.console import console_for, print_skipped
from djbench.reports.gate_output import print_gate, print_hops, print_matrix
from djbench.results import store
from djbench.results.model import RunDocument
from djbench.run import exits, logins, variants
from djbench.run.exits import Outcome
from djbench.run.gates import GateResult, gate_entries, new_run_id, run_gates
from djbench.run.modes.base import Invocation, Mode
from djbench.run.record import plan_record, tools
from djbench.run.selection import runnable
from djbench.run.session import begin, selected, setup_project


class VerifyMode(Mode):
    name = "verify"

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Outcome | None:
        return verify_only(command, console_for(command.stdout, no_color=how.no_color), opts)


def verify_only(command: BaseCommand, console: Console, opts: RunOptions) -> Outcome | None:
    selection = selected(opts)
    begin(console, opts)
    print_skipped(console, selection.skipped)
    if opts.setup and opts.target is None:
        setup_project(command, selection.project)
    selection.scenarios = logins.prepare(selection.scenarios)
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
    # The gate is this job's verdict: a server that fails it fails the job (exit 1).
    return (
        exits.verdict(f"verification failed for {', '.join(failed)} (see above)")
        if failed
        else None
    )
