"""``runbench --tune --objective capacity`` (or ``--capacity --tune``): each server's
layout chosen by its capacity at the p99 target, not by closed-loop req/s.

A capacity search costs several windows, so successive halving's "one more trial per
survivor" would buy little for much; the search is two-stage instead (multi-fidelity):

1. **Screening**: every candidate of every server (djbench.plan.tuning.space), servers
   interleaved so that a budget cut falls on all alike, gets a coarse search
   (djbench.run.modes.capacity with ``screening``: bracket to 25%, no confirmation). Its
   figure is the highest rate that passed (the geometric mean over scenarios).
2. **Finals**: each server's best FINALISTS candidates by that figure get the full
   search (5%, three fresh confirmation windows, one window above). The best is the
   finalist with the highest *confirmed* capacity; a server whose finals did not
   confirm, or which the budget cut, has no best (said, never guessed from screening).

The finals' confirmation windows are fresh measurements, so the best's capacity is not
the selection's own (lucky) figure, though picking the higher of two confirmed figures
still favours the luckier: the guide shows both finalists.
"""

from __future__ import annotations

import dataclasses
import math
import time

from djbench.launch.live import Deployment
from djbench.plan import tuning
from djbench.plan.jobplans import STEADY_S
from djbench.plan.options import cpu_count
from djbench.results.model import PairResult, TuneCandidate, TuneRecord
from djbench.run.bench import Bench
from djbench.run.modes import capacity
from djbench.run.selection import deployment
from djbench.run.tuned import Fate, write_files

FINALISTS = 2  # per server: the candidates the full search runs on
METHOD = (
    "capacity at the p99 target: a coarse search (25%, unconfirmed) per candidate, then "
    f"the full search (5%, then a steady staircase) on each server's best {FINALISTS}"
)


@dataclasses.dataclass
class _Stage:
    """A stage's figure per candidate label: capacity (req/s, geometric mean over the
    scenarios), or None when a scenario found none."""

    figures: dict[str, float | None] = dataclasses.field(default_factory=dict)


def search(
    bench: Bench,
    templates: list[Deployment],
    budget_s: float,
    slo_ms: float,
    steady_s: float = STEADY_S,
) -> TuneRecord:
    recorder, progress = bench.recorder, bench.progress
    cpus = cpu_count(templates[0].cpus) if templates else 1
    record = TuneRecord(
        objective="capacity", slo_p99_ms=slo_ms, budget_s=budget_s, server_cpus=cpus,
        method=METHOD,
    )  # fmt: skip
    recorder.document.tuning = record
    started = time.monotonic()
    stop_at = started + budget_s
    bench = dataclasses.replace(bench, deadline=stop_at)
    candidates = _interleaved(templates, cpus)
    progress.say(
        f"screening {len(candidates)} candidate(s): a coarse capacity search each "
        f"(p99 <= {slo_ms:g} ms)"
    )
    screen = _stage(bench, candidates, capacity.How(slo_ms, screening=True))
    finalists = _finalists(candidates, screen)
    if finalists and time.monotonic() < stop_at:
        progress.say(f"finals: the full search on {len(finalists)} candidate(s)")
    # The finals: one staircase each (repeats=1), enough to rank a server's own layouts;
    # the capacity with its interval over repeats is --capacity's.
    finals = _stage(bench, finalists, capacity.How(slo_ms, steady_s=steady_s, repeats=1))
    _record(record, candidates, screen, finals, {d.label for d in finalists})
    record.spent_s = round(time.monotonic() - started, 1)
    record.files = write_files(recorder.document, bench.run_dir)
    recorder.save()
    return record


def _interleaved(templates: list[Deployment], cpus: int) -> list[Deployment]:
    """Every server's candidates, first of each server, then second of each, ..."""
    spaces = [[deployment(t, c) for c in tuning.space(t.server.tuning, cpus)] for t in templates]
    longest = max((len(s) for s in spaces), default=0)
    return [s[i] for i in range(longest) for s in spaces if i < len(s)]


def _stage(bench: Bench, chosen: list[Deployment], how: capacity.How) -> _Stage:
    """One capacity search per candidate and scenario; the figure of each that ran."""
    stage = _Stage()
    if not chosen:
        return stage
    plan = dataclasses.replace(bench.plan, deployments=chosen, trials=1)
    capacity.run(bench.with_plan(plan), how)
    for dep in chosen:
        entries = [e for e in bench.recorder.document.results if e.label == dep.label]
        if any(e.capacity is not None or e.status == "failed" for e in entries):
            stage.figures[dep.label] = _figure(entries, how.screening)
    return stage


def _figure(entries: list[PairResult], screening: bool) -> float | None:
    """Screening: the highest rate that passed; finals: the confirmed capacity. The
    geometric mean over the scenarios (incompatible ones left out); None if any has none."""
    rates = []
    for entry in entries:
        if entry.status == "incompatible":
            continue
        found = entry.capacity
        if found is None:
            return None
        passed = [s.offered for s in found.steps if s.passed and s.phase == "search"]
        rate = (max(passed) if passed else None) if screening else found.rps
        if not rate:
            return None
        rates.append(rate)
    if not rates:
        return None
    return math.exp(sum(math.log(r) for r in rates) / len(rates))


def _finalists(candidates: list[Deployment], screen: _Stage) -> list[Deployment]:
    """Each server's FINALISTS best by the screening figure."""
    chosen: list[Deployment] = []
    for server in dict.fromkeys(d.server.name for d in candidates):
        scored = [(screen.figures.get(d.label), d) for d in candidates if d.server.name == server]
        ranked = sorted(((f, d) for f, d in scored if f), key=lambda fd: -fd[0])
        chosen += [d for _, d in ranked[:FINALISTS]]
    return chosen


def _record(
    record: TuneRecord,
    candidates: list[Deployment],
    screen: _Stage,
    finals: _Stage,
    finalist_labels: set[str],
) -> None:
    """Every candidate's figures and outcome; each server's best (confirmed only)."""
    best: dict[str, tuple[float, str]] = {}
    for dep in candidates:
        final = finals.figures.get(dep.label)
        if final and final > best.get(dep.server.name, (0.0, ""))[0]:
            best[dep.server.name] = (final, dep.config or dep.label)
    for dep in candidates:
        server, config = dep.server.name, dep.config or dep.label
        figures = [screen.figures.get(dep.label), finals.figures.get(dep.label)]
        ran = [dep.label in screen.figures, dep.label in finals.figures]
        lost = best.get(server, (0.0, ""))[1] != config
        record.candidates.append(
            TuneCandidate(
                server=server,
                config=config,
                workers=dep.workers,
                threads=dep.threads,
                knobs=dict(dep.knobs),
                rounds=sum(ran),
                rps=[round(f, 1) for f in figures if f],
                score=round(figures[1] or figures[0] or 0, 1) or None,
                outcome=_outcome(dep, best, ran, figures, finalist_labels),
                dropped_after=_dropped_after(ran, dep.label in finalist_labels, lost),
                why=_why(ran, figures),
            )
        )  # fmt: skip
    record.best = {server: config for server, (_, config) in best.items()}
    record.skipped += _skipped(candidates, screen, finals, finalist_labels, record.best)


def _dropped_after(ran: list[bool], finalist: bool, lost: bool) -> int | None:
    """1: screened and not a finalist; 2: a finalist that lost; None: neither."""
    if ran[0] and not finalist:
        return 1
    return 2 if ran[1] and lost else None


def _outcome(
    dep: Deployment,
    best: dict[str, tuple[float, str]],
    ran: list[bool],
    figures: list[float | None],
    finalists: set[str],
) -> Fate:
    if best.get(dep.server.name, (0.0, ""))[1] == (dep.config or dep.label):
        return "best"
    if not ran[0]:
        return "unmeasured"
    if not figures[0] or (ran[1] and not figures[1]):
        return "failed"
    if dep.label in finalists and not ran[1]:
        return "undecided"
    return "dropped"


def _why(ran: list[bool], figures: list[float | None]) -> str:
    if ran[0] and not figures[0]:
        return "no rate passed the target in the screening (or the server failed)"
    if ran[1] and not figures[1]:
        return "the full search did not confirm a capacity"
    return ""


def _skipped(
    candidates: list[Deployment],
    screen: _Stage,
    finals: _Stage,
    finalists: set[str],
    best: dict[str, str],
) -> list[str]:
    """What the budget cut, in words."""
    said = []
    unscreened = [d.label for d in candidates if d.label not in screen.figures]
    if unscreened:
        said.append(f"the budget was spent: {len(unscreened)} candidate(s) never screened")
    unfinished = sorted(finalists - set(finals.figures))
    if unfinished:
        said.append(f"the budget was spent: no full search for {', '.join(unfinished)}")
    for server in dict.fromkeys(d.server.name for d in candidates):
        if server not in best:
            said.append(f"{server}: no confirmed capacity, so no best")
    return said
