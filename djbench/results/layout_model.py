"""The worker count, measured: the leading server at each layout of its tuning space.

Re-exported by :mod:`djbench.results.model` (import from there)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from djbench.results.modelbase import Model


class LayoutRow(Model):
    """One layout of the swept server: its pair's label and what its window gave."""

    label: str = Field(description="the pair's label, e.g. gunicorn-gthread{workers=2,threads=8}")
    workers: int
    threads: int | None = None
    rps: float | None = Field(default=None, description="None: not measured (status says why)")
    p99_ms: float | None = None
    rounds: int = Field(default=1, description="its valid windows (rounds, when raced)")
    rps_low: float | None = Field(
        default=None, description="the 95% interval of its req/s over rounds (raced only)"
    )
    rps_high: float | None = None
    status: str = Field(description="the pair's status: ok, invalid, failed, ...")


class LayoutSweep(Model):
    """After the rounds, the leader's server at every layout of its tuning space
    (djbench.plan.tuning.space), back to back, one window each on one scenario: a
    screen of the worker/thread count, not a test (djbench.run.layouts)."""

    server: str = Field(description="the registry server swept")
    leader: str = Field(description="the deployment that led the ranking it was chosen from")
    scenario: str
    page: Literal["first", "heaviest"] = Field(
        default="first",
        description="how `scenario` was chosen: the run's first page (files before "
        "2026-12-07), or the heaviest (its fastest deployment served fewest req/s)",
    )
    server_cpus: int
    rows: list[LayoutRow] = Field(default_factory=list)
    best: str | None = Field(
        default=None,
        description="the row with the highest req/s (raced: the ranking's leader)",
    )
    rounds: int = Field(
        default=1,
        description="rounds of every layout: one (a screen), or raced in whole rounds",
    )
    tied: list[str] = Field(
        default_factory=list,
        description="raced: the layouts the engine cannot tell from the best",
    )
    unstable: list[str] = Field(
        default_factory=list,
        description="raced: leading layouts whose trials varied too much to rank (then no "
        "verdict: `best` is the highest so far)",
    )
    skipped: list[str] = Field(
        default_factory=list, description="layouts the budget left no time for"
    )
