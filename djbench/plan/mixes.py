"""Mixes: a scenario that is a weighted mix of others (`mix = {home = 40, blog = 30}`).

A team's traffic is a mix, and the mix is where servers differ: a slow page holds a
sync worker while the fast ones queue behind it. A mix's pages are scenarios of the
same file (plain HTTP ones); each is verified as itself, and the load draws every
request's page by weight from a seeded generator (the seed is recorded), so a mix's
realized shares are within sampling error of its weights and a run can be repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from djbench.plan.scenarios import Scenario, Thresholds, _ScenarioRaw

# Keys that describe one request: a mix's requests are its pages'.
NOT_FOR_A_MIX = (
    "path", "paths", "method", "body", "content_type", "headers", "cookies", "expect",
    "checks", "user", "csrf", "message", "ws_mode", "parity", "parity_ignore",
)  # fmt: skip
# The seed of a run's page draws when none is given (recorded in every trial's result).
DEFAULT_SEED = 20261204


@dataclass(frozen=True)
class MixPart:
    """One page of a mix: a scenario of the file and its weight."""

    name: str
    weight: float
    scenario: Scenario

    def share(self, parts: tuple[MixPart, ...]) -> float:
        return self.weight / sum(p.weight for p in parts)


def scenario(raw: _ScenarioRaw, known: dict[str, Scenario], thresholds: Thresholds) -> Scenario:
    """The mix `raw` declares, its pages taken from `known` (the file's plain scenarios);
    ValueError says what is wrong in one sentence."""
    from djbench.plan.scenarios import Scenario

    assert raw.mix is not None
    given = sorted(raw.model_fields_set & set(NOT_FOR_A_MIX))
    if given:
        raise ValueError(
            f"a mix takes its requests from its pages: {', '.join(given)} belong(s) on them"
        )
    if raw.kind != "http":
        raise ValueError("a mix is of HTTP pages (kind = 'http')")
    unknown = [n for n in raw.mix if n not in known]
    if unknown:
        raise ValueError(
            f"mix names {', '.join(unknown)}, which is not a plain HTTP scenario of this "
            "file (a mix's pages are scenarios with a path, not websockets or other mixes)"
        )
    if any(known[n].kind != "http" for n in raw.mix):
        raise ValueError("a mix's pages are HTTP scenarios, not websockets")
    parts = tuple(MixPart(name, float(w), known[name]) for name, w in raw.mix.items())
    interfaces = tuple(
        i for i in ("wsgi", "asgi") if all(i in p.scenario.interfaces for p in parts)
    )
    if raw.interfaces:
        interfaces = tuple(i for i in interfaces if i in raw.interfaces)
    if not interfaces:
        raise ValueError("its pages share no interface (one is WSGI-only, another ASGI-only)")
    heaviest = max(parts, key=lambda p: p.weight).scenario
    return Scenario(
        name=raw.name,
        endpoint=raw.endpoint or raw.name,
        variant=raw.variant,
        kind="http",
        request=heaviest.request,
        expect=heaviest.expect,
        description=raw.description or describe(parts),
        interfaces=interfaces,
        parity="none",
        workload=raw.workload or workload(parts),
        thresholds=thresholds,
        mix=parts,
    )


def workload(parts: tuple[MixPart, ...]) -> str:
    """What the mix mostly is, by weight (for the guide's grouping)."""
    weights: dict[str, float] = {}
    for part in parts:
        weights[part.scenario.workload] = weights.get(part.scenario.workload, 0) + part.weight
    return max(weights, key=lambda w: weights[w])


def describe(parts: tuple[MixPart, ...]) -> str:
    """'home 40%, blog-post 30%, search 30%'."""
    return ", ".join(f"{p.name} {p.share(parts):.0%}" for p in parts)


def weights(scenario: Scenario) -> dict[str, float] | None:
    """The mix's weights as written (None: not a mix)."""
    return {p.name: p.weight for p in scenario.mix} or None
