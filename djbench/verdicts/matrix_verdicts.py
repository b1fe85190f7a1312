"""A version matrix judged, from its cells' loaded runs: each cell's pairs against the
base cell's (paired by round, every cell's pairs and metrics one family, as the exit
code ORs them), the answers whose shape changed, the scenario file's thresholds on every
cell, this runner's own noise, and what the gate left open. Typed values and codes; the
matrix's presenters (djbench.reports.matrix_output, ci_outputs) say them."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from djbench.results.model import (
    MatrixCheck,
    MatrixDocument,
    MatrixMetric,
    MatrixNoise,
    MatrixPair,
    MatrixVerdict,
    Notice,
    ShapeChange,
)
from djbench.verdicts import thresholds
from djbench.verdicts.compare import Comparison, compare_many, estimate
from djbench.verdicts.engine import decide, spending
from djbench.verdicts.runs import Run


@dataclass(frozen=True)
class Cell:
    """One cell's runs, loaded (djbench.verdicts.runs.load_cell) under its label."""

    label: str
    run: Run

    def shapes(self) -> dict[str, str]:
        """The verify gate's answer shape per '<deployment label> <scenario>'."""
        return {
            f"{e.label} {e.scenario}": e.verify.shape
            for e in self.run.document.results
            if e.verify is not None and e.verify.status == "ok"
        }


def verdicts(
    base: Cell, cells: list[Cell], threshold: float, alpha: float, level: float | None = None
) -> list[MatrixVerdict]:
    """Each cell against the base, paired by round, at this look's `level`."""
    results = compare_many(
        base.run,
        [c.run for c in cells],
        threshold=threshold,
        alpha=alpha,
        paired=True,
        level=level,
    )
    base_shapes = base.shapes()
    found = []
    for cell, result in zip(cells, results, strict=True):
        theirs = cell.shapes()
        changed = [
            ShapeChange(key=key, base=base_shapes[key], new=theirs[key])
            for key in sorted(set(base_shapes) & set(theirs))
            if base_shapes[key] != theirs[key]
        ]
        found.append(_verdict(cell.label, base.label, result, changed))
    return found


def _verdict(cell: str, base: str, result: Comparison, changed: list[ShapeChange]) -> MatrixVerdict:
    return MatrixVerdict(
        cell=cell,
        base=base,
        counts=result.counts(),
        pairs=[
            MatrixPair(
                label=p.label,
                scenario=p.scenario,
                concurrency=p.concurrency,
                verdict=p.verdict,
                metrics={
                    m.metric: MatrixMetric(
                        verdict=m.verdict,
                        ratio=m.ratio,
                        ci=m.ci,
                        p=m.p_shown,
                        drifting=m.drifting,
                        notes=list(m.notes),
                    )
                    for m in p.metrics
                },
                reasons=list(p.reasons),
                threshold=p.threshold,
            )
            for p in result.pairs
        ],
        shape_changes=changed,
        plan_differences=result.plan_differences,
        decided=result.decided(),
        level=result.level,
        rounds=max((m.n_base for p in result.pairs for m in p.metrics), default=0),
    )


def checks(cells: list[Cell]) -> list[MatrixCheck]:
    """The scenario file's thresholds on every cell that ran, over its rounds' trials
    (a threshold holds the deployment, whichever commit or version it runs)."""
    return [
        MatrixCheck(
            cell=cell.label,
            label=pair.label,
            scenario=pair.scenario,
            metric=check.metric,
            verdict=check.verdict,
            limit=check.limit,
            value=None if math.isnan(check.value) else check.value,
            interval=check.interval,
        )
        for cell in cells
        for pair, check in thresholds.of_run(cell.run)
    ]


def noise(base: Cell, cells: list[Cell], alpha: float, horizon: int) -> MatrixNoise | None:
    """This runner's own noise: the pooled sd of every compared pair's per-round req/s
    log-ratios, and the slowdown the horizon's rounds would flag at it (80% power, one
    pair of all: the same planning bound as the pre-run line)."""
    variances, rounds = [], 0
    for cell in cells:
        theirs = {p.key: p for p in cell.run.pairs}
        for pair in base.run.pairs:
            if pair.key in theirs and (e := estimate("rps", pair, theirs[pair.key], True)):
                plain = e.se / (e.rounds.widening if e.rounds is not None else 1.0)
                variances.append(plain**2 * e.n_base)
                rounds = max(rounds, e.n_base)
    if not variances:
        return None
    sd = math.sqrt(sum(variances) / len(variances))
    found = decide.detectable(horizon, len(variances), alpha, sd)
    return MatrixNoise(
        rounds=rounds,
        sd=round(sd, 4),
        pairs=len(variances),
        horizon=horizon,
        detectable=None if found is None else round(found, 4),
    )


@dataclass
class Looks:
    """Where alpha stands: the horizon the budget allows and the looks made so far."""

    alpha: float
    most: int | None = None  # fixed after the pilot round (or --trials)
    made: list[int] = field(default_factory=list)

    def level(self, done: int, final: bool) -> float:
        """The nominal level of a look after `done` rounds (exact group-sequential
        boundaries over the looks made); the final look spends the rest."""
        assert self.most is not None
        self.made.append(done)
        return spending.look_level(self.alpha, self.made, self.most, final)


@dataclass(frozen=True)
class Undecided:
    """What the gate left open: pairs neither worse nor equivalent (of all), and
    thresholds too close to call."""

    pairs: int
    of: int
    checks: int

    def __bool__(self) -> bool:
        return bool(self.pairs or self.checks)


def undecided(document: MatrixDocument) -> Undecided:
    pairs = [p for v in document.verdicts for p in v.pairs]
    return Undecided(
        pairs=sum(p.verdict == "inconclusive" for p in pairs),
        of=len(pairs),
        checks=sum(c.verdict == "too close" for c in document.checks),
    )


@dataclass(frozen=True)
class Failing:
    """Why a matrix fails its gate or is incomplete (all zero / empty: it passes)."""

    worse: int = 0
    shapes_changed: int = 0
    cost_failing: int = 0  # pages costlier, with changed SQL, or broken under the probe
    missed: list[MatrixCheck] = field(default_factory=list)
    undecided: Undecided | None = None  # counted only under --on-inconclusive fail
    failed_cells: list[str] = field(default_factory=list)
    base_failed: str | None = None

    @property
    def verdict_failed(self) -> bool:
        """A verdict was reached and it fails (exit 1, whatever else happened)."""
        return bool(
            self.worse or self.shapes_changed or self.cost_failing or self.missed or self.undecided
        )

    @property
    def incomplete(self) -> bool:
        return bool(self.failed_cells or self.base_failed)

    def notice(self) -> Notice:
        """The code `matrix_failed` with these figures as its parameters."""
        return Notice(
            code="matrix_failed",
            params={
                "worse": self.worse,
                "shapes_changed": self.shapes_changed,
                "cost_failing": self.cost_failing,
                "missed": [c.model_dump(mode="json") for c in self.missed],
                "undecided": dataclasses.asdict(self.undecided) if self.undecided else None,
                "failed_cells": self.failed_cells,
                "base_failed": self.base_failed,
            },
        )


def failing(document: MatrixDocument) -> Failing:
    base = next((c for c in document.cells if c.label == document.base), None)
    open_ = undecided(document) if document.on_inconclusive == "fail" else None
    return Failing(
        worse=sum(len(v.worse) for v in document.verdicts),
        shapes_changed=sum(len(v.shape_changes) for v in document.verdicts),
        cost_failing=sum(len(c.failing) for c in document.cost.comparisons)
        if document.cost is not None
        else 0,
        missed=[c for c in document.checks if c.verdict == "missed"],
        undecided=open_ if open_ else None,
        failed_cells=[c.label for c in document.cells if c.status != "ok"],
        base_failed=base.label if base is not None and base.status != "ok" else None,
    )
