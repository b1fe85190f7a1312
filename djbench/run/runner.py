"""The plain run's rounds: each deployment started (shuffled each round), its verify
gate run once in a lifetime of its own, its scenarios loaded in a counterbalanced order,
stopped; a server that dies is a recorded finding and the round goes on."""

from __future__ import annotations

import contextlib
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from djbench.launch.live import Deployment, LiveServer, deploy
from djbench.launch.process import ServerError
from djbench.measure.drivers import DriverError
from djbench.measure.sampler import settle
from djbench.measure.trial import run_trial, ws_idle_memory
from djbench.measure.verify import GateVerdict
from djbench.plan.scenarios import Scenario
from djbench.results.model import (
    DeploymentRound,
    Notice,
    Trial,
)
from djbench.run.bench import Bench, Progress, Recorder, entry_key
from djbench.run.gates import run_gate, server_failed
from djbench.run.roundplan import Plan
from djbench.verdicts.runs import summarise


def run_benchmark(
    bench: Bench,
    until_round: int | None = None,
    stop_at: float | None = None,
    whole_rounds: bool = False,
) -> int:
    """Every round (up to `until_round`): each deployment (shuffled) started, gated once,
    loaded, stopped; the rounds begun. `stop_at` (time.monotonic()): no deployment starts
    that would not end by then, judged by the median length of the deployments before it
    (the default profile's 10 minutes overran by 7 s when only the start was checked);
    `whole_rounds`: after the first, a round starts only when the whole of it would end
    by then (its deployments at that median length), so that a budget never cuts a
    planned round in the middle (--budget: djbench.run.budget)."""
    plan, recorder, progress = bench.plan, bench.recorder, bench.progress
    gates = known_gates(plan, recorder)
    dead: set[str] = set()
    lasted: list[float] = []  # each deployment's time in this call, its gate included
    timed: list[float] = []  # the same without its gate (what a later round costs)
    per_round = len(plan.scenarios) * len(plan.concurrency)
    begun = 0
    for index, order in enumerate(plan.rounds()):
        round_index = plan.first_round + index
        if until_round is not None and round_index >= until_round:
            break
        whole = len(order) * statistics.median(timed) if timed else 0.0
        if whole_rounds and stop_at is not None and time.monotonic() + whole >= stop_at:
            return begun
        begun += 1
        if plan.trials > 1:  # a plan of one round (--budget's, a halving's) says its own
            progress.say(
                f"round {round_index + 1} of {plan.first_round + plan.trials}: "
                f"{len(order)} deployment(s), in a fresh order"
            )
        for deployment in order:
            usual = statistics.median(lasted) if lasted else 0.0
            if stop_at is not None and time.monotonic() + usual >= stop_at:
                return begun
            before = recorder.trials_in_round(deployment, round_index)
            pending = _pending(plan, recorder, deployment, round_index, gates)
            if deployment.label not in dead and pending:
                began = time.monotonic()
                gate_s = 0.0
                try:
                    gate_s = _run_deployment(bench, deployment, round_index, pending, gates)
                except ServerError as exc:
                    dead.add(deployment.label)
                    _record_failure(plan, recorder, deployment, str(exc))
                    progress.say(f"{deployment.label} failed: {exc}")
                lasted.append(time.monotonic() - began)
                timed.append(lasted[-1] - gate_s)
            # Trials advanced the bar one by one; slots not run in this round
            # (incompatible, failed, already done) count as done now.
            ran = recorder.trials_in_round(deployment, round_index) - before
            progress.advance(per_round - ran, "")
    return begun


def known_gates(plan: Plan, recorder: Recorder) -> dict[str, dict[str, GateVerdict]]:
    """The gate verdicts this run already holds (an earlier plan of the same run: --budget
    rounds, tuning's halving rounds, a resumed matrix round): a deployment every scenario
    of which was verified is not started again just to verify it."""
    found: dict[str, dict[str, GateVerdict]] = {}
    for deployment in plan.deployments:
        verdicts = {}
        for scenario in plan.scenarios:
            entry = recorder.entries.get(
                entry_key(deployment.label, scenario.name, plan.concurrency[0])
            )
            if entry is None or entry.verify is None:
                break
            verdicts[scenario.name] = GateVerdict(
                entry.verify.status, entry.verify.reason, entry.verify.shape
            )
        else:
            found[deployment.label] = verdicts
    return found


def _say_as(progress: Progress, label: str) -> Callable[[str], None]:
    """A soak's progress lines go into the progress bar's description."""
    return lambda message: progress.advance(0, f"{label}: {message}")


def _record_failure(plan: Plan, recorder: Recorder, deployment: Deployment, reason: str) -> None:
    for scenario in plan.scenarios:
        for c in plan.concurrency:
            entry = recorder.entry(deployment, scenario, c)
            if entry.status in ("ok", "invalid"):
                entry.status, entry.reason = "failed", server_failed(reason)
                entry.log_tail = reason
    recorder.save()


T = TypeVar("T")


def scenario_order(seed: int, round_index: int, label: str, items: list[T]) -> list[T]:
    """A deployment's scenarios in this round's order: one seeded shuffle per deployment,
    rotated by one place each round, so that over k rounds each of k scenarios runs at
    each position once (counterbalanced; an independent shuffle per round left
    gunicorn-sync's two scenarios in the same order six rounds running). The same on
    --resume."""
    ordered = list(items)
    random.Random(f"{seed}:{label}").shuffle(ordered)
    turn = round_index % len(ordered) if ordered else 0
    return ordered[turn:] + ordered[:turn]


def _pending(
    plan: Plan,
    recorder: Recorder,
    deployment: Deployment,
    round_index: int,
    gates: dict[str, dict[str, GateVerdict]],
) -> list[tuple[Scenario, int]]:
    """What this deployment still has to run this round, in a counterbalanced order
    (`scenario_order`), because a server runs its scenarios in one lifetime and what one
    leaves in memory lands on the next (a page keeping 50 MiB raised the next scenario's
    PSS peak by 50-51 MiB under gunicorn-sync and Uvicorn)."""
    allowed = {s.name for s in plan.scenarios}
    if deployment.label in gates:
        allowed = {n for n, v in gates[deployment.label].items() if v.status == "ok"}
    items = scenario_order(
        plan.seed, round_index, deployment.label, plan.items(allowed, deployment.label)
    )
    return [
        (s, c)
        for s, c in items
        if not recorder.done(entry_key(deployment.label, s.name, c), round_index)
    ]


def _gate_alone(bench: Bench, deployment: Deployment) -> dict[str, GateVerdict]:
    """Start the deployment, verify every scenario, stop it; each pair's verdict recorded.
    A server that cannot start raises ServerError, as in a timed lifetime."""
    plan, recorder, progress = bench.plan, bench.recorder, bench.progress
    gate = run_gate(bench.project, deployment, plan.scenarios, bench.run_dir, plan.health_path)
    if gate.error:
        raise ServerError(gate.error)
    said = {
        progress.words(n) for v in gate.verdicts.values() for n in v.warnings if n.code == "db_leak"
    }
    for text in said:  # before any of its windows: the run goes on, the finding is said
        progress.say(f"{deployment.label}: {text}")
    for scenario in plan.scenarios:
        for c in plan.concurrency:
            entry = recorder.entry(deployment, scenario, c)
            verdict = gate.verdicts[scenario.name]
            entry.verify, entry.command = verdict.record(), gate.commands
            if verdict.status != "ok":
                entry.status, entry.reason = verdict.status, verdict.reason
    return gate.verdicts


def _run_deployment(
    bench: Bench,
    deployment: Deployment,
    round_index: int,
    pending: list[tuple[Scenario, int]],
    gates: dict[str, dict[str, GateVerdict]],
) -> float:
    """Gated first when not yet (in a lifetime of its own), then loaded: the seconds
    its gate took (0 when it had one already)."""
    plan, recorder, progress, log_dir = bench.plan, bench.recorder, bench.progress, bench.logs
    gate_s = 0.0
    if deployment.label not in gates:
        # The verify gate gets a server lifetime of its own: it calls every scenario
        # once, which would otherwise leave its memory and warm caches for round 1's
        # trials only (a scenario keeping 50 MiB showed on every scenario after it).
        gated = time.monotonic()
        gates[deployment.label] = _gate_alone(bench, deployment)
        gate_s = time.monotonic() - gated
        pending = [(s, c) for s, c in pending if gates[deployment.label][s.name].status == "ok"]
        if not pending:
            return gate_s  # nothing passed the gate: no timed lifetime to start
    lifetime = f"{deployment.label} round {round_index + 1}"
    with contextlib.ExitStack() as stack:
        # A matrix cell's start and stop take turns as its windows do (bench.window): no
        # other cell's window runs beside them, nor their start beside its idle reading.
        with bench.window(f"{lifetime}: start"):
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
        for position, (scenario, concurrency) in enumerate(pending):
            entry = recorder.entry(deployment, scenario, concurrency)
            entry.command, entry.threads = live.commands, live.threads
            label = f"{deployment.label} {scenario.name} c={concurrency} round {round_index + 1}"
            progress.advance(0, label)
            with bench.window(label):
                trial = _one_trial(
                    plan, live, scenario, concurrency, round_index, log_dir, progress
                )
            trial.position = position
            entry.trials.append(trial)
            entry.driver = plan.driver.name if scenario.kind == "http" else "wsload"
            summarise(entry, [*recorder.rounds_of(deployment), record])
            recorder.save()
            progress.trial_done(label, trial)
        if round_index == 0:
            _ws_idle(plan, recorder, live, gates[deployment.label], log_dir)
        with bench.window(f"{lifetime}: stop"):
            record.after = settle(live.server, seconds=0.3)
            stack.close()
    recorder.document.deployment_rounds.append(record)
    for scenario in plan.scenarios:
        for c in plan.concurrency:
            key = entry_key(deployment.label, scenario.name, c)
            if key in recorder.entries and recorder.entries[key].trials:
                summarise(recorder.entries[key], recorder.rounds_of(deployment))
    recorder.save()
    return gate_s


def _one_trial(
    plan: Plan,
    live: LiveServer,
    scenario: Scenario,
    concurrency: int,
    round_index: int,
    log_dir: Path,
    progress: Progress,
) -> Trial:
    """One trial on a live server: a driver that fails makes an invalid trial; a server
    that died under the load ends this lifetime (ServerError)."""
    deployment = live.deployment
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


def _ws_idle(
    plan: Plan, recorder: Recorder, live: LiveServer, gate: dict[str, GateVerdict], log_dir: Path
) -> None:
    """The first round's idle WebSocket hold (--ws-idle), on the first scenario that passed."""
    ws_ok = [s for s in plan.scenarios if s.kind == "websocket" and gate[s.name].status == "ok"]
    if plan.ws_idle and ws_ok:
        deployment = live.deployment
        entry = recorder.entry(deployment, ws_ok[0], plan.concurrency[0])
        entry.ws_idle = ws_idle_memory(
            live, ws_ok[0], plan.ws_idle, log_dir / f"{deployment.slug}-ws-idle.log"
        )
