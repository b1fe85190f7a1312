"""The report's first screen: per page the decision a lead reads in ten seconds (the
deployment to use, or why none; its figure with its interval; the deployments tied with
it; the team's own deployment beside it), then the deployments not to use and why, as
tables. The same typed answer (djbench.verdicts.answer) the console's text says: this is
its other presenter, and the text stays below it unchanged."""

from __future__ import annotations

from djbench.reports import answer_words as words
from djbench.reports.search_words import span
from djbench.reports.sections import Section
from djbench.reports.words import say
from djbench.results.model import Notice
from djbench.verdicts.answer import PageAnswer, Versus, answer
from djbench.verdicts.runs import Pair, Run

# What each kind of page answer is called in the table (djbench.verdicts.answer.PageKind).
DECISION = {
    "use": "use",
    "capacity": "use (capacity within the p99 target)",
    "no_verdict": "no verdict: the leaders vary too much; highest so far",
    "screen": "a screen, not a verdict (too few rounds to rank); highest so far",
    "none_served": "nothing served it correctly",
}
HEADERS = ["page", "decision", "deployment (layout)", "figure [95% interval]", "tied with it"]


def _figure(found: PageAnswer, leader: Pair) -> str:
    if found.kind == "capacity" and (lead := leader.entry.capacity) is not None:
        said = f"{lead.rps or 0:,.0f} req/s within p99 {lead.slo_p99_ms:g} ms"
        return said + (f" {span(lead)}" if lead.repeats else " (search range)")
    return words.throughput(leader)


def _tied(found: PageAnswer) -> str:
    if found.capacity is not None:
        tied = [p.label for p in found.capacity.tied]
    elif found.kind == "use" and found.ranking is not None:
        tied = [p.label for p in found.ranking.winners[1:]]
    elif found.kind == "no_verdict" and found.ranking is not None:
        tied = [p.label for p in found.ranking.blocked if p is not found.leader]
    elif found.kind == "screen" and found.ranking is not None:
        return f"untested: {words.screen_reason(found)}"
    else:
        tied = []
    return ", ".join(tied) or "none"


def _yours(v: Versus, leader: Pair) -> str:
    """The team's deployment against the leader, in a few words."""
    if v.unfit is not None:
        return f"{v.own.label}: not usable here"
    if v.verdict is None or v.interval is None or v.ratio is None:
        return f"{v.own.label}: {words.throughput(v.own)}; too few paired rounds to test"
    said = {"better": "more than yours", "equivalent": "the same as yours"}.get(
        v.verdict, "not distinguishable from yours"
    )
    low, high = v.interval
    return (
        f"{v.own.label} {words.throughput(v.own)}: {leader.label} serves {v.ratio:.2f}x "
        f"[{low:.2f}-{high:.2f}], {said}"
    )


def _row(found: PageAnswer, run: Run) -> list[str]:
    leader = found.leader
    if leader is None:
        return [found.scenario, DECISION[found.kind], "none", "", "none"]
    return [
        found.scenario,
        DECISION[found.kind],
        f"{leader.label} ({words.layout(leader)}{words.own_notes(leader, run)})",
        _figure(found, leader),
        _tied(found),
    ]


def decision_section(runs: list[Run]) -> Section:
    """A row per page of every run; the team's own deployments and the caveats that
    most change a comparison under the table."""
    many = len(runs) > 1
    section = Section(
        id="decision",
        title="Decision",
        intro="Per page, what the run decided: the deployment to use with its figure and "
        "95% interval over rounds (req/s, or capacity within the p99 target), and the "
        "deployments the run cannot tell from it.",
        headers=(["run"] if many else []) + HEADERS,
    )
    heads = [words.lines(run)[0] for run in runs]
    if not many:  # what ran, first: the rounds completed, the comparisons still open
        section.intro = heads[0].removeprefix("Answer: ") + ". " + section.intro
    for run, head in zip(runs, heads, strict=True):
        if many:
            section.notes.append(f"[{run.run_tag}] {head}")
        said = answer(run)
        for found in said.pages:
            section.rows.append(([run.run_tag] if many else []) + _row(found, run))
            if found.leader is not None:
                section.notes += [
                    f"{found.scenario}: vs yours, {_yours(v, found.leader)}"
                    + words.own_notes(v.own, run)
                    for v in found.yours
                ]
        section.notes += [line.strip() for line in words.race_lines(said)]
    return section


def not_recommended_section(runs: list[Run]) -> Section | None:
    """Each deployment not to use, once per run, with its first finding and its cause."""
    rows = []
    for run in runs:
        for pair, why in answer(run).not_recommended:
            cause = why.params.get("cause")
            said = say(cause).split(";")[0] if isinstance(cause, Notice) else ""
            rows.append([pair.label, pair.scenario, words.finding_text(pair), said])
    if not rows:
        return None
    return Section(
        id="not-recommended",
        title="Not recommended",
        intro="Each deployment that may not be used, with its first finding (the tables "
        "below have every one).",
        headers=["deployment", "page", "finding", "known cause"],
        rows=rows,
    )
