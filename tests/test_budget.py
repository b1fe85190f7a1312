"""--budget on a plain run: rounds beyond --trials go to the rankings still open."""

from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from djbench.plan.runplan import PROFILES, from_command
from djbench.reports.words import budget_text
from djbench.results.model import PlanRecord
from djbench.run import budget
from djbench.run.cli import job_of
from tests.resultfiles import entry


def test_only_the_leader_and_those_it_cannot_be_told_from_race_on() -> None:
    """Racing: the leader against each other pair by the answer's own test; far behind
    is out of the race, and the order of those behind is not bought."""
    results = [
        entry("uwsgi", "movies-sync", [1000.0, 1150.0, 900.0, 1010.0]),  # ~ granian: open
        entry("granian-wsgi", "movies-sync", [980.0, 1000.0, 1050.0, 990.0]),
        entry("uvicorn", "movies-sync", [500.0, 505.0, 498.0, 502.0]),  # far behind: out
        entry("daphne", "movies-sync", [498.0, 503.0, 499.0, 500.0]),  # ~ uvicorn: not asked
    ]
    found = budget.open_questions(results, "run")
    assert [q.question() for q in found] == ["uwsgi ~ granian-wsgi on movies-sync c32"]
    # A race round runs, for each deployment, only the scenarios it is open in: uwsgi
    # leads health-sync far ahead of everyone, so that scenario is not run again.
    results += [
        entry("uwsgi", "health-sync", [3000.0, 3100.0, 2950.0, 3050.0]),
        entry("granian-wsgi", "health-sync", [1000.0, 1010.0, 990.0, 1005.0]),
        entry("uvicorn", "health-sync", [300.0, 305.0, 298.0, 302.0]),
    ]
    items = budget.open_items(budget.open_questions(results, "run"), [32])
    assert items == {
        "uwsgi": frozenset({("movies-sync", 32)}),
        "granian-wsgi": frozenset({("movies-sync", 32)}),
    }


def test_the_worker_count_is_swept_on_the_heaviest_page() -> None:
    """The page whose fastest deployment serves fewest req/s is where workers and
    threads matter; a trivial page says least about them (issue 56)."""
    from djbench.run import layouts

    results = [
        entry("granian-wsgi", "health-sync", [4600.0, 4700.0, 4650.0]),
        entry("uwsgi", "health-sync", [2600.0, 2650.0, 2620.0]),
        entry("granian-wsgi", "movies-sync", [535.0, 540.0, 530.0]),
        entry("gunicorn-gthread", "movies-sync", [560.0, 555.0, 565.0]),
        entry("uwsgi", "movies-async", [], status="failed", reason="x"),
    ]
    top = layouts.leader(["health-sync", "movies-sync", "movies-async"], results, "run")
    assert top is not None and (top.label, top.scenario) == ("gunicorn-gthread", "movies-sync")
    assert layouts.leader(["movies-async"], results, "run") is None


@pytest.mark.servers
def test_the_race_drops_a_far_slower_deployment_after_its_first_round(
    live_database: str, tmp_path: Path
) -> None:
    """Two servers on the trivial page, one about four times slower (uvicorn-h11 answers
    a sync view through a thread hop: 581 against 2,469 req/s here): the look after
    round 1 drops it, the leader alone runs the planned rounds, and the answer says who
    left and when."""
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    out = StringIO()
    started = time.monotonic()
    call_command(
        "runbench", "--servers", "gunicorn-sync,uvicorn-h11", "--scenarios", "health-sync",
        "--trials", "3", "--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0",
        "--budget", "40s", "--no-setup", "--output", str(tmp_path), stdout=out,
    )  # fmt: skip
    took = time.monotonic() - started
    [path] = tmp_path.glob("*.json")
    data = json.loads(path.read_text())
    plan = data["plan"]
    assert plan["budget_s"] == 40 and 0 <= plan["rounds_added"] <= budget.EXTRA_ROUNDS_MAX
    assert took < 40 + 30  # no deployment starts past the budget
    assert plan["budget_cut"] == []  # dropped by the race, not cut by the budget
    assert plan["raced_out"] == {"uvicorn-h11": 1}
    ranked = {
        e["server"]: [t["round"] for t in e["trials"]]
        for e in data["results"]
        if e["config"] is None
    }
    assert ranked["uvicorn-h11"] == [0]
    assert ranked["gunicorn-sync"][:3] == [0, 1, 2]
    text = out.getvalue()
    assert "race: uvicorn-h11 out after round 1 (the leader faster on every page" in text
    assert "round 2 of 3: 1 deployment(s), in a fresh order (1 out of the race)" in text
    assert (
        "Out of the race, shown slower than the leader on every page: uvicorn-h11 after round 1"
        in text
    )
    assert "1-3 round(s) (the race ran the contenders only)" in text
    # Then the leader's server at each of its layouts, after the rounds (time was kept
    # for them out of the race): the answer's worker count.
    swept = plan["layouts"]
    assert swept is not None and swept["server"] == "gunicorn-sync"
    layouts = [e for e in data["results"] if e["config"] is not None]
    assert swept["rows"][0]["label"] == swept["leader"]
    assert {f"{e['server']}{{{e['config']}}}" for e in layouts} == {
        r["label"] for r in swept["rows"][1:]
    }
    last = max(max(rounds) for rounds in ranked.values())
    assert all(min(t["round"] for t in e["trials"]) == last + 1 for e in layouts)
    assert swept["best"] in {r["label"] for r in swept["rows"]}
    assert f"({swept['best']}, gunicorn-sync on 1 CPU(s)" in text


def test_the_default_profile_is_budgeted_unless_the_rounds_are_given() -> None:
    def budget_of(**given: object) -> float | None:
        options = {"concurrency": None, **given}
        return from_command(options, job_of(options).name).budget

    assert budget_of() == PROFILES["default"]["budget"] == 600.0
    assert budget_of(budget="25m") == 1500.0
    assert budget_of(trials=5) is None  # --trials N: exactly N rounds
    assert budget_of(quick=True) == 210.0  # a screen, then its leaders
    assert from_command({"concurrency": None, "quick": True}, "rounds").trials == 1
    assert budget_of(soak="1m") is None and budget_of(tune=True) is None
    assert budget_of(matrix="ref=a,b") is None  # the matrix budgets the whole command


def test_a_budget_spent_before_the_plan_is_done_says_what_it_cut() -> None:
    record = PlanRecord.model_construct(
        budget_s=60.0, rounds_added=0, still_open=[], budget_cut=["uwsgi", "daphne"]
    )
    text = budget_text(record)
    assert "spent before the planned rounds were done" in text and "uwsgi, daphne" in text


@pytest.mark.servers
def test_a_short_budget_cuts_the_planned_rounds_and_says_so(
    live_database: str, tmp_path: Path
) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    out = StringIO()
    call_command(
        "runbench", "--servers", "gunicorn-sync,uvicorn-h11", "--scenarios", "health-sync",
        "--trials", "3", "--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0",
        "--budget", "2s", "--no-setup", "--output", str(tmp_path), stdout=out,
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    plan = json.loads(path.read_text())["plan"]
    assert plan["budget_cut"] and plan["rounds_added"] == 0
    assert "spent before the planned rounds were done" in out.getvalue()


@pytest.mark.servers
def test_a_layout_sweep_is_raced_when_its_rounds_fit(live_database: str, tmp_path: Path) -> None:
    """Issue 56 item 4, live: with time for three whole rounds of every layout, the
    leader's server is raced on the heaviest page (its own layout among them), and the
    answer gives the worker count with its interval (about 70 s here: the budget leaves
    room, and the sweep ends when its rounds do)."""
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    out = StringIO()
    call_command(
        "runbench", "--servers", "gunicorn-gthread", "--scenarios", "health-sync,movies-sync",
        "--trials", "3", "--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0",
        "--budget", "100s", "--no-setup", "--output", str(tmp_path), stdout=out,
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    data = json.loads(path.read_text())
    swept = data["plan"]["layouts"]
    assert swept["scenario"] == "movies-sync" and swept["page"] == "heaviest"
    assert swept["rounds"] == 3, out.getvalue()[-3000:]
    layouts = [e for e in data["results"] if e["config"] is not None]
    assert any(e["config"] == "workers=1,threads=4" for e in layouts)  # the leader's own
    for e in layouts:
        assert [t["round"] for t in e["trials"]] == [3, 4, 5]
    best = next(r for r in swept["rows"] if r["label"] == swept["best"])
    assert best["rps_low"] < best["rps"] < best["rps_high"]
    assert ", raced over 3 rounds" in out.getvalue()
