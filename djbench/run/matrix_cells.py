"""``runbench --matrix``: one plan, run in one isolated environment per cell, interleaved.

1. Cells from the axes (:mod:`djbench.plan.matrix_axes`); a `ref` axis becomes a worktree
   per commit.
2. Each cell's requirements (djbench with the selected servers' extras, the project's
   own, the cell's pins as overrides) are resolved by uv for one interpreter; the same
   interpreter for every cell when one fits them all (so that only the axis differs),
   else the first that fits each, said as a warning. An environment per resolution
   (:mod:`djbench.launch.envs`, cached by hash).
3. Rounds: in each, server by server (in a seeded shuffled order, recorded), every cell
   runs that server's part of the plan (``--until-round``; later rounds ``--resume``
   that cell's file for that server), all cells at once with their windows taking turns
   page by page, or back to back in a random order (``--pairing``,
   :mod:`djbench.run.matrix_rounds`): the two sides of a pair are measured seconds
   apart, not a whole plan apart, so what the machine does meanwhile hits both.
4. Verdicts: each cell against the base with the decision engine
   (:mod:`djbench.verdicts.engine.decide`), paired by round, plus the verify gate's answer
   shapes (a changed shape is a correctness regression). Without ``--trials``, rounds
   go on until every pair is decided or ``--budget`` is spent, with alpha spent over
   the looks; with it, exactly that many rounds and one look.

A cell that cannot be built or run is recorded with its reason; the others go on.
"""

from __future__ import annotations

import datetime as dt
import random
import secrets
import time
from pathlib import Path

from djbench.plan import matrix_axes as plan
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.results.model import MatrixDocument
from djbench.run import matrix_cost
from djbench.run.matrix_build import (
    CellState,
    Settings,
    build_cells,
    remove_worktrees,
)
from djbench.run.matrix_rounds import play_round
from djbench.run.show import Show
from djbench.verdicts import matrix_verdicts as matrix
from djbench.verdicts import rules
from djbench.verdicts.runs import load_cell

MAX_ROUNDS = 60  # the most rounds a matrix run until decided plans for, whatever the budget
STARTUP_S = 12.0  # a runbench's own start, a server's start and verify gate (planning only)


def horizon(settings: Settings, round_s: float, left_s: float, pairs: int, done: int = 1) -> int:
    """The most rounds the run plans for, fixed once after the pilot round(s) (`done`,
    from the last one's time, before any verdict): those the budget allows; without
    --budget, no more than a PLANNED_CHANGE on one of `pairs` needs for 80% power at the
    planning noise."""
    if settings.rounds is not None:
        return settings.rounds
    most = min(MAX_ROUNDS, done + int(left_s // max(round_s, 1.0)))
    if settings.sized_by_power:
        most = min(most, rules.rounds_needed(rules.PLANNED_CHANGE, pairs, settings.alpha))
    return max(rules.MIN_ROUNDS, most)


def main(
    project: Project,
    opts: RunOptions,
    settings: Settings,
    show: Show,
    command: list[str],
) -> tuple[MatrixDocument, Path]:
    """Build, run interleaved until decided (or --trials rounds), judge; the matrix file
    is rewritten after every step."""
    clock = time.monotonic()
    cells = plan.cells(settings.axes)
    base_cell = plan.base_cell(cells, settings.base)
    matrix_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    out = Path(opts.output) / f"matrix-{matrix_id}"
    seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31)
    opts = opts.model_copy(update={"seed": seed})  # every cell shuffles its servers alike
    path = out / "matrix.json"
    document = MatrixDocument(
        matrix_id=matrix_id,
        started=store.now(),
        axes=settings.axes,
        base=base_cell.label,
        seed=seed,
        options=[*command],
        threshold=settings.threshold,
        alpha=settings.alpha,
        budget_s=settings.budget_s,
        until_decided=settings.rounds is None,
        on_inconclusive=opts.on_inconclusive,
        pairing=settings.pairing,
    )
    out.mkdir(parents=True, exist_ok=True)
    states = build_cells(project, opts, settings, show.line, out)
    document.cells = [s.record for s in states]
    store.write_atomic(path, document)
    try:
        base = next(s for s in states if s.cell == base_cell)
        document.cost = matrix_cost.run_phase(project, states, base, opts, settings, out, show.line)
        store.write_atomic(path, document)
        if document.cost is not None:
            show.line(show.matrix_cost(document.cost))
        if settings.cost != "only":  # --budget is the rounds' own: counted from here
            run_rounds(states, base_cell, opts, settings, document, path, show, time.monotonic())
    finally:
        remove_worktrees(states)
    document.checks = matrix.checks([c for _, c in loaded(states)])
    document.status = "complete"
    document.finished = store.now()
    document.seconds = round(time.monotonic() - clock, 1)
    store.write_atomic(path, document)
    return document, path


def run_rounds(
    states: list[CellState],
    base_cell: plan.Cell,
    opts: RunOptions,
    settings: Settings,
    document: MatrixDocument,
    path: Path,
    show: Show,
    clock: float,
) -> None:
    """Rounds until every pair is decided, the horizon is reached or the budget spent;
    a look (verdicts at the alpha it may spend) after each from MIN_ROUNDS on."""
    base = next(s for s in states if s.cell == base_cell)
    looks = matrix.Looks(settings.alpha)
    rng = random.Random(document.seed)
    out = path.parent
    round_index = 0
    first_noise = True
    while base.record.status == "ok" and sum(s.record.status == "ok" for s in states) > 1:
        started = time.monotonic()
        document.order.append(play_round(states, opts, settings, round_index, rng, out, show.line))
        round_index += 1
        round_s = time.monotonic() - started
        document.round_seconds.append(round(round_s, 1))
        if looks.most is None and round_index < pilot_rounds(settings, states):
            store.write_atomic(path, document)
            continue
        if looks.most is None:
            pairs = len(settings.servers) * len(opts.scenarios or ["?"]) * len(opts.concurrency)
            pairs *= len(states) - 1
            left_s = settings.budget_s - (time.monotonic() - clock)
            looks.most = horizon(settings, round_s, left_s, pairs, round_index)
            document.planned_rounds = looks.most
            show.line(plan_line(settings, round_s, looks.most, pairs))
        out_of_time = time.monotonic() - clock + round_s > settings.budget_s
        final = round_index >= looks.most or out_of_time
        looking = settings.rounds is None and round_index in rules.look_rounds(looks.most)
        if final or looking:
            judge(document, states, base, settings, looks.level(round_index, final), looks.most)
            document.rounds = round_index
            if document.noise is not None and first_noise:
                show.line(show.noise(document.noise))
                first_noise = False
            if not final and all(v.decided for v in document.verdicts):
                show.line(f"every pair decided after {round_index} round(s)")
                final = True
        store.write_atomic(path, document)
        if final:
            if out_of_time and round_index < looks.most:
                show.line(f"the budget is spent after {round_index} round(s)")
            break


def pilot_rounds(settings: Settings, states: list[CellState]) -> int:
    """The rounds whose time fixes the horizon: the first, or (cells side by side) the
    second, the first to run as the later ones will (the first runs the cells back to
    back: 72 s where the later took 60-66 s for three cells and two servers). Either
    way before the first look (MIN_ROUNDS), so before any verdict."""
    together = settings.pairing == "alternate" and sum(s.record.status == "ok" for s in states) > 1
    return 2 if together and settings.rounds is None else 1


def loaded(states: list[CellState]) -> list[tuple[CellState, matrix.Cell]]:
    """Every cell that ran, its runs loaded (one file per server) under its label."""
    return [
        (
            s,
            matrix.Cell(
                s.record.label, load_cell([Path(f) for f in s.record.run_files], s.record.label)
            ),
        )
        for s in states
        if s.record.status == "ok" and s.record.run_files
    ]


def judge(
    document: MatrixDocument,
    states: list[CellState],
    base: CellState,
    settings: Settings,
    level: float,
    horizon: int,
) -> None:
    """A look: each cell against the base at `level`, and the runner's noise."""
    cells = loaded(states)
    mine = next((c for s, c in cells if s is base), None)
    if mine is None:
        document.verdicts, document.noise = [], None
        return
    others = [c for s, c in cells if s is not base]
    document.verdicts = matrix.verdicts(mine, others, settings.threshold, settings.alpha, level)
    document.noise = matrix.noise(mine, others, settings.alpha, horizon)


def plan_line(settings: Settings, round_s: float, most: int, pairs: int) -> str:
    """After the pilot round: the horizon and why, its looks, what it flags and what a
    verdict needs here."""
    needs = ", ".join(
        f"{change:.0%} ~{(n := rules.rounds_needed(change, pairs, settings.alpha))} rounds "
        f"({n * round_s / 60:.0f} min)"
        for change in sorted({settings.threshold, 0.10, 0.15})
    )
    seen = rules.detectable(most, pairs, settings.alpha)
    sized = settings.sized_by_power and most == rules.rounds_needed(
        rules.PLANNED_CHANGE, pairs, settings.alpha
    )
    if sized:
        why = f"the rounds a {rules.PLANNED_CHANGE:.0%} change needs"
    elif settings.rounds is None and most == MAX_ROUNDS:
        why = "the most a matrix plans for"
    else:
        why = "the rounds the budget allows"
    looks = ", ".join(str(r) for r in rules.look_rounds(most))
    return (
        f"a round takes {round_s:.0f} s: the horizon is {most} round(s), {why} (at most "
        f"~{most * round_s / 60:.0f} min; looks after rounds {looks}, the run ends at the "
        f"first that decides every pair). They flag "
        f"{'no change under a halving' if seen is None else f'{seen:.0%}'} on one of "
        f"{pairs} pair(s) with 80% power at this machine's usual noise (sd "
        f"{rules.NOISE_SD} per round). A change needs: {needs}"
    )


def check_options(opts: RunOptions, raw_base: str | None, axes: dict[str, list[str]]) -> None:
    plan.base_cell(plan.cells(axes), raw_base)  # a bad --matrix-base is one line, now
