"""A version matrix judged: each pair's paired rounds compared with the base cell's
(djbench.verdicts.engine.decide), the verdicts and what failed, in one sentence."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from djbench.reports.compare import Comparison, compare_many, estimate
from djbench.reports.matrix_output import open_questions
from djbench.results import store
from djbench.results.model import (
    MatrixCheck,
    MatrixDocument,
    MatrixNoise,
    MatrixPair,
    MatrixVerdict,
)
from djbench.run import exits
from djbench.run.exits import Outcome
from djbench.run.matrix_build import CellState, Settings
from djbench.verdicts import thresholds
from djbench.verdicts.engine import decide
from djbench.verdicts.runs import load_cell


def shapes(run_file: str) -> dict[str, str]:
    """The verify gate's answer shape per (server label, scenario) of a cell's run."""
    document = store.load(Path(run_file))
    return {
        f"{e.label} {e.scenario}": e.verify.shape
        for e in document.results
        if e.verify is not None and e.verify.status == "ok"
    }


def _named(result: Comparison, verdict: str) -> list[str]:
    """Pairs with that verdict, each with the metrics that gave it."""
    found = []
    for pair in result.pairs:
        if pair.verdict != verdict:
            continue
        # The change as NEW/BASE - 1 (p99 +23%: latency rose), whatever the direction.
        metrics = [
            f"{m.metric} {(m.ratio or 1) - 1:+.1%} (p={_p(m.p_adjusted, m.p_value)})"
            for m in pair.metrics
            if m.verdict == verdict
        ]
        found.append(f"{pair.label} {pair.scenario} c{pair.concurrency}: {', '.join(metrics)}")
    return found


def _p(adjusted: float | None, raw: float | None) -> str:
    value = adjusted if adjusted is not None else raw
    return "?" if value is None else f"{value:.3g}"


def cell_run(state: CellState) -> Path | None:
    return Path(state.record.run_files[0]) if state.record.run_files else None


def verdicts(
    states: list[CellState], base: CellState, settings: Settings, level: float | None = None
) -> list[MatrixVerdict]:
    """Each cell against the base, paired by round, at this look's `level`; every
    cell's pairs and metrics one family (compare_many), as the exit code ORs them."""
    found: list[MatrixVerdict] = []
    if base.record.status != "ok" or not base.record.run_files:
        return found
    base_run = load_cell([Path(f) for f in base.record.run_files], base.record.label)
    base_shapes = {k: v for f in base.record.run_files for k, v in shapes(f).items()}
    cells = [
        state
        for state in states
        if state is not base and state.record.status == "ok" and state.record.run_files
    ]
    results = compare_many(
        base_run,
        [load_cell([Path(f) for f in s.record.run_files], s.record.label) for s in cells],
        threshold=settings.threshold,
        alpha=settings.alpha,
        paired=True,
        level=level,
    )
    for state, result in zip(cells, results, strict=True):
        theirs = {k: v for f in state.record.run_files for k, v in shapes(f).items()}
        changed = [
            f"{key}: {base_shapes[key]} -> {theirs[key]}"
            for key in sorted(set(base_shapes) & set(theirs))
            if base_shapes[key] != theirs[key]
        ]
        found.append(_verdict(state, base, result, changed))
    return found


def _verdict(
    state: CellState, base: CellState, result: Comparison, changed: list[str]
) -> MatrixVerdict:
    return MatrixVerdict(
        cell=state.record.label,
        base=base.record.label,
        counts=result.counts(),
        pairs=[
            MatrixPair(
                label=p.label,
                scenario=p.scenario,
                concurrency=p.concurrency,
                verdict=p.verdict,
                metrics={
                    m.metric: (
                        f"x{m.ratio:.3f}"
                        + (f" [{m.ci[0]:.3f}-{m.ci[1]:.3f}]" if m.ci else "")
                        + f" p={_p(m.p_adjusted, m.p_value)}"
                        + (" drifting" if m.drifting else "")
                        if m.ratio is not None
                        else m.note or "-"
                    )
                    for m in p.metrics
                },
                reasons=list(p.reasons),
                threshold=p.threshold,
            )
            for p in result.pairs
        ],
        worse=_named(result, "worse"),
        better=_named(result, "better"),
        shape_changes=changed,
        plan_differences=result.plan_differences,
        decided=result.decided(),
        level=result.level,
        rounds=max((m.n_base for p in result.pairs for m in p.metrics), default=0),
    )


def checks(states: list[CellState]) -> list[MatrixCheck]:
    """The scenario file's thresholds on every cell that ran, over its rounds' trials
    (a threshold holds the deployment, whichever commit or version it runs)."""
    found = []
    for state in states:
        if state.record.status != "ok" or not state.record.run_files:
            continue
        run = load_cell([Path(f) for f in state.record.run_files], state.record.label)
        found += [
            MatrixCheck(
                cell=state.record.label,
                label=pair.label,
                scenario=pair.scenario,
                metric=check.metric,
                verdict=check.verdict,
                said=thresholds.said(check),
            )
            for pair, check in thresholds.of_run(run)
        ]
    return found


def noise(
    states: list[CellState], base: CellState, settings: Settings, horizon: int
) -> MatrixNoise | None:
    """This runner's own noise: the pooled sd of every compared pair's per-round req/s
    log-ratios, and the slowdown the budget's rounds would flag at it (80% power, one
    pair of all: the same planning bound as the pre-run line)."""
    if base.record.status != "ok" or not base.record.run_files:
        return None
    base_run = load_cell([Path(f) for f in base.record.run_files], base.record.label)
    variances, rounds = [], 0
    for state in states:
        if state is base or state.record.status != "ok" or not state.record.run_files:
            continue
        run = load_cell([Path(f) for f in state.record.run_files], state.record.label)
        theirs = {p.key: p for p in run.pairs}
        for pair in base_run.pairs:
            if pair.key in theirs and (e := estimate("rps", pair, theirs[pair.key], True)):
                plain = e.se / (e.rounds.widening if e.rounds is not None else 1.0)
                variances.append(plain**2 * e.n_base)
                rounds = max(rounds, e.n_base)
    if not variances:
        return None
    sd = math.sqrt(sum(variances) / len(variances))
    found = decide.detectable(horizon, len(variances), settings.alpha, sd)
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
        return decide.look_level(self.alpha, self.made, self.most, final)


def problem(document: MatrixDocument) -> Outcome | None:
    """How the matrix ended when not with exit 0: a pair worse or an answer changed
    shape fails its verdict (1, whatever else happened: a verdict was reached); else a
    cell that could not run leaves it incomplete (3)."""
    worse = sum(len(v.worse) for v in document.verdicts)
    shapes_changed = sum(len(v.shape_changes) for v in document.verdicts)
    missed = [c for c in document.checks if c.verdict == "missed"]
    failed = [c.label for c in document.cells if c.status != "ok"]
    strict = document.on_inconclusive == "fail"
    undecided = open_questions(document) if strict else []
    parts = []
    if worse:
        parts.append(f"{worse} pair(s) got worse")
    if shapes_changed:
        parts.append(f"{shapes_changed} answer(s) changed shape")
    if missed:
        parts.append(
            f"{len(missed)} threshold(s) missed ({missed[0].cell} {missed[0].label} "
            f"{missed[0].scenario}: {missed[0].said})"
        )
    if undecided:
        parts.append(f"{'; '.join(undecided)} (--on-inconclusive fail)")
    if failed:
        parts.append(f"cell(s) {', '.join(failed)} could not run")
    base = next((c for c in document.cells if c.label == document.base), None)
    if base is not None and base.status != "ok":
        parts.append(f"the base cell {base.label} did not run: nothing was compared")
    if not parts:
        return None
    message = "; ".join(parts)
    failed_verdict = worse or shapes_changed or missed or undecided
    return exits.verdict(message) if failed_verdict else exits.incomplete(message)
