"""Two cost probes of the same pages (runbench --cost, before and after a change): per
page, whether it got costlier, as typed values and codes.

The rule: a page is worse (better) when its instructions per request rose (fell) by
more than the threshold (default 1%) *and* by more than the seeds' spread on either
side; otherwise equal. Instruction counts are deterministic for a given seed, so the
spread over seeds (hash layouts) is the only noise there is to exceed. A changed set of
SQL shapes is a finding of its own (``queries_changed``), even at an equal count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from djbench.results.model import CostRecord, Notice, PageCost

THRESHOLD = 0.01
TOP_FUNCTIONS = 5

CostVerdict = Literal["worse", "better", "equal", "failed", "new", "gone"]


@dataclass(frozen=True)
class FunctionChange:
    """A Python function's own opcodes per request, before and after."""

    name: str
    before: float
    after: float


@dataclass(frozen=True)
class PageChange:
    scenario: str
    verdict: CostVerdict
    before: float | None = None
    after: float | None = None
    ratio: float | None = None  # after / before
    noise: float = 0.0  # the larger of the two sides' spreads over seeds
    queries_before: float | None = None
    queries_after: float | None = None
    sql_added: tuple[str, ...] = ()  # SQL shapes run more often per request than before
    sql_removed: tuple[str, ...] = ()
    functions: tuple[FunctionChange, ...] = ()
    notes: tuple[Notice, ...] = ()

    @property
    def queries_changed(self) -> bool:
        return bool(self.sql_added or self.sql_removed)

    @property
    def failing(self) -> bool:
        """What fails a gate: a costlier page, a changed query, a page that broke."""
        return self.verdict in ("worse", "failed") or self.queries_changed


@dataclass(frozen=True)
class CostComparison:
    threshold: float
    pages: list[PageChange] = field(default_factory=list)
    notes: tuple[Notice, ...] = ()

    @property
    def failing(self) -> list[PageChange]:
        return [p for p in self.pages if p.failing]


def compare(base: CostRecord, new: CostRecord, threshold: float = THRESHOLD) -> CostComparison:
    before = {p.scenario: p for p in base.pages}
    after = {p.scenario: p for p in new.pages}
    pages = [
        _page(name, before.get(name), after.get(name), threshold) for name in _names(base, new)
    ]
    notes: list[Notice] = []
    if base.project_path_length != new.project_path_length:
        notes.append(
            Notice(
                code="cost_path_length",
                params={"base": base.project_path_length, "new": new.project_path_length},
            )
        )
    if base.valgrind != new.valgrind:
        notes.append(
            Notice(code="cost_valgrind", params={"base": base.valgrind, "new": new.valgrind})
        )
    return CostComparison(threshold, pages, tuple(notes))


def _names(base: CostRecord, new: CostRecord) -> list[str]:
    names = [p.scenario for p in base.pages]
    return names + [p.scenario for p in new.pages if p.scenario not in names]


def _page(name: str, base: PageCost | None, new: PageCost | None, threshold: float) -> PageChange:
    if base is None or new is None:
        return PageChange(name, "new" if base is None else "gone")
    if new.instructions is None or base.instructions is None:
        reason = new.reason or base.reason
        return PageChange(name, "failed", notes=(reason,) if reason else ())
    ratio = new.instructions / base.instructions
    noise = max(base.spread or 0.0, new.spread or 0.0)
    change = ratio - 1
    verdict: CostVerdict = "equal"
    if abs(change) > threshold and abs(change) > noise:
        verdict = "worse" if change > 0 else "better"
    sql_added, sql_removed = _shapes(base.fingerprints, new.fingerprints)
    notes = tuple(
        Notice(code="cost_unsettled", params={"side": side})
        for side, page in (("base", base), ("new", new))
        if not all(c.settled for c in page.counts)
    )
    return PageChange(
        name,
        verdict,
        base.instructions,
        new.instructions,
        ratio,
        noise,
        base.queries,
        new.queries,
        sql_added,
        sql_removed,
        _functions(base.functions, new.functions) if verdict != "equal" else (),
        notes,
    )


def _shapes(
    before: dict[str, float], after: dict[str, float]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    sql_added = tuple(s for s, n in after.items() if n > before.get(s, 0))
    sql_removed = tuple(s for s, n in before.items() if n > after.get(s, 0))
    return sql_added, sql_removed


def _functions(before: dict[str, float], after: dict[str, float]) -> tuple[FunctionChange, ...]:
    """The functions whose own opcodes per request moved most, largest first."""
    moved = [
        FunctionChange(name, before.get(name, 0.0), after.get(name, 0.0))
        for name in {*before, *after}
    ]
    moved.sort(key=lambda f: (-abs(f.after - f.before), f.name))
    return tuple(f for f in moved[:TOP_FUNCTIONS] if f.after != f.before)
