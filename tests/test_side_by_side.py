"""Side-by-side rounds (djbench.run.side_by_side): which rounds, in what groups, and the
order of their windows. The live run is in test_runbench_run.py."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from types import SimpleNamespace

import pytest

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


def test_rounds_after_the_first_only_and_never_with_a_fixed_port_or_one_deployment() -> None:
    plan = _plan("uwsgi", "uvicorn", "daphne")
    assert [side_by_side.possible(plan, r) for r in range(3)] == [False, True, True]
    assert not side_by_side.possible(dataclasses.replace(plan, side_by_side=False), 1)
    assert not side_by_side.possible(_plan("uwsgi"), 1)
    fixed = [dataclasses.replace(plan.deployments[0], port=8123), *plan.deployments[1:]]
    assert not side_by_side.possible(dataclasses.replace(plan, deployments=fixed), 1)


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
