"""The plain run's rounds: each deployment started (shuffled each round), its verify
gate run once in a lifetime of its own, its scenarios loaded in a counterbalanced order,
stopped, back to back or side by side (djbench.run.side_by_side: every deployment of
the round gated first, then all started); a server that dies is a recorded finding and
the round goes on."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from djbench.launch.live import Deployment, LiveServer
from djbench.launch.process import ServerError
from djbench.measure.trial import ws_idle_memory
from djbench.measure.verify import GateVerdict
from djbench.plan.scenarios import Scenario
from djbench.run import lifetime, side_by_side
from djbench.run.bench import Bench, Recorder, entry_key
from djbench.run.gates import run_gate, server_failed
from djbench.run.roundplan import Plan, scenario_order


@dataclasses.dataclass
class _Pace:
    """What run_benchmark learns as it goes: the deployments that failed, and each
    deployment's time with its gate (`lasted`) and without (`timed`: a later round's)."""

    dead: set[str] = dataclasses.field(default_factory=set)
    lasted: list[float] = dataclasses.field(default_factory=list)
    timed: list[float] = dataclasses.field(default_factory=list)

    def usual(self) -> float:
        return statistics.median(self.lasted) if self.lasted else 0.0


def run_benchmark(
    bench: Bench,
    until_round: int | None = None,
    stop_at: float | None = None,
    whole_rounds: bool = False,
) -> int:
    """Every round (up to `until_round`): each deployment (shuffled) started, gated once,
    loaded, stopped, back to back or side by side (djbench.run.side_by_side); the rounds
    begun. `stop_at` (time.monotonic()): no deployment (or group) starts that would not
    end by then, judged by the median length of the deployments before it (the default
    profile's 10 minutes overran by 7 s when only the start was checked);
    `whole_rounds`: after the first, a round starts only when the whole of it would end
    by then (its deployments at that median length), so that a budget never cuts a
    planned round in the middle (--budget: djbench.run.budget)."""
    plan, progress = bench.plan, bench.progress
    gates = known_gates(plan, bench.recorder)
    pace = _Pace()
    begun = 0
    for index, order in enumerate(plan.rounds()):
        round_index = plan.first_round + index
        if until_round is not None and round_index >= until_round:
            break
        whole = len(order) * statistics.median(pace.timed) if pace.timed else 0.0
        if whole_rounds and stop_at is not None and time.monotonic() + whole >= stop_at:
            return begun
        begun += 1
        together = side_by_side.possible(plan, round_index)
        if plan.trials > 1:  # a plan of one round (--budget's, a halving's) says its own
            progress.say(
                f"round {round_index + 1} of {plan.first_round + plan.trials}: "
                f"{len(order)} deployment(s), in a fresh order"
                + (", side by side" if together else "")
            )
        alone = {d.label for d in order if _holds(bench.recorder, d)} if together else set()
        for unit in side_by_side.units(order, alone) if together else [[d] for d in order]:
            if stop_at is not None and time.monotonic() + len(unit) * pace.usual() >= stop_at:
                return begun
            _run_unit(bench, unit, round_index, gates, pace, stop_at)
    return begun


def _run_unit(
    bench: Bench,
    unit: list[Deployment],
    round_index: int,
    gates: dict[str, dict[str, GateVerdict]],
    pace: _Pace,
    stop_at: float | None = None,
) -> None:
    """One deployment's lifetime, or a group's side by side (no window of it starting
    that would end after `stop_at`); their time kept in `pace`, and the progress bar's
    slots they did not run (incompatible, failed, already done, cut) counted done
    (trials advanced it one by one)."""
    plan, recorder, progress = bench.plan, bench.recorder, bench.progress
    before = {d.label: recorder.trials_in_round(d, round_index) for d in unit}
    work = [(d, _pending(plan, recorder, d, round_index, gates)) for d in unit]
    work = [(d, items) for d, items in work if items and d.label not in pace.dead]

    def failed(deployment: Deployment, why: str) -> None:
        pace.dead.add(deployment.label)
        _record_failure(plan, recorder, deployment, why)
        progress.say(f"{deployment.label} failed: {why}")

    if work:
        began, gate_s = time.monotonic(), 0.0
        if len(unit) == 1:
            deployment, items = work[0]
            try:
                gate_s = _run_deployment(bench, deployment, round_index, items, gates)
            except ServerError as exc:
                failed(deployment, str(exc))
        else:
            gated, gate_s = _gated_first(bench, work, gates, failed, stop_at)
            side_by_side.run_group(bench, gated, round_index, failed, stop_at)
        each = (time.monotonic() - began) / len(work)
        pace.lasted += [each] * len(work)
        pace.timed += [each - gate_s / len(work)] * len(work)
    per_round = len(plan.scenarios) * len(plan.concurrency)
    for deployment in unit:
        ran = recorder.trials_in_round(deployment, round_index) - before[deployment.label]
        progress.advance(per_round - ran, "")


def _gated_first(
    bench: Bench,
    work: list[tuple[Deployment, list[tuple[Scenario, int]]]],
    gates: dict[str, dict[str, GateVerdict]],
    failed: Callable[[Deployment, str], None],
    stop_at: float | None = None,
) -> tuple[list[tuple[Deployment, list[tuple[Scenario, int]]]], float]:
    """A side-by-side group's deployments without a gate yet (round 1, or a round 1 the
    budget cut) gated first, each alone; what passed, and the seconds the gates took. A
    gate starts only before `stop_at`: those left ungated are left out of the round."""
    passed, seconds = [], 0.0
    for deployment, items in work:
        if stop_at is not None and deployment.label not in gates and time.monotonic() >= stop_at:
            continue
        try:
            items, took = _gated(bench, deployment, items, gates)
        except ServerError as exc:
            failed(deployment, str(exc))
            continue
        seconds += took
        if items:
            passed.append((deployment, items))
    return passed, seconds


def _gated(
    bench: Bench,
    deployment: Deployment,
    items: list[tuple[Scenario, int]],
    gates: dict[str, dict[str, GateVerdict]],
) -> tuple[list[tuple[Scenario, int]], float]:
    """The deployment gated when not yet, and its items that passed; the seconds its
    gate took (0 when it had one). The verify gate gets a server lifetime of its own: it
    calls every scenario once, which would otherwise leave its memory and warm caches
    for round 1's trials only (a scenario keeping 50 MiB showed on every scenario after
    it). A server that cannot start raises ServerError."""
    if deployment.label in gates:
        return items, 0.0
    began = time.monotonic()
    gates[deployment.label] = _gate_alone(bench, deployment)
    verdicts = gates[deployment.label]
    kept = [(s, c) for s, c in items if verdicts[s.name].status == "ok"]
    return kept, time.monotonic() - began


def _holds(recorder: Recorder, deployment: Deployment) -> bool:
    """Whether the deployment's windows so far left database connections open."""
    mine = [e for e in recorder.document.results if e.label == deployment.label]
    return side_by_side.holds_connections(mine)


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


def _record_failure(plan: Plan, recorder: Recorder, deployment: Deployment, reason: str) -> None:
    for scenario in plan.scenarios:
        for c in plan.concurrency:
            entry = recorder.entry(deployment, scenario, c)
            if entry.status in ("ok", "invalid"):
                entry.status, entry.reason = "failed", server_failed(reason)
                entry.log_tail = reason
    recorder.save()


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
    plan, recorder, log_dir = bench.plan, bench.recorder, bench.logs
    pending, gate_s = _gated(bench, deployment, pending, gates)
    if not pending:
        return gate_s  # nothing passed the gate: no timed lifetime to start
    life = lifetime.begin(bench, deployment, round_index)
    try:
        for scenario, concurrency in pending:
            lifetime.window(bench, life, scenario, concurrency)
        if round_index == 0:
            _ws_idle(plan, recorder, life.live, gates[deployment.label], log_dir)
        lifetime.end(bench, life)
    finally:  # a server that died, an interrupt: nothing left running
        life.stack.close()
    return gate_s


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
