"""The bench a timed job runs on: the results document it records into (rewritten
atomically after every change), the progress it reports, and :class:`Bench`, what every
timed job's rounds are given (the project, the plan, where results and logs go, the
progress, and when the budget is spent)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from djbench.launch.live import Deployment
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.results import store
from djbench.results.model import (
    Capacity,
    DeploymentRound,
    Notice,
    PairResult,
    RunDocument,
    Trial,
)
from djbench.run.gates import new_pair
from djbench.run.roundplan import Plan
from djbench.run.turns import Turns


def entry_key(label: str, scenario: str, concurrency: int | None) -> str:
    """One pair: a deployment's label (server, proxy, variant), scenario, concurrency."""
    return f"{label}|{scenario}|{concurrency}"


class SaveFailed(Exception):
    """The results file could not be rewritten; the last good version stands."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(f"{path}: {error.strerror or error}")
        self.path = path
        self.error = error


class Recorder:
    """Keeps the results document and rewrites it atomically after every change."""

    def __init__(self, path: Path, document: RunDocument) -> None:
        self.path = path
        self.document = document
        self.entries: dict[str, PairResult] = {
            entry_key(e.label, e.scenario, e.concurrency): e for e in document.results
        }

    def save(self) -> None:
        """Rewrite the results file; a failure (disk full, folder gone) stops the run
        with `SaveFailed`: the previous file is intact (atomic replace), so the run
        can be resumed once there is room."""
        try:
            store.write_atomic(self.path, self.document)
        except OSError as exc:
            raise SaveFailed(self.path, exc) from None

    def done(self, key: str, round_index: int) -> bool:
        entry = self.entries.get(key)
        if entry is None:
            return False
        if entry.status in ("failed", "incompatible"):
            return True
        return any(t.round == round_index for t in entry.trials)

    def entry(
        self, deployment: Deployment, scenario: Scenario, concurrency: int | None
    ) -> PairResult:
        key = entry_key(deployment.label, scenario.name, concurrency)
        if key not in self.entries:
            entry = new_pair(deployment, scenario, concurrency)
            self.entries[key] = entry
            self.document.results.append(entry)
        return self.entries[key]

    def trials_in_round(self, deployment: Deployment, round_index: int) -> int:
        return sum(
            1
            for e in self.entries.values()
            if e.label == deployment.label
            for t in e.trials
            if t.round == round_index
        )

    def rounds_of(self, deployment: Deployment) -> list[DeploymentRound]:
        label = deployment.label
        return [r for r in self.document.deployment_rounds if r.deployment == label]


@dataclass
class Progress:
    """Callbacks the command gives the run (progress bar, messages)."""

    advance: Callable[[int, str], None] = lambda n, label: None
    say: Callable[[str], None] = lambda message: None
    # A timed trial finished (a log without a terminal prints a line for it).
    finished: Callable[[str, Trial], None] = lambda label, trial: None
    # More steps than planned (--budget's added rounds): the total grows by n.
    grow: Callable[[int], None] = lambda n: None
    # A code in words, for a message that embeds one (djbench.run.show.Show.words), and
    # a capacity search's result in a few (Show.capacity).
    words: Callable[[Notice | None], str] = lambda notice: notice.code if notice else ""
    capacity: Callable[[Capacity], str] = lambda found: f"{found.rps} req/s"

    def trial_done(self, label: str, trial: Trial) -> None:
        self.advance(1, label)
        self.finished(label, trial)


@dataclass(frozen=True)
class Bench:
    """What every timed job's rounds are given, passed as one."""

    project: Project
    plan: Plan
    recorder: Recorder
    run_dir: Path
    progress: Progress
    # time.monotonic() when --budget (the whole command's wall time) is spent; None: no
    # budget, nothing is cut short.
    deadline: float | None = None
    # A matrix cell's turns (--turns): every window waits for its turn; None: no waiting.
    turns: Turns | None = None

    def window(self, what: str) -> contextlib.AbstractContextManager[None]:
        """The turn a window runs in (a matrix cell's), or nothing to wait for."""
        return self.turns.window(what) if self.turns is not None else contextlib.nullcontext()

    def with_plan(self, plan: Plan) -> Bench:
        """The same bench for another plan of the run (a race round, a sweep)."""
        return dataclasses.replace(self, plan=plan)

    @property
    def logs(self) -> Path:
        return self.run_dir / "logs"

    @property
    def until(self) -> float:
        """When to start nothing more: the deadline, or never (no budget)."""
        return math.inf if self.deadline is None else self.deadline
