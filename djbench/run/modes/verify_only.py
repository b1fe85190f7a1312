"""--verify-only: the verify gate on every deployment (status, content type, query
count, WebSocket echo and broadcast), recorded; nothing timed."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from djbench.launch import datastate
from djbench.launch.process import terminate_on_signals
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.run import exits, logins, variants
from djbench.run.exits import Ended
from djbench.run.gates import GateResult, gate_entries, new_run_id, run_gates
from djbench.run.modes.job import Invocation, Mode
from djbench.run.record import new_document
from djbench.run.selection import runnable
from djbench.run.session import begin, selected, setup_project, writers
from djbench.run.show import Show


class VerifyMode(Mode):
    name = "verify"

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Ended:
        return verify_only(command, how.show, opts)


def verify_only(command: BaseCommand, show: Show, opts: RunOptions) -> Ended:
    selection = selected(opts, show)
    begin(show, opts)
    show.skipped(selection.skipped)
    if opts.setup and opts.target is None:
        setup_project(command, selection.project)
    selection.scenarios = logins.prepare(selection.scenarios)
    run_id = new_run_id()
    output = Path(opts.output)
    run_dir = output / run_id
    path = output / f"{run_id}.json"
    document = new_document(run_id, selection, opts)
    plan, not_run, why = runnable(selection, opts, show)
    document.results += variants.refused_entries(not_run, selection.scenarios, [None], why)

    def done(result: GateResult) -> None:
        document.results += gate_entries(result, selection.scenarios)
        store.write_atomic(path, document)
        show.gate(result.deployment.label, result.startup_seconds, result.error)

    with (
        datastate.same_data(run_dir, writers(selection.scenarios)) as data,
        terminate_on_signals(),
    ):
        run_gates(
            selection.project,
            plan,
            selection.scenarios,
            run_dir,
            selection.scenario_file.health_path,
            on_done=done,
        )
        document.plan.data = data.record
    document.status = "complete"
    document.finished = store.now()
    store.write_atomic(path, document)
    failed = sorted({e.label for e in document.results if e.status == "failed"})
    # The gate is this job's verdict: a server that fails it fails the job (exit 1).
    outcome = exits.verdict("gate_failed", labels=failed) if failed else None
    return Ended(path, run_dir, outcome=outcome)
