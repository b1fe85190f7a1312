"""The answer a run ends with, as typed values: per scenario the deployment to use (or
why none), the deployments the run cannot tell from it, the project's own deployments
against it, and the deployments not to use with their first finding. Computed once from
a results file's :class:`Run`; the console, the report and the guide say it
(djbench.reports.answer_words).

The figure is capacity within the latency target where the run searched for it,
otherwise the typical req/s of the highest concurrency: who leads and who ties is
djbench.verdicts.ranking's rule, the guide's own. A deployment unfit on one scenario is
left out of that scenario's ranking only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from djbench.results.model import Notice
from djbench.verdicts.capacity_search import tied
from djbench.verdicts.engine import decide
from djbench.verdicts.ranking import (
    CONFIDENCE,
    Ranking,
    against,
    beats,
    compared,
    confirmed,
    raced_out,
    rank,
    tie_level,
    unfit,
)
from djbench.verdicts.runs import Pair, Run

# "screen": the leader has fewer rounds than the paired test needs (decide.MIN_ROUNDS), so
# the run ranks nobody (its ties are untested): the highest so far is said, never as a
# deployment to use.
PageKind = Literal["use", "no_verdict", "none_served", "capacity", "screen"]


@dataclass(frozen=True)
class Versus:
    """The recommended deployment against one of the project's own (what the team runs
    now), paired by round: its ratio and interval, the engine's verdict; `unfit`: why
    the team's deployment could not be compared here."""

    own: Pair
    unfit: Notice | None = None
    ratio: float | None = None  # winner / own, paired by round
    interval: tuple[float, float] | None = None
    verdict: decide.Change | None = None  # None: too few paired rounds to test


@dataclass(frozen=True)
class CapacityLead:
    """The highest capacity within the target on a scenario, and those tied with it
    (the likelihood-ratio test; older files: ranges that overlap)."""

    leader: Pair
    tied: list[Pair]


@dataclass(frozen=True)
class PageAnswer:
    scenario: str
    kind: PageKind
    ranking: Ranking | None = None  # use, no_verdict, none_served
    capacity: CapacityLead | None = None  # capacity
    yours: list[Versus] = field(default_factory=list)

    @property
    def leader(self) -> Pair | None:
        """The deployment to use, or (no verdict) the highest so far."""
        if self.capacity is not None:
            return self.capacity.leader
        if self.ranking is None:
            return None
        if self.ranking.winners:
            return self.ranking.winners[0]
        # No verdict: the highest so far is the fastest of the ranking (an unstable pair
        # among the leaders blocks the verdict; it is not the highest for that).
        return self.ranking.ranked[0] if self.ranking.ranked else None


@dataclass(frozen=True)
class OutOfRace:
    """A deployment the engine showed slower than the leader on every page it ran, and
    that the race stopped measuring: the last round it ran (1-based) and its req/s over
    each page's leader's."""

    label: str
    last_round: int
    ratios: list[float]


@dataclass(frozen=True)
class Answer:
    deployments: int
    pages: list[PageAnswer]
    # Each deployment unfit somewhere, once, with its first finding's pair and why.
    not_recommended: list[tuple[Pair, Notice]]
    # The deployments the race dropped (djbench.run.budget runs the open comparisons only).
    out: list[OutOfRace] = field(default_factory=list)


def pairs_of(run: Run, scenario: str | None = None) -> list[Pair]:
    """The pairs a decision reads: all of them, or in a --tune run each server's best on
    its confirmation rounds (a losing candidate is the search working, not a finding)."""
    pairs = run.pairs if scenario is None else run.by_scenario(scenario)
    return confirmed(run, [p for p in pairs if compared(run, p)])


def _capacity(pairs: list[Pair]) -> CapacityLead | None:
    found = [
        p
        for p in pairs
        if p.entry.capacity is not None
        and p.entry.capacity.rps
        and not p.entry.capacity.screening
        and unfit(p) is None
    ]
    if not found:
        return None
    found.sort(key=lambda p: -(p.entry.capacity.rps or 0) if p.entry.capacity else 0)
    lead = found[0].entry.capacity
    assert lead is not None
    ties = [p for p in found[1:] if p.entry.capacity and tied(lead, p.entry.capacity)]
    return CapacityLead(found[0], ties)


def versus(winner: Pair, pairs: list[Pair]) -> list[Versus]:
    """The recommended deployment against each of the project's own deployments."""
    found = []
    for own in [p for p in pairs if p.entry.own and p.label != winner.label]:
        if (why := unfit(own)) is not None:
            found.append(Versus(own, unfit=why))
            continue
        [e] = against(winner, [own])
        if e is None:
            mine, theirs = winner.median("rps"), own.median("rps")
            found.append(Versus(own, ratio=mine / theirs if mine and theirs else None))
            continue
        decision = beats(e)
        found.append(Versus(own, None, e.ratio, e.interval(1 - CONFIDENCE), decision.verdict))
    return found


def rounds_of(ranking: Ranking) -> int:
    """The rounds the ranking's leader has (valid trials)."""
    return len(ranking.ranked[0].valid_trials) if ranking.ranked else 0


def page(run: Run, scenario: str) -> PageAnswer:
    pairs = pairs_of(run, scenario)
    if (lead := _capacity(pairs)) is not None:
        return PageAnswer(scenario, "capacity", capacity=lead)
    level = max((p.concurrency or 0 for p in pairs), default=0)
    at_level = [p for p in pairs if (p.concurrency or 0) == level]
    ranking = rank(at_level, tie_level(run), raced_out(run))
    kind: PageKind = (
        "use" if ranking.winners else "no_verdict" if ranking.blocked else "none_served"
    )
    if kind != "none_served" and len(ranking.ranked) > 1 and rounds_of(ranking) < decide.MIN_ROUNDS:
        kind = "screen"
    found = PageAnswer(scenario, kind, ranking)
    if found.leader is not None and any(p.entry.own for p in at_level):
        found = PageAnswer(scenario, kind, ranking, yours=versus(found.leader, at_level))
    return found


def not_recommended(run: Run) -> list[tuple[Pair, Notice]]:
    """Each deployment that may not be used somewhere, with its first finding."""
    said: dict[str, tuple[Pair, Notice]] = {}
    for pair in pairs_of(run):
        if pair.label not in said and (why := finding(pair)) is not None:
            said[pair.label] = (pair, why)
    return list(said.values())


def finding(pair: Pair) -> Notice | None:
    """What rules a pair out (None: nothing does): its status reason, or why it may not
    be ranked (djbench.verdicts.ranking.unfit)."""
    if pair.status == "incompatible":
        return pair.reason or Notice(code="unfit_status", params={"status": pair.status})
    return unfit(pair)


def out_of_race(run: Run, pages: list[PageAnswer]) -> list[OutOfRace]:
    """Each deployment measured in fewer rounds than the run's last, shown slower than
    the leader on every page it was ranked on (never a winner, nor among the leaders an
    unstable pair blocked): what the race left behind, and when."""
    last_of: dict[str, int] = {}
    for p in pairs_of(run):
        if p.entry.trials:
            last = max(t.round for t in p.entry.trials) + 1
            last_of[p.label] = max(last, last_of.get(p.label, 0))
    for label in run.plan.budget_cut:  # short of the plan: cut by the budget, not raced out
        last_of.pop(label, None)
    if not last_of:
        return []
    final = max(last_of.values())
    ratios: dict[str, list[float]] = {}
    leading: set[str] = set()
    for found in pages:
        if found.ranking is None or found.leader is None or found.kind == "screen":
            continue
        top = found.leader.median("rps") or 0.0
        leading.update(p.label for p in [*found.ranking.winners, *found.ranking.blocked])
        for p in found.ranking.ranked:
            if top and (rps := p.median("rps")) is not None:
                ratios.setdefault(p.label, []).append(rps / top)
    return [
        OutOfRace(label, last_of[label], sorted(found))
        for label, found in ratios.items()
        if label in last_of and label not in leading and last_of[label] < final
    ]


def answer(run: Run) -> Answer:
    pages = [page(run, s) for s in run.scenarios()]
    return Answer(
        deployments=len({p.label for p in pairs_of(run)}),
        pages=pages,
        not_recommended=not_recommended(run),
        out=out_of_race(run, pages),
    )
