"""Side-by-side rounds (djbench.run.side_by_side): which rounds, in what groups, and the
order of their windows. The live run is in test_runbench_run.py."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from types import SimpleNamespace

import pytest
from django.db import connection

from djbench.launch.live import Deployment
from djbench.launch.process import ServerError
from djbench.measure.drivers import DRIVERS
from djbench.measure.trial import LoadSettings
from djbench.plan.scenarios import Expect, Request, Scenario
from djbench.results.model import DbConnections, PairResult, Resources, Trial
from djbench.run import side_by_side
from djbench.run.roundplan import Plan
from djbench.servers import SERVERS


def _scenario(name: str) -> Scenario:
    return Scenario(name=name, endpoint=name, variant="sync", kind="http",
                    request=Request(path="/"), expect=Expect())  # fmt: skip


def _plan(*names: str) -> Plan:
    return Plan(
        deployments=[Deployment(server=SERVERS[n]) for n in names],
        scenarios=[_scenario("a"), _scenario("b"), _scenario("c")],
        concurrency=[8, 32],
        trials=3,
        settings=LoadSettings(duration=1.0, warmup=1.0, driver_cpus=(1,)),
        driver=DRIVERS["builtin"],
        health_path="/",
        side_by_side=True,
    )


def test_rounds_from_the_plan_s_first_and_never_with_a_fixed_port_or_one_deployment() -> None:
    plan = _plan("uwsgi", "uvicorn", "daphne")
    assert [side_by_side.possible(plan, r) for r in range(3)] == [False, True, True]
    every = dataclasses.replace(plan, side_by_side_from=0)
    assert [side_by_side.possible(every, r) for r in range(3)] == [True, True, True]
    assert side_by_side.announced(every, False).startswith("; every round side by side")
    assert side_by_side.announced(plan, False).startswith("; rounds after the first side by")
    assert not side_by_side.possible(dataclasses.replace(plan, side_by_side=False), 1)
    assert not side_by_side.possible(_plan("uwsgi"), 1)
    fixed = [dataclasses.replace(plan.deployments[0], port=8123), *plan.deployments[1:]]
    assert not side_by_side.possible(dataclasses.replace(plan, deployments=fixed), 1)


def test_round_1_too_unless_it_must_learn_what_the_grouping_needs() -> None:
    """On SQLite nothing is shared between the servers' connections, so round 1 goes side
    by side; on a database whose connection limit they share, which deployment holds
    connections is learned from round 1's own windows (back to back); an idle WebSocket
    hold is read alone, in round 1."""
    http = [_scenario("a")]
    ws = [*http, dataclasses.replace(_scenario("w"), kind="websocket")]
    shared = connection.vendor != "sqlite"
    assert side_by_side.first_round(http, 1000) == (1 if shared else 0)
    assert side_by_side.first_round(ws, 1000) == 1
    assert side_by_side.first_round(ws, 0) == (1 if shared else 0)


def test_a_deployment_holding_database_connections_runs_alone_the_rest_in_one_group() -> None:
    def pair(after: int | None, db: bool = True) -> PairResult:
        connections = DbConnections(application_name="x", peak=4, after=after) if db else None
        trial = Trial(
            round=0,
            valid=True,
            requests=100,
            duration_s=1.0,
            rps=100.0,
            resources=Resources(threads=(5, 5, 5), fds=(9, 9, 9), db=connections),
        )
        return PairResult(server="uvicorn", proxy="none", scenario="movies-sync",
                          interface="asgi", kind="http", status="ok", trials=[trial])  # fmt: skip

    # Kept after the load (persistent connections, a pool, a leak), in any pair: holds.
    assert side_by_side.holds_connections([pair(0), pair(3)])
    # Closed after each request, or not counted (SQLite, no resources read): does not.
    assert not side_by_side.holds_connections([pair(0), pair(None), pair(None, db=False)])
    order = [Deployment(server=SERVERS[n]) for n in ("uwsgi", "uvicorn", "daphne", "granian-wsgi")]
    assert side_by_side.units(order, set()) == [order]
    # The holder alone where it stands in the round's order; the group where its first
    # member stands.
    assert side_by_side.units(order, {"uwsgi", "daphne"}) == [
        [order[0]],
        [order[1], order[3]],
        [order[2]],
    ]
    assert side_by_side.units(order, {d.label for d in order}) == [[d] for d in order]


def test_a_page_s_windows_follow_each_other_in_a_fresh_order_each_page() -> None:
    plan = _plan("uwsgi", "uvicorn", "daphne")
    items = plan.items({"a", "b", "c"})
    # daphne runs only two of the six items (a race round's `only`)
    group = [(d, items) for d in plan.deployments[:2]]
    group.append((plan.deployments[2], [i for i in items if i[0].name == "b"]))
    found = side_by_side.turns(7, 1, group)
    assert len(found) == 6 + 6 + 2
    pages = [(s.name, c) for _, s, c in found]
    # each page's windows are consecutive: a page never comes back once left
    seen: list[tuple[str, int]] = [k for k, _ in itertools.groupby(pages)]
    assert len(seen) == len(set(seen)) == 6
    for key, run in itertools.groupby(found, key=lambda t: (t[1].name, t[2])):
        labels = [d.label for d, _, _ in run]
        assert len(labels) == len(set(labels)) == (3 if key[0] == "b" else 2)
    orders = {tuple(d.label for d, s, c in found if (s.name, c) == k) for k in seen}
    assert len(orders) > 1  # not one fixed order of the deployments on every page
    # the same on --resume (seeded), another round another order of the pages
    assert side_by_side.turns(7, 1, group) == found
    assert [p for p, _ in itertools.groupby(
        (s.name, c) for _, s, c in side_by_side.turns(7, 2, group))] != seen  # fmt: skip


def test_a_deployment_that_dies_in_a_group_is_failed_and_stopped_the_others_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fake lifetimes (the live path is test_runbench_run's): uvicorn cannot start,
    daphne dies at its first window; uwsgi runs all its windows, each is stopped once."""
    from djbench.run import lifetime

    plan = _plan("uwsgi", "uvicorn", "daphne")
    stopped: list[str] = []
    windows: list[str] = []

    def begin(bench: object, deployment: Deployment, round_index: int) -> object:
        if deployment.label == "uvicorn":
            raise ServerError("uvicorn: address in use")
        stack = contextlib.ExitStack()
        stack.callback(stopped.append, deployment.label)
        record = SimpleNamespace(beside=[])
        return SimpleNamespace(deployment=deployment, stack=stack, record=record)

    def window(bench: object, life: SimpleNamespace, scenario: Scenario, c: int) -> None:
        if life.deployment.label == "daphne":
            raise ServerError("daphne died")
        windows.append(f"{life.deployment.label} {scenario.name} {c}")

    def end(bench: object, life: SimpleNamespace) -> None:
        life.stack.close()

    monkeypatch.setattr(lifetime, "begin", begin)
    monkeypatch.setattr(lifetime, "window", window)
    monkeypatch.setattr(lifetime, "end", end)
    failed: list[tuple[str, str]] = []
    items = plan.items({"a", "b", "c"})
    side_by_side.run_group(
        SimpleNamespace(plan=plan),  # type: ignore[arg-type]
        [(d, items) for d in plan.deployments],
        1,
        lambda d, why: failed.append((d.label, why)),
    )
    assert failed == [("uvicorn", "uvicorn: address in use"), ("daphne", "daphne died")]
    assert len(windows) == 6 and all(w.startswith("uwsgi ") for w in windows)
    assert sorted(stopped) == ["daphne", "uwsgi"]  # each started one stopped, once


def test_no_window_of_a_group_starts_that_would_end_after_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A budget spent inside a side-by-side round: the windows that would end past it
    are not started (the deployments they leave short are the budget's to record); every
    deployment started is stopped."""
    from djbench.run import lifetime

    plan = _plan("uwsgi", "uvicorn")  # 1 s warm-up + 1 s windows
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    stopped: list[str] = []
    windows: list[str] = []

    def begin(bench: object, deployment: Deployment, round_index: int) -> object:
        stack = contextlib.ExitStack()
        stack.callback(stopped.append, deployment.label)
        return SimpleNamespace(deployment=deployment, stack=stack, record=SimpleNamespace())

    def window(bench: object, life: SimpleNamespace, scenario: Scenario, c: int) -> None:
        windows.append(life.deployment.label)
        clock[0] += 2.5

    monkeypatch.setattr(lifetime, "begin", begin)
    monkeypatch.setattr(lifetime, "window", window)
    monkeypatch.setattr(lifetime, "end", lambda bench, life: life.stack.close())
    items = plan.items({"a", "b", "c"})  # 6 windows each, 12 in all
    side_by_side.run_group(
        SimpleNamespace(plan=plan),  # type: ignore[arg-type]
        [(d, items) for d in plan.deployments],
        0,
        lambda d, why: None,
        stop_at=1000.0 + 10.0,
    )
    # Starts at 0, 2.5, 5 and 7.5 s; at 10 s the next would end at 12: not started.
    assert len(windows) == 4
    assert sorted(stopped) == ["uvicorn", "uwsgi"]
