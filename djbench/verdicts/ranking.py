"""Who leads a scenario, who shares the lead, and who may not be ranked: one verdict the
answer, the guide, the report and the race all read (typed values and codes; the words
are djbench.reports').

A pair leads when the decision engine (paired by round, since the servers of one run
share its rounds) finds no other better beyond the threshold, at a false discovery rate
of `TIE_ALPHA` over every pair of the ranking (engine/blocks.py's `leader_decisions`);
the pairs it cannot tell from the leader share the lead. A pair that was invalid or
failed on a scenario, left connections unserved there, or leaked database connections
there is not ranked on that scenario (:func:`unfit`); it is ranked on every other
scenario it served correctly (a failure stays on its page).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from djbench.results.model import Notice
from djbench.verdicts.engine import blocks, decide
from djbench.verdicts.runs import UNDERSERVED, UNSTABLE, Pair, Run, summarise
from djbench.verdicts.thresholds import rate_interval

TIE_ALPHA = 0.05  # a pair is tied with the best unless the engine finds the best better
CONFIDENCE = 0.95  # the interval printed beside a figure that decides


def trial_range(pair: Pair) -> tuple[float, float]:
    values = pair.series("rps")
    return (min(values), max(values)) if values else (0.0, 0.0)


def underserved(pair: Pair) -> Notice | None:
    """The warning that the pair left connections unserved (None: it served them all)."""
    return pair.warning(UNDERSERVED)


@dataclass(frozen=True)
class Tie:
    """Why a pair shares the lead: the engine's verdict of the best against it (its
    ratio, p and verdict), or that the trials could not be tested at all."""

    p_value: float
    testable: bool
    ratio: float | None = None
    verdict: decide.Change = "inconclusive"
    level: float | None = None  # what the best/other test was held to


def tie_level(run: Run) -> float:
    """The level ties are judged at: a --budget run's last sequential look (its rounds
    were added while rankings were open, so one more test at the full level would be a
    look the design did not pay for), else TIE_ALPHA at the run's single look."""
    level = run.plan.budget_level
    return TIE_ALPHA if level is None else level


def beats(e: decide.Estimate | None, level: float = TIE_ALPHA) -> decide.Decision:
    """The engine's verdict on one comparison chosen before the data (the recommended
    deployment against a project's own): req/s paired by round, at `level`. A leader
    against the rest of its ranking goes through `leader_decisions`."""
    [d] = decide.judge([e], +1, level)
    return d


def against(best: Pair, others: list[Pair]) -> list[decide.Estimate | None]:
    """The leader's req/s against each other pair's, as one block design (blocks.py)."""
    return blocks.against_leader(best.by_round("rps"), [o.by_round("rps") for o in others])


def leader_decisions(best: Pair, others: list[Pair], level: float) -> list[decide.Decision]:
    """The engine's verdict on the leader against each of `others` (blocks.py: one block
    design, false discovery rate `level` over every pair of the ranking)."""
    return blocks.leader_decisions(
        [best.by_round("rps"), *(o.by_round("rps") for o in others)], level
    )


def ties_with(
    best: Pair, others: list[Pair], level: float = TIE_ALPHA, out: Collection[str] = ()
) -> list[Tie | None]:
    """For each of `others`, a tie unless the decision engine finds `best` better in
    req/s beyond the threshold (`leader_decisions`) or the race dropped it (`out`: decided
    at its look); None where either holds."""
    found: list[Tie | None] = []
    for other, d in zip(others, leader_decisions(best, others, level), strict=True):
        if d.verdict == "better" or other.label in out:
            found.append(None)
        elif d.ratio is None or d.method == "screened":
            # Fewer rounds than the paired test needs: a screen may rule a pair out
            # (far behind), never in; what it cannot rule out is untested.
            found.append(Tie(1.0, False))
        else:
            found.append(Tie(round(d.p or 1.0, 4), True, d.ratio, d.verdict, d.level))
    return found


def eligible(pairs: list[Pair]) -> tuple[list[Pair], list[tuple[Pair, Notice]]]:
    """The pairs a ranking may name, fastest (median req/s) first, and those excluded
    with why (:func:`unfit` on this scenario: a failure elsewhere does not count here)."""
    excluded: list[tuple[Pair, Notice]] = []
    found = []
    for pair in pairs:
        if (why := unfit(pair)) is not None or not pair.ok:
            excluded.append((pair, why or _status(pair)))
        else:
            found.append(pair)
    found.sort(key=lambda p: -(p.median("rps") or 0))
    return found, excluded


@dataclass(frozen=True)
class Ranking:
    """One scenario at one concurrency: who may be ranked (fastest first), who may not
    (with why), the winners (the leader and every pair the test cannot tell from it),
    the test of the leader against each other winner, and the leaders an unstable pair
    blocks (then no winner is named)."""

    ranked: list[Pair]
    excluded: list[tuple[Pair, Notice]]
    winners: list[Pair] = field(default_factory=list)
    ties: list[Tie] = field(default_factory=list)
    blocked: list[Pair] = field(default_factory=list)
    level: float = TIE_ALPHA

    @property
    def runner_up(self) -> Pair | None:
        """The fastest eligible pair that is not a winner."""
        return next((p for p in self.ranked if all(p is not w for w in self.winners)), None)


def raced_out(run: Run) -> dict[str, int]:
    """The deployments the race stopped measuring within the planned rounds, with the
    rounds they ran: each was decided out at its look (the leader shown faster), and
    stays out of the winners."""
    return dict(run.plan.raced_out)


def rank(pairs: list[Pair], level: float = TIE_ALPHA, out: Collection[str] = ()) -> Ranking:
    """The ranking of `pairs` (one scenario, one concurrency).

    An unstable pair stays in the ranking: if it is among leaders the test cannot
    separate, no winner is named (`blocked` lists them), since naming the best *stable*
    pair would crown a server that may well be slower; a leader shown better than every
    other pair is named however much its trials vary (the test's interval holds that
    spread, and what the rounds share cancels in it)."""
    ranked, excluded = eligible(pairs)
    if not ranked:
        return Ranking(ranked, excluded, level=level)
    found = ties_with(ranked[0], ranked[1:], level, out)
    winners = [ranked[0]] + [p for p, t in zip(ranked[1:], found, strict=True) if t]
    ties = [t for t in found if t is not None]
    blocked = [p for p in winners if p.warning(UNSTABLE) is not None] if len(winners) > 1 else []
    if blocked:
        # Noise is a property of the run, not a reason against a server: the leaders are
        # named in the "no verdict" line, never under "not recommended".
        return Ranking(ranked, excluded, [], [], blocked, level)
    return Ranking(ranked, excluded, winners, ties, [], level)


def _timed_out(pair: Pair) -> bool:
    return any(t.errors.get("timeout", 0) for t in pair.entry.trials)


def cause(pair: Pair) -> Notice | None:
    """The known reason for requests that time out or connections left waiting, when
    this pair shows either: the verify gate's remedy for a leak, the server's own
    (`cause_starves`: its registry entry's `starves_when_blocked`), or the queue
    (`cause_queued`)."""
    if (leak := gate_leak(pair)) is not None and leak.params.get("remedy"):
        return Notice(code="cause_remedy", params={"remedy": leak.params["remedy"]})
    if _timed_out(pair) or underserved(pair) is not None:
        starves = Notice(code="cause_starves", params={"server": pair.server})
        if not _timed_out(pair):
            return starves
        timeouts = [
            t.driver_figures.timeout_s for t in pair.entry.trials if t.driver_figures.timeout_s
        ]
        return Notice(
            code="cause_queued",
            params={
                "server": pair.server,
                "timeout_s": max(timeouts) if timeouts else None,
                "concurrency": pair.concurrency,
                "layout": (pair.entry.workers or 1) * (pair.entry.threads or 1),
            },
        )
    return None


def _status(pair: Pair) -> Notice:
    return Notice(
        code="unfit_status",
        params={"status": pair.status, "reason": pair.reason, "cause": cause(pair)},
    )


def unfit(pair: Pair) -> Notice | None:
    """Why this pair may not be ranked among valid ones on its scenario (None: it may),
    with the known cause when there is one."""
    if pair.status in ("invalid", "failed"):
        return _status(pair)
    if pair.status == "ok" and not pair.valid_trials:
        return Notice(code="unfit_no_valid_trial", params={"cause": cause(pair)})
    if (starved := underserved(pair)) is not None:
        return Notice(code="unfit_underserved", params={"warning": starved, "cause": cause(pair)})
    if (leak := gate_leak(pair)) is not None:
        return Notice(code="unfit_leak", params={"leak": leak})
    return None


def gate_leak(pair: Pair) -> Notice | None:
    """The verify gate's finding that the server keeps a connection per request."""
    found = pair.entry.verify.warnings if pair.entry.verify else []
    return next((n for n in found if n.code == "db_leak"), None)


def flagged(run: Run) -> dict[str, Notice]:
    """Each deployment that was invalid, failed or starved on some scenario of the run,
    with the first such finding (`unfit_on`: the scenario and why). It is not ranked on
    that scenario; where a deployment's figure stands for the whole run (its memory
    footprint, a trade-off chart's point) it is set apart."""
    found: dict[str, Notice] = {}
    for pair in run.pairs:
        if (why := unfit(pair)) is not None:
            found.setdefault(
                pair.label, Notice(code="unfit_on", params={"scenario": pair.scenario, "why": why})
            )
    return found


def rps_interval(pair: Pair, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A t-interval of the pair's typical req/s (geometric mean over its valid trials,
    on the log scale, as the engine's ratios): few rounds give a wide interval, as they
    should; never narrower than one answer per window leaves unknown. None below two
    trials."""
    return rate_interval(pair.valid_trials, confidence)


def compared(run: Run, pair: Pair) -> bool:
    """In a --tune run only each server's best configuration is compared; the layouts a
    run swept after its rounds (djbench.run.layouts) are the answer's worker count, not
    deployments of its rankings."""
    tuning = run.document.tuning
    if tuning is not None:
        return tuning.best.get(pair.server) == pair.entry.config
    swept = run.plan.layouts
    if swept is None or pair.entry.config is None:
        return True
    return pair.label not in {row.label for row in swept.rows}


def confirmed(run: Run, pairs: list[Pair]) -> list[Pair]:
    """In a --tune run, each best on its confirmation rounds only: the rounds that
    selected it flatter it (the winner's curse). Other runs: the pairs as they are."""
    tuning = run.document.tuning
    if tuning is None or not tuning.confirm_rounds:
        return pairs
    kept = set(tuning.confirm_rounds)
    found = []
    for pair in pairs:
        entry = pair.entry.model_copy(deep=True)
        entry.trials = [t for t in entry.trials if t.round in kept]
        rounds = run.document.deployment_rounds
        summarise(entry, [r for r in rounds if r.round in kept and r.deployment == entry.label])
        found.append(Pair(run_id=pair.run_id, entry=entry, tag=pair.tag))
    return found


def efficient(points: dict[str, tuple[float, float]]) -> set[str]:
    """The deployments no other beats on both: at least as fast and as cheap, and
    better on one (the Pareto front of req/s up, cost down)."""
    return {
        name
        for name, (x, y) in points.items()
        if not any(
            (ox >= x and oy <= y) and (ox > x or oy < y)
            for other, (ox, oy) in points.items()
            if other != name
        )
    }
