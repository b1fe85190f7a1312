"""A mix's figures per page, read from a run's results (djbench.plan.scenarios).

For each pair that loaded a mix: each page's share of the answers (against its weight),
req/s, p50 and p99 (medians over the pair's valid trials), errors (summed), and, when
the run also loaded that page as its own scenario on the same deployment, the page's
p99 alone: a fast page whose p99 is much higher in the mix than alone waits behind the
slow ones (head-of-line blocking: a sync worker held by a slow page).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from djbench.results.model import PairResult, RunDocument

# A fast page's p99 this many times its own alone, and at least this many ms more, is
# said as waiting behind the mix's slower pages.
BLOCKED_RATIO = 2.0
BLOCKED_MS = 5.0


@dataclass(frozen=True)
class PageRow:
    page: str
    weight_share: float  # its weight over the mix's
    share: float  # its answers over the mix's (realized)
    rps: float | None
    p50_ms: float | None
    p99_ms: float | None
    errors: int
    alone_p99_ms: float | None  # the page as its own scenario on the same deployment

    @property
    def blocked(self) -> bool:
        """Its p99 in the mix well above its own alone: it waits behind other pages."""
        if self.p99_ms is None or self.alone_p99_ms is None:
            return False
        return (
            self.p99_ms >= BLOCKED_RATIO * self.alone_p99_ms
            and self.p99_ms - self.alone_p99_ms >= BLOCKED_MS
        )


@dataclass(frozen=True)
class MixPair:
    entry: PairResult
    rows: list[PageRow]
    p99_ms: float | None  # the whole mix's (median over trials)

    @property
    def limiting(self) -> PageRow | None:
        """The page with the highest p99: the one that limits the mix's."""
        timed = [r for r in self.rows if r.p99_ms is not None]
        return max(timed, key=lambda r: r.p99_ms or 0.0) if timed else None


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def _alone(document: RunDocument, entry: PairResult, page: str) -> float | None:
    for other in document.results:
        if (
            other.scenario == page
            and other.label == entry.label
            and other.concurrency == entry.concurrency
            and other.status == "ok"
        ):
            return other.summary.latency_p99_ms.median
    return None


def mix_pair(document: RunDocument, entry: PairResult) -> MixPair | None:
    """The pair's per-page figures (None: it did not load a mix, or nothing valid)."""
    trials = [t for t in entry.trials if t.valid and t.pages]
    if not trials:
        return None
    weights = {p.name: p.weight for p in trials[0].pages or []}
    total_weight = sum(weights.values()) or 1.0
    answered = sum(p.requests for t in trials for p in t.pages or []) or 1
    rows = []
    for name, weight in weights.items():
        mine = [p for t in trials for p in t.pages or [] if p.name == name]
        rows.append(
            PageRow(
                page=name,
                weight_share=weight / total_weight,
                share=sum(p.requests for p in mine) / answered,
                rps=_median([p.rps for p in mine]),
                p50_ms=_median([p.latency_ms.p50 for p in mine]),
                p99_ms=_median([p.latency_ms.p99 for p in mine]),
                errors=sum(p.errors + p.unexpected for p in mine),
                alone_p99_ms=_alone(document, entry, name),
            )
        )
    return MixPair(entry, rows, entry.summary.latency_p99_ms.median)


def mix_pairs(document: RunDocument) -> list[MixPair]:
    return [m for e in document.results if (m := mix_pair(document, e)) is not None]


def best_p99(pairs: list[MixPair], scenario: str) -> MixPair | None:
    """The pair that holds this mix's p99 lowest (medians: a description, not a test)."""
    timed = [m for m in pairs if m.entry.scenario == scenario and m.p99_ms is not None]
    return min(timed, key=lambda m: m.p99_ms or 0.0) if timed else None
