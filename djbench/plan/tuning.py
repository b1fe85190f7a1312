"""Each server at its best (--tune): the knobs searched, the layout recommended, the search.

A candidate is a process/thread layout plus a few server-specific knobs. The spaces
are small on purpose (at most six candidates a server at a CPU budget): the knobs that
change what a server can do with the connections it is given, from each server's own
documentation:

- uWSGI: processes and threads (behind its HTTP router, which holds the connections:
  a worker thread serves requests, not connections).
- Gunicorn sync: workers (its docs: 2 x cores + 1); gthread: workers and threads;
  gevent: workers and worker connections; the Uvicorn and ASGI workers: workers.
- Uvicorn, Hypercorn: processes (one per core, or two).
- Granian WSGI: workers and blocking threads; Granian ASGI: workers and runtime threads.
- Daphne: one process, nothing to search at any budget.

The search is successive halving (Jamieson and Talwalkar, 2016): every surviving
candidate gets one more trial a round, interleaved, and the better half by the
objective goes on, so trials go where the answer is still open. Pure functions here;
the runs are :mod:`djbench.run.modes.tune`'s; each server's space is a fact of its
registry entry (:class:`Space`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    workers: int
    threads: int | None = None
    knobs: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        parts = [f"workers={self.workers}"]
        if self.threads is not None:
            parts.append(f"threads={self.threads}")
        parts += [f"{k}={v}" for k, v in self.knobs]
        return ",".join(parts)


@dataclass(frozen=True)
class Space:
    """A server's tuning facts, held by its registry entry (djbench.servers):
    the layouts searched and the one its documentation recommends. Worker counts are
    written (per CPU, plus) so that one entry serves every CPU budget."""

    workers: tuple[tuple[int, int], ...] = ((1, 0), (2, 0))  # (per CPU, plus): k, 2k
    threads: tuple[int | None, ...] = (None,)
    knob: tuple[str, tuple[str, ...]] | None = None  # one server knob and its values
    layout: tuple[int, int] = (1, 0)  # --workers auto: (per CPU, plus)
    layout_threads: int | None = None


PER_CPU = Space()  # one and two processes per CPU, each server's own defaults
ONE_PROCESS = Space(workers=((0, 1),), layout=(0, 1))  # nothing to search at any budget


def space(facts: Space, cpus: int) -> list[Candidate]:
    """The candidates searched for a server with these facts and `cpus` CPUs (1 when
    unpinned)."""
    k = max(1, cpus)
    counts = dict.fromkeys(per * k + plus for per, plus in facts.workers)
    name, values = facts.knob or ("", ("",))
    return [
        Candidate(w, t, ((name, v),) if name else ())
        for w in counts
        for t in facts.threads
        for v in values
    ]


def recommended(facts: Space, cpus: int) -> Candidate:
    """`--workers auto`: the layout the server's documentation recommends for `cpus`."""
    k = max(1, cpus)
    per, plus = facts.layout
    return Candidate(per * k + plus, facts.layout_threads)


@dataclass
class Standing:
    """A candidate's trials so far: req/s and p99 (ms) and peak PSS (MB) of each."""

    candidate: Candidate
    rps: list[float]
    p99: list[float]
    pss: list[float]
    failed: str = ""

    def score(self, objective: str, slo_p99: float | None) -> float:
        """Higher is better; -inf when it failed or its median p99 breaks the SLO."""
        if self.failed or not self.rps:
            return -math.inf
        if slo_p99 is not None and self.p99 and statistics.median(self.p99) > slo_p99:
            return -math.inf
        rps = statistics.median(self.rps)
        if objective == "rps-per-100mb":
            pss = statistics.median(self.pss) if self.pss else 0
            return rps / pss * 100 if pss else -math.inf
        return rps


def survivors(standings: list[Standing], objective: str, slo_p99: float | None) -> list[Standing]:
    """The better half (rounded up) by the objective; ties keep their order."""
    ranked = sorted(standings, key=lambda s: -s.score(objective, slo_p99))
    alive = [s for s in ranked if s.score(objective, slo_p99) > -math.inf]
    return alive[: max(1, math.ceil(len(standings) / 2))] if alive else ranked[:1]


# "capacity" is not a score of this halving: djbench.run.modes.tune_capacity searches by it
OBJECTIVES = ("rps", "rps-per-100mb", "capacity")


Figures = tuple[float, float, float]  # one round of a candidate: req/s, worst p99, PSS
Key = tuple[str, Candidate]  # (server, candidate)


@dataclass
class Halving:
    """What successive halving did: every standing, when each was dropped, the bests."""

    standings: dict[str, list[Standing]]
    dropped_after: dict[Key, int]
    best: dict[str, Candidate]
    rounds: int
    cut: list[str]  # what the budget stopped


def successive_halving(
    spaces: dict[str, list[Candidate]],
    measure: Callable[[int, list[Key]], dict[Key, Figures | None]],
    objective: str = "rps",
    slo_p99: float | None = None,
    out_of_time: Callable[[], bool] = lambda: False,
) -> Halving:
    """Every server's candidates at once: a round measures each survivor once (`measure`
    gets the round and the candidates and answers for those it ran: figures, or None for
    one that failed; one it did not reach is left out), then each server keeps
    its better half, until one is left per server or `out_of_time()` before a round."""
    standings = {s: [Standing(c, [], [], []) for c in cands] for s, cands in spaces.items()}
    alive = {s: list(v) for s, v in standings.items()}
    dropped: dict[Key, int] = {}
    cut: list[str] = []
    round_index = 0
    while True:
        keys = [
            (server, st.candidate)
            for server, left in alive.items()
            if round_index == 0 or len(left) > 1
            for st in left
        ]
        if not keys:
            break
        if out_of_time():
            undecided = [f"{s}: {len(v)} left" for s, v in alive.items() if len(v) > 1]
            cut.append(f"round {round_index + 1} not run ({', '.join(undecided)})")
            break
        found = measure(round_index, keys)
        if any(key not in found for key in keys):
            # The budget stopped the round part-way: halving on a partial round would
            # judge candidates on different numbers of trials; the round ends the search.
            unmeasured = sum(1 for key in keys if key not in found)
            cut.append(f"round {round_index + 1} stopped: {unmeasured} candidate(s) not measured")
            _record(standings, keys, found)
            round_index += 1
            break
        _record(standings, keys, found)
        for server, left in alive.items():
            if round_index > 0 and len(left) <= 1:
                continue
            kept = survivors(left, objective, slo_p99)
            for st in left:
                if st not in kept:
                    dropped[(server, st.candidate)] = round_index + 1
            alive[server] = kept
        round_index += 1
    best = {}
    for server, everyone in standings.items():
        top = max(everyone, key=lambda st: st.score(objective, slo_p99))
        if math.isfinite(top.score(objective, slo_p99)):
            best[server] = top.candidate
    cut += [
        f"{server}: no candidate measured before the budget ran out"
        for server, everyone in standings.items()
        if not any(st.rps or st.failed for st in everyone)
    ]
    return Halving(standings, dropped, best, round_index, cut)


def _record(
    standings: dict[str, list[Standing]], keys: list[Key], found: dict[Key, Figures | None]
) -> None:
    """A round's figures into each measured candidate's standing."""
    for server, candidate in keys:
        standing = next(st for st in standings[server] if st.candidate == candidate)
        if (server, candidate) not in found:
            continue  # not measured this round (the budget stopped it): no news
        figures = found[(server, candidate)]
        if figures is None:
            standing.failed = standing.failed or "no valid trial"
            continue
        standing.rps.append(figures[0])
        standing.p99.append(figures[1])
        standing.pss.append(figures[2])
