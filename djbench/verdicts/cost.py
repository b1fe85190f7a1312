"""Two cost probes of the same pages (runbench --cost, before and after a change): per
page, whether it got costlier, as typed values and codes.

The rule, paired by hash seed: each seed counted on both sides gives a ratio new/base
(a seed fixes the hash layout, the one thing besides the code that moves a count); the
page's change is their median, its noise their range. A page is worse (better) when the
change is above (below) the threshold (default 1%) *and* beyond that noise; otherwise
equal. Measured on the sample, Django 6.0 against 5.2, health-sync: the seeds' own
counts spread 0.3% on each side, their paired ratios 0.12% (x0.9908-x0.9920). Sides
with no seed in common fall back to the medians' ratio and the larger spread. A changed
set of SQL shapes is a finding of its own (``queries_changed``), even at an equal count.
"""

from __future__ import annotations

import statistics

from djbench.results.model import (
    CostChange,
    CostComparison,
    CostRecord,
    CostVerdict,
    FunctionChange,
    Notice,
    PageCost,
)

THRESHOLD = 0.01
TOP_FUNCTIONS = 5


def compare(
    base: CostRecord,
    new: CostRecord,
    threshold: float = THRESHOLD,
    labels: tuple[str, str] = ("", ""),
) -> CostComparison:
    """Every page of `new` against `base` (labels: the two sides' names, e.g. cells)."""
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
    return CostComparison(
        threshold=threshold, base=labels[0], new=labels[1], pages=pages, notes=notes
    )


def _names(base: CostRecord, new: CostRecord) -> list[str]:
    names = [p.scenario for p in base.pages]
    return names + [p.scenario for p in new.pages if p.scenario not in names]


def _page(name: str, base: PageCost | None, new: PageCost | None, threshold: float) -> CostChange:
    if base is None or new is None:
        return CostChange(scenario=name, verdict="new" if base is None else "gone")
    if new.instructions is None or base.instructions is None:
        reason = new.reason or base.reason
        return CostChange(scenario=name, verdict="failed", notes=[reason] if reason else [])
    ratio, noise = paired(base, new)
    change = ratio - 1
    verdict: CostVerdict = "equal"
    if abs(change) > threshold and abs(change) > noise:
        verdict = "worse" if change > 0 else "better"
    sql_added, sql_removed = _shapes(base.fingerprints, new.fingerprints)
    notes = [
        Notice(code="cost_unsettled", params={"side": side})
        for side, page in (("base", base), ("new", new))
        if not all(c.settled for c in page.counts)
    ]
    return CostChange(
        scenario=name,
        verdict=verdict,
        before=base.instructions,
        after=new.instructions,
        ratio=ratio,
        noise=noise,
        queries_before=base.queries,
        queries_after=new.queries,
        sql_added=sql_added,
        sql_removed=sql_removed,
        functions=_functions(base.functions, new.functions) if verdict != "equal" else [],
        notes=notes,
    )


def paired(base: PageCost, new: PageCost) -> tuple[float, float]:
    """(the change new/base, its noise): paired by seed when the sides share seeds."""
    before = {c.seed: c.instructions for c in base.counts if c.instructions > 0}
    ratios = sorted(c.instructions / before[c.seed] for c in new.counts if c.seed in before)
    if not ratios:
        assert base.instructions and new.instructions
        return new.instructions / base.instructions, max(base.spread or 0.0, new.spread or 0.0)
    return statistics.median(ratios), ratios[-1] - ratios[0]


def _shapes(before: dict[str, float], after: dict[str, float]) -> tuple[list[str], list[str]]:
    sql_added = [s for s, n in after.items() if n > before.get(s, 0)]
    sql_removed = [s for s, n in before.items() if n > after.get(s, 0)]
    return sql_added, sql_removed


def _functions(before: dict[str, float], after: dict[str, float]) -> list[FunctionChange]:
    """The functions whose own opcodes per request moved most, largest first."""
    moved = [
        FunctionChange(name=name, before=before.get(name, 0.0), after=after.get(name, 0.0))
        for name in {*before, *after}
    ]
    moved.sort(key=lambda f: (-abs(f.after - f.before), f.name))
    return [f for f in moved[:TOP_FUNCTIONS] if f.after != f.before]
