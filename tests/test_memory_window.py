"""Memory under load (issue 22 item 3): the window's PSS peak includes a reading taken
while the load runs, not only at the window's edges, where (for wrk and the WebSocket
loads) no load is running. A process that holds 64 MiB only in the window's middle is
the stand-in for a server that allocates per connection and frees when the load stops."""

from __future__ import annotations

import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from djbench.launch.process import ProcessTree, running
from djbench.measure.sampler import TreeSampler, summarise
from djbench.results import store
from djbench.run.roundplan import scenario_order

HOLDS = """
import time
time.sleep(0.6)
block = bytearray(64 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1  # touched: resident, so in PSS
time.sleep(1.0)
del block  # a large bytearray is unmapped at once
time.sleep(60)
"""


def peak_with(tmp_path: Path, middle: float | None) -> tuple[float, float]:
    """(PSS at the window's opening, PSS peak over the window) in MiB."""
    tree = ProcessTree(
        name="holder",
        argv=[sys.executable, "-c", HOLDS],
        env={},
        cwd=tmp_path,
        log_path=tmp_path / f"holder-{middle}.log",
    )
    with running(tree):
        time.sleep(0.1)
        sampler = TreeSampler(tree, 0.2, full_after=middle).start()
        time.sleep(2.2)
        samples = sampler.stop()
    memory = summarise(samples)
    assert memory is not None and samples[0].pss is not None
    return samples[0].pss / 2**20, memory.pss_peak


def test_the_peak_is_read_while_the_load_runs(tmp_path: Path, one_pass: None) -> None:
    opening, peak = peak_with(tmp_path, middle=1.1)
    assert peak - opening > 50  # the middle reading saw the 64 MiB


def test_edges_alone_miss_what_the_load_held(tmp_path: Path, one_pass: None) -> None:
    opening, peak = peak_with(tmp_path, middle=None)
    assert peak - opening < 10  # what runbench reported before: the edges only


def test_scenario_order_is_counterbalanced_and_seeded() -> None:
    items = ["a", "b", "c", "d"]
    orders = [scenario_order(7, r, "uvicorn", items) for r in range(4)]
    for position in range(4):  # over 4 rounds, every scenario once at every position
        assert sorted(order[position] for order in orders) == items
    assert scenario_order(7, 3, "uvicorn", items) == scenario_order(7, 3, "uvicorn", items)


@pytest.mark.servers
def test_memory_left_by_one_scenario_shows_on_the_next(live_database: str, tmp_path: Path) -> None:
    """The order effect measured: ballast-sync keeps 50 MiB in the worker; health-sync's
    PSS peak run after it (same server lifetime) is that much higher than run first."""
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    names = ["health-sync", "ballast-sync"]  # the plan's order (the scenario file's)
    call_command(  # two scenarios, counterbalanced: health-sync first in 2 of 4 rounds
        "runbench", "--servers", "gunicorn-sync", "--scenarios", ",".join(names),
        "--trials", "4", "--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0",
        "--no-setup", "--output", str(tmp_path), stdout=StringIO(),
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    [health] = [e for e in store.load(path).results if e.scenario == "health-sync"]
    by_position = {
        t.position: t.memory_mb.pss_peak for t in health.trials if t.memory_mb is not None
    }
    assert set(by_position) == {0, 1}, by_position
    assert by_position[1] - by_position[0] > 40  # the 50 MiB the ballast left
