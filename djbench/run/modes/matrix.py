"""``runbench --matrix``'s command flow: check that a verdict is reachable before any
work, build and run the cells (:mod:`djbench.run.matrix_cells`), print the verdicts."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from django.core.management.base import BaseCommand

from djbench.launch import envs
from djbench.launch.process import terminate_on_signals
from djbench.measure import cost as measure_cost
from djbench.plan import matrix_axes as matrix_plan
from djbench.plan import runplan
from djbench.plan.options import OptionError
from djbench.plan.project import current
from djbench.plan.recycle import parse_duration
from djbench.plan.runplan import QUICK_BUDGET_S, RunOptions
from djbench.results import store
from djbench.run import exits, matrix_build, matrix_cells
from djbench.run.exits import Ended, Outcome
from djbench.run.flags import MATRIX_BUDGET
from djbench.run.modes.job import Invocation, Mode
from djbench.run.selection import select
from djbench.verdicts import cost as verdicts_cost
from djbench.verdicts import matrix_verdicts as matrix
from djbench.verdicts import rules


@dataclass(frozen=True)
class MatrixAsk:
    """What --matrix and its own options asked, as given (checked by settings_from)."""

    axes: str
    base: str | None
    python: str | None
    offline: bool
    threshold: float | None
    alpha: float | None
    budget: str | None
    rounds: int | None  # --trials
    quick: bool = False  # --quick: QUICK_BUDGET_S unless --budget says otherwise
    cost_only: bool = False
    no_cost: bool = False
    cost_threshold: float | None = None
    cost_seeds: int | None = None
    pairing: str | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> MatrixAsk:
        return cls(
            axes=str(options["matrix"]),
            base=options.get("matrix_base"),
            python=options.get("python"),
            offline=bool(options.get("offline")),
            threshold=options.get("threshold"),
            alpha=options.get("alpha"),
            budget=options.get("budget"),
            rounds=options.get("trials"),
            quick=bool(options.get("quick")),
            cost_only=bool(options.get("cost_only")),
            no_cost=bool(options.get("no_cost")),
            cost_threshold=options.get("cost_threshold"),
            cost_seeds=options.get("cost_seeds"),
            pairing=options.get("pairing"),
        )


def settings_from(ask: MatrixAsk, servers: list[str]) -> matrix_build.Settings:
    """The matrix's settings from what was asked, each checked with one sentence."""
    axes = matrix_plan.parse(ask.axes)
    default = f"{QUICK_BUDGET_S:g}s" if ask.quick else MATRIX_BUDGET
    budget = parse_duration("--budget", ask.budget or default)
    threshold = _fraction(
        "--threshold", rules.THRESHOLD if ask.threshold is None else ask.threshold
    )
    alpha = rules.ALPHA if ask.alpha is None else ask.alpha
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise OptionError(f"--alpha takes a probability like {rules.ALPHA}, not {alpha}")
    if (python := ask.python) is not None:
        try:
            envs.check_interpreter(python)
        except envs.EnvError as exc:
            raise OptionError(str(exc)) from None
    rounds = ask.rounds
    if rounds is not None and rounds < rules.MIN_ROUNDS:
        raise OptionError(
            f"--matrix --trials {rounds}: a paired verdict needs at least {rules.MIN_ROUNDS} "
            "rounds (leave out --trials to run until every pair is decided)"
        )
    return matrix_build.Settings(
        pairing=runplan.pairing({"pairing": ask.pairing}),
        cost=cost_phase(ask),
        cost_threshold=_fraction(
            "--cost-threshold",
            verdicts_cost.THRESHOLD if ask.cost_threshold is None else ask.cost_threshold,
        ),
        cost_seeds=runplan.cost_seeds(ask.cost_seeds),
        axes=axes,
        base=ask.base,
        python=ask.python,
        offline=ask.offline,
        threshold=threshold,
        alpha=alpha,
        budget_s=budget,
        sized_by_power=ask.budget is None and not ask.quick,
        rounds=rounds,
        servers=servers,
    )


def _fraction(flag: str, value: float) -> float:
    if not (math.isfinite(value) and 0 < value < 1):
        raise OptionError(f"{flag} takes a fraction like 0.05, not {value}")
    return value


def cost_phase(ask: MatrixAsk) -> Literal["first", "only", "skip"]:
    """What the cost phase does: --cost-only needs Valgrind (a one-line refusal without
    it); the default counts first when Valgrind is there and says so when it is not."""
    if ask.cost_only and ask.no_cost:
        raise OptionError("--cost-only and --no-cost contradict each other: give one")
    if ask.cost_only and measure_cost.valgrind() is None:
        raise OptionError(
            f"--cost-only counts instructions under Valgrind, which is not installed here "
            f"(Debian: apt-get install {measure_cost.VALGRIND_PACKAGE})"
        )
    return "only" if ask.cost_only else "skip" if ask.no_cost else "first"


def round_estimate(opts: RunOptions, settings: matrix_build.Settings) -> float:
    """Seconds one round should take: every server's part in every cell (planning)."""
    cells = len(matrix_plan.cells(settings.axes))
    per_unit = matrix_cells.STARTUP_S + len(opts.scenarios or [None, None, None]) * len(
        opts.concurrency
    ) * (opts.warmup + opts.duration + 1.0)
    return cells * max(1, len(settings.servers)) * per_unit


def check_reachable(opts: RunOptions, settings: matrix_build.Settings) -> None:
    """Refuse, before anything is built, a budget that cannot buy the fewest rounds a
    verdict needs."""
    each = round_estimate(opts, settings)
    rounds = settings.rounds or rules.MIN_ROUNDS
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


def main(command: BaseCommand, ask: MatrixAsk, opts: RunOptions, how: Invocation) -> Ended:
    """--matrix: build each cell's environment, run the plan interleaved, judge."""
    axes = matrix_plan.parse(ask.axes)
    matrix_cells.check_options(opts, ask.base, axes)
    selection = select(opts)  # servers, scenarios and their file checked before any cell
    servers = opts.servers or [s.name for s in selection.servers]
    settings = settings_from(ask, servers)
    if settings.cost != "only":
        check_reachable(opts, settings)
    # Each cell's plan runs as many rounds as the matrix may ask of it (--until-round).
    opts = opts.model_copy(update={"trials": settings.rounds or matrix_cells.MAX_ROUNDS})
    show = how.show
    if (problem := store.unwritable(Path(opts.output))) is not None:
        raise OptionError(f"--output: {problem}")
    cells = matrix_plan.cells(axes)
    show.line(opening_line(cells, settings))
    with terminate_on_signals():
        document, path = matrix_cells.main(
            current(),
            opts,
            settings,
            show,
            ["runbench", *sys.argv[2:]] if len(sys.argv) > 2 else ["runbench"],
        )
    found = matrix.failing(document)
    if found.verdict_failed:
        return Ended(matrix=path, outcome=Outcome(found.notice(), exits.VERDICT))
    if found.incomplete:
        return Ended(matrix=path, outcome=Outcome(found.notice(), exits.INCOMPLETE))
    return Ended(matrix=path)


def opening_line(cells: list[matrix_plan.Cell], settings: matrix_build.Settings) -> str:
    """What the matrix will do, before it builds anything."""
    base = matrix_plan.base_cell(cells, settings.base).label
    named = f"Matrix: {len(cells)} cells ({', '.join(c.label for c in cells)}); base {base}"
    cost = (
        f"each cell's pages counted under Valgrind ({settings.cost_seeds} hash seed(s)), "
        f"a page worse beyond {settings.cost_threshold:.1%} and beyond its ratios' range over seeds"
    )
    if settings.cost == "only":
        return f"{named}; cost only: {cost}; no wall-clock rounds"
    rounds = (
        f"exactly {settings.rounds} round(s), one look"
        if settings.rounds
        else f"rounds until every pair is decided, within {settings.budget_s / 60:.0f} min"
        + (
            f" (the horizon: the rounds a {rules.PLANNED_CHANGE:.0%} change needs)"
            if settings.sized_by_power
            else ""
        )
    )
    first = f"first {cost} (when Valgrind is installed); then " if settings.cost == "first" else ""
    side = (
        "each round runs every server in every cell, from round 2 side by side with their "
        "windows taking turns page by page (--pairing alternate)"
        if settings.pairing == "alternate"
        else "each round runs every server in every cell back to back (--pairing sequential)"
    )
    return f"{named}; {first}{rounds}; {side}"


class MatrixMode(Mode):
    """--matrix: the same plan in one environment per cell, rounds interleaved."""

    name = "matrix"

    def __init__(self, ask: MatrixAsk | None = None) -> None:
        self.ask = ask

    @classmethod
    def from_command(cls, options: Mapping[str, Any]) -> Mode:
        return cls(MatrixAsk.of(options))

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Ended:
        assert self.ask is not None, "a matrix is built from the command's options"
        return main(command, self.ask, opts, how)
