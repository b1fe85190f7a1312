"""Who leads a scenario, and who may not be recommended at all: the rules the guide,
the answer a run ends with and the report share (they read results files only).

A pair leads when the decision engine (djbench.verdicts.engine.decide: paired by round, since
the servers of one run share its rounds) finds no other better beyond the threshold,
at a false discovery rate of `TIE_ALPHA` over every pair of the ranking (verdicts/engine/blocks.py's
`leader_decisions`); the pairs it cannot tell from the leader share the lead. A deployment that
was invalid or failed, or that left connections unserved, anywhere in the run is
`flagged`: it is never recommended, on any axis, and never drawn or tabled among the
valid pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from djbench.launch.servers import SERVERS
from djbench.reports.words import say
from djbench.results.model import Notice
from djbench.verdicts.engine import blocks, decide
from djbench.verdicts.runs import UNDERSERVED, UNSTABLE, Pair, Run, summarise
from djbench.verdicts.thresholds import t_interval

TIE_ALPHA = 0.05  # a pair is tied with the best unless the engine finds the best better
CONFIDENCE = 0.95  # the interval printed beside a figure that decides


def trial_range(pair: Pair) -> tuple[float, float]:
    values = pair.series("rps")
    return (min(values), max(values)) if values else (0.0, 0.0)


def underserved(pair: Pair) -> str | None:
    warning = pair.warning(UNDERSERVED)
    return None if warning is None else say(warning)


def deploy_file(server: str) -> str:
    spec = SERVERS.get(server)
    return f"deploy/{spec.deploy_file}" if spec else "deploy/"


def figures(pair: Pair) -> str:
    rps = pair.median("rps") or 0
    low, high = trial_range(pair)
    p99 = pair.median("p99")
    pss = pair.memory("pss_peak")
    parts = [f"{rps:,.0f} req/s (trials {low:,.0f}-{high:,.0f})"]
    if p99 is not None:
        parts.append(f"p99 {p99:,.1f} ms")
    if pss is not None:
        parts.append(f"peak PSS {pss:,.1f} MiB")
    return ", ".join(parts)


@dataclass(frozen=True)
class Tie:
    """Why a pair shares the lead: the engine's verdict of the best against it (its
    ratio, p and verdict), or that the trials could not be tested at all."""

    p_value: float
    testable: bool
    ratio: float | None = None
    verdict: str = "inconclusive"
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


def ties_with(best: Pair, others: list[Pair], level: float = TIE_ALPHA) -> list[Tie | None]:
    """For each of `others`, a tie unless the decision engine finds `best` better in
    req/s beyond the threshold (`leader_decisions`); None where it does."""
    found: list[Tie | None] = []
    for d in leader_decisions(best, others, level):
        if d.ratio is None:
            found.append(Tie(1.0, False))
        elif d.verdict != "better":
            found.append(Tie(round(d.p or 1.0, 4), True, d.ratio, d.verdict, d.level))
        else:
            found.append(None)
    return found


def eligible(
    pairs: list[Pair], elsewhere: dict[str, str] | None = None
) -> tuple[list[Pair], list[tuple[Pair, str]]]:
    """The pairs a ranking may name, fastest (median req/s) first, and those excluded
    with why: not ok, connections left unserved, or unfit on another scenario of the
    run (`elsewhere`, :func:`flagged`)."""
    excluded: list[tuple[Pair, str]] = []
    found = []
    for pair in pairs:
        if not pair.ok:
            excluded.append((pair, unfit(pair) or f"{pair.status}: {say(pair.reason)}"))
        elif (why := underserved(pair)) is not None:
            excluded.append((pair, why))
        elif elsewhere and pair.label in elsewhere:  # `flagged(run)`: unfit on another page
            excluded.append((pair, elsewhere[pair.label]))
        else:
            found.append(pair)
    found.sort(key=lambda p: -(p.median("rps") or 0))
    return found, excluded


def best_by_throughput(
    pairs: list[Pair], elsewhere: dict[str, str] | None = None, level: float = TIE_ALPHA
) -> tuple[list[Pair], list[tuple[Pair, str]], list[Pair]]:
    """(winners, excluded with why, blocked).

    Winners are the best and every pair the test cannot tell from it, among the
    `eligible` pairs. An unstable pair stays in the ranking: if it is among leaders the
    test cannot separate, no winner is named (`blocked` lists them), since naming the
    best *stable* pair would crown a server that may well be slower; a leader shown
    better than every other pair is named.
    """
    eligible_pairs, excluded = eligible(pairs, elsewhere)
    if not eligible_pairs:
        return [], excluded, []
    found = ties_with(eligible_pairs[0], eligible_pairs[1:], level)
    winners = [eligible_pairs[0]] + [p for p, t in zip(eligible_pairs[1:], found, strict=True) if t]
    # A leader the test separates from every other pair is named however much its
    # trials vary (the test's interval already holds that spread, and what the rounds
    # share cancels in it); only a lead shared with others is blocked by an unstable one.
    blocked = [p for p in winners if p.warning(UNSTABLE) is not None] if len(winners) > 1 else []
    if blocked:
        # Noise is a property of the run, not a reason against a server: the leaders are
        # named in the "no verdict" line, never under "not recommended".
        return [], excluded, blocked
    return winners, excluded, []


def tie_reason(winners: list[Pair], ranking: list[Pair], level: float = TIE_ALPHA) -> str:
    """Why the winners are tied, in the figures of the test that found them tied:
    `ranking` is every eligible pair they were picked from (`eligible`), so the block
    design and the Benjamini-Hochberg family are best_by_throughput's own."""
    rest = [p for p in ranking if all(p is not w for w in winners)]
    found = ties_with(winners[0], winners[1:] + rest, level)[: len(winners) - 1]
    ties = [t for t in found if t is not None]
    if ties and not all(t.testable for t in ties):
        n = min(len(w.series("rps")) for w in winners)
        return (
            f"with {n} trial(s) per server the paired test cannot separate them (it needs "
            f"{decide.MIN_ROUNDS} rounds): run more trials to separate them"
        )
    said = ", ".join(
        f"x{t.ratio:.3f}, "
        + (
            f"within {decide.THRESHOLD:.0%}"
            if t.verdict == "equivalent"
            else f"p = {t.p_value:.2g}"
        )
        for t in ties
        if t.ratio is not None
    )
    held = min((t.level for t in ties if t.level is not None), default=level)
    return (
        f"the best is not shown better than them beyond {decide.THRESHOLD:.0%} at "
        f"{held:.2g} (Benjamini-Hochberg at {level:.2g} over the pairs of the ranking; "
        f"best/other {said}), so this run cannot separate them"
    )


def _timed_out(pair: Pair) -> bool:
    return any(t.errors.get("timeout", 0) for t in pair.entry.trials)


def cause(pair: Pair) -> str | None:
    """The server's known reason for requests that time out or connections left waiting
    (its registry entry's `starves_when_blocked`), when this pair shows either; for
    timeouts without one, the queue that explains them."""
    if (leak := gate_leak(pair)) is not None and leak.params.get("remedy"):
        return str(leak.params["remedy"])
    spec = SERVERS.get(pair.server)
    known = spec.starves_when_blocked if spec is not None else None
    if known is not None and (_timed_out(pair) or pair.warning(UNDERSERVED) is not None):
        return known
    if _timed_out(pair):
        return queued(pair)
    return None


def queued(pair: Pair) -> str:
    """Why requests time out when nothing is known against the server: the queue."""
    timeouts = [float(t.extra["timeout_s"]) for t in pair.entry.trials if t.extra.get("timeout_s")]
    limit = f"the {max(timeouts):g} s timeout" if timeouts else "the request timeout"
    layout = (pair.entry.workers or 1) * (pair.entry.threads or 1)
    return (
        f"requests waited longer than {limit}: {pair.concurrency} connections queue on a "
        f"layout that serves about {layout} at a time (and no faster than its CPUs); "
        "leave out --concurrency and --duration to have a pilot fit them to the pages, or "
        "give fewer connections"
    )


def unfit(pair: Pair) -> str | None:
    """Why this pair may not be ranked among valid ones (None: it may), with the
    server's known cause when there is one."""
    if pair.status in ("invalid", "failed"):
        why = f"{pair.status}: {say(pair.reason)}"
    elif pair.status == "ok" and not pair.valid_trials:
        why = "no valid trial"
    elif (starved := underserved(pair)) is not None:
        why = starved
    elif (leak := gate_leak(pair)) is not None:
        return f"leaks database connections: {say(leak)}"
    else:
        return None
    return why + (f"; cause: {known}" if (known := cause(pair)) else "")


def gate_leak(pair: Pair) -> Notice | None:
    """The verify gate's finding that the server keeps a connection per request."""
    found = pair.entry.verify.warnings if pair.entry.verify else []
    return next((n for n in found if n.code == "db_leak"), None)


def flagged(run: Run) -> dict[str, str]:
    """Each deployment that was invalid, failed or starved somewhere in the run, with the
    first such finding (`on <scenario>: <why>`): never recommended on any axis."""
    found: dict[str, str] = {}
    for pair in run.pairs:
        if (why := unfit(pair)) is not None:
            found.setdefault(pair.label, f"on {pair.scenario}: {why}")
    return found


def rps_interval(pair: Pair, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A t-interval of the pair's typical req/s (geometric mean over its valid trials,
    on the log scale, as the engine's ratios): few rounds give a wide interval, as they
    should. None below two trials."""
    return t_interval(pair.series("rps"), confidence)


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
