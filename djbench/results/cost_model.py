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


class ServerCost(Model):
    """A server's own cost per request (djbench.measure.server_cost): its whole process
    tree under Valgrind, N and 3N requests of a trivial page differenced, less what
    Django's handler spends on that request in-process."""

    server: str
    interface: Literal["wsgi", "asgi"]
    scenario: str
    status: Literal["ok", "failed"] = "ok"
    reason: Notice | None = None
    requests: int | None = Field(default=None, description="N: the runs served N and 3N")
    totals: list[int] = Field(
        default_factory=list, description="instructions of the whole tree in each run"
    )
    connections: list[int] = Field(
        default_factory=list,
        description="connections opened in each run: 1, or one per request when the server "
        "closes each (Gunicorn's sync worker)",
    )
    per_request: float | None = Field(
        default=None, description="the tree's instructions per request: (3N run - N run) / 2N"
    )
    handler: float | None = Field(
        default=None, description="Django's handler in-process, same interface and seed"
    )
    seconds: float = 0.0
    command: Command | None = None

    @property
    def own(self) -> float | None:
        """What a WSGI server spends per request beyond Django's handler; None for an
        ASGI server, whose loop runs the handler's hops at a cost of its own
        (djbench.measure.server_cost)."""
        if self.interface == "asgi" or self.per_request is None or self.handler is None:
            return None
        return self.per_request - self.handler


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
    servers: list[ServerCost] = Field(
        default_factory=list, description="each server's own cost per request (--servers)"
    )


CostVerdict = Literal["worse", "better", "equal", "failed", "new", "gone"]


class FunctionChange(Model):
    """A Python function's own opcodes per request, before and after."""

    name: str
    before: float
    after: float


class CostChange(Model):
    """One page's cost, base against new (djbench.verdicts.cost)."""

    scenario: str
    verdict: CostVerdict
    before: float | None = None
    after: float | None = None
    ratio: float | None = Field(
        default=None, description="after / before: the median of the ratios paired by seed"
    )
    noise: float = Field(default=0.0, description="the range of the ratios paired by seed")
    queries_before: float | None = None
    queries_after: float | None = None
    sql_added: list[str] = Field(
        default_factory=list, description="SQL shapes run more often per request than before"
    )
    sql_removed: list[str] = Field(default_factory=list)
    functions: list[FunctionChange] = Field(default_factory=list)
    notes: list[Notice] = Field(default_factory=list)

    @property
    def queries_changed(self) -> bool:
        return bool(self.sql_added or self.sql_removed)

    @property
    def failing(self) -> bool:
        """What fails a gate: a costlier page, a changed query, a page that broke."""
        return self.verdict in ("worse", "failed") or self.queries_changed


class CostComparison(Model):
    """Every page of two cost probes: a new cell (or file) against its base."""

    threshold: float
    base: str = ""
    new: str = ""
    pages: list[CostChange] = Field(default_factory=list)
    notes: list[Notice] = Field(default_factory=list)

    @property
    def failing(self) -> list[CostChange]:
        return [p for p in self.pages if p.failing]


class MatrixCost(Model):
    """A matrix's cost phase: every cell counted before any round, each against the base."""

    status: Literal["counted", "skipped"] = "counted"
    reason: Notice | None = Field(default=None, description="why it was skipped")
    files: dict[str, str] = Field(default_factory=dict, description="cell -> its cost file")
    failed: dict[str, Notice] = Field(
        default_factory=dict, description="cell -> why its probe did not run"
    )
    comparisons: list[CostComparison] = Field(default_factory=list)
    seconds: float | None = None
