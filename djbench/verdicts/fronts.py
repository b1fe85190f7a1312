"""What stands in front of the server: Caddy, TLS, HTTP/2. Each step is judged against
the one before it (same server, variant, scenario and rounds), by the decision engine
paired by round. Typed values; djbench.reports.guide says them."""

from __future__ import annotations

from dataclasses import dataclass

from djbench.servers import caddy
from djbench.verdicts.compare import estimate
from djbench.verdicts.engine import decide
from djbench.verdicts.ranking import TIE_ALPHA
from djbench.verdicts.runs import Pair, Run

# TLS and HTTP/2 (issue 27): each step (a code the guide words) from the front before it.
# A front is the proxy, and /protocol when not HTTP/1.1 (djbench.verdicts.runs.Pair.front).
FRONT_STEPS = (
    (caddy.TLS, caddy.PLAIN, "tls_at_proxy"),
    (f"{caddy.TLS}/h2", caddy.TLS, "h2_over_tls"),
    (f"{caddy.NONE}/h2", caddy.NONE, "own_tls_h2"),
    (f"{caddy.NONE}/h2", f"{caddy.TLS}/h2", "own_h2_not_proxy"),
    (f"{caddy.NONE}/h2c", f"{caddy.TLS}/h2", "own_h2c_not_proxy"),
)
PROXIED = caddy.PLAIN  # the plain front that puts a proxy before the server
TLS_FRONTS = (caddy.TLS, f"{caddy.NONE}/h2")  # a run with either has a TLS section


@dataclass(frozen=True)
class ProxyCost:
    """A pair behind the proxy against the same pair direct."""

    pair: Pair
    direct: Pair

    @property
    def ratio(self) -> float:
        return (self.pair.median("rps") or 0) / (self.direct.median("rps") or 1)

    @property
    def proxy_pss(self) -> float | None:
        memory = self.pair.entry.proxy_memory_mb
        return memory.pss_peak if memory else None


def proxy_costs(run: Run) -> list[ProxyCost]:
    """Every pair behind the plain proxy with its direct twin, least affected first."""
    direct = {
        (p.server, p.entry.variant_label, p.scenario, p.concurrency): p
        for p in run.pairs
        if p.front == caddy.NONE and p.ok
    }
    found = []
    for pair in run.pairs:
        if pair.front != PROXIED or not pair.ok:  # TLS and HTTP/2: front_steps
            continue
        key = (pair.server, pair.entry.variant_label, pair.scenario, pair.concurrency)
        if (base := direct.get(key)) is not None:
            found.append(ProxyCost(pair, base))
    return sorted(found, key=lambda c: -c.ratio)


@dataclass(frozen=True)
class FrontStep:
    """One step (a FRONT_STEPS code) against the front before it, for one server and
    scenario: the engine's decision (None: too few rounds to test)."""

    server: str
    scenario: str
    step: str
    new: Pair
    base: Pair
    decision: decide.Decision | None


def _versus(new: Pair, base: Pair) -> decide.Decision | None:
    """NEW/BASE req/s, the engine's verdict, paired by round at TIE_ALPHA."""
    e = estimate("rps", base, new, paired=True)
    if e is None:
        return None
    [d] = decide.judge([e], +1, TIE_ALPHA)
    return d


def front_steps(run: Run) -> list[FrontStep] | None:
    """Every step the run measured both sides of; None when it has no TLS front
    (Caddy's or a server's own)."""
    fronts: dict[tuple[str, str, str, int | None], dict[str, Pair]] = {}
    for p in run.pairs:
        if p.ok:
            key = (p.server, p.entry.variant_label, p.scenario, p.concurrency)
            fronts.setdefault(key, {})[p.front] = p
    if not any(f in by for by in fronts.values() for f in TLS_FRONTS):
        return None
    found = []
    for (server, _, scenario, _), by in sorted(fronts.items()):
        for new, base, step in FRONT_STEPS:
            if new in by and base in by:
                n, b = by[new], by[base]
                found.append(FrontStep(server, scenario, step, n, b, _versus(n, b)))
    return found
