"""The concurrency sweep (issue 23 item 5): doubling until req/s stops rising, the knee,
Little's law per step; against a loopback server of known capacity and end to end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from djbench.reports.search_words import sweep_text
from djbench.results import store
from djbench.results.model import SweepStep
from djbench.verdicts import knee as sweep_stats
from tests.slowserver import SlowServer, builtin_load

# At most 20 req/s, reached at 2 connections. The service time is long beside a round
# trip so that 2 connections reach within 5% of the capacity even on a loaded machine:
# with 20 ms (100 req/s) a CI run's 2.2 ms round trip put 2 connections 10% short and
# the knee at 4.
WORKERS, SERVICE_S = 2, 0.1
CAPACITY = WORKERS / SERVICE_S


@pytest.fixture
def limited(one_pass: None) -> Iterator[SlowServer]:
    with SlowServer(delay=SERVICE_S, workers=WORKERS) as server:
        yield server


def window(port: int, concurrency: int) -> SweepStep:
    result = builtin_load(port, concurrency, 1.5, warmup=0.3)
    rps = result.requests / result.duration_s
    mean = result.latency_ms["mean"]
    return SweepStep(
        concurrency=concurrency, rps=rps, mean_ms=mean, in_flight=result.in_flight,
        littles_in_flight=rps * mean / 1000,
    )  # fmt: skip


def test_the_knee_of_a_server_of_known_capacity(limited: SlowServer) -> None:
    found = sweep_stats.sweep(lambda c: window(limited.port, c), most=64)
    assert found.stopped == "flat"
    assert found.knee == WORKERS  # 2 connections already reach the capacity
    assert found.max_rps is not None and 0.8 * CAPACITY <= found.max_rps <= 1.01 * CAPACITY
    for step in found.steps:  # Little's law: measured in flight = req/s x mean latency
        assert step.in_flight == pytest.approx(step.littles_in_flight, rel=0.1)
        assert step.in_flight == pytest.approx(step.concurrency, rel=0.1)
    assert "knee at 2 connections" in sweep_text(found)


def test_the_sweep_stops_on_an_invalid_step_and_on_the_budget() -> None:
    def failing(c: int) -> SweepStep:
        return SweepStep(concurrency=c, rps=100.0 * c, valid=c < 4)

    found = sweep_stats.sweep(failing)
    assert found.stopped == "invalid" and found.knee == 2 and len(found.steps) == 3
    late = sweep_stats.sweep(failing, deadline=time.monotonic() - 1)
    assert late.stopped == "budget" and not late.steps and late.knee is None


@pytest.mark.servers
def test_runbench_sweep_end_to_end(live_database: str, tmp_path: Path) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    out = StringIO()
    call_command(
        "runbench", "--sweep", "--servers", "gunicorn-sync", "--scenarios", "health-sync",
        "--duration", "0.5", "--warmup", "0.3", "--ws-idle", "0", "--budget", "60s",
        "--no-setup", "--output", str(tmp_path), stdout=out,
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    [entry] = store.load(path).results
    assert entry.sweep is not None and entry.sweep.knee is not None
    assert [s.concurrency for s in entry.sweep.steps][:3] == [1, 2, 4]
    assert entry.trials and "Concurrency sweep" in out.getvalue()
    html = tmp_path / "report.html"
    call_command("benchreport", str(path), "--html", str(html), stdout=StringIO())
    assert "Concurrency sweep: health-sync" in html.read_text()
