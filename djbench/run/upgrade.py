"""``runbench --matrix``'s command flow: check that a verdict is reachable before any
work, build and run the cells (:mod:`djbench.run.matrix_cells`), print the verdicts."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand
from rich.markup import escape

from djbench.launch import envs
from djbench.launch.process import terminate_on_signals
from djbench.plan import matrix_axes as matrix_plan
from djbench.plan.options import OptionError
from djbench.plan.project import current
from djbench.plan.recycle import parse_duration
from djbench.plan.runplan import RunOptions
from djbench.reports.console import console_for, print_matrix_result
from djbench.results import decide, store
from djbench.run import matrix_cells
from djbench.run.benchrun import select

DEFAULT_BUDGET = "15m"


def settings_from(
    options: dict[str, Any], opts: RunOptions, servers: list[str]
) -> matrix_cells.Settings:
    """The matrix's settings from runbench's options, each checked with one sentence."""
    axes = matrix_plan.parse(str(options["matrix"]))
    budget = parse_duration("--budget", str(options.get("budget") or DEFAULT_BUDGET))
    threshold = options.get("threshold")
    threshold = decide.THRESHOLD if threshold is None else threshold
    alpha = options.get("alpha")
    alpha = decide.ALPHA if alpha is None else alpha
    if not (math.isfinite(threshold) and 0 < threshold < 1):
        raise OptionError(f"--threshold takes a fraction like {decide.THRESHOLD}, not {threshold}")
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise OptionError(f"--alpha takes a probability like {decide.ALPHA}, not {alpha}")
    if (python := options.get("python")) is not None:
        try:
            envs.check_interpreter(python)
        except envs.EnvError as exc:
            raise OptionError(str(exc)) from None
    rounds = options.get("trials")
    if rounds is not None and rounds < decide.MIN_ROUNDS:
        raise OptionError(
            f"--matrix --trials {rounds}: a paired verdict needs at least {decide.MIN_ROUNDS} "
            "rounds (leave out --trials to run until every pair is decided)"
        )
    return matrix_cells.Settings(
        axes=axes,
        base=options.get("matrix_base"),
        python=options.get("python"),
        offline=bool(options.get("offline")),
        threshold=threshold,
        alpha=alpha,
        budget_s=budget,
        rounds=rounds,
        servers=servers,
    )


def round_estimate(opts: RunOptions, settings: matrix_cells.Settings) -> float:
    """Seconds one round should take: every server's part in every cell (planning)."""
    cells = len(matrix_plan.cells(settings.axes))
    per_unit = matrix_cells.STARTUP_S + len(opts.scenarios or [None, None, None]) * len(
        opts.concurrency
    ) * (opts.warmup + opts.duration + 1.0)
    return cells * max(1, len(settings.servers)) * per_unit


def check_reachable(opts: RunOptions, settings: matrix_cells.Settings) -> None:
    """Refuse, before anything is built, a budget that cannot buy the fewest rounds a
    verdict needs."""
    each = round_estimate(opts, settings)
    rounds = settings.rounds or decide.MIN_ROUNDS
    if rounds * each > settings.budget_s:
        fits = int(settings.budget_s // each)
        wanted = (
            f"--trials asks for {rounds}"
            if settings.rounds
            else f"a verdict needs at least {rounds}"
        )
        raise OptionError(
            f"--budget {settings.budget_s:.0f} s fits about {fits} round(s) of this plan "
            f"(~{each:.0f} s each) and {wanted}: give --budget "
            f"{math.ceil(rounds * each / 60) + 1}m or more, or fewer servers or scenarios"
        )


def main(command: BaseCommand, opts: RunOptions, options: dict[str, Any]) -> str | None:
    """--matrix: build each cell's environment, run the plan interleaved, judge."""
    axes = matrix_plan.parse(str(options["matrix"]))
    matrix_cells.check_options(opts, options.get("matrix_base"), axes)
    selection = select(opts)  # servers, scenarios and their file checked before any cell
    servers = opts.servers or [s.name for s in selection.servers]
    settings = settings_from(options, opts, servers)
    check_reachable(opts, settings)
    # Each cell's plan runs as many rounds as the matrix may ask of it (--until-round).
    opts = opts.model_copy(update={"trials": settings.rounds or matrix_cells.MAX_ROUNDS})
    console = console_for(command.stdout, no_color=bool(options.get("no_color")))
    if (problem := store.unwritable(Path(opts.output))) is not None:
        raise OptionError(f"--output: {problem}")
    cells = matrix_plan.cells(axes)
    how = (
        f"exactly {settings.rounds} round(s), one look"
        if settings.rounds
        else f"rounds until every pair is decided, within {settings.budget_s / 60:.0f} min"
    )
    console.print(
        escape(
            f"Matrix: {len(cells)} cells ({', '.join(c.label for c in cells)}), {how}; "
            f"base {matrix_plan.base_cell(cells, settings.base).label}; each round runs "
            "every server in every cell back to back"
        )
    )
    with terminate_on_signals():
        document, path = matrix_cells.main(
            current(),
            opts,
            settings,
            lambda m: console.print(escape(m)),
            ["runbench", *sys.argv[2:]] if len(sys.argv) > 2 else ["runbench"],
        )
    print_matrix_result(console, document)
    console.print(escape(f"Matrix: {path}"))
    return matrix_cells.problem(document)
