"""The race's verdict after each round: which comparisons of a ranking's leader are still
open (the test calls the leader neither better than the other pair nor equivalent to
it), at the look's level. djbench.run.budget spends rounds on them; the answer reports
how many stayed open. The test is the answer's own (djbench.verdicts.ranking)."""

from __future__ import annotations

import dataclasses

from djbench.results.model import PairResult
from djbench.verdicts.engine import decide
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


def open_questions(
    results: list[PairResult], run_id: str, level: float = decide.ALPHA
) -> list[Open]:
    """Each ranking's leader against every other eligible pair at this look's `level`,
    by the answer's own test (ranking.leader_decisions): the comparisons still open."""
    groups: dict[tuple[str, int | None], list[Pair]] = {}
    for entry in results:
        pair = Pair(run_id, entry)
        if pair.ok and entry.kind == "http" and underserved(pair) is None:
            groups.setdefault((entry.scenario, entry.concurrency), []).append(pair)
    found = []
    for (scenario, concurrency), pairs in groups.items():
        ranked = sorted(pairs, key=lambda p: -(p.median("rps") or 0))
        leader = ranked[0]
        decisions = leader_decisions(leader, ranked[1:], level)
        for other, decision in zip(ranked[1:], decisions, strict=True):
            if decision.verdict not in ("better", "equivalent"):
                found.append(Open(leader.label, other.label, scenario, concurrency))
    return found


def look_level(planned: int, made: list[int], final: bool) -> float:
    """The nominal level of the look after the rounds in `made` (the last is this one):
    the engine's sequential looks over the horizon planned + EXTRA_ROUNDS_MAX."""
    return decide.look_level(decide.ALPHA, made, planned + EXTRA_ROUNDS_MAX, final)
