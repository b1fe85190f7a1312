"""What a job shows when it ends, from what it wrote (djbench.run.exits.Ended): a run's
tables, the report and guide beside its results file, its CI files and its answer; the
verify gate's matrix; a version matrix's cells and verdicts; --list's inventory. Reads
results files only, as every report does."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.markup import escape

from djbench.plan.inventory import Inventory
from djbench.reports import outputs
from djbench.reports.console import (
    print_capacity,
    print_churn,
    print_held,
    print_results,
    print_soak,
    print_sweep,
    print_tuning,
)
from djbench.reports.cost_output import print_costs
from djbench.reports.gate_output import print_hops, print_matrix
from djbench.reports.inventory_tables import print_list
from djbench.reports.matrix_output import print_matrix_result
from djbench.reports.mix_output import print_mixes
from djbench.reports.outputs import CiFiles
from djbench.results import store
from djbench.results.model import RunDocument
from djbench.results.store import ResultsError
from djbench.verdicts import thresholds
from djbench.verdicts.runs import load_run

# A document's tables in order; each prints only what the document holds (a --capacity
# run's capacity, a --tune run's tuning), so no job needs its own list.
TABLES = (
    print_results,
    print_capacity,
    print_tuning,
    print_churn,
    print_sweep,
    print_soak,
    print_mixes,
    print_held,
    print_hops,
)


def run_end(
    console: Console, path: Path, run_dir: Path | None, ci: CiFiles, strict: bool = False
) -> None:
    """A run's tables, the files beside it, its answer, where everything is."""
    try:
        document = store.load(path)
    except ResultsError as exc:
        console.print(escape(f"Results: {path} ({exc})"))
        return
    if document.kind == "verify":
        gate_end(console, document, path, run_dir)
        return
    if document.kind == "cost":
        print_costs(console, document)
        for text in outputs.write_beside(path) + outputs.write_cost_ci(path, ci):
            console.print(escape(text))
        console.print(
            escape(f"Results: {path}\nCompare two: manage.py benchcompare BASE.json {path}")
        )
        return
    for table in TABLES:
        table(console, document)
    written = outputs.write_beside(path) + outputs.write_ci(path, ci)
    for text in outputs.answer_lines(path):
        console.print(escape(text))
    console.print(escape(f"Results: {path}\nLogs: {run_dir or path.parent / document.run_id}/logs"))
    for text in written:
        console.print(escape(text))
    if not strict and (close := _too_close(path)):
        console.print(
            escape(
                f"{close} threshold(s) too close to call: not a pass, not a miss "
                "(--on-inconclusive fail makes them exit 1)"
            )
        )


def _too_close(path: Path) -> int:
    try:
        run = load_run(path)
    except ResultsError:
        return 0
    return sum(c.verdict == "too close" for _, c in thresholds.of_run(run))


def gate_end(console: Console, document: RunDocument, path: Path, run_dir: Path | None) -> None:
    """--verify-only: the gate's matrix and the ASGI hops."""
    print_matrix(console, document)
    print_hops(console, document)
    console.print(escape(f"Results: {path}\nLogs: {run_dir or path.parent / document.run_id}/logs"))


def matrix_end(console: Console, path: Path, ci: CiFiles) -> None:
    """--matrix: its cells, each cell's verdicts, the gate's lines, its CI files."""
    try:
        document = store.load_matrix(path)
    except ResultsError as exc:
        console.print(escape(f"Matrix: {path} ({exc})"))
        return
    print_matrix_result(console, document)
    console.print(escape(f"Matrix: {path}"))
    for line in outputs.write_matrix_ci(path, ci):
        console.print(escape(line))


def inventory_end(console: Console, found: Inventory) -> None:
    print_list(
        console,
        found.scenarios,
        found.scenario_file,
        found.drivers,
        problem=found.problem,
        profiles=found.profiles,
        own=found.own,
    )


class Ending(Protocol):
    """What a job left (djbench.run.exits.Ended: reports never import the run)."""

    @property
    def results(self) -> Path | None: ...
    @property
    def run_dir(self) -> Path | None: ...
    @property
    def matrix(self) -> Path | None: ...
    @property
    def inventory(self) -> Inventory | None: ...


def show(console: Console, ended: Ending, ci: CiFiles, strict: bool = False) -> None:
    """Whatever the job left: a results file, a matrix, an inventory (or nothing: a
    paused run said where it stopped)."""
    if ended.results is not None:
        run_end(console, ended.results, ended.run_dir, ci, strict)
    if ended.matrix is not None:
        matrix_end(console, ended.matrix, ci)
    if ended.inventory is not None:
        inventory_end(console, ended.inventory)
