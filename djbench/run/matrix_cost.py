"""A matrix's cost phase: before any round, every cell's pages counted under Valgrind
(``runbench --cost`` in the cell's own interpreter and checkout), then each cell judged
against the base (:func:`djbench.verdicts.cost.compare`). Instruction counts do not move
with the machine, so this decides in minutes what the rounds would need an hour for;
the rounds follow unless ``--cost-only``.

Pinned between cells, because their text moves the count (measured: two identical
probes whose environments differed in one folder name, 0.05-0.1% apart): the cells'
variables (``MATRIX_CELL_ENV``) are filled with one folder for every cell, emptied
before each; cells are counted one after the other. Not pinned: the interpreter's and
the checkout's paths (a ref cell's worktree, each cell's environment), whose lengths are
recorded in each cost file and named when they differ.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from djbench.measure import cost
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.results.model import CostRecord, MatrixCost, Notice
from djbench.results.store import ResultsError
from djbench.run.cli import cell_argv
from djbench.run.matrix_build import CellState, Settings, run_in_cell
from djbench.verdicts import cost as verdicts

PINNED = "cost-cell"  # the one {cell_dir} every cell's probe runs with
SECONDS_PER_COUNT = 240  # a page under one seed takes 10-60 s; the cell's timeout is generous


def run_phase(
    project: Project,
    states: list[CellState],
    base: CellState,
    opts: RunOptions,
    settings: Settings,
    out: Path,
    say: Callable[[str], None],
) -> MatrixCost | None:
    """Count every cell, base first, then compare each with the base; None: --no-cost."""
    if settings.cost == "skip":
        return None
    if cost.valgrind() is None:
        notice = Notice(code="cost_no_valgrind", params={"package": cost.VALGRIND_PACKAGE})
        return MatrixCost(status="skipped", reason=notice)
    started = time.monotonic()
    phase = MatrixCost()
    records: dict[str, CostRecord] = {}
    for state in sorted(states, key=lambda s: s is not base):
        if state.record.status != "ok":
            continue
        say(f"cost: counting {state.cell.label}")
        counted = _count_cell(project, state, opts, settings, out)
        if isinstance(counted, Notice):
            phase.failed[state.record.label] = counted
            state.record.status = "failed"  # the rounds would meet the same broken cell
            state.record.reason = f"its cost probe {counted.params['why']}"
            continue
        phase.files[state.record.label], records[state.record.label] = str(counted[0]), counted[1]
    mine = records.get(base.record.label)
    if mine is not None:
        phase.comparisons = [
            verdicts.compare(mine, other, settings.cost_threshold, (base.record.label, label))
            for label, other in records.items()
            if label != base.record.label
        ]
    shutil.rmtree(out / PINNED, ignore_errors=True)  # the last cell's database and files
    phase.seconds = round(time.monotonic() - started, 1)
    return phase


def _cell_out(out: Path, state: CellState) -> Path:
    return (out / "cells" / state.cell.slug).resolve()


def cell_command(state: CellState, opts: RunOptions, settings: Settings, out: Path) -> list[str]:
    assert state.python is not None
    return [
        state.python,
        "manage.py",
        "runbench",
        "--cost",
        "--cost-seeds",
        str(settings.cost_seeds),
        *cell_argv(opts.model_copy(update={"servers": []}), job="cost"),  # pages only
        "--output",
        str(_cell_out(out, state) / "cost"),
        "--no-color",
    ]


def _count_cell(
    project: Project, state: CellState, opts: RunOptions, settings: Settings, out: Path
) -> tuple[Path, CostRecord] | Notice:
    """One cell's runbench --cost: its record, or why there is none."""
    assert state.project_dir is not None
    argv = cell_command(state, opts, settings, out)
    state.record.commands.append(shlex.join(argv))
    pinned = (out / PINNED).resolve()
    shutil.rmtree(pinned, ignore_errors=True)
    pinned.mkdir(parents=True)
    env = {**os.environ, **{k: v.format(cell_dir=pinned) for k, v in project.matrix_cell_env}}
    env.pop("VIRTUAL_ENV", None)
    folder = _cell_out(out, state) / "cost"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "cost.log"
    pages = max(1, len(opts.scenarios) or 3)
    code = run_in_cell(state, argv, env, log, SECONDS_PER_COUNT * pages * settings.cost_seeds)
    return _record(folder, code, log)


def _record(folder: Path, code: int | None, log: Path) -> tuple[Path, CostRecord] | Notice:
    """The cell's cost file, or why it has none (a project that no longer imports under
    the new version is the likeliest: its traceback's last lines are the reason)."""
    lines = log.read_text(errors="replace").splitlines()
    tail = " | ".join(line.strip() for line in lines[-3:] if line.strip())
    files = sorted(p for p in folder.glob("*.json") if p.is_file())
    if code is None or not files:
        why = "timed out" if code is None else f"exited with {code} and saved nothing"
        if any(line.startswith("Traceback (most recent call last)") for line in lines):
            why += " after a traceback"
        return Notice(code="cost_cell_failed", params={"why": f"{why}: {tail} (log: {log})"})
    try:
        document = store.load(files[-1], kind="cost")
    except ResultsError as exc:
        return Notice(code="cost_cell_failed", params={"why": f"left an unreadable file: {exc}"})
    assert document.cost is not None
    return files[-1], document.cost
