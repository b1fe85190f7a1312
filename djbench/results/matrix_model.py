"""A version matrix's document (part of the results model, re-exported by
:mod:`djbench.results.model`): its cells, their interleaving, the verdicts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from djbench.results.cost_model import MatrixCost
from djbench.results.modelbase import Model, Notice


class MatrixCell(Model):
    """One cell of a version matrix: its environment, and the run made in it."""

    label: str
    axes: dict[str, str]
    status: Literal["ok", "failed"] = "ok"
    reason: str | None = Field(default=None, description="why the cell could not run")
    requirements: list[str] = Field(default_factory=list, description="what was resolved")
    overrides: list[str] = Field(default_factory=list, description="the cell's pins")
    python: str | None = Field(default=None, description="the interpreter the env was made from")
    python_version: str | None = None
    environment: str | None = Field(default=None, description="the environment's folder")
    resolved_sha256: str | None = None
    versions: dict[str, str] = Field(default_factory=dict, description="resolved pins")
    build_seconds: float | None = None
    cached: bool = False
    project_dir: str | None = None
    ref: str | None = None
    commit: str | None = None
    run_file: str | None = Field(default=None, description="the cell's (first) results file")
    run_files: list[str] = Field(
        default_factory=list, description="every results file of the cell: one per server"
    )
    commands: list[str] = Field(default_factory=list, description="each runbench started")


class MatrixMetric(Model):
    """One metric of one pair in a cell against the base: the engine's verdict, NEW/BASE
    with its interval at the level tested, and p (Benjamini-Hochberg-adjusted)."""

    verdict: str
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p: float | None = None
    drifting: bool = False
    notes: list[Notice] = Field(
        default_factory=list, description="the engine's codes: too_few, detectable, ..."
    )


class MatrixPair(Model):
    """One pair's verdict in a cell against the base, metric by metric."""

    label: str
    scenario: str
    concurrency: int | None = None
    verdict: str
    metrics: dict[str, MatrixMetric] = Field(default_factory=dict)
    reasons: list[Notice] = Field(default_factory=list)
    threshold: float | None = Field(
        default=None, description="the scenario's own max_slowdown, when it declares one"
    )


class ShapeChange(Model):
    """An endpoint whose verified answer changed shape between the base and a cell."""

    key: str = Field(description="the deployment's label and the scenario")
    base: str
    new: str


class MatrixCheck(Model):
    """A threshold of the scenario file checked on one cell's pair (its rounds' trials)."""

    cell: str
    label: str
    scenario: str
    metric: str
    verdict: Literal["met", "missed", "too close"]
    limit: float | None = None
    value: float | None = Field(default=None, description="the figure checked")
    interval: tuple[float, float] | None = Field(default=None, description="its 95% interval")


class MatrixNoise(Model):
    """The pre-run check redone on this runner's own noise, at the first look."""

    rounds: int = Field(description="paired rounds the noise was measured on")
    sd: float = Field(description="pooled sd of the per-round req/s log-ratios")
    pairs: int = Field(description="pairs judged against the base")
    horizon: int = Field(description="the rounds the run planned for (its horizon)")
    detectable: float | None = Field(
        default=None,
        description="the slowdown found with 80% power on one pair at the horizon, here",
    )


class MatrixVerdict(Model):
    """A cell against the base cell: benchcompare's statistics, and the answers' shapes."""

    cell: str
    base: str
    counts: dict[str, int] = Field(default_factory=dict)
    pairs: list[MatrixPair] = Field(default_factory=list)
    shape_changes: list[ShapeChange] = Field(default_factory=list)
    plan_differences: list[Notice] = Field(default_factory=list)
    decided: bool = Field(default=False, description="every pair's throughput has a verdict")
    level: float | None = Field(default=None, description="the alpha this look tested at")
    rounds: int = Field(default=0, description="paired rounds behind these verdicts")

    @property
    def worse(self) -> list[MatrixPair]:
        return [p for p in self.pairs if p.verdict == "worse"]

    @property
    def better(self) -> list[MatrixPair]:
        return [p for p in self.pairs if p.verdict == "better"]


class MatrixDocument(Model):
    """A version matrix (--matrix): its cells, their interleaving and the verdicts."""

    schema_version: Literal[3] = 3
    kind: Literal["matrix"] = "matrix"
    matrix_id: str
    status: Literal["running", "interrupted", "complete"] = "running"
    started: str | None = None
    finished: str | None = None
    axes: dict[str, list[str]]
    base: str
    seed: int
    order: list[list[str]] = Field(
        default_factory=list,
        description="per round, what ran in order: each cell's part, or (cells side by "
        "side) each turn's cell and window",
    )
    pairing: Literal["alternate", "sequential"] = Field(
        default="sequential", description="--pairing: how a round put the cells side by side"
    )
    round_seconds: list[float] = Field(default_factory=list, description="each round's wall time")
    options: list[str] = Field(default_factory=list, description="the runbench options passed on")
    threshold: float = 0.10
    alpha: float = 0.01
    budget_s: float | None = Field(default=None, description="--budget: the whole command")
    until_decided: bool = False
    planned_rounds: int | None = Field(default=None, description="the horizon alpha is spent over")
    rounds: int = Field(default=0, description="rounds run")
    seconds: float | None = Field(default=None, description="the command's wall time")
    cells: list[MatrixCell] = Field(default_factory=list)
    verdicts: list[MatrixVerdict] = Field(default_factory=list)
    checks: list[MatrixCheck] = Field(
        default_factory=list, description="the scenario file's thresholds, cell by cell"
    )
    noise: MatrixNoise | None = None
    cost: MatrixCost | None = Field(
        default=None, description="the cost phase: every cell counted before any round"
    )
    on_inconclusive: Literal["pass", "fail"] = Field(
        default="pass", description="--on-inconclusive: what a pair left undecided makes"
    )
