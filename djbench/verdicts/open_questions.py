"""The race's verdict after each round: which comparisons of a ranking's leader are still
open (the test calls the leader neither better than the other pair nor equivalent to
it), at the look's level. djbench.run.budget spends rounds on them; the answer reports
how many stayed open. The test is the answer's own (djbench.verdicts.ranking)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from djbench.results.model import PairResult
from djbench.verdicts.engine import decide, spending
from djbench.verdicts.ranking import leader_decisions, underserved
from djbench.verdicts.runs import Pair

EXTRA_ROUNDS_MAX = 12  # rounds added at most, whatever the budget (every loop is bounded)


@dataclasses.dataclass(frozen=True)
class Open:
    """A ranking's leader against a pair the test cannot yet call worse or equivalent."""

    leader: str
    other: str
    scenario: str
    concurrency: int | None

    def question(self) -> str:
        return f"{self.leader} ~ {self.other} on {self.scenario} c{self.concurrency}"

    def key(self) -> tuple[str, str, int | None]:
        """The comparison's place: the other pair in its ranking (whoever leads it)."""
        return self.other, self.scenario, self.concurrency


def _judged(
    results: list[PairResult], run_id: str, level: float
) -> list[tuple[str, int | None, Pair, list[tuple[Pair, decide.Decision]]]]:
    """Each ranking (scenario, concurrency) of the eligible pairs: its leader by median
    req/s, and the answer's own test of it against each other pair at `level`."""
    groups: dict[tuple[str, int | None], list[Pair]] = {}
    for entry in results:
        pair = Pair(run_id, entry)
        if pair.ok and entry.kind == "http" and underserved(pair) is None:
            groups.setdefault((entry.scenario, entry.concurrency), []).append(pair)
    found = []
    for (scenario, concurrency), pairs in groups.items():
        ranked = sorted(pairs, key=lambda p: -(p.median("rps") or 0))
        decisions = leader_decisions(ranked[0], ranked[1:], level)
        found.append(
            (scenario, concurrency, ranked[0], list(zip(ranked[1:], decisions, strict=True)))
        )
    return found


def open_questions(
    results: list[PairResult],
    run_id: str,
    level: float = decide.ALPHA,
    out: Collection[str] = (),
) -> list[Open]:
    """Each ranking's leader against every other eligible pair at this look's `level`,
    by the answer's own test (ranking.leader_decisions): the comparisons still open. A
    deployment the race dropped (`out`) was decided at its look: never reopened (a
    later look's level may be lower than the screen's)."""
    return [
        Open(leader.label, other.label, scenario, concurrency)
        for scenario, concurrency, leader, judged in _judged(results, run_id, level)
        for other, decision in judged
        if decision.verdict not in ("better", "equivalent") and other.label not in out
    ]


def beaten(results: list[PairResult], run_id: str, level: float) -> list[Open]:
    """Each ranking's comparisons the leader won at this look ("better"): decided there,
    never reopened by a later look (a group-sequential comparison stops at the look that
    crosses its boundary; a later look may test at a lower level than an early one)."""
    return [
        Open(leader.label, other.label, scenario, concurrency)
        for scenario, concurrency, leader, judged in _judged(results, run_id, level)
        for other, decision in judged
        if decision.verdict == "better"
    ]


@dataclasses.dataclass(frozen=True)
class Dropped:
    """A deployment a look finds out of contention on every page it was ranked on: the
    leader shown better than it on each (at the look's level), by `ratios` (its median
    req/s over the leader's, one per page); or every pair of it failed (`failed`)."""

    label: str
    ratios: tuple[float, ...] = ()
    failed: bool = False


def out_of_contention(
    results: list[PairResult], run_id: str, level: float, labels: list[str]
) -> list[Dropped]:
    """Of `labels`, those the race stops measuring after this look: shown slower than the
    leader on at least one page and kept on none (no lead, no open or equivalent
    comparison there); or with every pair failed (a server that would not start is not
    started again each round). A deployment never ranked for another reason (invalid,
    underserved) keeps its rounds: more may rank it."""
    kept: set[str] = set()
    behind: dict[str, list[float]] = {}
    for _scenario, _concurrency, leader, judged in _judged(results, run_id, level):
        kept.add(leader.label)
        top = leader.median("rps") or 0.0
        for other, decision in judged:
            if decision.verdict == "better" and top:
                behind.setdefault(other.label, []).append((other.median("rps") or 0.0) / top)
            else:
                kept.add(other.label)
    statuses: dict[str, set[str]] = {}
    for entry in results:
        statuses.setdefault(entry.label, set()).add(entry.status)
    found = [
        Dropped(label, tuple(sorted(behind[label])))
        for label in labels
        if label in behind and label not in kept
    ]
    found += [
        Dropped(label, failed=True)
        for label in labels
        if statuses.get(label) and statuses[label] <= {"failed", "incompatible"}
    ]
    return found


def look_level(planned: int, made: list[int], final: bool) -> float:
    """The nominal level of the look after the rounds in `made` (the last is this one):
    the engine's sequential looks over the horizon planned + EXTRA_ROUNDS_MAX."""
    return spending.look_level(decide.ALPHA, made, planned + EXTRA_ROUNDS_MAX, final)
