"""--budget on a plain run: rounds beyond --trials go to the rankings still open."""

from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from djbench.run import budget
from tests.resultfiles import entry


def test_only_neighbours_the_engine_cannot_separate_are_open() -> None:
    results = [
        entry("uwsgi", "movies-sync", [1000.0, 1150.0, 900.0]),  # ~ granian: open
        entry("granian-wsgi", "movies-sync", [980.0, 1000.0, 1050.0]),
        entry("uvicorn", "movies-sync", [500.0, 505.0, 498.0]),  # far behind: decided
        entry("daphne", "movies-sync", [300.0, 302.0, 299.0]),  # behind uvicorn: decided
    ]
    found = budget.open_labels(results, "run")
    assert set(found) == {"uwsgi", "granian-wsgi"}
    assert found["uwsgi"] == ["uwsgi ~ granian-wsgi on movies-sync c32"]


@pytest.mark.servers
def test_a_budget_adds_rounds_only_while_a_ranking_is_open(
    live_database: str, tmp_path: Path
) -> None:
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
    for e in data["results"]:
        rounds = [t["round"] for t in e["trials"]]
        assert rounds == sorted(set(rounds)) and len(rounds) >= 3
    text = out.getvalue()
    assert "round(s) added for rankings still open" in text
    # Both servers in every added round: an added round is paired like the others.
    by_server = {e["server"]: [t["round"] for t in e["trials"]] for e in data["results"]}
    if plan["rounds_added"]:
        assert by_server["gunicorn-sync"] == by_server["uvicorn-h11"]
    else:
        assert "every neighbour in every ranking is decided" in text
