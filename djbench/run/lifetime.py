"""One server lifetime of a round: started (its idle reading), its windows, stopped (its
reading after). A back-to-back round (djbench.run.runner) runs one lifetime after
another; a side-by-side round (djbench.run.side_by_side) keeps several alive at once and
alternates their windows."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from djbench.launch.live import Deployment, LiveServer, deploy
from djbench.launch.process import ServerError
from djbench.measure.drivers import DriverError
from djbench.measure.sampler import CpuBook, sample, settle
from djbench.measure.trial import run_trial
from djbench.plan.scenarios import Scenario
from djbench.results.model import DeploymentRound, Notice, Trial
from djbench.run.bench import Bench, Progress, entry_key
from djbench.run.roundplan import Plan
from djbench.verdicts.runs import summarise


@dataclasses.dataclass
class Lifetime:
    """A started deployment in a round: its server (and proxy), its round's record, what
    stops it, and how many windows it has run."""

    live: LiveServer
    record: DeploymentRound
    stack: contextlib.ExitStack
    round_index: int
    windows: int = 0
    # The server tree's CPU and wall seconds since its idle reading, and those of its
    # own windows: the rest is what it cost while idle beside others (side_by_side).
    book: CpuBook = dataclasses.field(default_factory=CpuBook)
    since: tuple[float, float] = (0.0, 0.0)  # (time.monotonic(), CPU seconds)
    own: tuple[float, float] = (0.0, 0.0)

    def cpu(self) -> tuple[float, float]:
        """(now, the tree's CPU seconds so far): a cheap reading (no PSS)."""
        return time.monotonic(), sample(self.live.server, self.book, full=False).cpu_seconds

    @property
    def deployment(self) -> Deployment:
        return self.live.deployment


def begin(bench: Bench, deployment: Deployment, round_index: int) -> Lifetime:
    """Start the deployment and read it idle (a matrix cell's start takes its turn as
    its windows do: bench.window). A server that cannot start raises ServerError, with
    nothing left running."""
    plan = bench.plan
    stack = contextlib.ExitStack()
    try:
        with bench.window(f"{deployment.label} round {round_index + 1}: start"):
            live = stack.enter_context(
                deploy(bench.project, deployment, bench.run_dir, plan.health_path)
            )
            record = DeploymentRound(
                deployment=deployment.label,
                server=deployment.server.name,
                proxy=deployment.proxy,
                round=round_index,
                startup_seconds=round(live.startup_seconds, 3),
                idle=settle(live.server, seconds=0.3),
            )
            if live.proxy is not None:
                record.proxy_idle = settle(live.proxy, seconds=0.2)
    except BaseException:
        stack.close()
        raise
    life = Lifetime(live, record, stack, round_index)
    life.since = life.cpu()
    return life


def window(bench: Bench, life: Lifetime, scenario: Scenario, concurrency: int) -> None:
    """One timed window on the live deployment, recorded and saved. A server that died
    under the load raises ServerError (the caller ends the lifetime)."""
    recorder, progress, deployment = bench.recorder, bench.progress, life.deployment
    entry = recorder.entry(deployment, scenario, concurrency)
    entry.command, entry.threads = life.live.commands, life.live.threads
    label = f"{deployment.label} {scenario.name} c={concurrency} round {life.round_index + 1}"
    progress.advance(0, label)
    with bench.window(label):
        before = life.cpu()
        trial = _one_trial(bench.plan, life.live, scenario, concurrency, life, bench.logs, progress)
        after = life.cpu()
    life.own = (life.own[0] + after[0] - before[0], life.own[1] + after[1] - before[1])
    trial.position = life.windows
    life.windows += 1
    entry.trials.append(trial)
    entry.driver = bench.plan.driver.name if scenario.kind == "http" else "wsload"
    summarise(entry, [*recorder.rounds_of(deployment), life.record])
    recorder.save()
    progress.trial_done(label, trial)


def end(bench: Bench, life: Lifetime) -> None:
    """Read the server after its windows, stop it, record the lifetime (its pairs'
    summaries redone with it) and save."""
    plan, recorder, deployment = bench.plan, bench.recorder, life.deployment
    with bench.window(f"{deployment.label} round {life.round_index + 1}: stop"):
        if life.record.beside:
            life.record.beside_cpu_percent = _idle_beside(life)
        life.record.after = settle(life.live.server, seconds=0.3)
        life.stack.close()
    recorder.document.deployment_rounds.append(life.record)
    for scenario in plan.scenarios:
        for c in plan.concurrency:
            key = entry_key(deployment.label, scenario.name, c)
            if key in recorder.entries and recorder.entries[key].trials:
                summarise(recorder.entries[key], recorder.rounds_of(deployment))
    recorder.save()


def _idle_beside(life: Lifetime) -> float | None:
    """The server tree's CPU while the others' windows ran, in percent of one core."""
    now, cpu = life.cpu()
    wall = now - life.since[0] - life.own[0]
    spent = cpu - life.since[1] - life.own[1]
    return round(max(0.0, 100 * spent / wall), 2) if wall > 0.5 else None


def _say_as(progress: Progress, label: str) -> Callable[[str], None]:
    """A soak's progress lines go into the progress bar's description."""
    return lambda message: progress.advance(0, f"{label}: {message}")


def _one_trial(
    plan: Plan,
    live: LiveServer,
    scenario: Scenario,
    concurrency: int,
    life: Lifetime,
    log_dir: Path,
    progress: Progress,
) -> Trial:
    """One trial on a live server: a driver that fails makes an invalid trial; a server
    that died under the load ends this lifetime (ServerError)."""
    deployment, round_index = live.deployment, life.round_index
    label = f"{deployment.label} {scenario.name} c={concurrency} round {round_index + 1}"
    try:
        trial = run_trial(
            plan.driver,
            live,
            scenario,
            concurrency,
            plan.settings,
            log_dir,
            round_index,
            say=_say_as(progress, label),
        )
    except DriverError as exc:
        trial = Trial(
            round=round_index,
            valid=False,
            invalid=Notice(code="driver_failed", params={"message": str(exc)}),
            requests=0,
            duration_s=0.0,
            rps=0.0,
        )
    if not live.target().alive():
        tree = live.server if live.server.exited() is not None else live.proxy
        ended = tree.ended() if tree is not None else "ended"
        raise ServerError(
            f"{deployment.label} died during the load of {scenario.name} "
            f"({'' if tree is live.server else 'its proxy: '}{ended}); last lines of "
            f"{live.server.log_path}:\n{live.server.log_tail()}"
        )
    return trial
