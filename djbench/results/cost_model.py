"""What a cost probe records (runbench --cost): per page, the instructions one request
executes through the project's own handler under Valgrind, per hash seed, with the SQL
it runs and where its Python work goes (djbench.measure.cost)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from djbench.results.modelbase import Command, Model, Notice


class SeedCount(Model):
    """One counted child process: one hash seed."""

    seed: int
    instructions: float = Field(description="per request: the last two segments' mean")
    segments: list[int] = Field(
        default_factory=list, description="instructions of each counted segment, in order"
    )
    per_segment: int = Field(description="requests in each segment after the first")
    settled: bool = Field(description="the last two segments agreed within the rule")
    seconds: float = 0.0
    command: Command | None = None


class PageCost(Model):
    """One page (a scenario; a mix's pages each on their own) under the probe."""

    scenario: str
    interface: Literal["wsgi", "asgi"]
    status: Literal["ok", "failed"] = "ok"
    reason: Notice | None = None
    counts: list[SeedCount] = Field(default_factory=list)
    instructions: float | None = Field(default=None, description="median over the seeds")
    spread: float | None = Field(
        default=None, description="(highest - lowest) / median over the seeds"
    )
    queries: float | None = Field(default=None, description="SQL statements per request")
    fingerprints: dict[str, float] = Field(
        default_factory=dict, description="normalised SQL -> times per request"
    )
    response_bytes: int | None = None
    functions: dict[str, float] = Field(
        default_factory=dict,
        description="Python function -> its own opcodes per request (main thread)",
    )


class CostRecord(Model):
    """A cost probe's settings and its pages."""

    valgrind: str = ""
    seeds: list[int] = Field(default_factory=list)
    settled_within: float = Field(description="the warm-up rule: consecutive segments within")
    max_segments: int
    project_path_length: int = Field(
        description="string sizes follow it: compare cells of equal length"
    )
    python: str = ""
    pages: list[PageCost] = Field(default_factory=list)
